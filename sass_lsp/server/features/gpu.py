"""GPU commands: ``sass-lsp.timeEdit`` (verify and time the document, or a suggestion, against the original)
and ``sass-lsp.optimizeSchedule`` (the policy's candidates screened on the GPU; only a verified faster
schedule is offered). Both run ``sass_lsp.app`` in a thread, with progress and cancellation, in the GPU
worker of ``sass-lsp.gpuDevice``."""

from __future__ import annotations

import asyncio
from functools import partial
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from sass_lsp import app
from sass_lsp.ide import gpu_timing, reorder
from sass_lsp.server import convert
from sass_lsp.server.features.common import (
    Progress,
    Shared,
    doc_path,
    open_snapshot,
    refresh_views,
    until_done_or_cancelled,
    warn,
)
from sass_lsp.server.gpu_check import device_env
from sass_lsp.server.state import SassLanguageServer, Snapshot
from sass_lsp.server.suggestions import PolicyUnavailable, load_net


class Refused(Exception):
    """A GPU command cannot run: ``verdict`` and the message the user sees."""

    def __init__(self, verdict: str, message: str) -> None:
        super().__init__(message)
        self.verdict = verdict


def register(ls: SassLanguageServer, shared: Shared) -> None:
    @ls.command(gpu_timing.CMD_TIME_EDIT)
    async def cmd_time_edit(uri: str, *suggestion: dict) -> dict:
        """Verify and time the edited kernel against the original on the GPU; the result shows inline.

        With a second argument (:func:`reorder.time_arguments`), time that suggestion's edit applied to the
        document against the document as it is: the result is a message, the document keeps its lens."""
        if len(suggestion) > 1:
            raise ValueError("expected [uri] or [uri, suggestion]")
        snap = open_snapshot(ls, uri)
        path = doc_path(snap.uri)
        try:
            title, edited = _edited(snap, path, suggestion[0] if suggestion else None)
            original = await _timing_original(ls, shared, snap, path, title)
            result = await _time(ls, snap, path, edited, original, title)
        except Refused as exc:
            warn(ls, str(exc))
            return {"ok": False, "verdict": exc.verdict, "verified": False, "message": str(exc)}
        view = gpu_timing.view_result(result)
        if title:
            kind = lsp.MessageType.Info if view.verified else lsp.MessageType.Warning
            warn(ls, f"{title} — GPU: {view.text}", kind)
            return {"ok": view.verified, "version": snap.version, "suggestion": title, **view.summary}
        _show_timing(ls, shared, snap, view)
        return {"ok": view.verified, "version": snap.version, **view.summary}

    @ls.command(gpu_timing.CMD_OPTIMIZE)
    async def cmd_optimize(uri: str, *options: dict) -> dict:
        """``sass-lsp optimize`` for the open document: the policy's candidates, each verified bit for bit
        and timed against the document in the GPU worker for ``optimizeBudgetS`` GPU seconds; the best is
        confirmed on fresh inputs and, only if verified faster, returned as one edit (``choices``) to apply.
        ``{"offer": true}`` (a code action's call, whose answer no client shows): the server offers it
        itself, and applies it only if the user says so."""
        snap = open_snapshot(ls, uri)
        path = doc_path(snap.uri)
        try:
            original, net = await _optimize_inputs(ls, shared, snap, path)
        except Refused as exc:
            warn(ls, str(exc))
            return {"ok": False, "verdict": exc.verdict, "message": str(exc), "choices": []}
        share = ls.settings.optimizeUniformShare
        optimized = await _optimize(ls, path, original, net, share)
        answer = _optimize_answer(ls, snap, path, optimized.result) | {"uniform_share": share}
        if answer["ok"] and options and isinstance(options[0], dict) and options[0].get("offer"):
            await _offer(ls, answer)
        return answer


