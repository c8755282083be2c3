"""Compile the round-trip corpus (tests/kernels/*.cu) for every supported arch with nvcc.

Output: ``.cache/corpus/<arch>/<stem>.cubin`` plus ``<stem>.cmd`` recording the command and toolkit.
These cubins are never used to build the ISA tables; they are held-out test material.

    python tools/build_corpus.py [--arch sm_90 ...] [--out .cache/corpus] [-j 2]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "tests" / "kernels"
ARCHES = ["sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100a", "sm_120"]
# Sources that need features an arch lacks (mbarrier bulk copies, clusters: sm_90+).
MIN_ARCH = {"hopper.cu": 90}
# Compiled a second time with a tight register budget so ptxas spills to local memory.
SPILL_VARIANTS = {"calls.cu": 32, "math.cu": 24}


def arch_number(arch: str) -> int:
    return int("".join(ch for ch in arch.split("_")[1] if ch.isdigit()))


def jobs_for(arch: str) -> list[tuple[list[str], Path]]:
    jobs = []
    for src in sorted(KERNELS.glob("*.cu")):
        if arch_number(arch) < MIN_ARCH.get(src.name, 0):
            continue
        jobs.append(([], src))
        if src.name in SPILL_VARIANTS:
            jobs.append(([f"-maxrregcount={SPILL_VARIANTS[src.name]}"], src))
    return jobs


def compile_one(nvcc: str, arch: str, extra: list[str], src: Path, out_dir: Path) -> Path:
    stem = src.stem + ("_r" + extra[0].split("=")[1] if extra else "")
    out = out_dir / f"{stem}.cubin"
    cmd = [nvcc, "-cubin", "-O3", f"-arch={arch}", *extra, "-o", str(out), str(src)]
    if out.exists() and out.stat().st_mtime >= src.stat().st_mtime:
        return out
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}\n{proc.stderr}")
    version_text = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    version = version_text.strip().splitlines()[-1]
    out.with_suffix(".cmd").write_text(" ".join(cmd[:-3] + [src.name]) + f"\n# {version}\n")
    return out


def build(arches: list[str], out_root: Path, n_jobs: int = 2) -> dict[str, list[Path]]:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise RuntimeError("nvcc not found on PATH")
    built: dict[str, list[Path]] = {}
    with concurrent.futures.ThreadPoolExecutor(n_jobs) as pool:
        futures = {}
        for arch in arches:
            out_dir = out_root / arch
            out_dir.mkdir(parents=True, exist_ok=True)
            for extra, src in jobs_for(arch):
                futures[pool.submit(compile_one, nvcc, arch, extra, src, out_dir)] = arch
        for fut in concurrent.futures.as_completed(futures):
            built.setdefault(futures[fut], []).append(fut.result())
    return {arch: sorted(paths) for arch, paths in built.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", action="append", choices=ARCHES)
    parser.add_argument("--out", type=Path, default=ROOT / ".cache" / "corpus")
    parser.add_argument("-j", type=int, default=2)
    args = parser.parse_args(argv)
    built = build(args.arch or ARCHES, args.out, args.j)
    for arch, paths in sorted(built.items()):
        print(f"{arch}: {len(paths)} cubins")
    return 0


if __name__ == "__main__":
    sys.exit(main())
