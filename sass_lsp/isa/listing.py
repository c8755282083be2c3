"""Parse ``nvdisasm -hex`` listings into (section, pc, text, 128-bit word) records plus label addresses.

Each instruction prints the low qword on the text line and the high qword alone on the next line.
Used by the table builder and the coverage benchmark; the language server itself does not need it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .context import Context, ContextRule, section_contexts

_INS = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s*(.*?)\s*/\*\s*0x([0-9a-f]{16})\s*\*/\s*$")
_HI = re.compile(r"^\s*/\*\s*0x([0-9a-f]{16})\s*\*/\s*$")
_LABEL = re.compile(r"^([A-Za-z0-9._$@#]+):\s*$")
_SECTION = re.compile(r"^\s*\.section\s+([^,\s]+)")


@dataclass(frozen=True)
class ListedInstruction:
    section: str
    pc: int
    text: str  # without trailing ';'
    word: int


@dataclass
class Listing:
    instructions: list[ListedInstruction]
    labels: dict[str, dict[str, int]]  # section -> label -> pc


def parse_listing(text: str) -> Listing:
    out: list[ListedInstruction] = []
    labels: dict[str, dict[str, int]] = {}
    section = ""
    pending: list[str] = []
    lines = text.splitlines()
    idx = 0
    while idx < len(lines):
        line = lines[idx]
        idx += 1
        m = _SECTION.match(line)
        if m:
            section = m.group(1)
            continue
        m = _LABEL.match(line.strip())
        if m:
            pending.append(m.group(1))
            continue
        m = _INS.match(line)
        if not m or idx >= len(lines):
            continue
        hi = _HI.match(lines[idx])
        if not hi:
            continue
        idx += 1
        pc = int(m.group(1), 16)
        body = m.group(2).rstrip()
        if body.endswith(";"):
            body = body[:-1].rstrip()
        for name in pending:
            labels.setdefault(section, {})[name] = pc
        pending = []
        out.append(ListedInstruction(section, pc, body, int(m.group(3), 16) | int(hi.group(1), 16) << 64))
    # labels after the last instruction of a section (function end labels) point past it
    return Listing(out, labels)


def listing_contexts(rules: Sequence[ContextRule], listing: Listing) -> list[Context | None]:
    """Kernel context of every instruction, section by section (as the assembler computes it)."""
    by_section: dict[str, list[int]] = {}
    for i, li in enumerate(listing.instructions):
        by_section.setdefault(li.section, []).append(i)
    out: list[Context | None] = [None] * len(listing.instructions)
    for idxs in by_section.values():
        texts = [listing.instructions[i].text for i in idxs]
        for i, ctx in zip(idxs, section_contexts(rules, texts), strict=True):
            out[i] = ctx
    return out
