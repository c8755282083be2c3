"""Document text as LSP sees it: lines split on ``\\n``, ``\\r\\n`` and ``\\r`` only; incremental edits
applied on the line list (the unchanged lines keep their identity, so per-line caches keep hitting).
Columns here are code points; the server converts client units (UTF-16 by default) at the edge.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class LineEdit:
    """Lines ``start .. start + n_old`` were replaced by ``new_lines``."""

    start: int
    n_old: int
    new_lines: tuple[str, ...]


_BREAK = re.compile(r"\r\n|\r|\n")


def split_with_breaks(text: str) -> tuple[list[str], list[str]]:
    """``text``'s lines and the line break ending each (``""`` for the last line)."""
    lines: list[str] = []
    breaks: list[str] = []
    pos = 0
    for m in _BREAK.finditer(text):
        lines.append(text[pos : m.start()])
        breaks.append(m.group())
        pos = m.end()
    lines.append(text[pos:])
    breaks.append("")
    return lines, breaks


@dataclass(frozen=True)
class Document:
    """Lines without their breaks; ``breaks[i]`` is the break that ends line ``i`` (``""`` for the last).
    ``breaks`` is empty when every break is ``eol`` (the common case: no second tuple to keep)."""

    uri: str
    version: int
    lines: tuple[str, ...]
    eol: str = "\n"
    breaks: tuple[str, ...] = ()

    @classmethod
    def from_text(cls, uri: str, version: int, text: str) -> Document:
        eol = "\r\n" if "\r\n" in text[:10000] else "\n"
        if "\r" not in text:
            return cls(uri, version, tuple(text.split("\n")), eol)
        lines, breaks = split_with_breaks(text)
        return cls(uri, version, tuple(lines), eol, _mixed(breaks, eol))

    def with_version(self, version: int) -> Document:
        return Document(self.uri, version, self.lines, self.eol, self.breaks)

    def line_break(self, line: int) -> str:
        """The break that ends ``line`` (``""`` after the last line)."""
        if line >= len(self.lines) - 1:
            return ""
        return self.breaks[line] if self.breaks else self.eol

    @property
    def text(self) -> str:
        if not self.breaks:
            return self.eol.join(self.lines)
        return "".join(line + brk for line, brk in zip(self.lines, self.breaks, strict=True))

    def apply(self, start: tuple[int, int], end: tuple[int, int], new_text: str, version: int) -> Document:
        """Replace the code-point range ``start``..``end`` (clamped to the document) by ``new_text``."""
        return self.apply_edit(start, end, new_text, version)[0]

    def apply_edit(
        self, start: tuple[int, int], end: tuple[int, int], new_text: str, version: int
    ) -> tuple[Document, LineEdit]:
        """Like :meth:`apply`, also saying which lines were replaced by which.

        Line breaks follow LSP: ``\r\n``, ``\r`` and ``\n`` each end a line, so a ``\r`` typed before an
        existing ``\n`` joins it into one break, and a ``\n`` typed after a lone ``\r`` likewise."""
        n_lines = len(self.lines)
        sl, sc = _clamp(start, self.lines)
        el, ec = _clamp(end, self.lines)
        if (el, ec) < (sl, sc):
            sl, sc, el, ec = el, ec, sl, sc
        head = self.lines[sl][:sc]
        tail = self.lines[el][ec:] + self.line_break(el)
        if not head and sl > 0 and self.line_break(sl - 1) == "\r" and (new_text + tail[:1]).startswith("\n"):
            sl -= 1  # a \n now right after a lone \r joins it into one break
            head = self.lines[sl] + "\r"
        region = head + new_text + tail
        if "\r" not in region and self.eol == "\n" and not self.breaks:
            middle = region.split("\n")
            if el < n_lines - 1:
                middle.pop()  # the part after the region's last break is line el + 1, kept as is
            lines = self.lines[:sl] + tuple(middle) + self.lines[el + 1 :]
            doc = Document(self.uri, version, lines, self.eol)
            return doc, LineEdit(sl, el - sl + 1, tuple(middle))
        new_lines, new_breaks = split_with_breaks(region)
        if el < n_lines - 1:
            new_lines.pop()
            new_breaks.pop()
        breaks = list(self.breaks) if self.breaks else [self.eol] * (n_lines - 1) + [""]
        lines = self.lines[:sl] + tuple(new_lines) + self.lines[el + 1 :]
        all_breaks = breaks[:sl] + new_breaks + breaks[el + 1 :]
        doc = Document(self.uri, version, lines, self.eol, _mixed(all_breaks, self.eol))
        return doc, LineEdit(sl, el - sl + 1, tuple(new_lines))


def _mixed(breaks: list[str], eol: str) -> tuple[str, ...]:
    """``breaks`` when they are not all ``eol`` (the last one, ``""``, aside), else ``()``."""
    if all(b == eol for b in breaks[:-1]):
        return ()
    return tuple(breaks)


def _clamp(pos: tuple[int, int], lines: tuple[str, ...]) -> tuple[int, int]:
    line, col = pos
    if line < 0:
        return 0, 0
    if line >= len(lines):
        return len(lines) - 1, len(lines[-1]) if lines else 0
    return line, max(0, min(col, len(lines[line])))
