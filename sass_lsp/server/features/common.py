"""What the feature modules share: the per-server stores (GPU timing, suggestion jobs, views), positions and
URIs in, progress, cancellation, the overwrite question and view refreshes out."""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.uris import to_fs_path

from sass_lsp.ide import gpu_timing
from sass_lsp.server.features.views import Views
from sass_lsp.server.state import SassLanguageServer, Snapshot
from sass_lsp.server.suggestions import SuggestionJobs

log = logging.getLogger("sass_lsp.server")


@dataclass
class Shared:
    """Per-server state the features share (the documents themselves are ``SassLanguageServer``'s)."""

    timing: gpu_timing.TimingStore
    suggestions: SuggestionJobs
    views: Views

    @classmethod
    def of(cls, ls: SassLanguageServer) -> Shared:
        return cls(gpu_timing.TimingStore(), SuggestionJobs(ls), Views())

    def forget(self, uri: str) -> None:
        self.timing.forget(uri)
        self.suggestions.forget(uri)
        self.views.forget(uri)


def at(ls: SassLanguageServer, uri: str, position: lsp.Position) -> tuple[Snapshot, int, int] | None:
    """(snapshot, line, column in the server's terms) of a position in an open document."""
    snap = ls.snapshot(uri)
    if snap is None:
        return None
    col = ls.columns(snap.doc).from_client(position.line, position.character)
    return snap, position.line, col


def check_uri(uri: object) -> str:
    if not isinstance(uri, str) or not uri:
        raise ValueError("expected a document URI or path as the first argument")
    return uri


def open_snapshot(ls: SassLanguageServer, uri: object) -> Snapshot:
    """The snapshot of an open document; ValueError (an LSP error) when it is not open."""
    snap = ls.snapshot(check_uri(uri))
    if snap is None:
        raise ValueError(f"{uri} is not open")
    return snap


def file_path(uri: object) -> Path | None:
    """The absolute path of a ``file:`` URI; None for anything else (untitled, other schemes, bare paths),
    so that a command never resolves a name against the server's working directory."""
    uri = check_uri(uri)
    fs = to_fs_path(uri) if uri.startswith("file:") else None
    return Path(fs) if fs and os.path.isabs(fs) else None


def doc_path(uri: str) -> Path:
    """The path of a document (a ``file:`` URI's, else the URI taken as a path), for names and companions."""
    return Path(to_fs_path(uri) or uri) if uri.startswith("file:") else Path(uri)


def doc_name(uri: str) -> str:
    return uri.rpartition("/")[2].rpartition(":")[2] or uri


def launch_spec_beside(uri: str) -> Path | None:
    """``K.launch.toml`` beside the document, if there is one (GPU timing needs it)."""
    fs = to_fs_path(uri) if uri.startswith("file:") else None
    spec = gpu_timing.companions(Path(fs)).spec if fs else None
    return spec if spec is not None and spec.exists() else None


def warn(ls: SassLanguageServer, message: str, kind: lsp.MessageType = lsp.MessageType.Warning) -> None:
    ls.window_show_message(lsp.ShowMessageParams(type=kind, message=message))


OVERWRITE, CANCEL = "Overwrite", "Cancel"
CONFIRM_TIMEOUT_S = 600.0  # no answer by then counts as Cancel


async def may_write(ls: SassLanguageServer, out_path: Path) -> bool:
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


def refresh_views(ls: SassLanguageServer, lenses: bool = True) -> None:
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


async def until_done_or_cancelled(cancelled: asyncio.Event, runner: Any, work: Callable[[], Any]) -> Any:
    """Run the blocking ``work`` (which uses ``runner``) in a thread; when the client cancels, closing the
    runner ends a GPU run still in flight and the request ends with CancelledError."""
    job = asyncio.ensure_future(asyncio.to_thread(work))
    waiter = asyncio.ensure_future(cancelled.wait())
    try:
        await asyncio.wait({job, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
        await asyncio.to_thread(runner.close)
    if not job.done() or cancelled.is_set():
        raise asyncio.CancelledError
    return job.result()


class Progress:
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

    def from_thread(self) -> Callable[[str], None]:
        """:meth:`report` for a worker thread: the message is sent from the event loop."""
        loop = asyncio.get_running_loop()
        return lambda message: loop.call_soon_threadsafe(self.report, message)

    async def __aexit__(self, exc_type: object, exc: object, tb: object) -> None:
        if self.enabled:
            message = "cancelled" if self.cancelled.is_set() or exc_type is asyncio.CancelledError else "done"
            self.ls.work_done_progress.end(self.token, lsp.WorkDoneProgressEnd(message=message))
            self.ls.work_done_progress.tokens.pop(self.token, None)
