#!/usr/bin/env python3
"""Build ``sass_lsp/isa/data/semantics_<arch>.json``: per-opcode register semantics and latency classes.

Evidence (reproducible, no GPU):
1. hand-written opcode shapes (``OPCLASSES`` below: pipe, destination rule, register widths, queue);
2. ptxas output: our training kernels ``tools/isa/training/*.cu`` and ``tests/kernels/*.cu`` compiled
   with CUDA 13.0 ptxas (cubins in ``.cache/semantics/<arch>``, and ``.cache/corpus/<arch>``).
   An opcode is *variable latency* on an arch when ptxas ever gives it a scoreboard there [exp];
   the fixed RAW latency of (producer pipe, consumer pipe, operand kind) is the *minimum* stall distance
   ptxas used between a dependent pair (an upper bound of the true minimum) [exp];
3. third-party facts: MESA ``sm80_instr_latencies.rs`` figures quoted in notes/cuasm-format.md §3.3
   for sm_80/86/89 rows [3rd]; assumed variable latencies for the timeline [3rd/guess].
Measured rows (``source: measured``) written by the ``calibrate`` command are kept when rebuilding.
The Triton kernels of sass_lsp/corpus/sm_90 are held out (they are the false-alarm test set).

    python tools/isa/build_semantics.py [--arch sm_90 ...]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from sass_lsp.cuasm.disasm import parse_disassembly  # noqa: E402
from sass_lsp.cuasm.parser import parse_cuasm  # noqa: E402
from sass_lsp.isa.control import control_from_word, format_control  # noqa: E402
from sass_lsp.model import Module  # noqa: E402
from sass_lsp.nvdisasm import run_nvdisasm  # noqa: E402

DATA = ROOT / "sass_lsp" / "isa" / "data"
CACHE = ROOT / ".cache" / "semantics"
ARCHES = ["sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100a", "sm_120"]
NVCC_ARCH = {"sm_90": ["sm_90", "sm_90a"]}
FLAG_SETS = [["-O3"], ["-O3", "-maxrregcount=32"], ["-O3", "-use_fast_math"]]
SOURCES = sorted((ROOT / "tools" / "isa" / "training").glob("*.cu")) + sorted(
    (ROOT / "tests" / "kernels").glob("*.cu")
)
# pipe, dst, width, queue, flags, var default
OPCLASSES: dict[str, tuple[str, str, str, str | None, tuple[str, ...], bool]] = {}


def _add(
    names: str,
    pipe: str,
    dst: str = "n",
    width: str = "",
    queue: str | None = None,
    flags: tuple[str, ...] = (),
    var: bool = False,
) -> None:
    for name in names.split():
        OPCLASSES[name] = (pipe, dst, width, queue, flags, var)


# Coupled ALU (MESA CoupledAlu)
_add(
    "IADD3 IADD LOP3 LOP SHF LEA SEL FSEL PRMT FMNMX IMNMX IABS VIADD VIMNMX VIMNMX3 VIADDMNMX SGXT BMSK "
    "MOV HMNMX2 VHMNMX LEPC FLO_FIXED",
    "alu",
)
_add("ISETP FSETP PLOP3", "alu", dst="2")
_add("CS2R", "alu", width="pair")
_add("P2R", "alu", dst="1")
_add("R2P", "alu", dst="1")
_add("VOTE", "alu", dst="n")
_add("I2FP F2FP", "fma")
# Coupled FMA
_add("IMAD FFMA FADD FMUL FSWZADD IDP IDP4A", "fma")
_add("FCHK", "fma", dst="1", var=True, queue="xu")
# FP16 vector
_add("HADD2 HFMA2 HMUL2 HSET2", "fp16")
_add("HSETP2", "fp16", dst="2")
# FP64: fixed on sm_90/100 [exp], variable (scoreboarded) on sm_75-89/120 [exp]
_add("DFMA DADD DMUL DMNMX", "fp64", width="f64", queue="fp64")
_add("DSETP", "fp64", dst="2", width="f64", queue="fp64")
# Tensor core
_add("HMMA IMMA DMMA BMMA", "mma", width="mma", queue="mma")
_add("HGMMA IGMMA QGMMA BGMMA", "gmma", width="gmma", queue="gmma", flags=("gmma",))
_add("WARPGROUP", "control", dst="0", flags=("warpgroup",))
_add("WARPGROUPSET", "control", dst="0")
# Uniform datapath
_add("UIADD3 ULOP3 ULOP USHF ULEA UIMAD USEL USGXT UFLO UPOPC UBREV UPRMT UMNMX UBMSK UIADD", "uniform")
_add("UISETP UPLOP3", "uniform", dst="2")
_add("VOTEU", "uniform", dst="n")
_add("ULDC UMOV", "umov")
_add("R2UR", "r2ur", queue="r2ur")
_add("ELECT", "alu", dst="2")
# Variable latency: transcendental / conversion unit (MESA Decoupled)
_add("MUFU POPC FLO BREV FRND", "xu", queue="xu", var=True)
_add("F2F F2I I2F I2I F2IP", "xu", width="conv", queue="xu", var=True)
# Special registers / constants
_add("S2R", "var", queue="s2r", var=True)
_add("S2UR", "var", queue="s2r", var=True)
_add("B2R", "var", dst="n", queue="s2r", var=True)
_add("LDC LDCU", "var", width="mem", queue=None, var=True)  # constant-cache misses complete out of order
# Memory (MESA DecoupledAgu readers; loads W, stores R)
_add("LDG LD LDL", "mem", width="mem", queue="lsu", var=True, flags=("load",))
_add("STG ST STL", "mem", dst="0", width="mem", queue="lsu", var=True, flags=("store",))
_add("ATOMG ATOM", "mem", dst="2", width="mem", queue="lsu", var=True, flags=("load", "store"))
_add("RED REDG", "mem", dst="0", width="mem", queue="lsu", var=True, flags=("store",))
_add("LDS", "mem", width="mem", queue="mio", var=True, flags=("load", "shared"))
_add("LDSM", "mem", width="ldsm", queue="mio", var=True, flags=("load", "shared"))
_add("STS", "mem", dst="0", width="mem", queue="mio", var=True, flags=("store", "shared"))
_add("STSM", "mem", dst="0", width="ldsm", queue="mio", var=True, flags=("store", "shared"))
_add("ATOMS", "mem", dst="n", width="mem", queue="mio", var=True, flags=("load", "store", "shared"))
_add("LDGSTS", "mem", dst="0", width="mem", queue="lsu", var=True, flags=("store", "shared"))
_add("LDGDEPBAR", "mem", dst="0", queue="lsu", var=True)
_add("CCTL MEMBAR FENCE ERRBAR CGAERRBAR", "mem", dst="0", queue="lsu", var=True, flags=("fence",))
_add("SHFL", "var", dst="2", queue="warp", var=True)
_add("MATCH REDUX CREDUX", "var", queue="warp", var=True)
_add("MOVM", "var", queue="mio", var=True)
_add("SYNCS", "var", dst="n", queue="syncs", var=True)
_add(
    "UBLKCP UTMALDG UTMASTG UTMAPF UBLKPF UBLKRED UTMAREDG UTMACCTL UTMACMDFLUSH",
    "var",
    dst="0",
    queue="tma",
    var=True,
)
# Control flow and synchronisation
_add("BRA JMP", "branch", dst="0", flags=("branch",))
_add("BRX JMX", "branch", dst="0", flags=("branch", "indirect"))
_add("EXIT", "branch", dst="0", flags=("exit",))
_add("RET", "branch", dst="0", flags=("ret",))
_add("CALL", "branch", dst="0", flags=("call",))
_add(
    "BSSY BSYNC WARPSYNC BMOV YIELD NOP KILL BPT NANOSLEEP PREEXIT ACQBULK ENDCOLLECTIVE USETMAXREG",
    "control",
    dst="0",
)
_add("BAR", "barrier", dst="0", flags=("barrier",))
_add("UCGABAR_ARV UCGABAR_WAIT", "barrier", dst="0")
_add("DEPBAR", "control", dst="0", flags=("depbar",))

# Modifier variants: "OPCODE.MOD[.MOD]" -> overrides (all listed modifiers must be present)
VARIANTS: dict[str, dict] = {
    "IMAD.WIDE": {"pipe": "fma_wide", "width": "wide"},
    "IMAD.HI": {"pipe": "fma_wide"},
    "UIMAD.WIDE": {"width": "wide"},
    "HFMA2.MMA": {"pipe": "fp16_mma"},
    "MOV.64": {"width": "pair"},
    "UMOV.64": {"width": "pair"},
    "IADD.64": {"width": "pair"},
    "UIADD3.64": {"width": "pair"},
    "BMOV.32": {"dst": "1"},
    "BAR.RED": {"flags": ["barrier"]},
    "BAR.SYNC": {"flags": ["barrier", "bar_sync"]},
    "WARPGROUP.DEPBAR": {"flags": ["gmma_wait"]},
    "WARPGROUP.ARRIVE": {"flags": ["warpgroup"]},
    "SYNCS.PHASECHK": {"dst": "1"},
    "SYNCS.ARRIVE": {"dst": "1"},
    "SYNCS.EXCH": {"dst": "1"},
    "ATOMS.POPC": {"dst": "1"},
    "B2R.RESULT": {"dst": "n"},
}

# Memory spaces each memory opcode reads and writes (global, shared, local; generic LD/ST/ATOM/RED may be
# any of them). LDGSTS reads global and writes shared; a warpgroup MMA reads its operands from shared.
MEMORY: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "LDG": (("global",), ()),
    "STG": ((), ("global",)),
    "ATOMG": (("global",), ("global",)),
    "REDG": (("global",), ("global",)),
    "LDS": (("shared",), ()),
    "LDSM": (("shared",), ()),
    "STS": ((), ("shared",)),
    "STSM": ((), ("shared",)),
    "ATOMS": (("shared",), ("shared",)),
    "LDL": (("local",), ()),
    "STL": ((), ("local",)),
    "LD": (("global", "shared", "local"), ()),
    "ST": ((), ("global", "shared", "local")),
    "ATOM": (("global", "shared", "local"), ("global", "shared", "local")),
    "RED": (("global", "shared", "local"), ("global", "shared", "local")),
    "LDGSTS": (("global",), ("shared",)),
    **{op: (("shared",), ()) for op in ("HGMMA", "IGMMA", "QGMMA", "BGMMA")},
}
MEMORY_REF = "PTX ISA state spaces of the SASS memory opcodes (LDG/STG global, LDS/STS shared, LDL/STL local)"
ALL_SPACES = ("global", "shared", "local")
# Fences order against every memory access and each other; barriers are crossed by nothing. The reorder
# game never moves either.
FENCES = [
    "BAR",
    "LDGDEPBAR",
    "MEMBAR",
    "FENCE",
    "ERRBAR",
    "CGAERRBAR",
    "CCTL",
    "SYNCS",
    "ACQBULK",
    "UTMALDG",
    "UTMASTG",
    "UTMAPF",
    "UTMAREDG",
    "UTMACCTL",
    "UTMACMDFLUSH",
    "UBLKCP",
    "UBLKPF",
    "UBLKRED",
    "HGMMA",
    "IGMMA",
    "QGMMA",
    "BGMMA",
]
BARRIERS = [
    "DEPBAR",
    "WARPGROUP",
    "WARPGROUPSET",
    "CALL",
    "RET",
    "EXIT",
    "BRA",
    "BRX",
    "JMP",
    "JMX",
    "BSSY",
    "BSYNC",
    "WARPSYNC",
    "BMOV",
    "B2R",
    "BREAK",
    "KILL",
    "NANOSLEEP",
    "YIELD",
    "PREEXIT",
    "BPT",
    "USETMAXREG",
    "UCGABAR_ARV",
    "UCGABAR_WAIT",
    "ENDCOLLECTIVE",
    "LEPC",
]
ORDERING_REF = {
    "fence": "synchronisation, cache-control, asynchronous-copy and warpgroup-MMA opcodes: memory order is "
    "theirs to keep (a conservative class)",
    "barrier": "control flow, convergence, scoreboard and warp-state opcodes: their position is part of "
    "their meaning (a conservative class)",
}
# Reads whose value depends on when or where the instruction issues; label operands (pc-relative).
POSITIONAL_READS = ["SR_CLOCK", "SR_GLOBALTIMER", "SR_PM", "SR_VIRTUALPC", "`("]


def memory_rows(opcodes: dict[str, dict]) -> dict[str, dict]:
    """``memory`` rows: the spaces of :data:`MEMORY`, and every space for another load or store."""
    rows = {
        op: {"reads": list(r), "writes": list(w), "source": "guess", "ref": MEMORY_REF}
        for op, (r, w) in MEMORY.items()
    }
    for op, row in sorted(opcodes.items()):
        if op not in rows and {"load", "store"} & set(row["flags"]):
            rows[op] = {
                "reads": list(ALL_SPACES),
                "writes": list(ALL_SPACES),
                "source": "guess",
                "ref": "a load or store of no known space: may alias every space",
            }
    return dict(sorted(rows.items()))


def ordering_rows() -> dict[str, dict]:
    rows = {op: {"kind": "fence", "source": "guess", "ref": ORDERING_REF["fence"]} for op in FENCES}
    rows |= {op: {"kind": "barrier", "source": "guess", "ref": ORDERING_REF["barrier"]} for op in BARRIERS}
    return dict(sorted(rows.items()))


def positional_param() -> dict:
    return {
        "value": POSITIONAL_READS,
        "source": "guess",
        "ref": "special registers of time, counters and the PC (PTX %clock, %globaltimer, %pm*), and label "
        "operands",
    }


def effect_rows(table: dict) -> dict:
    """The table with its effect rows (memory spaces, ordering, positional reads) as this tool emits them."""
    return {
        **table,
        "memory": memory_rows(table["opcodes"]),
        "ordering": ordering_rows(),
        "params": dict(sorted({**table["params"], "positional_reads": positional_param()}.items())),
    }


# ------------------------------------------------------------------ evidence


def cubin_to_cuasm(cubin: bytes) -> str:
    """Minimal CuAssembler-style text of the code sections (labels + ``[ctrl] text`` lines)."""
    dis = parse_disassembly(run_nvdisasm(["-hex"], cubin))
    out: list[str] = []
    for name, sec in dis.sections.items():
        if not name.startswith(".text."):
            continue
        out.append(f'\t.section\t"{name}", 0, SHT_PROGBITS')
        it = iter(sec.instrs)
        for line in sec.lines:
            s = line.strip()
            if s.startswith("/*") and "*/" in s:
                ins = next(it)
                out.append(f"  {format_control(control_from_word(ins.word))}  {line.strip()}")
            elif s.endswith(":") and not s.startswith("." + "section"):
                out.append(s)
            elif s.startswith("//") and "nvinfo" not in s:
                continue
    return "\n".join(out) + "\n"


def cached_cuasm(cubin_path: Path) -> str:
    data = cubin_path.read_bytes()
    key = hashlib.sha256(data).hexdigest()[:20]
    path = CACHE / "cuasm" / f"{key}.cuasm"
    if path.exists():
        return path.read_text()
    text = cubin_to_cuasm(data)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return text


def load_modules(cubins: list[Path], jobs: int = 4) -> list[tuple[Path, Module]]:
    with ThreadPoolExecutor(jobs) as pool:
        texts = list(pool.map(cached_cuasm, cubins))
    return [(p, parse_cuasm(t)[0]) for p, t in zip(cubins, texts, strict=True)]


def compile_evidence(arch: str) -> list[Path]:
    outdir = CACHE / arch
    outdir.mkdir(parents=True, exist_ok=True)
    jobs = []
    for src in SOURCES:
        for target in NVCC_ARCH.get(arch, [arch]):
            for fi, flags in enumerate(FLAG_SETS):
                out = outdir / f"{src.stem}.{target}.f{fi}.cubin"
                if not out.exists():
                    jobs.append(["nvcc", "-cubin", f"-arch={target}", *flags, "-o", str(out), str(src)])

    def run(cmd: list[str]) -> None:
        subprocess.run(cmd, capture_output=True, cwd=tempfile.gettempdir())

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(run, jobs))
    found = sorted(outdir.glob("*.cubin"))
    corpus = ROOT / ".cache" / "corpus"
    found += sorted((corpus / arch).glob("*.cubin"))
    if arch == "sm_90":
        found += sorted((corpus / "sm_90a").glob("*.cubin"))
    return found


# ------------------------------------------------------------------ classification


def _opcode_of(text: str) -> tuple[str, tuple[str, ...], bool]:
    body = text.strip()
    never = body.startswith("@!PT")
    if body.startswith("@"):
        body = body.split(None, 1)[1]
    head = body.split()[0].rstrip(";")
    op, *mods = head.split(".")
    return op, tuple(mods), never


def classify(modules: list[tuple[Path, Module]]) -> dict[str, dict]:
    """Per opcode: how often ptxas put a W/R scoreboard on it (placeholders @!PT excluded)."""
    from sass_lsp.analysis.program import decode_ctrl

    stats: dict[str, dict] = defaultdict(lambda: {"n": 0, "w": 0, "r": 0})
    for _p, mod in modules:
        for sec in mod.sections:
            if not sec.name.startswith(".text."):
                continue
            for ins in sec.instructions:
                op, _mods, never = _opcode_of(ins.text)
                if never:
                    continue
                c = decode_ctrl(ins.ctrl)
                st = stats[op]
                st["n"] += 1
                st["w"] += c.write_sb is not None
                st["r"] += c.read_sb is not None
    return dict(stats)


# Where ptxas's own schedules put an opcode in the other pipe class. On sm_90, sm_100a and sm_120 every
# alu<->fma register pair ptxas emits is >= 5 cycles apart except VIADD<->IMAD, LOP3/IADD3 -> I2FP -> FSETP,
# SHF -> F2FP -> PRMT and FSEL/FFMA/FADD -> FCHK, which it places at 4: VIADD issues like IMAD there, I2FP
# and F2FP like the ALU, and FCHK (variable latency, like MUFU) reads both at 4. The H200 agrees: its
# calibrated alu<->fma latency is 5 (IADD3->IMAD, IMAD->IADD3), and swaps that left LOP3->IMAD and
# IMAD->LEA at 4 cycles gave wrong results (hazard_hardware_h200_run2.log in
# benchmarks/results/hazard_hardware_h200.tar.xz).
PIPE_BY_ARCH: dict[str, dict[str, str]] = {
    arch: {"VIADD": "fma", "I2FP": "alu", "F2FP": "alu", "FCHK": "xu"}
    for arch in ("sm_90", "sm_100a", "sm_120")
}


def base_table(arch: str, stats: dict[str, dict], ref: str) -> dict:
    opcodes = {}
    for op, (pipe, dst, width, queue, flags, var) in sorted(OPCLASSES.items()):
        pipe = PIPE_BY_ARCH.get(arch, {}).get(op, pipe)
        row = {
            "pipe": pipe,
            "dst": dst,
            "width": width,
            "queue": queue,
            "flags": list(flags),
            "var": var,
            "source": "guess",
            "ref": "tools/isa/build_semantics.py OPCLASSES (notes §3.2 classes)",
        }
        st = stats.get(op)
        if st:
            seen_var = st["w"] + st["r"] > 0
            row["var"] = seen_var
            row["source"] = "exp"
            row["ref"] = f"{ref}: {st['w']}/{st['n']} with W, {st['r']}/{st['n']} with R"
        if not row["var"] and pipe == "mma" and not st:
            row["var"] = var
        opcodes[op] = row
    for op, st in stats.items():
        if op not in opcodes:
            opcodes[op] = {
                "pipe": "unknown",
                "dst": "n",
                "width": "",
                "queue": op,
                "flags": [],
                "var": st["w"] + st["r"] > 0,
                "source": "exp",
                "ref": f"{ref}: opcode not in OPCLASSES; {st['w']}/{st['n']} with W",
            }
    return opcodes


# ------------------------------------------------------------------ latency evidence

# Third-party rows (MESA sm80_instr_latencies.rs via notes §3.3): producer pipe -> consumer, operand, cycles.
MESA_SM80 = [
    ("alu", "alu", "reg", 4),
    ("alu", "fma", "reg", 5),
    ("alu", "mem", "addr", 5),
    ("fma", "alu", "reg", 5),
    ("fma", "fma", "reg", 4),
    ("fma", "mem", "addr", 5),
    ("fma_wide", "alu", "reg", 6),
    ("fp16", "alu", "reg", 5),
    ("fp16_mma", "alu", "reg", 10),
    ("alu", "*", "guard", 13),
    ("fma", "*", "guard", 13),
    ("alu", "alu", "pred", 4),
    ("fma", "alu", "pred", 5),
    ("uniform", "alu", "ur", 6),
    ("uniform", "fma", "ur", 6),
    ("umov", "*", "ur", 2),
    ("uniform", "*", "upred", 11),
]
MESA_REF = "Mesa NAK sm80_instr_latencies.rs (numbers provided by NVIDIA), via notes/cuasm-format.md §3.3"
# Assumed variable latencies for the issue timeline only (never used to excuse a missing wait).
VAR_LATENCY = {
    "lsu": (200, "3rd", "HF ga104-cuda-kernels doc (LDG ~200), notes §3.3 'Unverified figures'"),
    "mio": (20, "3rd", "HF ga104-cuda-kernels doc (LDS ~20), notes §3.3"),
    "xu": (16, "3rd", "HF ga104 doc / DocumentSASS (MUFU ~16-17), notes §3.3"),
    "const": (20, "guess", "constant cache hit, assumed like LDS"),
    "s2r": (20, "guess", "assumed"),
    "fp64": (16, "guess", "assumed"),
    "mma": (32, "3rd", "HF ga104 doc (HMMA ~32), notes §3.3"),
    "gmma": (64, "guess", "assumed"),
    "warp": (20, "guess", "assumed like LDS"),
    "default": (20, "guess", "assumed"),
}


def measure(arch: str, modules: list[tuple[Path, Module]], table: dict) -> dict:
    """Min ptxas stall distances per (producer pipe, consumer pipe, operand kind) and other params."""
    from sass_lsp.analysis.hazards import Checker
    from sass_lsp.analysis.program import kernels_of
    from sass_lsp.isa import semantics as S

    sem = S.Semantics(arch, table)
    S._effects.cache_clear()
    S.load_semantics.cache_clear()
    dist: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    bar_gaps: list[int] = []
    sb_gaps: list[int] = []
    uwar_gaps: list[tuple[str, int]] = []  # (writer's pipe, cycles)
    followers: set[str] = set()
    guard_seen: Counter[tuple[str, bool]] = Counter()  # (opcode, after a placeholder run) over every node

    def observe(nd, kind, p, info):  # noqa: ANN001
        if kind == "raw_fixed":
            ppipe, cpipe, okind, d, _u = info
            dist[(ppipe, cpipe, okind)].append(d)

    orig = S.load_semantics
    S.load_semantics = lambda a: sem  # the scanner looks the table up by arch
    try:
        for _p, mod in modules:
            for k in kernels_of(mod, sem):
                ch = Checker(k, sem, horizon=40)
                ch.observer = observe
                ch.run()
                bar_gaps.extend(ch.bar_gaps_seen)
                sb_gaps.extend(scoreboard_wait_gaps(k))
                uwar_gaps.extend(uniform_war_gaps(k))
                nodes = k.nodes
                for i, nd in enumerate(nodes):
                    if nd.eff.never and nd.eff.opcode == "LDS" and i + 1 < len(nodes):
                        followers.add(nodes[i + 1].eff.opcode)
                guard_seen.update(placeholder_cover(k))
    finally:
        S.load_semantics = orig
        S._effects.cache_clear()
    return {
        "dist": dist,
        "bar_gaps": bar_gaps,
        "sb_gaps": sb_gaps,
        "uwar_gaps": uwar_gaps,
        "followers": followers,
        "guard_seen": guard_seen,
    }


def placeholder_cover(k) -> list[tuple[str, bool]]:  # noqa: ANN001  (an analysis.program.Kernel)
    """(opcode, whether a `@!PT LDS RZ, [RZ]` placeholder precedes it in its block since the last BAR) per
    executing instruction: the evidence for SASS018 (the checker's walk, analysis/check.py `_unguarded`)."""
    out = []
    for b in k.blocks:
        covered = False
        for nd in k.nodes[b.start : b.end]:
            if nd.eff.never:
                covered = covered or nd.eff.opcode == "LDS"
            elif nd.eff.opcode == "BAR":
                covered = False
            else:
                out.append((nd.eff.opcode, covered))
    return out


def guarded_opcodes(seen: Counter[tuple[str, bool]], candidates: tuple[str, ...] = ("LDGSTS",)) -> list[str]:
    """The candidates ptxas always issued after a placeholder run (seen at least once, never without)."""
    return [op for op in candidates if seen[(op, True)] and not seen[(op, False)]]


def uniform_war_gaps(k) -> list[tuple[str, int]]:  # noqa: ANN001  (an analysis.program.Kernel)
    """(writer's pipe, cycles) from a uniform-datapath instruction's read of a uniform register to the next
    write of it."""
    from sass_lsp.isa.semantics import UNIT_BASE

    gaps = []
    for b in k.blocks:
        nodes = k.nodes[b.start : b.end]
        for i, r in enumerate(nodes):
            if r.eff.pipe not in ("uniform", "umov") or r.eff.variable or r.eff.never:
                continue
            for u in r.eff.use_units:
                if u < UNIT_BASE["UR"]:
                    continue
                d = r.ctrl.stall
                for w in nodes[i + 1 :]:
                    if u in w.eff.def_units:
                        gaps.append((w.eff.pipe, d))
                        break
                    d += w.ctrl.stall
    return gaps


def scoreboard_wait_gaps(k) -> list[int]:  # noqa: ANN001  (an analysis.program.Kernel)
    """Cycles from each instruction that sets a scoreboard to the first one in its block that waits on it."""
    gaps = []
    for b in k.blocks:
        nodes = k.nodes[b.start : b.end]
        for i, p in enumerate(nodes):
            for sb in {p.ctrl.write_sb, p.ctrl.read_sb} - {None}:
                d = p.ctrl.stall
                for c in nodes[i + 1 :]:
                    if c.ctrl.wait_mask >> sb & 1:
                        gaps.append(d)
                        break
                    d += c.ctrl.stall
    return gaps


# Priors that cap a derived row: ptxas distances seen only in loose code overstate latency. A row above
# its cap is clamped (noted). Values: MESA sm80 maxima (+1 slack) [3rd], guard/predicate 13-14 [3rd, exp].
CAPS = {"guard": 15, "pred": 14, "upred": 12, "ur": 13, "reg": 10, "reg_hi": 10, "addr": 10}
CAP_PIPE = {"mma": 34, "fp64": 14, "fp16_mma": 12, "r2ur": 13}


def latency_rows(arch: str, dist: dict, ref: str, old_rows: list[dict]) -> list[dict]:
    rows = [r for r in old_rows if r.get("source") == "measured"]
    by_prod: dict[tuple[str, str], list[int]] = defaultdict(list)
    for (pp, cp, ok), ds in sorted(dist.items()):
        lo = min(ds)
        cap = max(CAPS.get(ok, 10), CAP_PIPE.get(pp, 0))
        note = ""
        if lo > cap:
            lo, note = cap, f"clamped from {lo} to the prior cap {cap} (no tight pair observed)"
        by_prod[(pp, ok)].append(lo)
        rows.append(
            {
                "producer": pp,
                "consumer": cp,
                "operand": ok,
                "cycles": lo,
                "source": "exp",
                "ref": f"{ref}: min of {len(ds)} ptxas producer->consumer distances (upper bound)",
                "n": len(ds),
                "note": note,
            }
        )
    for (pp, ok), los in sorted(by_prod.items()):
        rows.append(
            {
                "producer": pp,
                "consumer": "*",
                "operand": ok,
                "cycles": min(los),
                "source": "exp",
                "ref": f"{ref}: min over observed consumer pipes (fallback for unobserved pairs)",
            }
        )
    if arch in ("sm_80", "sm_86", "sm_89"):
        observed = {(r["producer"], r["consumer"], r["operand"]): r["cycles"] for r in rows}
        for pp, cp, ok, cyc in MESA_SM80:
            seen = observed.get((pp, cp, ok))
            note = "" if seen is None else f"ptxas min distance here: {seen}"
            if seen is not None and seen < cyc:
                continue  # ptxas output contradicts the vendor number for our classes: keep the evidence
            rows.append(
                {
                    "producer": pp,
                    "consumer": cp,
                    "operand": ok,
                    "cycles": cyc,
                    "source": "3rd",
                    "ref": MESA_REF,
                    "note": note,
                }
            )
    return rows


def build(arch: str) -> dict:
    cubins = compile_evidence(arch)
    modules = load_modules(cubins)
    ref = (
        f"ptxas CUDA 13.0 output, {len(cubins)} cubins (tools/isa/training, tests/kernels; .cache/semantics)"
    )
    stats = classify(modules)
    old_path = DATA / f"semantics_{arch}.json"
    old = json.loads(old_path.read_text()) if old_path.exists() else {}
    table = {
        "arch": arch,
        "generated_by": "tools/isa/build_semantics.py",
        "opcodes": base_table(arch, stats, ref),
        "variants": VARIANTS,
        "latency": [],
        "var_latency": {q: {"cycles": c, "source": s, "ref": r} for q, (c, s, r) in VAR_LATENCY.items()},
        "params": {},
    }
    ev = measure(arch, modules, table)
    table["latency"] = latency_rows(arch, ev["dist"], ref, old.get("latency", []))
    gaps = ev["bar_gaps"]
    params = {
        "max_stall_without_yield": {
            "value": 11,
            "source": "exp",
            "ref": "ptxas 13.0 corpora, all arches: '-' only with S01-S11",
        },
        "s00_opcodes": {
            "value": ["NOP", "BRA", "ERRBAR"],
            "source": "exp",
            "ref": "ptxas 13.0 corpora: S00 only on padding NOP, final self-BRA, ERRBAR",
        },
        "placeholder_followers": {
            "value": sorted(ev["followers"] | {"LDGSTS"}),
            "source": "exp",
            "ref": f"{ref}: opcodes following '@!PT LDS RZ, [RZ]'",
        },
    }
    if guarded := guarded_opcodes(ev["guard_seen"]):
        n = sum(ev["guard_seen"][(op, True)] for op in guarded)
        params["placeholder_guarded"] = {
            "value": guarded,
            "source": "exp",
            "ref": f"{ref}: all {n} such instructions follow a '@!PT LDS RZ, [RZ]' run in their block with "
            "no BAR between (the severity of SASS018 rests on hardware: benchmarks/hazard_hardware.py)",
        }
    if gaps:
        params["bar_sync_to_shared"] = {
            "value": min(gaps),
            "source": "exp",
            "ref": f"{ref}: min of {len(gaps)} BAR.SYNC->shared access distances",
        }
    if ev["sb_gaps"]:
        params["scoreboard_set_cycles"] = {
            "value": min(ev["sb_gaps"]),
            "source": "exp",
            "ref": f"{ref}: min of {len(ev['sb_gaps'])} setter-to-first-wait distances of a scoreboard",
        }
    if ev["uwar_gaps"]:
        by_writer: dict[str, int] = {}
        for pipe, gap in ev["uwar_gaps"]:
            by_writer[pipe] = min(gap, by_writer.get(pipe, gap))
        params["uniform_war_cycles"] = {
            "value": min(by_writer.values()),
            "by_writer": dict(sorted(by_writer.items())),
            "source": "exp",
            "ref": f"{ref}: min of {len(ev['uwar_gaps'])} uniform-datapath read-to-next-write distances, "
            "per writer pipe",
        }
    for name, row in old.get("params", {}).items():
        if row.get("source") == "measured":
            # A measured figure stays; a per-case split ptxas shows (by_writer) follows the evidence, never
            # below the measured value.
            split = params.get(name, {}).get("by_writer")
            if split:
                row = {**row, "by_writer": {k: max(v, int(row["value"])) for k, v in split.items()}}
            params[name] = row
        if name in params:
            params[name] = {**params[name], **_beyond_evidence(row, params[name])}
    table["params"] = params
    return effect_rows(table)


# Keys of a parameter row that record ptxas output seen beyond this script's evidence (the held-out corpus
# kernels), each with its source: kept across rebuilds, as measured rows are.
BEYOND_EVIDENCE = ("also", "early_readers", "early_readers_ref")


def _beyond_evidence(old: dict, new: dict) -> dict:
    """What ``old`` recorded beyond the evidence; ``also`` values are added to the rebuilt list."""
    kept = {k: old[k] for k in BEYOND_EVIDENCE if k in old}
    if "also" in kept and isinstance(new.get("value"), list):
        kept["value"] = sorted(set(new["value"]) | set(kept["also"]["value"]))
    return kept


def table_text(table: dict) -> str:
    return json.dumps(table, indent=1, sort_keys=True) + "\n"


def write_table(path: Path, table: dict) -> None:
    from sass_lsp.files import write_atomic

    write_atomic(path, table_text(table))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", action="append", help="arch(es) to build (default: all)")
    ap.add_argument(
        "--only-rows",
        action="store_true",
        help="rewrite only the effect rows (memory spaces, ordering, positional reads) of the existing "
        "tables: no compiling, no evidence; the other rows stay as they are",
    )
    args = ap.parse_args()
    DATA.mkdir(parents=True, exist_ok=True)
    if args.only_rows:
        for arch in args.arch or ARCHES:
            path = DATA / f"semantics_{arch}.json"
            table = effect_rows(json.loads(path.read_text()))
            write_table(path, table)
            print(arch, len(table["memory"]), "memory rows,", len(table["ordering"]), "ordering rows")
        return
    for arch in args.arch or ARCHES:
        table = build(arch)
        write_table(DATA / f"semantics_{arch}.json", table)
        print(
            arch,
            len(table["opcodes"]),
            "opcodes,",
            len(table["latency"]),
            "latency rows,",
            table["params"].get("bar_sync_to_shared"),
        )


if __name__ == "__main__":
    main()
