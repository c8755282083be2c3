"""LSP handlers. Each one converts in (uri, position), makes one call into ``sass_lsp.ide`` and converts
the result out; failures become LSP errors (pygls) and a log line, and the next request works.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
import uuid
from pathlib import Path

from lsprotocol import types as lsp
from pygls.uris import from_fs_path, to_fs_path

from sass_lsp.files import write_atomic
from sass_lsp.ide import (
    actions,
    commands,
    editing,
    gpu_timing,
    hover,
    navigation,
    outline,
    reorder,
    schedule_view,
)
from sass_lsp.ide import diagnostics as diag_mod
from sass_lsp.ide.backends import encoder_for
from sass_lsp.ide.profile_view import ProfileView, profile_view
from sass_lsp.ide.text import Document
from sass_lsp.ide.timeline_view import KernelTimeline, kernel_timeline
from sass_lsp.server import convert
from sass_lsp.server.gpu_check import device_env
from sass_lsp.server.state import SLICE_S, SassLanguageServer, Snapshot, freeze_heap
from sass_lsp.server.suggestions import PolicyUnavailable, SuggestionJobs
from sass_lsp.server.suggestions import load_net as load_policy_net

log = logging.getLogger("sass_lsp.server")

CMD_DISASSEMBLE = "sass-lsp.disassemble"
CMD_ASSEMBLE = "sass-lsp.assemble"
CMD_CHECK = "sass-lsp.check"
CMD_OPTIMIZE = "sass-lsp.optimizeSchedule"


def _pos(ls: SassLanguageServer, uri: str, position: lsp.Position) -> tuple[Snapshot, int, int] | None:
    snap = ls.snapshot(uri)
    if snap is None:
        return None
    col = ls.columns(snap.doc).from_client(position.line, position.character)
    return snap, position.line, col


def register(ls: SassLanguageServer) -> None:  # noqa: C901 - one place that lists every feature
    timing = gpu_timing.TimingStore()
    suggestions = SuggestionJobs(ls)
    profiles: dict[str, tuple[tuple[float, int], ProfileView | None]] = {}

    timelines: dict[str, tuple[int, dict[str, KernelTimeline | None]]] = {}

    def timeline_for(snap: Snapshot, line: int) -> KernelTimeline | None:
        """The static issue timeline of the kernel at ``line`` (cached per document version and kernel)."""
        kernel = snap.index.kernel_at(line)
        if kernel is None or not snap.arch:
            return None
        cached = timelines.get(snap.uri)
        if cached is None or cached[0] != snap.version:
            cached = timelines[snap.uri] = (snap.version, {})
        per_kernel = cached[1]
        if kernel.name not in per_kernel:
            try:
                per_kernel[kernel.name] = kernel_timeline(snap.index, line, snap.arch)
            except Exception:  # a model gap must never cost the user the rest of the hover
                log.warning("timeline failed", exc_info=True)
                per_kernel[kernel.name] = None
        return per_kernel[kernel.name]

    def profile_for(snap: Snapshot) -> ProfileView | None:
        """The ``K.profile.json`` beside the document mapped onto it (cached per file mtime and version)."""
        fs = to_fs_path(snap.uri) if snap.uri.startswith("file:") else None
        if not fs:
            return None
        path = gpu_timing.companions(Path(fs)).profile
        try:
            key = (path.stat().st_mtime, snap.version)
        except OSError:
            profiles.pop(snap.uri, None)
            return None
        cached = profiles.get(snap.uri)
        if cached is not None and cached[0] == key:
            return cached[1]
        try:
            view = profile_view(snap.index, json.loads(path.read_text()))
        except (OSError, ValueError):
            log.warning("cannot read %s", path, exc_info=True)
            view = None
        profiles[snap.uri] = (key, view)
        return view

    @ls.feature(lsp.INITIALIZE)
    def initialize(params: lsp.InitializeParams) -> None:
        ls.apply_settings(params.initialization_options)

    @ls.feature(lsp.INITIALIZED)
    async def initialized(_params: lsp.InitializedParams) -> None:
        await asyncio.sleep(0)
        # the encoder's tables are not loaded here: the first didOpen usually follows at once, and its
        # parse diagnostics must not wait for them (the diagnostics pipeline loads them in a thread)
        caps = ls.client_capabilities.workspace
        if caps is not None and caps.configuration:
            try:
                result = await ls.workspace_configuration_async(
                    lsp.ConfigurationParams(items=[lsp.ConfigurationItem(section="sass-lsp")])
                )
                if result and result[0] is not None:
                    apply_settings(result[0])
            except Exception:
                log.warning("workspace/configuration failed", exc_info=True)

    @ls.feature(lsp.SHUTDOWN)
    def shutdown(*_args: object) -> None:
        ls.close_workers()

    @ls.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(params: lsp.DidChangeConfigurationParams) -> None:
        settings = params.settings
        suggestions.reset()  # the policy path may have changed
        if isinstance(settings, dict) and "sass-lsp" in settings:
            apply_settings(settings["sass-lsp"])
            return
        caps = ls.client_capabilities.workspace
        if caps is not None and caps.configuration:
            result = await ls.workspace_configuration_async(
                lsp.ConfigurationParams(items=[lsp.ConfigurationItem(section="sass-lsp")])
            )
            if result and result[0] is not None:
                apply_settings(result[0])

    def apply_settings(raw: object) -> None:
        """Settings after initialization: a change that inlay hints (or code lenses) show is seen at once, not
        at the next edit: the client is asked to pull them again."""
        before = ls.settings
        ls.apply_settings(raw)
        after = ls.settings
        arch = after.arch != before.arch  # the cost lenses and the stall hints follow the arch
        if arch or after.inlayStallHints != before.inlayStallHints:
            _refresh_views(ls, lenses=arch)

    # ---------------------------------------------------------------- text sync
    @ls.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: lsp.DidOpenTextDocumentParams) -> None:
        item = params.text_document
        ls.docs[item.uri] = Document.from_text(item.uri, item.version, item.text)
        ls.record_edit(item.uri, None)
        timing.set_original(item.uri, item.text)
        if item.uri.endswith(".cubin"):
            ls.window_show_message(
                lsp.ShowMessageParams(
                    type=lsp.MessageType.Info,
                    message=f"{Path(item.uri).name} is a cubin: run '{CMD_DISASSEMBLE}' (or its code lens) "
                    "to open its .cuasm disassembly",
                )
            )
            return
        ls.schedule_diagnostics(item.uri, 0.0)

    @ls.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: lsp.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        doc = ls.docs.get(uri)
        version = params.text_document.version
        for change in params.content_changes:
            if isinstance(change, lsp.TextDocumentContentChangePartial) and doc is not None:
                cols = ls.columns(doc)
                rng = change.range
                start = (rng.start.line, cols.from_client(rng.start.line, rng.start.character))
                end = (rng.end.line, cols.from_client(rng.end.line, rng.end.character))
                doc, edit = doc.apply_edit(start, end, change.text, version)
                ls.record_edit(uri, edit)
            else:
                doc = Document.from_text(uri, version, change.text)
                ls.record_edit(uri, None)
        if doc is not None:
            ls.docs[uri] = doc.with_version(version)
            ls.schedule_diagnostics(uri)

    @ls.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(params: lsp.DidSaveTextDocumentParams) -> None:
        doc = ls.docs.get(params.text_document.uri)
        text = params.text if params.text is not None else (doc.text if doc is not None else None)
        if text is not None:
            timing.set_original(params.text_document.uri, text)  # the original for sass-lsp.timeEdit

    @ls.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: lsp.DidCloseTextDocumentParams) -> None:
        ls.forget(params.text_document.uri)
        timing.forget(params.text_document.uri)
        suggestions.forget(params.text_document.uri)
        profiles.pop(params.text_document.uri, None)
        timelines.pop(params.text_document.uri, None)
        ls.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[])
        )

    # ---------------------------------------------------------------- reading features
    @ls.feature(lsp.TEXT_DOCUMENT_HOVER)
    def on_hover(params: lsp.HoverParams) -> lsp.Hover | None:
        at = _pos(ls, params.text_document.uri, params.position)
        if at is None:
            return None
        snap, line, col = at
        prof = profile_for(snap)
        stalls = timeline_for(snap, line)

        def extra(at: int) -> str | None:
            parts = [
                part
                for part in (
                    stalls.markdown(at) if stalls else None,
                    prof.instruction_markdown(at) if prof else None,
                )
                if part
            ]
            return "\n\n".join(parts) or None

        result = hover.hover(snap.index, line, col, timeline=extra)
        if result is None:
            return None
        cols = ls.columns(snap.doc)
        return lsp.Hover(
            contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=result.markdown),
            range=cols.span(result.line, result.start, result.end),
        )

    @ls.feature(lsp.TEXT_DOCUMENT_DEFINITION)
    def on_definition(params: lsp.DefinitionParams) -> list[lsp.Location]:
        at = _pos(ls, params.text_document.uri, params.position)
        if at is None:
            return []
        snap, line, col = at
        cols = ls.columns(snap.doc)
        return [
            lsp.Location(uri=snap.uri, range=cols.span(s.line, s.start, s.end))
            for s in navigation.definition(snap.index, line, col)
        ]

    @ls.feature(lsp.TEXT_DOCUMENT_REFERENCES)
    def on_references(params: lsp.ReferenceParams) -> list[lsp.Location]:
        at = _pos(ls, params.text_document.uri, params.position)
        if at is None:
            return []
        snap, line, col = at
        cols = ls.columns(snap.doc)
        spans = navigation.references(snap.index, line, col, params.context.include_declaration)
        return [lsp.Location(uri=snap.uri, range=cols.span(s.line, s.start, s.end)) for s in spans]

    @ls.feature(lsp.TEXT_DOCUMENT_DOCUMENT_HIGHLIGHT)
    def on_highlight(params: lsp.DocumentHighlightParams) -> list[lsp.DocumentHighlight]:
        at = _pos(ls, params.text_document.uri, params.position)
        if at is None:
            return []
        snap, line, col = at
        cols = ls.columns(snap.doc)
        return [
            lsp.DocumentHighlight(
                range=cols.span(o.line, o.start, o.end),
                kind=lsp.DocumentHighlightKind.Write if o.is_def else lsp.DocumentHighlightKind.Read,
            )
            for o in navigation.highlights(snap.index, line, col)
        ]

    @ls.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def on_symbols(params: lsp.DocumentSymbolParams) -> list[lsp.DocumentSymbol]:
        snap = ls.snapshot(params.text_document.uri)
        if snap is None:
            return []
        cols = ls.columns(snap.doc)
        return [convert.to_lsp_symbol(s, cols) for s in outline.document_symbols(snap.index)]

    @ls.feature(lsp.TEXT_DOCUMENT_FOLDING_RANGE)
    def on_folding(params: lsp.FoldingRangeParams) -> list[lsp.FoldingRange]:
        snap = ls.snapshot(params.text_document.uri)
        return [] if snap is None else [convert.to_lsp_fold(f) for f in outline.folding_ranges(snap.index)]

    @ls.feature(
        lsp.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL,
        lsp.SemanticTokensRegistrationOptions(
            legend=lsp.SemanticTokensLegend(token_types=convert.TOKEN_TYPES, token_modifiers=[]),
            full=True,
            range=True,
            document_selector=[lsp.TextDocumentFilterPattern(pattern="**/*.cuasm")],
        ),
    )
    async def on_tokens_full(params: lsp.SemanticTokensParams) -> lsp.SemanticTokens:
        snap = ls.snapshot(params.text_document.uri)
        if snap is None:
            return lsp.SemanticTokens(data=[])
        return await _encode_all_tokens(ls, snap)

    @ls.feature(lsp.TEXT_DOCUMENT_SEMANTIC_TOKENS_RANGE)
    def on_tokens_range(params: lsp.SemanticTokensRangeParams) -> lsp.SemanticTokens:
        snap = ls.snapshot(params.text_document.uri)
        if snap is None:
            return lsp.SemanticTokens(data=[])
        tokens = editing.semantic_tokens(snap.index, params.range.start.line, params.range.end.line)
        return _encode_tokens(ls, snap, tokens)

    @ls.feature(lsp.TEXT_DOCUMENT_COMPLETION, lsp.CompletionOptions(trigger_characters=[".", "[", "(", " "]))
    def on_completion(params: lsp.CompletionParams) -> lsp.CompletionList:
        at = _pos(ls, params.text_document.uri, params.position)
        if at is None:
            return lsp.CompletionList(is_incomplete=False, items=[])
        snap, line, col = at
        items = editing.completions(snap.index, line, col, encoder_for(snap.arch))
        return lsp.CompletionList(is_incomplete=False, items=[convert.to_lsp_completion(i) for i in items])

    @ls.feature(lsp.TEXT_DOCUMENT_FORMATTING)
    def on_format(params: lsp.DocumentFormattingParams) -> list[lsp.TextEdit]:
        snap = ls.snapshot(params.text_document.uri)
        if snap is None:
            return []
        cols = ls.columns(snap.doc)
        edits = editing.format_edits(snap.index, renumber=ls.settings.formatRenumberAddresses)
        return [convert.to_lsp_text_edit(e, cols) for e in edits]

    @ls.feature(lsp.TEXT_DOCUMENT_RANGE_FORMATTING)
    def on_range_format(params: lsp.DocumentRangeFormattingParams) -> list[lsp.TextEdit]:
        snap = ls.snapshot(params.text_document.uri)
        if snap is None:
            return []
        cols = ls.columns(snap.doc)
        rng = params.range
        edits = editing.format_edits(
            snap.index, rng.start.line, rng.end.line, ls.settings.formatRenumberAddresses
        )
        return [convert.to_lsp_text_edit(e, cols) for e in edits]

    @ls.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        lsp.CodeActionOptions(
            code_action_kinds=[lsp.CodeActionKind.QuickFix, lsp.CodeActionKind.RefactorRewrite]
        ),
    )
    async def on_code_action(params: lsp.CodeActionParams) -> list[lsp.CodeAction | lsp.Command]:
        snap = ls.snapshot(params.text_document.uri)
        if snap is None:
            return []
        cols = ls.columns(snap.doc)
        start = params.range.start.line
        invoked = params.context.trigger_kind == lsp.CodeActionTriggerKind.Invoked
        # the block repair analyses the whole kernel: only when asked for (Ctrl+.) or where a hazard is shown
        # (the light bulb), and in a thread so other requests are served meanwhile
        recompute = invoked or any(str(d.code).startswith("SASS") for d in params.context.diagnostics)
        args = (snap.index, start, params.range.end.line, snap.arch, ls.settings, snap.doc.eol, recompute)
        found = (
            await asyncio.to_thread(actions.code_actions, *args) if recompute else actions.code_actions(*args)
        )
        kernel = snap.index.kernel_at(start)
        only = params.context.only
        if kernel is not None and (not only or any(str(k).startswith("refactor") for k in only)):
            # computed off the request path; an explicit request (Ctrl+.) waits a little for it
            found += reorder.suggestion_actions(
                snap.index,
                await suggestions.get(snap, kernel.name, timeout=SUGGEST_WAIT_S if invoked else 0),
                snap.uri,
                snap.version,
                snap.doc.eol,
                timing=_launch_spec(snap.uri) is not None,
            )
        return [
            convert.to_lsp_code_action(a, cols, snap.uri, snap.version, list(params.context.diagnostics))
            for a in found
        ]

    @ls.feature(lsp.TEXT_DOCUMENT_CODE_LENS)
    async def on_code_lens(params: lsp.CodeLensParams) -> list[lsp.CodeLens]:
        uri = params.text_document.uri
        if uri.endswith(".cubin"):
            command = lsp.Command(title="Disassemble to .cuasm", command=CMD_DISASSEMBLE, arguments=[uri])
            return [
                lsp.CodeLens(
                    range=lsp.Range(start=lsp.Position(0, 0), end=lsp.Position(0, 0)), command=command
                )
            ]
        snap = ls.snapshot(uri)
        if snap is None:
            return []
        out = []
        # the cost model simulates the hot loop: tens of ms per kernel, so in a thread (cached per version)
        cost = await asyncio.to_thread(_cost_lenses, snap)
        lenses = outline.code_lenses(snap.index) + cost + _gpu_lenses(snap)
        for lens in lenses:
            rng = lsp.Range(start=lsp.Position(lens.line, 0), end=lsp.Position(lens.line, 0))
            command = lsp.Command(
                title=lens.title, command=lens.command, arguments=list(lens.arguments) or None
            )
            out.append(lsp.CodeLens(range=rng, command=command))
        if snap.index.kernels:
            rng = lsp.Range(start=lsp.Position(0, 0), end=lsp.Position(0, 0))
            command = lsp.Command(title="Assemble to .cubin", command=CMD_ASSEMBLE, arguments=[uri])
            out.append(lsp.CodeLens(range=rng, command=command))
        return out

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

    def _gpu_lenses(snap: Snapshot) -> list[outline.Lens]:
        """The timing result (or a lens that runs it when a launch spec exists) and the profile's hot spot."""
        out: list[outline.Lens] = []
        latest = timing.latest(snap.uri)
        if latest is not None:
            version, view = latest
            stale = None if version == snap.version else version
            lens = gpu_timing.timing_lens(snap.index, view, snap.uri, stale)
            out += [lens] if lens is not None else []
        else:
            fs = to_fs_path(snap.uri) if snap.uri.startswith("file:") else None
            if fs and gpu_timing.companions(Path(fs)).spec.exists():
                out += gpu_timing.run_lens(snap.index, snap.uri)
        prof = profile_for(snap)
        lens = prof.lens(snap.index) if prof is not None else None
        return out + ([lens] if lens is not None else [])

    @ls.feature(lsp.TEXT_DOCUMENT_INLAY_HINT)
    def on_inlay_hint(params: lsp.InlayHintParams) -> list[lsp.InlayHint]:
        snap = ls.snapshot(params.text_document.uri)
        if snap is None:
            return []
        cols = ls.columns(snap.doc)
        first, last = params.range.start.line, params.range.end.line
        hints = []
        if ls.settings.inlayStallHints:
            in_range = [
                k for k in snap.index.kernels if k.section.line <= last and k.section.end_line > first
            ]
            kernel_timelines = {k.name: timeline_for(snap, k.section.line) for k in in_range}
            hints = schedule_view.stall_hints(snap.index, first, last, kernel_timelines)
        view = timing.current(snap.uri, snap.version)
        hint = gpu_timing.timing_hint(snap.index, view) if view is not None else None
        if hint is not None and first <= hint.line <= last:
            hints.append(hint)
        return [
            lsp.InlayHint(
                position=cols.position(h.line, h.col),
                label=h.label,
                kind=lsp.InlayHintKind.Type,
                tooltip=h.tooltip,
            )
            for h in hints
        ]

    # ---------------------------------------------------------------- commands
    @ls.command(CMD_DISASSEMBLE)
    async def cmd_disassemble(uri: str) -> str:
        """``K.cubin`` -> ``K.cuasm`` beside it (replacing one only if the user says Overwrite); opens it."""
        path = _file_path(uri)
        if path is None:
            raise ValueError(f"Disassemble reads a .cubin file: {uri} is not a file")
        out_path = path.with_suffix(".cuasm")
        async with _progress(ls, f"Disassembling {path.name}") as cancelled:
            data = await asyncio.to_thread(path.read_bytes)
            text = await asyncio.to_thread(commands.disassemble, data, path.name)
            if cancelled.is_set():
                raise asyncio.CancelledError
        if not await _may_write(ls, out_path):
            return f"{out_path.name} exists and was left as it is"
        await asyncio.to_thread(write_atomic, out_path, text)
        out_uri = from_fs_path(str(out_path)) or str(out_path)
        ls.window_show_document(lsp.ShowDocumentParams(uri=out_uri, take_focus=True))
        return out_uri

    @ls.command(CMD_CHECK)
    async def cmd_check(uri: str) -> dict:
        snap = ls.snapshot(_check_uri(uri))
        if snap is None:
            raise ValueError(f"{uri} is not open")
        async with _progress(ls, f"Checking {Path(uri).name}"):
            diags = await asyncio.to_thread(diag_mod.all_diagnostics, snap.index, snap.arch, ls.settings)
        n_errors = sum(d.severity == "error" for d in diags)
        n_warnings = sum(d.severity == "warning" for d in diags)
        arch = snap.arch or "unknown arch"
        message = (
            f"{n_errors} error(s), {n_warnings} warning(s) in {len(snap.index.pcs)} instructions ({arch})"
        )
        return {"ok": n_errors == 0, "errors": n_errors, "warnings": n_warnings, "message": message}

    @ls.command(CMD_ASSEMBLE)
    async def cmd_assemble(uri: str) -> dict:
        uri = _check_uri(uri)
        snap = ls.snapshot(uri)
        if snap is None:
            raise ValueError(f"{uri} is not open")
        path = _file_path(uri)
        if path is None:  # untitled: there is no folder to write into, and the server's is not the user's
            message = (
                f"{_doc_name(uri)} is not saved: save it as a .cuasm file, then assemble (K.cuasm -> K.cubin)"
            )
            ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Warning, message=message))
            return {"ok": False, "verdict": "unsaved", "message": message}
        out_path = path.with_suffix(".cubin")
        async with _progress(ls, f"Assembling {path.name}") as cancelled:
            result = await asyncio.to_thread(commands.assemble, snap.doc.text, str(path))
            if cancelled.is_set():
                raise asyncio.CancelledError
            ls.extra_diags[uri] = (snap.version, list(result.diagnostics))
            ls.schedule_diagnostics(uri, 0.0)
            if result.cubin is None:
                n = sum(1 for d in result.diagnostics if d.severity == "error")
                ls.window_show_message(
                    lsp.ShowMessageParams(
                        type=lsp.MessageType.Error, message=f"{path.name}: {n} assembly error(s)"
                    )
                )
                return {"ok": False, "errors": n}
        if not await _may_write(ls, out_path):
            message = f"{out_path.name} exists and was left as it is (nothing written)"
            return {"ok": True, "written": False, "message": message}
        await asyncio.to_thread(write_atomic, out_path, result.cubin)
        return {"ok": True, "cubin": from_fs_path(str(out_path)), "bytes": len(result.cubin)}

    @ls.command(gpu_timing.CMD_TIME_EDIT)
    async def cmd_time_edit(uri: str, *suggestion: dict) -> dict:
        """Verify and time the edited kernel against the original on the GPU; the result shows inline.

        With a second argument (:func:`reorder.time_arguments`), time that suggestion's edit applied to the
        document against the document as it is: the result is a message, the document keeps its lens."""
        uri, snap, path, found = _open_with_companions(ls, uri)

        def refuse(verdict: str, message: str) -> dict:
            ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Warning, message=message))
            return {"ok": False, "verdict": verdict, "verified": False, "message": message}

        if len(suggestion) > 1:
            raise ValueError("expected [uri] or [uri, suggestion]")
        edited_text = snap.doc.text
        title = ""
        if suggestion:
            version, title, edits = reorder.parse_time_arguments(suggestion[0])
            if version != snap.version:
                return refuse(
                    "stale",
                    f"'{title}' was computed for version {version} of {path.name}; "
                    "the file has changed since: ask for suggestions again",
                )
            edited_text = snap.doc.eol.join(reorder.apply_line_edits(snap.doc.lines, edits))
        if not found.spec.exists():
            return refuse("spec_error", gpu_timing.missing_spec_message(path, found.spec))
        why = await ls.gpu_unavailable()
        if why is not None:
            return refuse("no_device", f"Timing on the GPU needs an NVIDIA GPU: {why}")
        from sass_lsp.gpu import GpuRunner, SpecError, bench_to_dict, load_spec, run_bench

        try:
            spec = await asyncio.to_thread(load_spec, found.spec)
        except SpecError as exc:
            return refuse("spec_error", f"{found.spec}: {exc}")
        prog = _progress(ls, f"Timing {path.name} on the GPU")
        loop = asyncio.get_running_loop()
        report = prog.report

        async with prog as cancelled:
            report("assembling the edit")
            edited = await asyncio.to_thread(commands.assemble, edited_text, str(path))
            if edited.cubin is None and title:
                return refuse("assemble_error", f"{title}: the suggestion does not assemble")
            if edited.cubin is None:
                ls.extra_diags[uri] = (snap.version, list(edited.diagnostics))
                ls.schedule_diagnostics(uri, 0.0)
                return refuse("assemble_error", f"{path.name}: the edit does not assemble (see diagnostics)")
            if found.cubin.exists() and not title:
                original = await asyncio.to_thread(found.cubin.read_bytes)
            else:
                report("assembling the original")
                # a suggestion is timed against the document as it is now
                text = snap.doc.text if title else timing.originals.get(uri, snap.doc.text)
                assembled = await asyncio.to_thread(commands.assemble, text, str(path))
                if assembled.cubin is None:
                    return refuse(
                        "assemble_error",
                        f"{path.name}: the original (as opened or last saved) does not assemble, "
                        f"and there is no {found.cubin.name} beside it",
                    )
                original = assembled.cubin

            def progress(phase: str, done: int, total: int) -> None:
                loop.call_soon_threadsafe(report, f"{phase} {done}/{total}" if total else phase)

            runner = GpuRunner(env=device_env(ls.settings.gpuDevice))

            def work() -> object:
                return run_bench(original, edited.cubin, spec, progress=progress, runner=runner)

            bench = await _until_done_or_cancelled(cancelled, runner, work)
            result = bench_to_dict(bench)
        view = gpu_timing.view_result(result)
        if title:
            kind = lsp.MessageType.Info if view.verified else lsp.MessageType.Warning
            ls.window_show_message(lsp.ShowMessageParams(type=kind, message=f"{title} — GPU: {view.text}"))
            return {"ok": view.verified, "version": snap.version, "suggestion": title, **view.summary}
        timing.put(uri, snap.version, view)
        extra_version, extra = ls.extra_diags.get(uri, (None, []))
        kept = [d for d in extra if d.code != gpu_timing.DIAG_CODE] if extra_version == snap.version else []
        ls.extra_diags[uri] = (snap.version, kept + gpu_timing.timing_diagnostics(snap.index, view))
        ls.schedule_diagnostics(uri, 0.0)
        if view.verdict == "no_device":
            ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Warning, message=view.text))
        _refresh_views(ls)
        return {"ok": view.verified, "version": snap.version, **view.summary}

    @ls.command(CMD_OPTIMIZE)
    async def cmd_optimize(uri: str) -> dict:
        """``sass-lsp optimize`` for the open document: the policy's candidates, each verified bit for bit
        and timed against the document in the GPU worker for ``optimizeBudgetS`` GPU seconds; the best is
        confirmed on fresh inputs and, only if verified faster, offered as one edit (``choices``) to apply."""
        uri, snap, path, found = _open_with_companions(ls, uri)

        def refuse(verdict: str, message: str) -> dict:
            ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Warning, message=message))
            return {"ok": False, "verdict": verdict, "message": message, "choices": []}

        why = await ls.gpu_unavailable()
        if why is not None:  # before anything else: without a GPU there is nothing to screen
            return refuse("no_device", f"Optimize schedule needs an NVIDIA GPU: {why}")
        if not found.spec.exists():
            return refuse("spec_error", gpu_timing.missing_spec_message(path, found.spec))
        if not snap.arch:
            return refuse("no_arch", "Optimize needs the file's arch (set sass-lsp.arch).")
        from sass_lsp.gpu import GpuRunner, SpecError, load_spec
        from sass_lsp.gpu.measure import GpuMeasure
        from sass_lsp.gpu.optimize import optimize

        try:
            spec = await asyncio.to_thread(load_spec, found.spec)
            net = await asyncio.to_thread(load_policy_net, suggestions.policy_path())
        except SpecError as exc:
            return refuse("spec_error", f"{found.spec}: {exc}")
        except PolicyUnavailable as exc:
            return refuse("no_policy", str(exc))
        text = snap.doc.text
        assembled = await asyncio.to_thread(commands.assemble, text, str(path))
        if assembled.cubin is None:
            return refuse("assemble_error", f"{path.name} does not assemble (see diagnostics)")
        prog = _progress(ls, f"Optimizing {path.name} on the GPU")
        loop = asyncio.get_running_loop()
        report = prog.report

        def on_trial(trial) -> None:  # noqa: ANN001 (search.Trial, in the worker thread)
            done = f"{measure.calls} candidates, {trial.spent:.0f}/{budget:.0f} GPU s"
            loop.call_soon_threadsafe(report, done)

        def run() -> object:
            from sass_lsp.policy.candidates import DEFAULT_SEARCH, policy_search

            search = policy_search(
                DEFAULT_SEARCH, text, snap.arch, net=net, kernel=spec.kernel, uniform_share=share
            )
            return optimize(search, measure, budget, on_trial=on_trial)

        budget, share = ls.settings.optimizeBudgetS, ls.settings.optimizeUniformShare
        async with prog as cancelled:
            runner = GpuRunner(env=device_env(ls.settings.gpuDevice))
            measure = GpuMeasure(runner, assembled.cubin, spec, spec.label)
            result = await _until_done_or_cancelled(cancelled, runner, run)
        trials = result.log.trials
        rejected = sum(not t.result.accepted for t in trials)
        head = f"{path.name}: {len(trials)} candidates in {result.log.spent:.0f} GPU s ({rejected} rejected)"
        conf = result.confirmation
        if not result.verified or conf is None or result.best is None:
            why = conf.message if conf is not None else "none was faster than the original when screened"
            message = f"{head}; nothing verified faster: {why}"
            ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Info, message=message))
            return {
                "ok": False,
                "verdict": "not_faster",
                "message": message,
                "choices": [],
                "uniform_share": share,
            }
        edits = reorder.text_edits(snap.index, result.best.candidate.text, snap.doc.eol)
        edit = convert.to_lsp_workspace_edit(edits, ls.columns(snap.doc), uri, snap.version)
        title = f"Apply the verified schedule: {conf.message}"
        detail = "; ".join(result.best.candidate.moves[:4])
        message = f"{head}; best verified: {conf.message}"
        choice = {"title": title, "detail": detail, "edit": edit}
        return {"ok": True, "message": message, "choices": [choice], "uniform_share": share}

    @ls.command(reorder.CMD_SUGGEST)
    async def cmd_suggest(uri: str) -> dict:
        """The policy's reorder suggestions for the document's largest kernel, each with its WorkspaceEdit."""
        snap = ls.snapshot(_check_uri(uri))
        if snap is None:
            raise ValueError(f"{uri} is not open")
        name = Path(to_fs_path(uri) or uri).name if uri.startswith("file:") else uri
        async with _progress(ls, f"Suggesting reorders for {name}"):
            try:
                # the largest kernel, by name, so that the job is shared with the code actions
                largest = max(snap.index.kernels, key=lambda k: len(k.instr_lines), default=None)
                found = await asyncio.shield(suggestions.job(snap, largest.name if largest else None))
            except PolicyUnavailable as exc:
                return {"ok": False, "message": str(exc), "suggestions": []}
        cols = ls.columns(snap.doc)
        items = []
        for s in found:
            edit = convert.to_lsp_workspace_edit(
                reorder.line_edits(snap.index, s, snap.doc.eol), cols, uri, snap.version
            )
            items.append(
                {**reorder.summary_json(s), "edit": edit, "time": reorder.time_arguments(snap.version, s)}
            )
        message = (
            f"{len(items)} reorder suggestion(s) for {name}"
            if items
            else f"No reorder suggestions for {name}: no move lowers the predicted cycles"
        )
        return {"ok": True, "version": snap.version, "message": message, "suggestions": items}


