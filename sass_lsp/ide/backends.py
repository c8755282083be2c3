"""The IDE's view of two core engines: the encoder (``sass_lsp.isa.encoder``), whose tables load on first
use per arch and may be missing for an arch (then no encoder diagnostics), and the hazard checker
(``sass_lsp.analysis``), whose findings and typed fixes are converted to editor terms (0-based lines and
columns).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from dataclasses import dataclass
from typing import Any

from sass_lsp.analysis import check_module
from sass_lsp.analysis.findings import ClearReuse, Fix
from sass_lsp.isa.encoder import EncodeError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EncodeProblem:
    message: str
    col: int  # 0-based in the instruction text
    hint: str


class EncoderAdapter:
    """Wraps ``Encoder.for_arch(arch)``; ``encode`` returns None when fine, else an :class:`EncodeProblem`."""

    def __init__(self, encoder: Any, arch: str) -> None:
        self.encoder = encoder
        self.arch = arch

    def check(self, text: str, pc: int, labels: dict[str, int]) -> EncodeProblem | None:
        try:
            self.encoder.encode(text, pc=pc, labels=labels)
        except EncodeError as exc:
            return EncodeProblem(exc.message, exc.col, exc.hint)
        except Exception as exc:  # a bug in the encoder: a per-line problem, not a server failure
            log.warning("encoder raised %s on %r", type(exc).__name__, text, exc_info=True)
            return EncodeProblem(f"internal encoder error ({type(exc).__name__}): {exc}", 0, "")
        return None

    def known_opcodes(self) -> list[str]:
        try:
            return list(self.encoder.known_opcodes())
        except Exception:
            return []

    def known_modifiers(self, opcode: str) -> list[str]:
        try:
            return list(self.encoder.known_modifiers(opcode))
        except Exception:
            return []


_encoders: dict[str, EncoderAdapter | None] = {}
_encoders_lock = threading.Lock()  # the server loads tables in a thread; a second caller waits for it


def encoder_for(arch: str | None) -> EncoderAdapter | None:
    """The encoder for ``arch`` (None when there are no tables); the first call loads them (~0.2 s)."""
    if not arch:
        return None
    if arch in _encoders:
        return _encoders[arch]
    with _encoders_lock:
        if arch not in _encoders:
            try:
                from sass_lsp.isa.encoder import Encoder  # its tables load here (~0.2 s)

                _encoders[arch] = EncoderAdapter(Encoder.for_arch(arch), arch)
            except Exception as exc:
                log.info("no encoder for %s: %s", arch, exc)
                _encoders[arch] = None
    return _encoders[arch]


def encoder_loaded(arch: str) -> bool:
    """Whether :func:`encoder_for` would answer without loading tables."""
    return arch in _encoders


# --------------------------------------------------------------------------------------------- checker


@dataclass(frozen=True)
class Related:
    line: int  # 0-based
    col: int
    end_col: int
    message: str


@dataclass(frozen=True)
class Finding:
    """A checker finding in editor terms (0-based lines and columns), with its typed fixes (likewise)."""

    code: str
    severity: str
    line: int
    col: int
    end_line: int
    end_col: int
    message: str
    related: tuple[Related, ...] = ()
    fixes: tuple[Fix, ...] = ()


def _editor_fix(fix: Fix) -> Fix:
    if isinstance(fix, ClearReuse):
        return ClearReuse(fix.line - 1, fix.col - 1)
    return dataclasses.replace(fix, line=fix.line - 1)


def run_checker(module: Any, arch: str) -> list[Finding]:
    """Run ``check_module``; its 1-based findings as 0-based editor findings."""
    out: list[Finding] = []
    for raw in check_module(module, arch):
        line = raw.line - 1
        col = max(0, raw.col - 1)
        related = tuple(Related(r.line - 1, 0, 0, r.message) for r in raw.related)
        out.append(
            Finding(
                raw.code,
                raw.severity,
                line,
                col,
                max(line, raw.end_line - 1),
                max(0, raw.end_col - 1),
                raw.message,
                related,
                tuple(_editor_fix(f) for f in raw.fixes),
            )
        )
    return out
