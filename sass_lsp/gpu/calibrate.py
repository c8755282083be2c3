"""Feature: latency calibration. Measure, on the attached GPU, the smallest stall count that still gives
correct results after each fixed-latency producer class, and the smallest safe distance from ``BAR.SYNC``
to the next shared-memory access.

Method. nvcc compiles a tiny skeleton kernel (load 16 bytes per thread, store them back); the skeleton is
disassembled with our own writer and a dependent chain of the probed instructions is spliced in between the
load and the store with the project's own assembler. In the chain the *measured* edge (producer -> consumer)
gets stall S and every other instruction gets the safe stall 15. The variant with S = 15 is the reference;
each smaller S is verified bit for bit against it on fresh random inputs by the isolated GPU worker. The
smallest S from which every larger S also matched is the minimum safe stall: on Volta and later nothing
interlocks fixed-latency results, so it is also the producer's issue-to-result latency as a consumer sees it.
"""

from __future__ import annotations

import datetime
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sass_lsp.cuasm.assembler import AssembleError, assemble_cuasm
from sass_lsp.cuasm.writer import write_cuasm
from sass_lsp.gpu.spec import LaunchSpec, parse_spec

SAFE_STALL = 15
CHAIN_STEPS = 8
N_THREADS = 128 * 64

SKELETON_CHAIN = r"""
extern "C" __global__ void calib(const uint4 *in, uint4 *out) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  uint4 v = in[t];
  asm volatile("" : "+r"(v.x), "+r"(v.y), "+r"(v.z), "+r"(v.w));
  out[t] = v;
}
"""

SKELETON_BARRIER = r"""
extern "C" __global__ void calib(const unsigned *in, unsigned *out) {
  __shared__ unsigned s[1024];
  int t = threadIdx.x;
  unsigned g = blockIdx.x * blockDim.x + t;
  unsigned r = (t * 7 + 1) & (blockDim.x - 1);
  s[t] = in[g];
  __syncthreads();
  out[g] = s[r];
}
"""


@dataclass(frozen=True)
class Probe:
    """One measured edge. ``step`` repeats ``CHAIN_STEPS`` times; its ``True`` entries get stall S."""

    name: str
    # The (producer pipe, consumer pipe, operand kind) key of the semantics table's latency rows.
    producer: str
    consumer: str  # "*": any consumer (guards are read at issue, whatever the consumer)
    operand: str  # reg, reg_hi, pred, guard, ur
    dtype: str  # element type of the 16 loaded bytes (decides the random fill)
    step: tuple[tuple[str, bool], ...]
    setup: tuple[str, ...] = ()


