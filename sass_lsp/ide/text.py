"""Document text as LSP sees it: lines split on ``\\n``, ``\\r\\n`` and ``\\r`` only; incremental edits
applied on the line list (the unchanged lines keep their identity, so per-line caches keep hitting).
Columns here are code points; the server converts client units (UTF-16 by default) at the edge.
"""

from __future__ import annotations

from dataclasses import dataclass

from sass_lsp.ide.lexer import split_lines


@dataclass(frozen=True)
class LineEdit:
    """Lines ``start .. start + n_old`` were replaced by ``new_lines``."""

    start: int
    n_old: int
    new_lines: tuple[str, ...]


@dataclass(frozen=True)
class Document:
    uri: str
    version: int
    lines: tuple[str, ...]
    eol: str = "\n"

    @classmethod
    def from_text(cls, uri: str, version: int, text: str) -> Document:
        eol = "\r\n" if "\r\n" in text[:10000] else "\n"
        return cls(uri, version, tuple(split_lines(text)), eol)

    @property
    def text(self) -> str:
        return self.eol.join(self.lines)

    def apply(self, start: tuple[int, int], end: tuple[int, int], new_text: str, version: int) -> Document:
        """Replace the code-point range ``start``..``end`` (clamped to the document) by ``new_text``."""
        return self.apply_edit(start, end, new_text, version)[0]

    def apply_edit(
        self, start: tuple[int, int], end: tuple[int, int], new_text: str, version: int
    ) -> tuple[Document, LineEdit]:
        """Like :meth:`apply`, also saying which lines were replaced by which."""
        n_lines = len(self.lines)
        sl, sc = _clamp(start, self.lines)
        el, ec = _clamp(end, self.lines)
        if (el, ec) < (sl, sc):
            sl, sc, el, ec = el, ec, sl, sc
        head = self.lines[sl][:sc] if sl < n_lines else ""
        tail = self.lines[el][ec:] if el < n_lines else ""
        middle = split_lines(head + new_text + tail)
        lines = self.lines[:sl] + tuple(middle) + self.lines[el + 1 :]
        return Document(self.uri, version, lines, self.eol), LineEdit(sl, el - sl + 1, tuple(middle))


def _clamp(pos: tuple[int, int], lines: tuple[str, ...]) -> tuple[int, int]:
    line, col = pos
    if line < 0:
        return 0, 0
    if line >= len(lines):
        return len(lines) - 1, len(lines[-1]) if lines else 0
    return line, max(0, min(col, len(lines[line])))
