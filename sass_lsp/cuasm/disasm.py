"""Split ``nvdisasm -hex`` output into per-section text and (pc, text, word) instruction lists.

The only module here that runs nvdisasm (through :mod:`sass_lsp.nvdisasm`); one call per cubin.
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass, field

from sass_lsp.nvdisasm import run_nvdisasm

_SECTION_RE = re.compile(r"\s*\.section\s+([^,\s]+)")
_INSTR_RE = re.compile(r"^(\s*)/\*([0-9a-fA-F]{4,})\*/(\s*)(.*?)\s*/\*\s*0x([0-9a-fA-F]{16})\s*\*/\s*$")
_BANNER_RE = re.compile(r"//-{5,} .* -{5,}\s*$")
_HEX_RE = re.compile(r"^\s*/\*\s*0x([0-9a-fA-F]{16})\s*\*/\s*$")


@dataclass
class DisasmInstr:
    pc: int
    text: str
    word: int


@dataclass
class DisasmSection:
    name: str
    header_line: str = ""  # the ".section" line as nvdisasm printed it
    lines: list[str] = field(default_factory=list)  # body lines after the .section line, hex removed
    instrs: list[DisasmInstr] = field(default_factory=list)


@dataclass
class Disassembly:
    preamble: list[str]
    sections: dict[str, DisasmSection]
    trailer: list[str]  # lines of the "SYMBOLS" block


def parse_disassembly(text: str) -> Disassembly:
    preamble: list[str] = []
    sections: dict[str, DisasmSection] = {}
    trailer: list[str] = []
    current: DisasmSection | None = None
    in_trailer = False
    pending: tuple[int, str, int, str] | None = None  # pc, text, low qword, line
    for line in text.splitlines():
        if pending is not None:
            hi = _HEX_RE.match(line)
            if hi and current is not None:
                pc, instr, low, head = pending
                current.instrs.append(DisasmInstr(pc, instr, low | int(hi.group(1), 16) << 64))
                current.lines.append(head)
                pending = None
                continue
            pending = None
        if re.match(r"//-+ SYMBOLS -+", line):
            in_trailer = True
            current = None
            continue
        sec = _SECTION_RE.match(line)
        if sec and line.strip().startswith(".section"):
            name = sec.group(1).strip('"')
            current = DisasmSection(name, line)
            sections[name] = current
            in_trailer = False
            continue
        if in_trailer:
            trailer.append(line)
            continue
        if current is None:
            preamble.append(line)
            continue
        if _BANNER_RE.match(line):
            continue  # the next section's banner; writers print their own
        m = _INSTR_RE.match(line)
        if m:
            head = f"{m.group(1)}/*{m.group(2)}*/{m.group(3)}{m.group(4)}"
            pending = (int(m.group(2), 16), m.group(4), int(m.group(5), 16), head)
            continue
        current.lines.append(line)
    return Disassembly(preamble, sections, trailer)


def disassemble(cubin: bytes) -> Disassembly:
    return parse_disassembly(run_nvdisasm(["-hex"], cubin))


def normalise_text(text: str) -> str:
    """Whitespace-insensitive form used to compare instruction texts."""
    text = text.strip()
    if text.endswith(";"):
        text = text[:-1]
    return " ".join(text.split()).replace(" ,", ",")


_F32_BITS = re.compile(r"(?<![\w.])0[fF]([0-9a-fA-F]{8})\b")


def texts_equivalent(source: str, disassembled: str) -> bool:
    """Same instruction text, allowing a float written as its f32 bits (``0f7fc00000``, as PTX and
    CuAssembler write it), which nvdisasm prints as its value (every quiet NaN as ``+QNAN``)."""
    a, b = normalise_text(source), normalise_text(disassembled)
    if a == b:
        return True
    if _F32_BITS.search(a):
        # each written-out float matches the operand nvdisasm prints in its place, if the values agree
        pattern = _F32_BITS.sub(lambda _m: r"([^\s,]+)", re.escape(a))
        m = re.fullmatch(pattern, b)
        return m is not None and all(
            _same_float(int(bits, 16), printed)
            for bits, printed in zip(_F32_BITS.findall(a), m.groups(), strict=True)
        )
    return False


def _same_float(bits: int, printed: str) -> bool:
    """f32 ``bits`` and a float nvdisasm printed (``0.5``, ``-INF``, ``+QNAN``) name the same value."""
    value = struct.unpack("<f", bits.to_bytes(4, "little"))[0]
    name = printed.lstrip("+-")
    if name.endswith("NAN"):
        return math.isnan(value) and (bits >> 31 == 1) == printed.startswith("-")
    try:
        return float(printed.replace("INF", "inf")) == value
    except ValueError:
        return False
