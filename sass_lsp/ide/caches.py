"""The editor core's caches keyed by text (line classes, line details, encoder results, checker findings,
timeline stretches) tied to the documents that are open: :func:`prune` drops what no open document holds.

Each cache is bounded on its own, but its bound is sized for a 20,000-instruction document, so without
pruning steady editing filled it (every edit makes new line texts) and closing a document freed nothing.
The server prunes when a document closes and every :data:`PRUNE_EVERY_EDITS` edits.
"""

from __future__ import annotations

from sass_lsp.ide import diagnostics, lexer, registers, timeline_view

PRUNE_EVERY_EDITS = 1000
KEEP_RECENT = 2000  # entries stored last that stay whatever the documents hold (undo, flipping back)
KEEP_RECENT_KERNELS = 8  # checker results and timeline stretches: per kernel / stretch, so fewer


def _prune_dict(cache: dict, live: set[str], key_text=lambda key: key) -> None:  # noqa: ANN001
    keys = list(cache)
    for key in keys[: max(0, len(keys) - KEEP_RECENT)]:
        if key_text(key) not in live:
            cache.pop(key, None)


def prune(live: set[str], extra_lru: tuple = ()) -> None:
    """Keep cached results for the line texts in ``live`` (and the most recent few); ``extra_lru``: the
    edge's own ``functools.lru_cache`` functions keyed by line text, cleared when they hold much more than
    ``live`` (they cannot drop single entries; what is live is recomputed on demand)."""
    _prune_dict(lexer._CLASSIFIED, live)
    with diagnostics._ENCODE_CACHE._lock:
        _prune_dict(diagnostics._ENCODE_CACHE, live, lambda key: key[1])
    for by_line in diagnostics._LINE_CACHE.values():
        with by_line._lock:
            _prune_dict(by_line, live)
    hazards = diagnostics._HAZARD_CACHE
    with hazards._lock:
        keys = list(hazards)
        for key in keys[: max(0, len(keys) - KEEP_RECENT_KERNELS)]:
            if not all(line in live for line in key[2]):
                hazards.pop(key, None)
    timeline_view._STRETCH_CACHE.prune(live, KEEP_RECENT_KERNELS)
    for fn in (lexer.line_detail, lexer.decode_control, registers.line_registers, *extra_lru):
        if fn.cache_info().currsize > 2 * len(live) + KEEP_RECENT:
            fn.cache_clear()