def _open_with_companions(ls: SassLanguageServer, uri: str) -> tuple[str, Snapshot, Path, object]:
    """(uri, snapshot, path, gpu_timing.companions) of an open document; ValueError when it is not open."""
    uri = _check_uri(uri)
    snap = ls.snapshot(uri)
    if snap is None:
        raise ValueError(f"{uri} is not open")
    path = Path(to_fs_path(uri) or uri) if uri.startswith("file:") else Path(uri)
    return uri, snap, path, gpu_timing.companions(path)


async def _until_done_or_cancelled(cancelled: asyncio.Event, runner: object, work) -> object:  # noqa: ANN001
    """Run the blocking ``work`` (which uses ``runner``) in a thread; when the client cancels, closing the
    runner ends a GPU run still in flight and the request ends with CancelledError."""
    job = asyncio.ensure_future(asyncio.to_thread(work))
    waiter = asyncio.ensure_future(cancelled.wait())
    try:
        await asyncio.wait({job, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
        await asyncio.to_thread(runner.close)  # type: ignore[attr-defined]
    if not job.done() or cancelled.is_set():
        raise asyncio.CancelledError
    return job.result()


def _refresh_views(ls: SassLanguageServer, lenses: bool = True) -> None:
    """Ask the client to pull inlay hints and (``lenses``) code lenses again (where it says it can)."""
    caps = ls.client_capabilities.workspace
    if caps is None:
        return
    futures = []
    if lenses and caps.code_lens is not None and caps.code_lens.refresh_support:
        futures.append(ls.workspace_code_lens_refresh(None))
    if caps.inlay_hint is not None and caps.inlay_hint.refresh_support:
        futures.append(ls.workspace_inlay_hint_refresh(None))
    for future in futures:  # the answer does not matter; an error from the client is logged, not raised
        future.add_done_callback(lambda f: f.exception() and log.info("refresh failed: %s", f.exception()))


SUGGEST_WAIT_S = (
    3.0  # how long an explicit code-action request waits for the policy (its first load included)
)


def _launch_spec(uri: str) -> Path | None:
    """``K.launch.toml`` beside the document, if there is one (GPU timing needs it)."""
    fs = to_fs_path(uri) if uri.startswith("file:") else None
    spec = gpu_timing.companions(Path(fs)).spec if fs else None
    return spec if spec is not None and spec.exists() else None


OVERWRITE, CANCEL = "Overwrite", "Cancel"
CONFIRM_TIMEOUT_S = 600.0  # no answer by then counts as Cancel


def _file_path(uri: object) -> Path | None:
    """The absolute path of a ``file:`` URI; None for anything else (untitled, other schemes, bare paths),
    so that a command never resolves a name against the server's working directory."""
    uri = _check_uri(uri)
    fs = to_fs_path(uri) if uri.startswith("file:") else None
    return Path(fs) if fs and os.path.isabs(fs) else None


def _doc_name(uri: str) -> str:
    return uri.rpartition("/")[2].rpartition(":")[2] or uri


async def _may_write(ls: SassLanguageServer, out_path: Path) -> bool:
    """Whether a command may write ``out_path``: it does not exist, or the user answered Overwrite to
    ``window/showMessageRequest``. Cancel, dismissing it, no answer, or a client error: no."""
    if not out_path.exists() and not out_path.is_symlink():
        return True
    request = lsp.ShowMessageRequestParams(
        type=lsp.MessageType.Warning,
        message=f"{out_path.name} already exists in {out_path.parent}. Overwrite it?",
        actions=[lsp.MessageActionItem(title=OVERWRITE), lsp.MessageActionItem(title=CANCEL)],
    )
    try:
        choice = await asyncio.wait_for(ls.window_show_message_request_async(request), CONFIRM_TIMEOUT_S)
    except Exception:  # noqa: BLE001 - the client could not ask: keep the file
        log.info("no answer to 'Overwrite %s?': not written", out_path, exc_info=True)
        return False
    return choice is not None and choice.title == OVERWRITE


def _check_uri(uri: object) -> str:
    if not isinstance(uri, str) or not uri:
        raise ValueError("expected a document URI or path as the first argument")
    return uri


def _encode_tokens(ls: SassLanguageServer, snap: Snapshot, tokens: list) -> lsp.SemanticTokens:
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


async def _encode_all_tokens(ls: SassLanguageServer, snap: Snapshot) -> lsp.SemanticTokens:
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
            sub = _encode_tokens(ls, snap, editing.semantic_tokens(snap.index, line_no, line_no)).data
            if sub:
                data.append(line_no - prev_line)
                data += sub[1:]
                prev_line = line_no
        if time.perf_counter() - t_slice > SLICE_S:
            freeze_heap()  # the line details just made stay cached
            await asyncio.sleep(0)
            t_slice = time.perf_counter()
    return lsp.SemanticTokens(data=data)


class _progress:
    """``$/progress`` around long work; ``cancelled`` is set when the client cancels it."""

    def __init__(self, ls: SassLanguageServer, title: str) -> None:
        self.ls = ls
        self.title = title
        self.token = f"sass-lsp-{uuid.uuid4()}"
        self.cancelled = asyncio.Event()
        self.enabled = False

    async def __aenter__(self) -> asyncio.Event:
        caps = self.ls.client_capabilities.window
        self.enabled = bool(caps and caps.work_done_progress)
        if self.enabled:
            try:
                await self.ls.work_done_progress.create_async(self.token)
                self.ls.work_done_progress.begin(
                    self.token, lsp.WorkDoneProgressBegin(title=self.title, cancellable=True)
                )
                future = self.ls.work_done_progress.tokens.get(self.token)
                if future is not None:
                    future.add_done_callback(lambda f: self.cancelled.set() if f.cancelled() else None)
            except Exception:
                log.warning("work done progress unavailable", exc_info=True)
                self.enabled = False
        return self.cancelled

    def report(self, message: str) -> None:
        """A progress message (dropped when the client does not show progress or it has ended)."""
        if self.enabled and self.token in self.ls.work_done_progress.tokens:
            self.ls.work_done_progress.report(self.token, lsp.WorkDoneProgressReport(message=message))

    async def __aexit__(self, exc_type: object, exc: object, tb: object) -> None:
        if self.enabled:
            message = "cancelled" if self.cancelled.is_set() or exc_type is asyncio.CancelledError else "done"
            self.ls.work_done_progress.end(self.token, lsp.WorkDoneProgressEnd(message=message))
            self.ls.work_done_progress.tokens.pop(self.token, None)


def log_path_default() -> str | None:
    return os.environ.get("SASS_LSP_LOG")