def _edited(snap: Snapshot, path: Path, suggestion: Any) -> tuple[str, str]:
    """(the suggestion's title or "", the text to time): the document, or a suggestion applied to it."""
    if suggestion is None:
        return "", snap.doc.text
    version, title, edits = reorder.parse_time_arguments(suggestion)
    if version != snap.version:
        raise Refused(
            "stale",
            f"'{title}' was computed for version {version} of {path.name}; "
            "the file has changed since: ask for suggestions again",
        )
    return title, snap.doc.eol.join(reorder.apply_line_edits(snap.doc.lines, edits))


async def _timing_original(
    ls: SassLanguageServer, shared: Shared, snap: Snapshot, path: Path, title: str
) -> bytes | str:
    """What the edit is timed against: ``K.cubin`` beside the file, else the text as opened or last saved;
    a suggestion, against the document as it is now. Refused without a launch spec or a GPU."""
    found = gpu_timing.companions(path)
    if not found.spec.exists():
        raise Refused("spec_error", gpu_timing.missing_spec_message(path, found.spec))
    why = await ls.gpu_unavailable()
    if why is not None:
        raise Refused("no_device", f"Timing on the GPU needs an NVIDIA GPU: {why}")
    if found.cubin.exists() and not title:
        return await asyncio.to_thread(found.cubin.read_bytes)
    return snap.doc.text if title else shared.timing.originals.get(snap.uri, snap.doc.text)


async def _time(
    ls: SassLanguageServer, snap: Snapshot, path: Path, edited: str, original: bytes | str, title: str
) -> dict:
    """``app.time_edit`` in the GPU worker, with progress; its refusals in the editor's words."""
    found = gpu_timing.companions(path)
    progress = Progress(ls, f"Timing {path.name} on the GPU")
    async with progress:
        report = progress.from_thread()
        runner = app_runner(ls)

        def phase(name: str, done: int, total: int) -> None:
            report(f"{name} {done}/{total}" if total else name)

        work = partial(
            app.time_edit, edited, original, found.spec, source=str(path), runner=runner, progress=phase
        )
        try:
            return await until_done_or_cancelled(progress.cancelled, runner, work)
        except app.AppError as exc:
            if exc.verdict != "assemble_error":
                raise Refused(exc.verdict, str(exc)) from exc
            if exc.side == "original":
                raise Refused(
                    exc.verdict,
                    f"{path.name}: the original (as opened or last saved) does not assemble, "
                    f"and there is no {found.cubin.name} beside it",
                ) from exc
            if title:
                raise Refused(exc.verdict, f"{title}: the suggestion does not assemble") from exc
            ls.extra_diags[snap.uri] = (snap.version, list(exc.diagnostics))
            ls.schedule_diagnostics(snap.uri, 0.0)
            raise Refused(exc.verdict, f"{path.name}: the edit does not assemble (see diagnostics)") from exc


def app_runner(ls: SassLanguageServer) -> Any:
    """A GPU worker on the device ``sass-lsp.gpuDevice`` names (started at its first request)."""
    from sass_lsp.gpu import GpuRunner

    return GpuRunner(env=device_env(ls.settings.gpuDevice))


def _show_timing(ls: SassLanguageServer, shared: Shared, snap: Snapshot, view: gpu_timing.TimingView) -> None:
    """The document's timing result: lens, hint and diagnostics (one message when there is no device)."""
    uri = snap.uri
    shared.timing.put(uri, snap.version, view)
    extra_version, extra = ls.extra_diags.get(uri, (None, []))
    kept = [d for d in extra if d.code != gpu_timing.DIAG_CODE] if extra_version == snap.version else []
    ls.extra_diags[uri] = (snap.version, kept + gpu_timing.timing_diagnostics(snap.index, view))
    ls.schedule_diagnostics(uri, 0.0)
    if view.verdict == "no_device":
        warn(ls, view.text)
    refresh_views(ls)


