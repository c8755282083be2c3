"""Semantic tokens (whole document, time-sliced; or a range), encoded as LSP's relative integers."""

from __future__ import annotations

import asyncio
import time

from lsprotocol import types as lsp

from sass_lsp.ide import editing
from sass_lsp.server import convert
from sass_lsp.server.features.common import Shared
from sass_lsp.server.state import SLICE_S, SassLanguageServer, Snapshot, freeze_heap

OPTIONS = lsp.SemanticTokensRegistrationOptions(
    legend=lsp.SemanticTokensLegend(token_types=convert.TOKEN_TYPES, token_modifiers=[]),
    full=True,
    range=True,
    document_selector=[lsp.TextDocumentFilterPattern(pattern="**/*.cuasm")],
)


def register(ls: SassLanguageServer, _shared: Shared) -> None:
    @ls.feature(lsp.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL, OPTIONS)
    async def on_tokens_full(params: lsp.SemanticTokensParams) -> lsp.SemanticTokens:
        snap = ls.snapshot(params.text_document.uri)
        if snap is None:
            return lsp.SemanticTokens(data=[])
        return await encode_all(ls, snap)

    @ls.feature(lsp.TEXT_DOCUMENT_SEMANTIC_TOKENS_RANGE)
    def on_tokens_range(params: lsp.SemanticTokensRangeParams) -> lsp.SemanticTokens:
        snap = ls.snapshot(params.text_document.uri)
        if snap is None:
            return lsp.SemanticTokens(data=[])
        tokens = editing.semantic_tokens(snap.index, params.range.start.line, params.range.end.line)
        return encode(ls, snap, tokens)


def encode(ls: SassLanguageServer, snap: Snapshot, tokens: list) -> lsp.SemanticTokens:
    cols = ls.columns(snap.doc)
    lines = snap.doc.lines
    data: list[int] = []
    prev_line = prev_start = 0
    for tok in tokens:
        kind = convert.TOKEN_INDEX.get(tok.kind)
        if kind is None:
            continue
        if lines[tok.line].isascii():
            start, length = tok.start, tok.length
        else:
            start = cols.to_client(tok.line, tok.start)
            length = cols.to_client(tok.line, tok.start + tok.length) - start
        delta_line = tok.line - prev_line
        delta_start = start - prev_start if delta_line == 0 else start
        data += [delta_line, delta_start, length, kind, 0]
        prev_line, prev_start = tok.line, start
    return lsp.SemanticTokens(data=data)


async def encode_all(ls: SassLanguageServer, snap: Snapshot) -> lsp.SemanticTokens:
    """Whole-document tokens, time-sliced; ASCII lines use a per-line-text cache of their encoded row."""
    lines = snap.doc.lines
    data: list[int] = []
    prev_line = 0
    t_slice = time.perf_counter()
    for line_no, text in enumerate(lines):
        if not text or text.isspace():
            continue
        if text.isascii():
            row = convert.token_row(text)
            if row:
                data.append(line_no - prev_line)
                data += row
                prev_line = line_no
        else:
            sub = encode(ls, snap, editing.semantic_tokens(snap.index, line_no, line_no)).data
            if sub:
                data.append(line_no - prev_line)
                data += sub[1:]
                prev_line = line_no
        if time.perf_counter() - t_slice > SLICE_S:
            freeze_heap()  # the line details just made stay cached
            await asyncio.sleep(0)
            t_slice = time.perf_counter()
    return lsp.SemanticTokens(data=data)
