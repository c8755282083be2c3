"""Code lenses (outline, the hot loop's predicted cost, GPU timing and profile, assemble/disassemble) and
inlay hints (stall cycles, the latest GPU timing)."""

from __future__ import annotations

import asyncio
import logging

from lsprotocol import types as lsp

from sass_lsp.ide import gpu_timing, outline, schedule_view
from sass_lsp.server.features.common import Shared, launch_spec_beside
from sass_lsp.server.features.documents import CMD_DISASSEMBLE
from sass_lsp.server.state import SassLanguageServer, Snapshot

log = logging.getLogger("sass_lsp.server")
CMD_ASSEMBLE = "sass-lsp.assemble"
TOP = lsp.Range(start=lsp.Position(0, 0), end=lsp.Position(0, 0))


def register(ls: SassLanguageServer, shared: Shared) -> None:
    @ls.feature(lsp.TEXT_DOCUMENT_CODE_LENS)
    async def on_code_lens(params: lsp.CodeLensParams) -> list[lsp.CodeLens]:
        uri = params.text_document.uri
        if uri.endswith(".cubin"):
            command = lsp.Command(title="Disassemble to .cuasm", command=CMD_DISASSEMBLE, arguments=[uri])
            return [lsp.CodeLens(range=TOP, command=command)]
        snap = ls.snapshot(uri)
        if snap is None:
            return []
        # the cost model simulates the hot loop: tens of ms per kernel, so in a thread (cached per version)
        cost = await asyncio.to_thread(_cost_lenses, snap)
        lenses = outline.code_lenses(snap.index) + cost + _gpu_lenses(shared, snap)
        out = [_to_lsp_lens(lens) for lens in lenses]
        if snap.index.kernels:
            command = lsp.Command(title="Assemble to .cubin", command=CMD_ASSEMBLE, arguments=[uri])
            out.append(lsp.CodeLens(range=TOP, command=command))
        return out

    @ls.feature(lsp.TEXT_DOCUMENT_INLAY_HINT)
    def on_inlay_hint(params: lsp.InlayHintParams) -> list[lsp.InlayHint]:
        snap = ls.snapshot(params.text_document.uri)
        if snap is None:
            return []
        first, last = params.range.start.line, params.range.end.line
        hints = _stall_hints(shared, snap, first, last) if ls.settings.inlayStallHints else []
        view = shared.timing.current(snap.uri, snap.version)
        hint = gpu_timing.timing_hint(snap.index, view) if view is not None else None
        if hint is not None and first <= hint.line <= last:
            hints.append(hint)
        cols = ls.columns(snap.doc)
        return [
            lsp.InlayHint(
                position=cols.position(h.line, h.col),
                label=h.label,
                kind=lsp.InlayHintKind.Type,
                tooltip=h.tooltip,
            )
            for h in hints
        ]


def _to_lsp_lens(lens: outline.Lens) -> lsp.CodeLens:
    rng = lsp.Range(start=lsp.Position(lens.line, 0), end=lsp.Position(lens.line, 0))
    command = lsp.Command(title=lens.title, command=lens.command, arguments=list(lens.arguments) or None)
    return lsp.CodeLens(range=rng, command=command)


def _stall_hints(shared: Shared, snap: Snapshot, first: int, last: int) -> list:
    in_range = [k for k in snap.index.kernels if k.section.line <= last and k.section.end_line > first]
    timelines = {k.name: shared.views.timeline(snap, k.section.line) for k in in_range}
    return schedule_view.stall_hints(snap.index, first, last, timelines)


def _cost_lenses(snap: Snapshot) -> list[outline.Lens]:
    out: list[outline.Lens] = []
    for kernel in snap.index.kernels:
        try:
            lens = schedule_view.hot_loop_lens(snap.index, kernel, snap.arch)
        except Exception:  # a gap in the cost model costs this lens only
            log.warning("cost model failed on %s", kernel.name, exc_info=True)
            lens = None
        out += [lens] if lens is not None else []
    return out


def _gpu_lenses(shared: Shared, snap: Snapshot) -> list[outline.Lens]:
    """The timing result (or a lens that runs it when a launch spec exists) and the profile's hot spot."""
    out: list[outline.Lens] = []
    latest = shared.timing.latest(snap.uri)
    if latest is not None:
        version, view = latest
        stale = None if version == snap.version else version
        lens = gpu_timing.timing_lens(snap.index, view, snap.uri, stale)
        out += [lens] if lens is not None else []
    elif launch_spec_beside(snap.uri) is not None:
        out += gpu_timing.run_lens(snap.index, snap.uri)
    prof = shared.views.profile(snap)
    lens = prof.lens(snap.index) if prof is not None else None
    return out + ([lens] if lens is not None else [])