# Registers R8..R11 hold the loaded 16 bytes and are stored back; R12..R15 are scratch.
PROBES: tuple[Probe, ...] = (
    Probe("IADD3->IADD3", "alu", "alu", "reg", "u32", (("IADD3 R8, R8, R9, RZ", True),)),
    # A chain of LOP3s alone cannot detect a stale read (x -> f(x) bitwise with constants has period <= 2),
    # nor can PRMT (it shifts the old value out): each feeds an add instead.
    Probe(
        "LOP3->IADD3",
        "alu",
        "alu",
        "reg",
        "u32",
        (("LOP3.LUT R12, R8, R9, R10, 0x96, !PT", True), ("IADD3 R8, R12, R8, RZ", False)),
    ),
    Probe(
        "MOV->IADD3", "alu", "alu", "reg", "u32", (("MOV R12, R8", True), ("IADD3 R8, R12, R9, RZ", False))
    ),
    Probe("SHF->SHF", "alu", "alu", "reg", "u32", (("SHF.L.W.U32.HI R8, R8, 0x5, R8", True),)),
    Probe(
        "PRMT->IADD3",
        "alu",
        "alu",
        "reg",
        "u32",
        (("PRMT R12, R8, 0x4321, R9", True), ("IADD3 R8, R12, R8, RZ", False)),
    ),
    Probe(
        "IADD3->IMAD",
        "alu",
        "fma",
        "reg",
        "u32",
        (("IADD3 R8, R8, R11, RZ", True), ("IMAD R8, R8, R9, R10", False)),
    ),
    Probe("IMAD->IMAD", "fma", "fma", "reg", "u32", (("IMAD R8, R8, R9, R10", True),)),
    Probe(
        "IMAD->IADD3",
        "fma",
        "alu",
        "reg",
        "u32",
        (("IMAD R8, R8, R9, R10", True), ("IADD3 R8, R8, R11, RZ", False)),
    ),
    Probe(
        "IMAD.WIDE->IADD3(hi)",
        "fma_wide_hi",
        "alu",
        "reg",
        "u32",
        (("IMAD.WIDE.U32 R12, R8, R9, R10", True), ("IADD3 R8, R13, R8, RZ", False)),
    ),
    Probe("FFMA->FFMA", "fma", "fma", "reg", "f32", (("FFMA R8, R8, R9, R10", True),)),
    Probe(
        "FMUL->FADD", "fma", "fma", "reg", "f32", (("FMUL R12, R8, R9", True), ("FADD R8, R12, R10", False))
    ),
    Probe("HFMA2->HFMA2", "fp16", "fp16", "reg", "f16", (("HFMA2 R8, R8, R9, R10", True),)),
    Probe("DADD->DADD", "fp64", "fp64", "reg", "f64", (("DADD R8, R8, R10", True),)),
    Probe(
        "ISETP->guard",
        "alu",
        "*",
        "guard",
        "u32",
        (
            ("ISETP.GT.U32.AND P0, PT, R8, R9, PT", True),
            ("@P0 IADD3 R9, R9, R10, RZ", False),
            ("IADD3 R8, R8, R11, RZ", False),
        ),
        setup=("ISETP.NE.AND P0, PT, RZ, RZ, PT",),
    ),
    Probe(
        "ISETP->SEL(pred)",
        "alu",
        "alu",
        "pred",
        "u32",
        (
            ("ISETP.GT.U32.AND P0, PT, R8, R9, PT", True),
            ("SEL R8, R10, R8, P0", False),
            ("IADD3 R10, R10, R11, RZ", False),
        ),
        setup=("ISETP.NE.AND P0, PT, RZ, RZ, PT",),
    ),
    Probe(
        "UIADD3->IADD3(uniform)",
        "uniform",
        "alu",
        "ur",
        "u32",
        (("UIADD3 UR6, UR6, UR7, URZ", True), ("IADD3 R8, R8, UR6, RZ", False)),
        setup=("UMOV UR6, 0x12345", "UMOV UR7, 0x777"),
    ),
    Probe(
        "ULDC->IADD3(uniform)",
        "umov",
        "alu",
        "ur",
        "u32",
        (("ULDC UR6, c[0x0][0x0]", True), ("IADD3 R8, R8, UR6, RZ", False), ("UMOV UR6, 0x5", False)),
        setup=("UMOV UR6, 0x5",),
    ),
)

_FILLS = {
    "u32": ("u32", '{ kind = "int", low = 0, high = 2147483647 }'),
    "f32": ("f32", '{ kind = "uniform", low = -2.0, high = 2.0 }'),
    "f16": ("f16", '{ kind = "uniform", low = -2.0, high = 2.0 }'),
    "f64": ("f64", '{ kind = "uniform", low = -2.0, high = 2.0 }'),
}
_ELEM_BYTES = {"u32": 4, "f32": 4, "f16": 2, "f64": 8}
_INSTR_LINE = re.compile(r"^(\s*)\[([^\]]*)\](\s*/\*[0-9a-fA-F]+\*/\s*)(.*?)\s*;?\s*(//.*)?$")


class CalibrationError(RuntimeError):
    pass


@dataclass
class ProbeResult:
    name: str
    producer: str
    consumer: str
    operand: str
    min_safe_stall: int | None  # None: even S=1 matched, or the probe could not be run
    outcomes: dict[int, str] = field(default_factory=dict)  # stall -> match / mismatch / fault / ...
    instructions: list[str] = field(default_factory=list)
    error: str = ""


def _needs_yield(stall: int) -> bool:
    # The encoding has no "no yield" form for stalls above 11: nvdisasm rejects '-:S12'..'-:S15' words.
    return stall > 11


def _ctrl(wait: str, stall: int) -> str:
    return f"[B{wait}:R-:W-:{'Y' if _needs_yield(stall) else '-'}:S{stall:02d}]"


def _line(ctrl: str, text: str) -> str:
    return f"      {ctrl}         /*0000*/                   {text} ;"


def compile_skeleton(source: str, arch: str, nvcc: str | None = None) -> bytes:
    nvcc = nvcc or shutil.which("nvcc")
    if nvcc is None:
        raise CalibrationError("nvcc not found on PATH: it compiles the calibration skeletons")
    with tempfile.TemporaryDirectory(prefix="sass-lsp-calib-") as tmp:
        src, out = Path(tmp) / "k.cu", Path(tmp) / "k.cubin"
        src.write_text(source)
        proc = subprocess.run(
            [nvcc, "-cubin", "-O3", f"-arch={arch}", "-o", str(out), str(src)], capture_output=True, text=True
        )
        if proc.returncode != 0:
            raise CalibrationError(f"nvcc failed: {proc.stderr.strip()}")
        return out.read_bytes()


