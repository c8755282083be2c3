"""Plain data shared by the cuasm parser, writer, assembler and the analyses (no IO)."""

from sass_lsp.model.cuasm import (
    Directive,
    Field,
    Instruction,
    Item,
    Label,
    Module,
    RecordedReloc,
    SectionBlock,
    SegmentBlock,
)
from sass_lsp.model.diagnostics import Diagnostic, has_errors

__all__ = [
    "Diagnostic",
    "Directive",
    "Field",
    "Instruction",
    "Item",
    "Label",
    "Module",
    "RecordedReloc",
    "SectionBlock",
    "SegmentBlock",
    "has_errors",
]