async def _optimize_inputs(
    ls: SassLanguageServer, shared: Shared, snap: Snapshot, path: Path
) -> tuple[app.Original, Any]:
    """The original kernel and the policy, or why optimizing cannot start (the GPU asked first: without
    one there is nothing to screen)."""
    why = await ls.gpu_unavailable()
    if why is not None:
        raise Refused("no_device", f"Optimize schedule needs an NVIDIA GPU: {why}")
    spec = gpu_timing.companions(path).spec
    if not spec.exists():
        raise Refused("spec_error", gpu_timing.missing_spec_message(path, spec))
    if not snap.arch:
        raise Refused("no_arch", "Optimize needs the file's arch (set sass-lsp.arch).")
    try:
        original = await asyncio.to_thread(
            app.original_kernel, snap.doc.text, str(path), spec, arch=snap.arch
        )
        net = await asyncio.to_thread(load_net, shared.suggestions.policy_path(), torch_net=True)
    except PolicyUnavailable as exc:
        raise Refused("no_policy", str(exc)) from exc
    except app.AppError as exc:
        if exc.verdict == "assemble_error":
            raise Refused(exc.verdict, f"{path.name} does not assemble (see diagnostics)") from exc
        raise Refused(exc.verdict, str(exc)) from exc
    return original, net


async def _optimize(
    ls: SassLanguageServer, path: Path, original: app.Original, net: Any, share: float | None
) -> app.Optimized:
    """``app.optimize_kernel`` in the GPU worker for ``optimizeBudgetS`` GPU seconds, with progress."""
    budget = ls.settings.optimizeBudgetS
    progress = Progress(ls, f"Optimizing {path.name} on the GPU")
    async with progress:
        report = progress.from_thread()
        trials = 0

        def on_trial(trial: Any) -> None:  # search.Trial, in the worker thread
            nonlocal trials
            trials += 1
            report(f"{trials} candidates, {trial.spent:.0f}/{budget:.0f} GPU s")

        runner = app_runner(ls)
        search = app.SearchChoice(uniform_share=share)
        work = partial(
            app.optimize_kernel, original, runner, budget, search=search, net=net, on_trial=on_trial
        )
        return await until_done_or_cancelled(progress.cancelled, runner, work)


def _optimize_answer(ls: SassLanguageServer, snap: Snapshot, path: Path, result: Any) -> dict:
    """The command's answer: the verified schedule as one edit to apply, or why there is none."""
    trials = result.log.trials
    rejected = sum(not t.result.accepted for t in trials)
    head = f"{path.name}: {len(trials)} candidates in {result.log.spent:.0f} GPU s ({rejected} rejected)"
    conf = result.confirmation
    if not result.verified or conf is None or result.best is None:
        why = conf.message if conf is not None else "none was faster than the original when screened"
        message = f"{head}; nothing verified faster: {why}"
        warn(ls, message, lsp.MessageType.Info)
        return {"ok": False, "verdict": "not_faster", "message": message, "choices": []}
    edits = reorder.text_edits(snap.index, result.best.candidate.text, snap.doc.eol)
    edit = convert.to_lsp_workspace_edit(edits, ls.columns(snap.doc), snap.uri, snap.version)
    choice = {
        "title": f"Apply the verified schedule: {conf.message}",
        "detail": "; ".join(result.best.candidate.moves[:4]),
        "edit": edit,
    }
    return {"ok": True, "message": f"{head}; best verified: {conf.message}", "choices": [choice]}


APPLY = "Apply"


async def _offer(ls: SassLanguageServer, answer: dict) -> None:
    """Ask the user whether to apply the verified schedule; apply it (a versioned edit: refused by the
    client if the document changed meanwhile) only on "Apply"."""
    choice = answer["choices"][0]
    params = lsp.ShowMessageRequestParams(
        type=lsp.MessageType.Info, message=answer["message"], actions=[lsp.MessageActionItem(title=APPLY)]
    )
    picked = await ls.window_show_message_request_async(params)
    if picked is not None and picked.title == APPLY:
        await ls.workspace_apply_edit_async(
            lsp.ApplyWorkspaceEditParams(edit=choice["edit"], label=choice["title"])
        )
