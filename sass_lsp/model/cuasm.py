"""Parsed `.cuasm` module: header fields, section blocks, text lines, symbol trailer and segments.

Every node keeps its 1-based source line so that later stages can report ``file:line:col``.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Field:
    """A ``.__elf_*`` / ``.__section_*`` / ``.__segment_*`` value."""

    name: str
    value: int | str
    line: int
    col: int


@dataclass
class Directive:
    name: str  # with the dot, e.g. ".byte"
    args: str  # raw argument text, comments removed
    line: int
    col: int
    args_col: int


@dataclass
class Label:
    name: str
    line: int
    col: int


@dataclass(slots=True)
class Instruction:
    ctrl: str  # text inside the brackets, e.g. "B------:R-:W0:-:S01"
    text: str  # instruction text up to and including ';' (whitespace as written)
    line: int
    ctrl_col: int
    text_col: int
    hidden: int = 0  # XOR mask from a trailing "// hidden 0x..." comment
    raw: int | None = None  # whole word from "// raw 0x..." (written where the encoder failed)


@dataclass
class RecordedReloc:
    """A ``// Relocation[i]`` comment: the original entry, used to keep the original order."""

    offset: int
    sym: int
    type: int
    addend: int | None
    line: int


Item = Directive | Label | Instruction


@dataclass
class SectionBlock:
    name: str
    line: int
    type_text: str  # "@progbits", "SHT_STRTAB", '@"SHT_CUDA_INFO"', ...
    section_args: str = ""  # the whole argument text of the .section line
    fields: dict[str, Field] = field(default_factory=dict)
    items: list[Item] = field(default_factory=list)
    relocs: list[RecordedReloc] = field(default_factory=list)

    def field_int(self, name: str, default: int = 0) -> int:
        f = self.fields.get(name)
        return f.value if f is not None and isinstance(f.value, int) else default

    @property
    def instructions(self) -> list[Instruction]:
        return [it for it in self.items if isinstance(it, Instruction)]


@dataclass
class SegmentBlock:
    type_name: str
    flags: int
    line: int
    fields: dict[str, Field] = field(default_factory=dict)


@dataclass
class Module:
    elf: dict[str, Field] = field(default_factory=dict)
    preamble: list[Directive] = field(default_factory=list)  # .headerflags/.elftype/.target if live
    sections: list[SectionBlock] = field(default_factory=list)
    trailer: list[Directive] = field(default_factory=list)  # SYMBOLS block
    segments: list[SegmentBlock] = field(default_factory=list)

    def section(self, name: str) -> SectionBlock | None:
        for sec in self.sections:
            if sec.name == name:
                return sec
        return None
