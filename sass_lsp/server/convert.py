"""Conversions between LSP and the editor-terms core (``from_lsp_*`` / ``to_lsp_*``).

The core counts columns in code points; LSP clients count in the negotiated position encoding (UTF-16
unless the client offers another). Only lines with non-ASCII characters need converting.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from functools import lru_cache

from lsprotocol import types as lsp

from sass_lsp.ide.actions import CodeAction
from sass_lsp.ide.backends import Related
from sass_lsp.ide.diagnostics import Diag
from sass_lsp.ide.editing import MAX_TOKEN_COL, CompletionItem, TextEdit
from sass_lsp.ide.lexer import line_detail
from sass_lsp.ide.outline import Fold, Symbol

ENCODING = {"utf-16": "utf-16-le", "utf-8": "utf-8", "utf-32": "utf-32-le"}


class Columns:
    """Column conversion for one document (code points <-> client units). A non-ASCII line's offsets are
    computed once per line (a prefix sum), so converting every token of a long line stays linear."""

    def __init__(self, lines: tuple[str, ...] | list[str], encoding: str = "utf-16") -> None:
        self.lines = lines
        self.encoding = encoding
        self._prefix: dict[int, list[int]] = {}

    def _line(self, line: int) -> str:
        return self.lines[line] if 0 <= line < len(self.lines) else ""

    def _units_before(self, line: int, text: str) -> list[int]:
        """``out[i]``: client units before code point ``i`` of the line (``len(text) + 1`` entries)."""
        prefix = self._prefix.get(line)
        if prefix is None:
            encoding = self.encoding
            prefix = [0, *itertools.accumulate(_units(ch, encoding) for ch in text)]
            if len(self._prefix) > 64:  # one request touches a few lines at a time; keep this small
                self._prefix.clear()
            self._prefix[line] = prefix
        return prefix

    def from_client(self, line: int, character: int) -> int:
        text = self._line(line)
        if text.isascii() or self.encoding == "utf-32":
            return character
        prefix = self._units_before(line, text)
        return min(bisect.bisect_left(prefix, character), len(text))

    def to_client(self, line: int, col: int) -> int:
        text = self._line(line)
        if text.isascii() or self.encoding == "utf-32":
            return col
        prefix = self._units_before(line, text)
        return prefix[max(0, min(col, len(text)))]

    def position(self, line: int, col: int) -> lsp.Position:
        return lsp.Position(line=max(0, line), character=self.to_client(line, max(0, col)))

    def span(self, line: int, start: int, end: int) -> lsp.Range:
        """A range within one line (most editor-core results are such spans)."""
        return self.range(line, start, line, end)

    def range(self, line: int, col: int, end_line: int, end_col: int) -> lsp.Range:
        return lsp.Range(start=self.position(line, col), end=self.position(end_line, end_col))


def _units(ch: str, encoding: str) -> int:
    code = ord(ch)
    if encoding == "utf-8":
        return 1 if code < 0x80 else 2 if code < 0x800 else 3 if code < 0x10000 else 4
    return 2 if code > 0xFFFF else 1


SEVERITY = {
    "error": lsp.DiagnosticSeverity.Error,
    "warning": lsp.DiagnosticSeverity.Warning,
    "information": lsp.DiagnosticSeverity.Information,
    "hint": lsp.DiagnosticSeverity.Hint,
}


def to_lsp_diagnostic(d: Diag, cols: Columns, uri: str) -> lsp.Diagnostic:
    related = [to_lsp_related(r, cols, uri) for r in d.related] or None
    return lsp.Diagnostic(
        range=cols.range(d.line, d.col, d.end_line, d.end_col),
        message=d.message,
        severity=SEVERITY.get(d.severity, lsp.DiagnosticSeverity.Warning),
        code=d.code,
        source=d.source,
        related_information=related,
    )


def diagnostic_json(d: Diag, cols: Columns, uri: str) -> dict:
    """The same diagnostic as :func:`to_lsp_diagnostic`, as plain JSON-ready data."""
    start = {"line": d.line, "character": cols.to_client(d.line, d.col)}
    end = {"line": d.end_line, "character": cols.to_client(d.end_line, d.end_col)}
    out: dict = {
        "range": {"start": start, "end": end},
        "message": d.message,
        "severity": SEVERITY.get(d.severity, lsp.DiagnosticSeverity.Warning).value,
        "code": d.code,
        "source": d.source,
    }
    if d.related:
        out["relatedInformation"] = [
            {
                "location": {
                    "uri": uri,
                    "range": {
                        "start": {"line": r.line, "character": cols.to_client(r.line, r.col)},
                        "end": {"line": r.line, "character": cols.to_client(r.line, max(r.end_col, r.col))},
                    },
                },
                "message": r.message,
            }
            for r in d.related
        ]
    return out


def to_lsp_related(r: Related, cols: Columns, uri: str) -> lsp.DiagnosticRelatedInformation:
    return lsp.DiagnosticRelatedInformation(
        location=lsp.Location(uri=uri, range=cols.range(r.line, r.col, r.line, max(r.end_col, r.col))),
        message=r.message,
    )


SYMBOL_KIND = {
    "section": lsp.SymbolKind.Namespace,
    "kernel": lsp.SymbolKind.Function,
    "function": lsp.SymbolKind.Method,
    "label": lsp.SymbolKind.Key,
}


def to_lsp_symbol(s: Symbol, cols: Columns) -> lsp.DocumentSymbol:
    end_col = len(cols._line(s.end_line))
    return lsp.DocumentSymbol(
        name=s.name or "(unnamed)",
        kind=SYMBOL_KIND.get(s.kind, lsp.SymbolKind.Object),
        range=cols.range(s.line, 0, s.end_line, end_col),
        selection_range=cols.range(s.line, s.sel_start, s.line, s.sel_end),
        detail=s.detail or None,
        children=[to_lsp_symbol(c, cols) for c in s.children] or None,
    )


def to_lsp_fold(f: Fold) -> lsp.FoldingRange:
    kind = lsp.FoldingRangeKind.Comment if f.kind == "comment" else lsp.FoldingRangeKind.Region
    return lsp.FoldingRange(start_line=f.start, end_line=f.end, kind=kind)


COMPLETION_KIND = {
    "opcode": lsp.CompletionItemKind.Keyword,
    "modifier": lsp.CompletionItemKind.EnumMember,
    "register": lsp.CompletionItemKind.Variable,
    "label": lsp.CompletionItemKind.Reference,
    "snippet": lsp.CompletionItemKind.Snippet,
}


def to_lsp_completion(item: CompletionItem) -> lsp.CompletionItem:
    doc = (
        lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=item.documentation)
        if item.documentation
        else None
    )
    return lsp.CompletionItem(
        label=item.label,
        kind=COMPLETION_KIND.get(item.kind, lsp.CompletionItemKind.Text),
        detail=item.detail or None,
        documentation=doc,
        insert_text=item.insert_text,
        sort_text=item.sort_text,
    )


def to_lsp_text_edit(e: TextEdit, cols: Columns) -> lsp.TextEdit:
    return lsp.TextEdit(range=cols.range(e.line, e.start, e.end_line, e.end), new_text=e.new_text)


def to_lsp_code_action(
    a: CodeAction, cols: Columns, uri: str, version: int, diagnostics: list[lsp.Diagnostic]
) -> lsp.CodeAction | lsp.Command:
    if a.command and not a.edits:
        # a bare Command: lsprotocol's clients read any code action that has a command as a Command
        return lsp.Command(title=a.title, command=a.command, arguments=list(a.arguments))
    edit = to_lsp_workspace_edit(a.edits, cols, uri, version) if a.edits else None
    command = (
        lsp.Command(title=a.title, command=a.command, arguments=list(a.arguments)) if a.command else None
    )
    matching = [d for d in diagnostics if d.code in a.diagnostic_codes] or None
    return lsp.CodeAction(
        title=a.title,
        kind=a.kind,
        edit=edit,
        command=command,
        diagnostics=matching,
        is_preferred=a.preferred or None,
    )


def to_lsp_workspace_edit(
    edits: Sequence[TextEdit], cols: Columns, uri: str, version: int
) -> lsp.WorkspaceEdit:
    """One versioned document change: refused if the document has moved on, applied as one undo step."""
    return lsp.WorkspaceEdit(
        document_changes=[
            lsp.TextDocumentEdit(
                text_document=lsp.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version),
                edits=[to_lsp_text_edit(e, cols) for e in edits],
            )
        ]
    )


@lru_cache(maxsize=131072)
def token_row(line: str) -> tuple[int, ...]:
    """An ASCII line's semantic tokens as LSP integers, without the leading delta-line of the first token."""
    out: list[int] = []
    prev = 0
    first = True
    for start, end, kind in line_detail(line).tokens:
        index = TOKEN_INDEX.get(kind)
        if index is None or end <= start or start >= MAX_TOKEN_COL:
            continue
        if first:
            out += [start, end - start, index, 0]
            first = False
        else:
            out += [0, start - prev, end - start, index, 0]
        prev = start
    return tuple(out)


TOKEN_TYPES = [
    "keyword",  # opcode
    "modifier",  # modifier
    "variable",  # register
    "parameter",  # uniform register
    "enumMember",  # predicate
    "macro",  # control code
    "number",
    "label",
    "decorator",  # directive
    "comment",
    "string",
    "property",  # special register, memory space
]
TOKEN_INDEX = {
    "opcode": 0,
    "modifier": 1,
    "register": 2,
    "uniformRegister": 3,
    "predicate": 4,
    "controlCode": 5,
    "number": 6,
    "label": 7,
    "directive": 8,
    "comment": 9,
    "address": 9,
    "string": 10,
    "specialRegister": 11,
}
