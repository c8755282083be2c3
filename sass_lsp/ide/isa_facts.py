"""Editor-facing opcode facts: one-line meanings and coarse latency classes for hover and completion.

These are hover texts, not timing data or operand roles: which registers an instruction reads and writes
is ``isa.semantics``'s (the checker's tables), and which opcodes and modifiers are valid the encoder's.
The texts are shown to users as they are, so they carry no provenance tags: where a class comes from is
said in the comments beside it.
"""

from __future__ import annotations

# opcode -> (meaning, latency class); the two latency classes are read in public sources (notes §3.2, §3.3),
# the class of each opcode is inferred from its family
_VAR = "variable latency: result guarded by a write scoreboard (W#), waited on with B#"
_FIX = "fixed latency: protected by the stall count of the producer's control field"
_CTRL = "control flow: ends the basic block"
_SYNC = "synchronisation"

OPCODES: dict[str, tuple[str, str]] = {
    "IMAD": ("integer multiply-add", _FIX),
    "IADD3": ("three-input integer add", _FIX),
    "IABS": ("integer absolute value", _FIX),
    "LOP3": ("three-input logic operation (LUT)", _FIX),
    "LEA": ("load effective address: (a << s) + b", _FIX),
    "SHF": ("funnel shift", _FIX),
    "SGXT": ("sign extend", _FIX),
    "SEL": ("select by predicate", _FIX),
    "MOV": ("move", _FIX),
    "CS2R": ("move special register to a register pair (fast path, e.g. SRZ = zero)", _FIX),
    "ISETP": ("integer compare and set predicate", _FIX),
    "FSETP": ("float compare and set predicate", _FIX),
    "PLOP3": ("three-input predicate logic", _FIX),
    "P2R": ("predicates to register", _FIX),
    "R2P": ("register to predicates", _FIX),
    "FADD": ("FP32 add", _FIX),
    "FMUL": ("FP32 multiply", _FIX),
    "FFMA": ("FP32 fused multiply-add", _FIX),
    "FMNMX": ("FP32 min/max", _FIX),
    "FSEL": ("FP32 select by predicate", _FIX),
    "HFMA2": ("packed FP16x2 fused multiply-add", _FIX),
    "HADD2": ("packed FP16x2 add", _FIX),
    "HMUL2": ("packed FP16x2 multiply", _FIX),
    "F2FP": ("pack two floats into a half/bfloat pair", _FIX),
    "VIADD": ("integer add (sm_90)", _FIX),
    "I2FP": ("integer to FP32 conversion (fixed latency form)", _FIX),
    "UIADD3": ("uniform three-input integer add", _FIX),
    "UIMAD": ("uniform integer multiply-add", _FIX),
    "ULOP3": ("uniform three-input logic operation", _FIX),
    "ULEA": ("uniform load effective address", _FIX),
    "USHF": ("uniform funnel shift", _FIX),
    "USGXT": ("uniform sign extend", _FIX),
    "USEL": ("uniform select", _FIX),
    "UISETP": ("uniform integer compare", _FIX),
    "UMOV": ("uniform move", _FIX),
    "ULDC": ("load a constant into a uniform register", _FIX),
    "R2UR": ("register to uniform register", _VAR),
    "S2UR": ("special register to uniform register", _VAR),
    "S2R": ("read a special register (thread/block id, clock ...)", _VAR),
    "LDC": ("load from a constant bank", _VAR),
    "LDG": ("load from global memory", _VAR),
    "LDS": ("load from shared memory", _VAR),
    "LDL": ("load from local memory", _VAR),
    "LD": ("generic load", _VAR),
    "LDSM": ("load matrix fragments from shared memory", _VAR),
    "LDGSTS": ("asynchronous copy global -> shared (cp.async)", _VAR),
    "LDGDEPBAR": ("commit a group of LDGSTS copies", _SYNC),
    "STG": ("store to global memory (sources read late: R# releases them)", _VAR),
    "STS": ("store to shared memory", _VAR),
    "STL": ("store to local memory", _VAR),
    "ST": ("generic store", _VAR),
    "ATOM": ("atomic operation on generic memory", _VAR),
    "ATOMG": ("atomic operation on global memory", _VAR),
    "ATOMS": ("atomic operation on shared memory", _VAR),
    "RED": ("reduction to global memory (no result)", _VAR),
    "SHFL": ("warp shuffle", _VAR),
    "MUFU": ("multi-function unit: rcp, rsq, sin, cos, ex2, lg2 ...", _VAR),
    "I2F": ("integer to float conversion", _VAR),
    "F2I": ("float to integer conversion", _VAR),
    "F2F": ("float to float conversion", _VAR),
    "DADD": ("FP64 add", _VAR),
    "DMUL": ("FP64 multiply", _VAR),
    "DFMA": ("FP64 fused multiply-add", _VAR),
    "HMMA": ("tensor core matrix multiply-accumulate (warp)", _VAR),
    "HGMMA": ("warpgroup tensor core MMA (wgmma, sm_90a)", _VAR),
    "WARPGROUP": ("warpgroup arrive / wait on GMMA group scoreboard", _SYNC),
    "BAR": ("CTA barrier", _SYNC),
    "DEPBAR": ("wait until a scoreboard has at most N outstanding operations", _SYNC),
    "MEMBAR": ("memory barrier", _SYNC),
    "WARPSYNC": ("synchronise the threads of a warp", _SYNC),
    "BSSY": ("push a convergence barrier", _SYNC),
    "BSYNC": ("wait on a convergence barrier", _SYNC),
    "SYNCS": ("mbarrier operations (sm_90)", _VAR),
    "UTMALDG": ("TMA tensor load global -> shared", _VAR),
    "UTMASTG": ("TMA tensor store shared -> global", _VAR),
    "BRA": ("branch", _CTRL),
    "BRX": ("indirect branch", _CTRL),
    "JMP": ("absolute jump", _CTRL),
    "CALL": ("call", _CTRL),
    "RET": ("return", _CTRL),
    "EXIT": ("exit the thread", _CTRL),
    "NOP": ("no operation (padding)", _FIX),
    "VOTE": ("warp vote", _FIX),
    "POPC": ("population count", _VAR),
    "FLO": ("find leading one", _VAR),
    "BREV": ("bit reverse", _VAR),
}

BLOCK_ENDERS = frozenset({"BRA", "BRX", "JMP", "JMX", "RET", "EXIT", "CALL", "BPT"})


def opcode_doc(opcode: str) -> tuple[str, str] | None:
    return OPCODES.get(opcode)


# common sm_90 opcodes for completion when the encoder's tables are not available
COMMON_OPCODES = tuple(sorted(OPCODES))