def _find(lines: list[str], pattern: str) -> int:
    for idx, line in enumerate(lines):
        m = _INSTR_LINE.match(line)
        if m and re.search(pattern, m.group(4)):
            return idx
    raise CalibrationError(f"skeleton has no instruction matching {pattern!r}")


def chain_variant(skeleton: str, probe: Probe, stall: int) -> str:
    """The skeleton with ``probe``'s chain between the 16-byte load and the store.

    Measured edges get ``stall``; every other instruction the safe stall.
    """
    lines = skeleton.splitlines()
    load = _INSTR_LINE.match(lines[_find(lines, r"^LDG\.E\.128 R8,")])
    assert load is not None
    write_sb = re.search(r":W(\d):", "[" + load.group(2) + "]")
    if write_sb is None:
        raise CalibrationError("the skeleton's load sets no write scoreboard")
    wait = ["-"] * 6
    wait[int(write_sb.group(1))] = write_sb.group(1)
    chain = [(text, False) for text in probe.setup] + list(probe.step) * CHAIN_STEPS
    new_lines = []
    for idx, (text, measured) in enumerate(chain):
        last = idx == len(chain) - 1
        s = stall if measured and not last else SAFE_STALL
        new_lines.append(_line(_ctrl("".join(wait) if idx == 0 else "------", s), text))
    store = _find(lines, r"^STG\.E\.128 ")
    return "\n".join(lines[:store] + new_lines + lines[store:]) + "\n"


def barrier_variant(skeleton: str, stall: int) -> str:
    """The barrier skeleton with ``stall`` cycles between ``BAR.SYNC`` and the ``LDS`` right after it."""
    lines = skeleton.splitlines()
    bar = _find(lines, r"^BAR\.SYNC")
    if not re.search(r"^LDS ", _INSTR_LINE.match(lines[bar + 1]).group(4)):  # type: ignore[union-attr]
        raise CalibrationError("the barrier skeleton's BAR.SYNC is not followed by its LDS")
    m = _INSTR_LINE.match(lines[bar])
    assert m is not None
    ctrl = re.sub(r":[-Y]:S\d\d$", f":{'Y' if _needs_yield(stall) else '-'}:S{stall:02d}", m.group(2))
    lines[bar] = f"{m.group(1)}[{ctrl}]{m.group(3)}{m.group(4)} ;"
    return "\n".join(lines) + "\n"


def _copy_spec(dtype: str, n_elems: int, block: int, fill: str) -> LaunchSpec:
    """One input buffer and one output buffer of ``n_elems`` elements; one thread per 16 (or 4) bytes."""
    return parse_spec(f"""
kernel = "calib"
grid = [{N_THREADS // block}, 1, 1]
block = [{block}, 1, 1]
[[params]]
name = "in"
kind = "buffer"
dtype = "{dtype}"
shape = [{n_elems}]
role = "in"
fill = {fill}
[[params]]
name = "out"
kind = "buffer"
dtype = "{dtype}"
shape = [{n_elems}]
role = "out"
""")


