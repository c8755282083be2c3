"""The LSP methods, one module per feature. Each module's ``register(ls, shared)`` adds its handlers; a
handler converts LSP in, calls one function of ``sass_lsp.ide`` (editor features) or ``sass_lsp.app`` (GPU
and policy use cases), and converts the answer out.

- ``lifecycle``   initialize, shutdown, settings
- ``documents``   didOpen / didChange / didSave / didClose
- ``navigation``  definition, references, highlights, symbols, folding
- ``hover``       hover (with stall timeline and profile figures)
- ``editing``     completion, formatting
- ``tokens``      semantic tokens
- ``actions``     code actions (quick fixes, reorder suggestions), ``sass-lsp.suggestReorders``
- ``lenses``      code lenses, inlay hints
- ``files``       ``sass-lsp.disassemble`` / ``assemble`` / ``check``
- ``gpu``         ``sass-lsp.timeEdit``, ``sass-lsp.optimizeSchedule``
- ``common``, ``views``  what they share: stores, positions, progress; cached timelines and profiles
"""

from __future__ import annotations

from sass_lsp.server.features import (
    actions,
    documents,
    editing,
    files,
    gpu,
    hover,
    lenses,
    lifecycle,
    navigation,
    tokens,
)
from sass_lsp.server.features.common import Shared
from sass_lsp.server.state import SassLanguageServer

MODULES = (lifecycle, documents, navigation, hover, editing, tokens, actions, lenses, files, gpu)


def register(ls: SassLanguageServer) -> None:
    """Add every feature's handlers to ``ls``."""
    shared = Shared.of(ls)
    for module in MODULES:
        module.register(ls, shared)
