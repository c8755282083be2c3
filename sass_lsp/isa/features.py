"""Instruction -> (form keys, GF(2) feature names). Shared by the encoder and the table builder.

The encoding of one form is modelled as XOR-linear over GF(2): ``word = XOR of W[f] for active f``.
Features are the bias, one-hot tokens (modifiers, prefix ops, suffixes, enumerated names) and the bits of
every numeric value (register indices, immediates as 64-bit two's complement, float immediates as IEEE
bits, branch targets as ``target - (pc + 16)``, constant-bank numbers and offsets).

Two keys per instruction: the *general* key (opcode + operand kind tags; opcode modifiers are tokens)
and the *specific* key (general key + the exact modifier string; no modifier tokens). The specific model
is exact for combinations seen in training; the general one covers unseen modifier combinations.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .syntax import REG_ZERO, Instruction, Operand, Reg

BIAS = "1"
MASK64 = (1 << 64) - 1
_TYPE_MOD = re.compile(
    r"^(?:U|S|F|BF|E|TF|B|I)\d+(?:X\d+)?$|^(?:E4M3|E5M2|E2M1|E3M2|E2M3|UE8M0|UE4M3|TF32|BF16)$"
)
_GMMA_OPS = re.compile(r"^[HIQB]GMMA$")
_GMMA_SHAPE = re.compile(r"^(\d+)x(\d+)x(\d+)$")
# opcodes whose float immediates are f16 pairs / f64 high halves; everything else is f32
_F16_OPS = re.compile(r"^(HADD2|HFMA2|HMUL2|HSET2|HSETP2|HMNMX2|VHMNMX|HMMA)")
_F64_OPS = re.compile(r"^(DADD|DFMA|DMUL|DSETP|DMNMX|DSET)")


@dataclass(frozen=True)
class FeatureSet:
    general_key: str
    specific_key: str
    tokens: tuple[str, ...]  # one-hot tokens (incl. modifier tokens, used by the general model only)
    bits: tuple[str, ...]  # value-bit features that are 1
    mod_tokens: tuple[str, ...]  # the subset of tokens that are opcode modifiers


class FeatureError(ValueError):
    def __init__(self, message: str, col: int = 0, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.col = col
        self.hint = hint


def _bits(prefix: str, value: int, width: int = 64) -> list[str]:
    value &= (1 << width) - 1
    return [f"{prefix}{k}" for k in range(width) if value >> k & 1]


# Bits of the special values nvdisasm prints by name, per immediate format (f16, bf16, f32, f64's high
# half). A NaN's payload is not in the text: QNAN takes IEEE's default NaN (the quiet bit alone:
# 0x7fc00000, which ptxas writes for a NaN constant of FSEL), SNAN the smallest payload; the sign is the
# literal's.
_SPECIAL = {
    "INF": (0x7C00, 0x7F80, 0x7F800000, 0x7FF00000),
    "QNAN": (0x7E00, 0x7FC0, 0x7FC00000, 0x7FF80000),
    "NAN": (0x7E00, 0x7FC0, 0x7FC00000, 0x7FF80000),
    "SNAN": (0x7C01, 0x7F81, 0x7F800001, 0x7FF00001),
}
_SIGN = (0x8000, 0x8000, 0x80000000, 0x80000000)
_BF16 = ".BF16_V2"  # the paired-half opcodes' modifier that makes their immediates bf16


def float_op(ins: Instruction) -> str:
    """What decides the format of ``ins``'s float immediates (the argument of :func:`float_bits`): the
    opcode, with ``.BF16_V2`` kept (HFMA2.BF16_V2's immediates are bf16, nvdisasm prints them as floats)."""
    return ins.opcode + _BF16 if "BF16_V2" in ins.modifiers else ins.opcode


def float_format(opcode: str) -> int:
    """Index of ``opcode``'s float immediate format (:func:`float_op`'s result) in :data:`_SPECIAL`'s
    tuples: 0 f16, 1 bf16, 2 f32, 3 f64's high half."""
    if opcode.endswith(_BF16):
        return 1
    return 0 if _F16_OPS.match(opcode) else 3 if _F64_OPS.match(opcode) else 2


FORMAT_WIDTH = (16, 16, 32, 32)
# (exponent shift from the f32 layout, mantissa bits) per format: a NaN's payload moves between formats as a
# conversion does (sign and the mantissa's top bits kept), so one arch-wide choice serves every format
_NAN_LAYOUT = ((16, 10), (16, 7), (0, 23), (0, 20))


def nan_to_f32(bits: int, fmt: int) -> int:
    """A NaN's field bits in format ``fmt`` (:func:`float_format`) as f32 bits (mantissa left-aligned)."""
    shift, mant = _NAN_LAYOUT[fmt]
    sign = bits >> (FORMAT_WIDTH[fmt] - 1) & 1
    return sign << 31 | 0x7F800000 | (bits & ((1 << mant) - 1)) << (23 - mant)


def nan_from_f32(bits: int, fmt: int) -> int | None:
    """f32 NaN bits in format ``fmt``, the mantissa truncated; None when nothing of the payload is left."""
    _, mant = _NAN_LAYOUT[fmt]
    payload = (bits & 0x7FFFFF) >> (23 - mant)
    if not payload:
        return None
    width = FORMAT_WIDTH[fmt]
    exp = (1 << (width - 1)) - 1 ^ ((1 << mant) - 1)  # every exponent bit
    return (bits >> 31) << (width - 1) | exp | payload


def special_float_bits(opcode: str, name: str, negative: bool) -> int:
    """The field bits of a float immediate nvdisasm prints as a name (``+INF``, ``-QNAN``, ``+SNAN``)."""
    width = float_format(opcode)
    return _SPECIAL[name][width] | (_SIGN[width] if negative else 0)


def f32_literal_bits(opcode: str, bits: int) -> int:
    """The field bits of a float immediate written as f32 bits (``0f7fc00000``) in the format of ``opcode``
    (:func:`float_op`'s result): the bits themselves in an f32 field; a NaN's payload moved as a conversion
    moves it; any other value converted exactly (:func:`float_bits`)."""
    fmt = float_format(opcode)
    if fmt == 2:
        return bits
    if bits & 0x7F800000 == 0x7F800000 and bits & 0x7FFFFF:
        field = nan_from_f32(bits, fmt)
        if field is None:
            raise FeatureError(
                f"the NaN 0f{bits:08x} loses its payload in the {opcode} field",
                0,
                "write +QNAN, or a NaN whose payload has bits in the format's mantissa",
            )
        return field
    return float_bits(opcode, struct.unpack("<f", bits.to_bytes(4, "little"))[0])


def is_nan_name(op: Operand) -> bool:
    """A float immediate printed as a NaN name: its payload is not in the text."""
    return op.kind == "fimm" and isinstance(op.fvalue, str) and op.fvalue.endswith("NAN")


def nan_token(i: int, op: Operand) -> str:
    """The name of operand ``i``'s NaN literal (``o2=-QNAN``): a token, or a key of ``nan_bits``."""
    return f"o{i}={'-' if op.neg else '+'}{op.fvalue}"


def float_bits(opcode: str, value: float) -> int:
    try:
        if opcode.endswith(_BF16):  # bf16: the high half of the f32, which nvdisasm prints exactly
            bits = struct.unpack("<I", struct.pack("<f", value))[0]
            if bits & 0xFFFF:
                raise OverflowError("not a bf16 value")
            return bits >> 16
        if _F16_OPS.match(opcode):
            return struct.unpack("<H", struct.pack("<e", value))[0]
        if _F64_OPS.match(opcode):
            return struct.unpack("<Q", struct.pack("<d", value))[0] >> 32
        return struct.unpack("<I", struct.pack("<f", value))[0]
    except (OverflowError, struct.error) as exc:
        raise FeatureError(f"float immediate {value} does not fit the {opcode} field", 0, str(exc)) from None


def operand_tag(op: Operand) -> str:
    if op.kind == "reg":
        assert op.reg is not None
        return op.reg.kind
    if op.kind == "cbank":
        inner = "+".join(p.reg.kind for p in op.parts if p.reg is not None)
        return f"{op.name}[{inner}]"
    if op.kind == "addr":
        inner = "+".join(p.reg.kind for p in op.parts if p.reg is not None)
        space = op.name or ""
        return f"{space}A[{inner}]"
    return {"sreg": "SR", "name": "N", "imm": "I", "reloc": "I", "fimm": "F", "label": "L", "set": "S"}[
        op.kind
    ]


def modifier_features(opcode: str, modifiers: Sequence[str]) -> tuple[list[str], list[str]]:
    """(modifier tokens, value bits) of an opcode's modifiers. Type modifiers are numbered by position. A
    warpgroup MMA's shape ``64xNxK`` is a field: N/8 - 1 as value bits (``s.n0``...) and ``m:64x_xK`` a
    token, so a shape is known because the field is (ptxas writes N = 8...256, each N its own value)."""
    tokens: list[str] = []
    bits: list[str] = []
    n_types = 0
    for mod in modifiers:
        shape = _GMMA_SHAPE.match(mod) if _GMMA_OPS.match(opcode) else None
        if shape is not None and int(shape.group(2)) % 8 == 0 and 8 <= int(shape.group(2)) <= 256:
            tokens.append(f"m:{shape.group(1)}x_x{shape.group(3)}")
            bits += _bits("s.n", int(shape.group(2)) // 8 - 1, 5)
        elif _TYPE_MOD.match(mod):
            tokens.append(f"m:{mod}#{n_types}")
            n_types += 1
        else:
            tokens.append(f"m:{mod}")
    return tokens, bits


def instruction_features(
    ins: Instruction,
    *,
    pc: int = 0,
    labels: Mapping[str, int] | None = None,
    label_value: int | None = None,
    nan_tokens: bool = True,
    ur_zero: int = REG_ZERO["UR"],
    nan_bits: Mapping[str, int] | None = None,
) -> FeatureSet:
    """``label_value`` overrides label resolution (raw-mode probing gives absolute targets directly).
    ``nan_tokens``: a NaN literal is a token (``o2=-QNAN``: a form trained on it knows the payload ptxas
    writes there); without, it is the bits of a default payload (:data:`_SPECIAL`), for other forms.
    ``ur_zero``: the field value of URZ on the arch (63 up to sm_90; 255 from sm_100 on, where UR63 is a
    register; the parser numbers both 63, so the operand's text tells them apart).
    ``nan_bits``: without NaN tokens, the field bits of a NaN literal by its token (``o2=+QNAN``): the
    payload ptxas writes there (:func:`nan_token`); a literal not in it takes :data:`_SPECIAL`'s."""

    def index(reg: Reg, text: str) -> int:
        zero = reg.kind == "UR" and reg.index == REG_ZERO["UR"] and "URZ" in text
        return ur_zero if zero else reg.index

    tags = [operand_tag(op) for op in ins.operands]
    general_key = " ".join([ins.opcode, *tags])
    specific_key = general_key + "|" + ".".join(ins.modifiers)
    tokens: list[str] = []
    mod_tokens, bits = modifier_features(ins.opcode, ins.modifiers)
    bits = list(bits)
    tokens += mod_tokens
    if ins.guard is not None:
        bits += _bits("g.r", ins.guard.index, 3)
        if ins.guard_neg:
            tokens.append("g:not")
        if ins.guard.kind == "UP":
            tokens.append("g:U")
    else:
        bits += _bits("g.r", 7, 3)
    n_sources = 0  # reuse slots count source operands: skip the destination and predicate operands
    for i, op in enumerate(ins.operands):
        p = f"o{i}"
        is_pred = op.kind == "reg" and op.reg is not None and op.reg.kind in ("P", "UP")
        if op.reuse:
            tokens.append(f"reuse.{n_sources}")
        if i > 0 and not is_pred:
            n_sources += 1
        for flag, name in ((op.neg, "neg"), (op.abs, "abs"), (op.not_, "not"), (op.inv, "inv")):
            if flag and op.kind != "fimm":
                tokens.append(f"{p}:{name}")
        tokens += [f"{p}.{s}" for s in op.suffixes]
        kind = op.kind
        if kind == "reg":
            assert op.reg is not None
            bits += _bits(f"{p}.r", index(op.reg, op.text), 8)
        elif kind in ("sreg", "name"):
            tokens.append(f"{p}={op.name}")
        elif kind == "imm":
            assert op.value is not None
            bits += _bits(f"{p}.i", op.value)
        elif kind == "reloc":
            pass  # the field holds 0 until the loader applies the relocation
        elif kind == "set":
            assert op.value is not None
            bits += _bits(f"{p}.i", op.value, 8)
        elif kind == "fimm":
            if op.fbits is not None:
                bits += _bits(f"{p}.i", f32_literal_bits(float_op(ins), op.fbits), 64)
            elif nan_tokens and is_nan_name(op):
                tokens.append(nan_token(i, op))
            elif isinstance(op.fvalue, str):  # a value bit pattern like any other float: forms share its bits
                value = (nan_bits or {}).get(nan_token(i, op), None) if is_nan_name(op) else None
                if value is None:
                    value = special_float_bits(float_op(ins), op.fvalue, op.neg)
                bits += _bits(f"{p}.i", value, 64)
            else:
                assert op.fvalue is not None
                bits += _bits(f"{p}.i", float_bits(float_op(ins), op.fvalue), 64)
        elif kind == "label":
            if label_value is not None:
                target = label_value
            elif labels is not None and op.name in labels:
                target = labels[op.name]
            else:
                raise FeatureError(
                    f"unknown label {op.name!r}", op.col, "define the label or pass its address"
                )
            bits += _bits(f"{p}.i", target - (pc + 16))
        elif kind in ("cbank", "addr"):
            if op.value is not None:
                bits += _bits(f"{p}.k", op.value, 8)
            if op.base is not None:
                bits += _bits(f"{p}.b", index(op.base, op.text), 8)
            for j, part in enumerate(op.parts):
                if part.reg is not None:
                    bits += _bits(f"{p}.p{j}.", index(part.reg, op.text), 8)
                    tokens += [f"{p}.p{j}.{s}" for s in part.suffixes]
                else:
                    bits += _bits(f"{p}.off", part.value)
    return FeatureSet(general_key, specific_key, tuple(tokens), tuple(bits), tuple(mod_tokens))