def chain_spec(dtype: str) -> LaunchSpec:
    name, fill = _FILLS[dtype]
    return _copy_spec(name, N_THREADS * 16 // _ELEM_BYTES[dtype], 128, fill)


def barrier_spec() -> LaunchSpec:
    return _copy_spec("u32", N_THREADS, 1024, _FILLS["u32"][1])


def min_safe_stall(outcomes: dict[int, str]) -> int | None:
    """Smallest S such that S and every larger measured stall matched the reference."""
    best = None
    for stall in sorted(outcomes, reverse=True):
        if outcomes[stall] != "match":
            break
        best = stall
    return best


VerifyFn = Callable[[bytes, bytes, LaunchSpec], str]  # (reference, variant, spec) -> outcome


def run_probe(
    name: str, make_text: Callable[[int], str], spec: LaunchSpec, verify: VerifyFn, stalls: list[int]
) -> tuple[dict[int, str], str]:
    """Outcome per stall (largest first); stops at the first stall that does not match."""
    try:
        reference = assemble_cuasm(make_text(SAFE_STALL), source_name=f"{name}@S15")
    except AssembleError as exc:
        return {}, f"cannot assemble: {exc}"
    outcomes: dict[int, str] = {}
    for stall in sorted(stalls, reverse=True):
        try:
            variant = assemble_cuasm(make_text(stall), source_name=f"{name}@S{stall:02d}")
        except AssembleError as exc:
            return outcomes, f"cannot assemble S{stall:02d}: {exc}"
        outcomes[stall] = verify(reference, variant, spec)
        if outcomes[stall] != "match":
            # Below a failing stall the result is meaningless: a stale read is already possible.
            break
    return outcomes, ""


def calibrate(
    arch: str,
    verify: VerifyFn,
    *,
    stalls: list[int] | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run every probe; returns the raw measurements (also the table rows) as plain data."""
    stalls = stalls or list(range(SAFE_STALL - 1, 0, -1))
    chain_text = write_cuasm(compile_skeleton(SKELETON_CHAIN, arch), source_name="calib_chain")
    bar_text = write_cuasm(compile_skeleton(SKELETON_BARRIER, arch), source_name="calib_barrier")
    results = []
    for probe in PROBES:
        if progress:
            progress(probe.name)

        def make_text(stall: int, probe: Probe = probe) -> str:
            return chain_variant(chain_text, probe, stall)

        outcomes, error = run_probe(probe.name, make_text, chain_spec(probe.dtype), verify, stalls)
        results.append(
            ProbeResult(
                probe.name,
                probe.producer,
                probe.consumer,
                probe.operand,
                min_safe_stall(outcomes) if not error or outcomes else None,
                outcomes,
                [text for text, _ in probe.step],
                error,
            )
        )
    if progress:
        progress("BAR.SYNC->LDS")
    outcomes, error = run_probe(
        "BAR.SYNC->LDS", lambda s: barrier_variant(bar_text, s), barrier_spec(), verify, stalls
    )
    barrier = ProbeResult(
        "BAR.SYNC->LDS",
        "barrier",
        "shared",
        "distance",
        min_safe_stall(outcomes),
        outcomes,
        ["BAR.SYNC.DEFER_BLOCKING 0x0", "LDS R9, [R0]"],
        error,
    )
    return {
        "arch": arch,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "method": __doc__.split("\n\n", 1)[1].strip(),
        "chain_steps": CHAIN_STEPS,
        "threads": N_THREADS,
        "probes": [asdict(r) for r in results],
        "bar_sync_to_shared": asdict(barrier),
    }


def merge_measured(semantics: dict[str, Any], raw: dict[str, Any], raw_name: str) -> dict[str, Any]:
    """``semantics`` (an ``isa/data/semantics_<arch>.json`` table) with the measured latency rows replaced.

    Several probes of one (producer, consumer, operand) key keep the largest minimum. The barrier distance is
    recorded as ``bar_sync_to_shared_measured``; the checker's threshold stays where it is (see the notes).
    """
    device = raw.get("device", {}).get("device", raw.get("device", {}))
    ref = (
        f"sass-lsp calibrate on {device.get('gpu', '?')} (driver {device.get('driver', '?')}), "
        f"{raw['date']}; raw data {raw_name}"
    )
    best: dict[tuple[str, str, str], tuple[int, list[str]]] = {}
    for probe in raw["probes"]:
        if probe["min_safe_stall"] is None:
            continue
        key = (probe["producer"], probe["consumer"], probe["operand"])
        cycles, names = best.get(key, (0, []))
        best[key] = (max(cycles, probe["min_safe_stall"]), [*names, probe["name"]])
    rows = [row for row in semantics["latency"] if row.get("source") != "measured"]
    derived = {
        (r["producer"], r["consumer"], r["operand"]): r["cycles"] for r in rows if r.get("source") == "exp"
    }
    for (producer, consumer, operand), (cycles, names) in sorted(best.items()):
        ptxas = derived.get((producer, consumer, operand))
        if ptxas is not None and ptxas < cycles:
            # ptxas's correct code is closer than the probe needed: the pipe classes are too coarse for this
            # pair (before VIADD moved to the fma class, VIADD->IMAD at 4 was fine and IADD3->IMAD at 4 was
            # not: tools/isa/build_semantics.py PIPE_BY_ARCH). Keep the figure, do not apply it.
            semantics.setdefault("measured_not_applied", [])
            unapplied = {
                "producer": producer,
                "consumer": consumer,
                "operand": operand,
                "cycles": cycles,
                "ptxas_min": ptxas,
                "ref": ref,
                "note": "probes: " + ", ".join(names),
            }
            semantics["measured_not_applied"] = [
                r
                for r in semantics["measured_not_applied"]
                if (r["producer"], r["consumer"], r["operand"]) != (producer, consumer, operand)
            ] + [unapplied]
            continue
        rows.append(
            {
                "producer": producer,
                "consumer": consumer,
                "operand": operand,
                "cycles": cycles,
                "source": "measured",
                "ref": ref,
                "note": "probes: " + ", ".join(names),
            }
        )
    bar = raw["bar_sync_to_shared"]
    params = dict(semantics["params"])
    if bar["min_safe_stall"] is not None:
        params["bar_sync_to_shared_measured"] = {
            "value": bar["min_safe_stall"],
            "source": "measured",
            "ref": ref,
            "note": "BAR.SYNC directly followed by an LDS of another warp's data; no failure at any distance",
        }
    return {**semantics, "latency": rows, "params": params}
