"""Adapters to the core engines the IDE layer plugs into: the encoder (``sass_lsp.isa.encoder``) and the
hazard checker (``sass_lsp.analysis``). Each is imported lazily and may be absent or fail: the IDE then
degrades (no encoder diagnostics, no hazard findings) instead of failing.

Also the registry for extra code-action providers (reorder suggestions, GPU timing): a provider is a
callable ``(index, start_line, end_line, settings) -> list[CodeAction]`` registered with
:func:`register_action_provider`.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

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
        except Exception as exc:  # EncodeError, or a bug in the encoder: both are per-line problems
            message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
            if not type(exc).__name__.endswith("EncodeError"):
                log.warning("encoder raised %s on %r", type(exc).__name__, text, exc_info=True)
                message = f"internal encoder error ({type(exc).__name__}): {message}"
            return EncodeProblem(
                message, int(getattr(exc, "col", 0) or 0), str(getattr(exc, "hint", "") or "")
            )
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
                module = importlib.import_module("sass_lsp.isa.encoder")
                _encoders[arch] = EncoderAdapter(module.Encoder.for_arch(arch), arch)
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
    """A checker finding in editor terms (0-based lines and columns)."""

    code: str
    severity: str
    line: int
    col: int
    end_line: int
    end_col: int
    message: str
    related: tuple[Related, ...] = ()
    fixes: tuple[Any, ...] = ()  # the checker's own fix objects, passed to code actions as is


def _analysis_attr(*names: str) -> Callable[..., Any] | None:
    """The first of ``names`` found in ``sass_lsp.analysis`` or its ``check``/``timeline`` modules."""
    for module_name in ("sass_lsp.analysis", "sass_lsp.analysis.check", "sass_lsp.analysis.timeline"):
        try:
            module = importlib.import_module(module_name)
        except Exception:
            continue
        for name in names:
            func = getattr(module, name, None)
            if callable(func):
                return func
    return None


def _checker() -> Callable[..., Any] | None:
    return _analysis_attr("check_module")


def _timeline() -> Callable[..., Any] | None:
    return _analysis_attr("issue_timeline", "timeline_module", "timeline")


def checker_available() -> bool:
    return _checker() is not None


def _as_related(obj: Any) -> Related | None:
    try:
        if isinstance(obj, tuple):
            line, col, message = obj[0], obj[1], obj[-1]
            return Related(int(line) - 1, max(0, int(col) - 1), max(0, int(col) - 1), str(message))
        line = int(obj.line) - 1
        col = max(0, int(getattr(obj, "col", 1)) - 1)
        end_col = max(col, int(getattr(obj, "end_col", col + 1)) - 1)
        return Related(line, col, end_col, str(getattr(obj, "message", "")))
    except Exception:
        return None


def run_checker(module: Any, arch: str) -> list[Finding]:
    """Run ``check_module``; convert its 1-based findings to 0-based editor findings."""
    check = _checker()
    if check is None:
        return []
    out: list[Finding] = []
    for raw in check(module, arch):
        line = int(raw.line) - 1
        col = max(0, int(getattr(raw, "col", 1)) - 1)
        end_line = int(getattr(raw, "end_line", raw.line) or raw.line) - 1
        end_col = max(0, int(getattr(raw, "end_col", col + 2) or col + 2) - 1)
        related = tuple(
            r for r in (_as_related(x) for x in getattr(raw, "related", ()) or ()) if r is not None
        )
        out.append(
            Finding(
                str(getattr(raw, "code", "hazard")),
                str(getattr(raw, "severity", "warning")),
                line,
                col,
                max(line, end_line),
                end_col,
                str(raw.message),
                related,
                tuple(getattr(raw, "fixes", ()) or ()),
            )
        )
    return out


def run_timeline(module: Any, arch: str) -> Any | None:
    timeline = _timeline()
    if timeline is None:
        return None
    try:
        return timeline(module, arch)
    except Exception:
        log.warning("timeline failed", exc_info=True)
        return None


# ----------------------------------------------------------------------------------- action registry

ActionProvider = Callable[..., list[Any]]
_action_providers: dict[str, ActionProvider] = {}


def register_action_provider(name: str, provider: ActionProvider) -> None:
    """Plug in extra code actions (reorder, GPU timing); called with (index, start, end, settings)."""
    _action_providers[name] = provider


def action_providers() -> dict[str, ActionProvider]:
    return dict(_action_providers)
