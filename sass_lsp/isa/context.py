"""Kernel context: values that an instruction's text omits but other instructions of its kernel show.

On sm_8x nvdisasm prints ``LDG.E R2, [R2.64]`` without the memory descriptor, a uniform register pair
that the word names; the kernel loads that pair once, with ``ULDC.64 UR4, c[0x0][0x118]``. A
:class:`ContextRule` (data: the table builder finds which load explains which hidden field, see
``tools/isa/build_tables.py``) names such a load; :func:`section_contexts` gives every instruction of a
text section the values in force at it, and the encoder writes them into the fields the tables locate.
This is still encoding from text alone: the values come from other lines of the same listing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

Context = Mapping[str, int]  # rule name -> value (a register index), for one instruction


@dataclass(frozen=True)
class ContextRule:
    """``name`` takes the index of the first operand (a register) of ``<opcode> <reg>, <source>``."""

    name: str
    opcode: str  # e.g. 'ULDC.64'
    source: str  # the second operand's text, e.g. 'c[0x0][0x118]'
    width: int  # bits of the field the value fills

    def value(self, text: str) -> int | None:
        """The register index ``text`` loads, when it is this rule's load (unguarded)."""
        if not text.startswith(self.opcode) or text[len(self.opcode) : len(self.opcode) + 1] != " ":
            return None
        dest, sep, rest = text[len(self.opcode) + 1 :].partition(",")
        if not sep or rest.strip().rstrip(";").strip() != self.source:
            return None
        digits = dest.strip().lstrip("U").lstrip("R")
        return int(digits) if digits.isdigit() else None

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "opcode": self.opcode, "source": self.source, "width": self.width}

    @classmethod
    def from_json(cls, j: Mapping[str, object]) -> ContextRule:
        return cls(str(j["name"]), str(j["opcode"]), str(j["source"]), int(j["width"]))  # type: ignore[call-overload]


def section_contexts(rules: Sequence[ContextRule], texts: Sequence[str]) -> list[Context | None]:
    """One context per text: each rule's value from the last load before it, or from the section's first
    load where none comes before (a kernel loads its descriptor once, near the top); None without rules."""
    if not rules:
        return [None] * len(texts)
    loads: list[tuple[int, str, int]] = []  # (index, rule name, value)
    opcodes = tuple({rule.opcode for rule in rules})
    for i, text in enumerate(texts):
        if text.startswith(opcodes):  # a cheap test first: few texts are loads
            for rule in rules:
                value = rule.value(text)
                if value is not None:
                    loads.append((i, rule.name, value))
    if not loads:
        return [None] * len(texts)
    current: dict[str, int] = {}
    for _, name, value in loads:
        current.setdefault(name, value)
    out: list[Context | None] = []
    shared: Context = dict(current)
    pos = 0
    for i in range(len(texts)):
        while pos < len(loads) and loads[pos][0] < i:
            _, name, value = loads[pos]
            if current.get(name) != value:
                current[name] = value
                shared = dict(current)
            pos += 1
        out.append(shared)
    return out
