"""How much do control-code edits alone move a kernel? A probe of the headroom of control-code moves.

    python benchmarks/control_probe.py [--kernels NAME ...] [--rounds 40] [--json OUT]

For each corpus kernel (and the CUDA C kernels of benchmarks/kernels), whole-kernel control-code variants of
ptxas's schedule are assembled by our assembler, verified bit for bit against the original on 5 fresh seeds
and timed in the GPU worker: every `.reuse` flag cleared; the yield flag cleared wherever the stall allows
(S01-S11); the yield flag set everywhere; both clearings together; DeepGEMM's FFMA interleaving in every run
of FFMAs it applies to (``control_moves``'s ``yield_interleave``). The order and the stalls stay ptxas's,
so only the scheduler hints change. One line per (kernel, variant), then a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

from reorder_eval import load_kernels

from sass_lsp.cuasm import assemble_cuasm, write_cuasm
from sass_lsp.gpu import GpuRunner
from sass_lsp.gpu.bench import run_bench
from sass_lsp.gpu.corpus import corpus_names
from sass_lsp.schedule.control_moves import apply_moves, control_moves

KERNELS = [*corpus_names(), "sgemm_tiled", "stencil2d"]
_CTRL = re.compile(r"\[(B[0-5-]{6}):(R[0-5-]):(W[0-5-]):([Y-]):S(\d\d)\]")


_FLOW = re.compile(r"\b(BRA|BRX|JMP|JMX|EXIT|RET|CALL|BSSY|BSYNC|WARPSYNC|BPT|NOP)\b")


def _yield(flag: str):  # noqa: ANN202
    """Set the yield field to ``flag`` on every instruction but control flow and NOP (whose yield bit is
    part of the opcode's encoding) where the stall allows it (S12+ needs Y on sm_90). Setting it drops that
    line's `.reuse` flags: with Y set the hardware does not reuse (nvdisasm prints none; SASS011)."""

    def edit(m: re.Match) -> str:
        y = flag if (flag == "Y" or int(m.group(5)) <= 11) else m.group(4)
        return f"[{m.group(1)}:{m.group(2)}:{m.group(3)}:{y}:S{m.group(5)}]"

    def line(ln: str) -> str:
        if _FLOW.search(ln) or not _CTRL.search(ln):
            return ln
        ln = _CTRL.sub(edit, ln)
        return _no_reuse(ln) if ":Y:S" in ln else ln

    def apply(text: str) -> str:
        return "\n".join(line(ln) for ln in text.split("\n"))

    return apply


def _no_reuse(text: str) -> str:
    return text.replace(".reuse", "")


def interleave_ffma(text: str) -> str:
    """DeepGEMM's FFMA interleaving over the whole kernel: every ``yield_interleave`` control move at once."""
    return apply_moves(text, control_moves(text, kinds=("yield_interleave",)))


VARIANTS = {
    "reuse_off": _no_reuse,
    "yield_off": _yield("-"),
    "yield_on": _yield("Y"),
    "reuse_and_yield_off": lambda text: _yield("-")(_no_reuse(text)),
    "interleave_ffma": interleave_ffma,
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", nargs="*", default=KERNELS)
    ap.add_argument("--variants", nargs="*", default=list(VARIANTS))
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as work, GpuRunner(timeout_s=120) as runner:
        for name, _origin, cubin, spec in load_kernels(args.kernels, Path(work)):
            text = write_cuasm(cubin, source_name=name)
            for variant in args.variants:
                edited = VARIANTS[variant](text)
                n_changed = sum(a != b for a, b in zip(text.splitlines(), edited.splitlines(), strict=True))
                row = {"kernel": name, "variant": variant, "lines_changed": n_changed}
                try:
                    edit = assemble_cuasm(edited, source_name=f"{name}:{variant}")
                except Exception as exc:  # noqa: BLE001  # report and go on: a probe, not a product path
                    rows.append({**row, "verdict": f"asm: {exc}"[:200]})
                    print(json.dumps(rows[-1]), flush=True)
                    continue
                result = run_bench(cubin, edit, spec, seeds=5, rounds=args.rounds, runner=runner)
                timing = result.timing
                row |= {"verdict": result.verdict, "verified": result.verified}
                if timing is not None:
                    row |= {"speedup": timing.ci.ratio, "ci": [timing.ci.low, timing.ci.high]}
                rows.append(row)
                print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
