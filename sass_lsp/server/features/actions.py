"""Code actions (quick fixes from the checker's typed fixes, control-code repairs, the policy's reorder
suggestions or, where none is predicted faster, the GPU search) and ``sass-lsp.suggestReorders``, which lists
the suggestions with their edits."""

from __future__ import annotations

import asyncio

from lsprotocol import types as lsp

from sass_lsp.ide import actions, reorder
from sass_lsp.server import convert
from sass_lsp.server.features.common import Progress, Shared, doc_path, launch_spec_beside, open_snapshot
from sass_lsp.server.state import SassLanguageServer, Snapshot
from sass_lsp.server.suggestions import PolicyUnavailable

SUGGEST_WAIT_S = 3.0  # how long an explicit code action waits for the policy (its first load included)
KINDS = lsp.CodeActionOptions(
    code_action_kinds=[lsp.CodeActionKind.QuickFix, lsp.CodeActionKind.RefactorRewrite]
)


def register(ls: SassLanguageServer, shared: Shared) -> None:
    @ls.feature(lsp.TEXT_DOCUMENT_CODE_ACTION, KINDS)
    async def on_code_action(params: lsp.CodeActionParams) -> list[lsp.CodeAction | lsp.Command]:
        snap = ls.snapshot(params.text_document.uri)
        if snap is None:
            return []
        context = params.context
        invoked = context.trigger_kind == lsp.CodeActionTriggerKind.Invoked
        # the block repair analyses the whole kernel: only when asked for (Ctrl+.) or where a hazard is shown
        # (the light bulb), and in a thread so other requests are served meanwhile
        recompute = invoked or any(str(d.code).startswith("SASS") for d in context.diagnostics)
        rng = params.range
        args = (snap.index, rng.start.line, rng.end.line, snap.arch, ls.settings, snap.doc.eol, recompute)
        found = (
            await asyncio.to_thread(actions.code_actions, *args) if recompute else actions.code_actions(*args)
        )
        kernel = snap.index.kernel_at(rng.start.line)
        if kernel is not None and (
            not context.only or any(str(k).startswith("refactor") for k in context.only)
        ):
            found += await _suggestions(ls, shared, snap, kernel.name, SUGGEST_WAIT_S if invoked else 0)
        cols = ls.columns(snap.doc)
        diagnostics = list(context.diagnostics)
        return [convert.to_lsp_code_action(a, cols, snap.uri, snap.version, diagnostics) for a in found]

    @ls.command(reorder.CMD_SUGGEST)
    async def cmd_suggest(uri: str) -> dict:
        """The policy's reorder suggestions for the document's largest kernel, each with its WorkspaceEdit."""
        snap = open_snapshot(ls, uri)
        name = doc_path(uri).name if uri.startswith("file:") else uri
        async with Progress(ls, f"Suggesting reorders for {name}"):
            try:
                # the largest kernel, by name, so that the job is shared with the code actions
                largest = max(snap.index.kernels, key=lambda k: len(k.instr_lines), default=None)
                found = await asyncio.shield(shared.suggestions.job(snap, largest.name if largest else None))
            except PolicyUnavailable as exc:
                return {"ok": False, "message": str(exc), "suggestions": []}
        items = [_suggestion_json(ls, snap, s) for s in found]
        message = (
            f"{len(items)} reorder suggestion(s) for {name}"
            if items
            else f"No reorder suggestions for {name}: none is predicted faster ({reorder.SEARCH_TITLE})"
        )
        return {"ok": True, "version": snap.version, "message": message, "suggestions": items}


async def _suggestions(
    ls: SassLanguageServer, shared: Shared, snap: Snapshot, kernel: str, wait_s: float
) -> list:
    """The reorder suggestions of ``kernel`` as actions: computed off the request path, waited for
    ``wait_s`` (0: only if ready); where none is predicted faster, the GPU search instead."""
    found = await shared.suggestions.get(snap, kernel, timeout=wait_s)
    if found is None:
        return []
    if not found:
        return [reorder.search_action(snap.uri, ls.settings.optimizeBudgetS)]
    timing = launch_spec_beside(snap.uri) is not None
    return reorder.suggestion_actions(snap.index, found, snap.uri, snap.version, snap.doc.eol, timing=timing)


def _suggestion_json(ls: SassLanguageServer, snap: Snapshot, s: reorder.SuggestionView) -> dict:
    cols = ls.columns(snap.doc)
    edits = reorder.line_edits(snap.index, s, snap.doc.eol)
    edit = convert.to_lsp_workspace_edit(edits, cols, snap.uri, snap.version)
    return {**reorder.summary_json(s), "edit": edit, "time": reorder.time_arguments(snap.version, s)}
