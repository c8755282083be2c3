"""Server state: documents and their indexes per (uri, version), settings, and the diagnostics pipeline
(cheap lanes published at once, slow lanes debounced; published only for the latest version, long lanes
time-sliced so requests keep being served).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
import logging
import multiprocessing
import os
import time
from collections.abc import Callable, Generator, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field

import cattrs
from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.protocol import JsonRPCRequestMessage, LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from sass_lsp import __version__
from sass_lsp.children import exit_with
from sass_lsp.ide import caches
from sass_lsp.ide import diagnostics as diag_mod
from sass_lsp.ide.backends import EncoderAdapter, encoder_for, encoder_loaded
from sass_lsp.ide.diagnostics import Diag
from sass_lsp.ide.index import DocumentIndex, Kernel, block_steps, build_index, update_index
from sass_lsp.ide.registers import build_steps
from sass_lsp.ide.settings import Settings, settings_from_raw
from sass_lsp.ide.text import Document, LineEdit
from sass_lsp.ide.timeline_view import kernel_timeline
from sass_lsp.isa.archs import ARCHES, table_arch
from sass_lsp.server.convert import Columns, diagnostic_json, to_lsp_diagnostic, token_row
from sass_lsp.server.gpu_check import no_gpu_reason

log = logging.getLogger("sass_lsp.server")

SLICE_S = 0.004  # longest stretch of diagnostics work between two chances to serve requests
# a textDocument/* request not answered by then is cancelled with an error (the client has it within 2 s)
REQUEST_DEADLINE_S = 1.8


def freeze_heap() -> None:
    """Take every object alive now out of the cyclic collector's sight (reference counting still frees
    them). A 20,000-instruction document keeps ~400k tracked objects (line infos, tokens, indexes)
    alive; each automatic full collection walked them all, 150-590 ms on the event loop, in the middle
    of whichever request or keystroke set it off. O(1); called where long-lived objects were made."""
    gc.freeze()


def _give_back_free_memory() -> None:
    """Hand the heap's free pages back to the system (glibc keeps them after a closed document's state
    is freed, so RSS would not fall); nothing to do elsewhere."""
    with contextlib.suppress(OSError, AttributeError):  # AttributeError: not glibc
        ctypes.CDLL(None).malloc_trim(0)


@contextlib.contextmanager
def gc_paused_then_frozen() -> Iterator[None]:
    """No collection while a document's index is built (its objects all live on), then freeze them."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        freeze_heap()
        if enabled:
            gc.enable()


@dataclass
class Snapshot:
    doc: Document
    index: DocumentIndex
    arch: str | None
    base: Snapshot | None = None  # the previous snapshot when this one shares its structure
    changed_lines: frozenset[int] = frozenset()  # lines edited since ``base``
    encode_map: dict[int, Diag] | None = field(default=None, repr=False)  # complete encoder results
    parse_diags: list[Diag] | None = field(default=None, repr=False)
    arch_note: Diag | None = None  # the header names an arch without tables: said on the header line

    @property
    def uri(self) -> str:
        return self.doc.uri

    @property
    def version(self) -> int:
        return self.doc.version


_HEADER_MARKS = (".target", ".__elf_flags", "headerflags")
_unknown_arches_logged: set[str] = set()


def usable_arch(index: DocumentIndex, setting: str | None) -> tuple[str | None, Diag | None]:
    """The arch whose tables serve this document, and a diagnostic when the header (or the ``arch``
    setting) names one without tables: then every feature runs as with no arch (no tables needed)."""
    arch = setting or index.file_arch
    if not arch or table_arch(arch) is not None:
        return arch, None
    if arch not in _unknown_arches_logged:  # said once in the log; each document shows its diagnostic
        _unknown_arches_logged.add(arch)
        log.info("no tables for %s: hazard, encoder and timing features are off for it", arch)
    line = 0
    if not setting:
        found = (i for mark in _HEADER_MARKS for i, text in enumerate(index.lines) if mark in text)
        line = next(found, 0)  # the line the arch was read from: .target, else the flags, else headerflags
    text = index.lines[line] if line < len(index.lines) else ""
    start = len(text) - len(text.lstrip())
    supported = ", ".join(ARCHES)
    where = "the sass-lsp.arch setting" if setting else "the file header"
    note = Diag(
        line,
        start,
        line,
        max(start, len(text.rstrip())),
        "warning",
        f"{where} names {arch}, which has no tables: hazard, encoder and timing features are off"
        f"\nhint: supported arches are {supported}; fix the header or set sass-lsp.arch",
        "unknown-arch",
    )
    return None, note


@dataclass(frozen=True)
class RejectedRequest:
    """A request whose params do not fit its method: answered with this error, never handled."""

    id: int | str
    error: lsp.ResponseError
    jsonrpc: str = "2.0"


def _why_invalid(exc: Exception) -> str:
    try:
        return "; ".join(cattrs.transform_error(exc)[:4])
    except Exception:  # transform_error knows cattrs' errors only
        return str(exc)


class SassProtocol(LanguageServerProtocol):
    """pygls's protocol without its own copy of each document: the server keeps documents as line lists
    (:class:`~sass_lsp.ide.text.Document`), so pygls rebuilding a 2 MB string on every keystroke is waste.
    A request with malformed params gets an ``InvalidParams`` error response (pygls logged a traceback and
    never answered, so the client waited for ever)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._doc_requests: dict[int | str, str] = {}  # pending textDocument/* request -> its document
        self._cancel_reasons: dict[int | str, lsp.ResponseError] = {}  # answer of a request we cancelled

    def structure_message(self, data: dict) -> object:
        if "jsonrpc" in data and "method" in data and isinstance(data.get("id"), int | str):
            request_type = self.get_message_type(data["method"]) or JsonRPCRequestMessage
            try:
                return self._converter.structure(data, request_type)
            except Exception as exc:
                message = f"invalid params for {data['method']}: {_why_invalid(exc)}"
                log.warning("%s (request %s)", message, data["id"])
                return RejectedRequest(
                    data["id"], lsp.ResponseError(code=lsp.ErrorCodes.InvalidParams, message=message)
                )
        return super().structure_message(data)

    def handle_message(self, message: object) -> None:
        if isinstance(message, RejectedRequest):
            self._send_response(message.id, error=message.error)
            return
        super().handle_message(message)  # type: ignore[arg-type]

    def _handle_request(self, msg_id: int | str, method_name: str, params: object) -> None:
        document = getattr(params, "text_document", None)
        if method_name.startswith("textDocument/") and isinstance(getattr(document, "uri", None), str):
            self._doc_requests[msg_id] = document.uri  # type: ignore[union-attr]
        try:
            super()._handle_request(msg_id, method_name, params)
        finally:
            if msg_id not in self._request_futures:  # answered already (or never started)
                self._doc_requests.pop(msg_id, None)

    def _execute_handler(
        self,
        msg_id: int | str,
        handler: Callable[..., object],
        callback: Callable[[Future], None],
        args: tuple | None = None,
        kwargs: dict | None = None,
    ) -> None:
        """pygls (2.1) files the future of every generator, coroutine or thread handler under ``msg_id`` in
        ``_request_futures`` but removes it only when answering a request: each notification (every
        ``didChange``: our document notifications are generator handlers) left one ``Future`` with its
        lock and condition behind for ever, ~2 MB per 1,000 edits. Drop it once it is done.

        A ``textDocument/*`` request still running after :data:`REQUEST_DEADLINE_S` is cancelled and
        answered ``RequestFailed``; one whose document changes first, ``ContentModified``
        (:meth:`cancel_stale`)."""
        timer: asyncio.TimerHandle | None = None

        def done(future: Future) -> None:
            if self._request_futures.get(msg_id) is future:
                del self._request_futures[msg_id]
            self._doc_requests.pop(msg_id, None)
            if timer is not None:
                timer.cancel()
            reason = self._cancel_reasons.pop(msg_id, None)
            if reason is not None and future.cancelled():
                self._send_response(msg_id, error=reason)
            else:
                callback(future)

        super()._execute_handler(msg_id, handler, done, args, kwargs)
        running = self._request_futures.get(msg_id)
        if msg_id in self._doc_requests and isinstance(running, asyncio.Future):
            timer = asyncio.get_running_loop().call_later(REQUEST_DEADLINE_S, self._overdue, msg_id)

    def serving(self) -> bool:
        """Whether a ``textDocument/*`` request is being served (background work waits for it)."""
        for msg_id in self._doc_requests:
            running = self._request_futures.get(msg_id)
            if isinstance(running, asyncio.Future) and not running.done():
                return True
        return False

    def _cancel(self, msg_id: int | str, reason: lsp.ResponseError) -> None:
        running = self._request_futures.get(msg_id)
        if isinstance(running, asyncio.Future) and not running.done():
            self._cancel_reasons[msg_id] = reason
            running.cancel()  # the handler stops at its next await (a thread it waits on runs out alone)

    def _overdue(self, msg_id: int | str) -> None:
        message = f"cancelled: no answer within {REQUEST_DEADLINE_S:g} s (ask again once the server is idle)"
        self._cancel(msg_id, lsp.ResponseError(code=lsp.LSPErrorCodes.RequestFailed, message=message))

    def cancel_stale(self, uri: str) -> None:
        """Stop the requests on ``uri`` still running: they work on a version that is no longer current."""
        for msg_id, doc_uri in list(self._doc_requests.items()):
            if doc_uri == uri:
                message = "the document changed before this request was answered"
                self._cancel(
                    msg_id, lsp.ResponseError(code=lsp.LSPErrorCodes.ContentModified, message=message)
                )

    @lsp_method(lsp.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: lsp.DidOpenTextDocumentParams) -> Generator:
        if (handler := self.fm.features.get(lsp.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield handler, (params,), None

    @lsp_method(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: lsp.DidChangeTextDocumentParams) -> Generator:
        self.cancel_stale(params.text_document.uri)
        if (handler := self.fm.features.get(lsp.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    @lsp_method(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: lsp.DidCloseTextDocumentParams) -> Generator:
        self.cancel_stale(params.text_document.uri)
        if (handler := self.fm.features.get(lsp.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            yield handler, (params,), None


class SassLanguageServer(LanguageServer):
    protocol: SassProtocol

    def __init__(self) -> None:
        super().__init__(
            "sass-lsp",
            __version__,
            text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental,
            protocol_cls=SassProtocol,
        )
        self.settings = Settings()
        self.docs: dict[str, Document] = {}
        self._snapshots: dict[str, Snapshot] = {}
        self._edits: dict[str, list[LineEdit]] = {}
        self._diag_tasks: dict[str, asyncio.Task] = {}
        self._view_tasks: dict[str, tuple[DocumentIndex, asyncio.Task]] = {}
        self.extra_diags: dict[str, tuple[int, list[Diag]]] = {}
        self.published: dict[
            str, tuple[int, float, int]
        ] = {}  # uri -> (version, time, n) for tests/benchmarks
        self.full_diagnostics: dict[str, list[Diag]] = {}
        self.last_hazards: dict[str, dict[int, list[Diag]]] = {}
        self._json_cache: dict[str, dict[Diag, dict]] = {}  # per document: its published diagnostics
        self._json_next: dict[Diag, dict] = {}
        self._n_edits = 0
        self._pool: ProcessPoolExecutor | None = None
        self._pool_failed = False
        self._last_status: dict | None = None
        self._checker_locks: dict[str, asyncio.Lock] = {}
        self._gpu_reasons: dict[int, str | None] = {}  # gpuDevice -> why it cannot run GPU work
        self._gpu_probes: dict[int, asyncio.Future] = {}

    # ------------------------------------------------------------------ documents
    def position_encoding(self) -> str:
        try:
            enc = self.server_capabilities.position_encoding
        except Exception:
            return "utf-16"
        return str(enc.value if hasattr(enc, "value") else enc or "utf-16")

    def columns(self, doc: Document) -> Columns:
        return Columns(doc.lines, self.position_encoding())

    def snapshot(self, uri: str) -> Snapshot | None:
        doc = self.docs.get(uri)
        if doc is None:
            return None
        snap = self._snapshots.get(uri)
        if snap is not None and snap.doc is doc:
            return snap
        edits = self._edits.pop(uri, None)
        base = None
        changed: set[int] = set()
        if snap is not None and edits:
            index = snap.index
            for edit in edits:
                index = update_index(index, edit.start, edit.n_old, edit.new_lines)
                changed.update(range(edit.start, edit.start + len(edit.new_lines)))
            if index.pcs is snap.index.pcs:  # same structure: results per line carry over
                base = snap
                snap.base = None  # keep one level only
        else:
            with gc_paused_then_frozen():
                index = build_index(doc.lines)
        arch, note = usable_arch(index, self.settings.arch)
        snap = Snapshot(doc, index, arch, base, frozenset(changed), arch_note=note)
        self._snapshots[uri] = snap
        return snap

    def record_edit(self, uri: str, edit: LineEdit | None) -> None:
        """Remember how the document changed since its last snapshot (None: rebuild from scratch)."""
        self._n_edits += 1
        if self._n_edits % caches.PRUNE_EVERY_EDITS == 0:
            self.prune_caches()
        if edit is None or uri not in self._snapshots:
            self._snapshots.pop(uri, None)
            self._edits.pop(uri, None)
        else:
            self._edits.setdefault(uri, []).append(edit)

    def prune_caches(self) -> None:
        """Drop cached results for line texts that no open document holds any more (steady editing keeps
        making new texts; a closed document's texts are garbage)."""
        live: set[str] = set()
        for doc in self.docs.values():
            live.update(doc.lines)
        caches.prune(live, (token_row,))

    def forget(self, uri: str) -> None:
        gc.unfreeze()  # what the closed document left may hold cycles: let the collector see all again
        self.docs.pop(uri, None)
        self._snapshots.pop(uri, None)
        self._edits.pop(uri, None)
        self.extra_diags.pop(uri, None)
        self.published.pop(uri, None)
        self.full_diagnostics.pop(uri, None)
        self.last_hazards.pop(uri, None)
        self._json_cache.pop(uri, None)
        lock = self._checker_locks.get(uri)
        if lock is not None and not lock.locked():
            del self._checker_locks[uri]
        self.prune_caches()
        gc.collect()
        freeze_heap()
        _give_back_free_memory()
        task = self._diag_tasks.pop(uri, None)
        if task is not None:
            task.cancel()
        building = self._view_tasks.pop(uri, None)
        if building is not None:
            building[1].cancel()

    # ------------------------------------------------------------------ settings
    def apply_settings(self, raw: object) -> None:
        settings, warnings = settings_from_raw(raw, self.settings)
        changed = settings != self.settings
        self.settings = settings
        for warning in warnings:
            log.warning(warning)
            self.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Warning, message=warning))
        if changed:
            self._snapshots.clear()
            self._edits.clear()
            for uri in list(self.docs):
                self.schedule_diagnostics(uri, 0.0)

    # ------------------------------------------------------------------ diagnostics
    async def diagnostics_settled(self) -> None:
        """Return once no document's diagnostics are being computed (those scheduled meanwhile included)."""
        while pending := [t for t in self._diag_tasks.values() if not t.done()]:
            await asyncio.wait(pending)

    def schedule_diagnostics(self, uri: str, delay: float | None = None) -> None:
        if uri.endswith(".cubin"):
            return
        task = self._diag_tasks.pop(uri, None)
        if task is not None:
            task.cancel()
        doc = self.docs.get(uri)
        if doc is None:
            return
        if delay is None:
            delay = self.settings.diagnosticsDebounceMs / 1000
        self._diag_tasks[uri] = asyncio.ensure_future(self._diagnose(uri, doc.version, delay))

    def send_status(self, snap: Snapshot) -> None:
        """``sass-lsp/status``: the arch in use (and GPU timing's state) for the client's status bar."""
        status: dict = {"arch": snap.arch}
        device = self.settings.gpuDevice
        if device in self._gpu_reasons:
            why = self._gpu_reasons[device]
            status["gpu"] = {"available": why is None, "device": f"device {device}", "reason": why}
        elif device not in self._gpu_probes:  # asked once per device, off the event loop; then sent again
            self._gpu_probes[device] = asyncio.ensure_future(self.gpu_unavailable())
            self._gpu_probes[device].add_done_callback(lambda _f: self.send_status(snap))
        if status != self._last_status:
            self._last_status = status
            self.protocol.notify("sass-lsp/status", status)

    async def gpu_unavailable(self) -> str | None:
        """Why ``gpuDevice`` cannot run GPU work (None: it can); the child-process probe runs in a thread."""
        device = self.settings.gpuDevice
        if device not in self._gpu_reasons:
            self._gpu_reasons[device] = await asyncio.to_thread(no_gpu_reason, device)
        return self._gpu_reasons[device]

    def _is_latest(self, uri: str, version: int) -> bool:
        doc = self.docs.get(uri)
        return doc is not None and doc.version == version

    def _json(self, d: Diag, cols: Columns, uri: str) -> dict:
        """JSON of one diagnostic, cached while its lines are ASCII (then columns need no conversion)."""
        lines = cols.lines
        ascii_only = 0 <= d.line < len(lines) and lines[d.line].isascii() and not d.related
        if not ascii_only:
            return diagnostic_json(d, cols, uri)
        cached = self._json_cache.get(uri, {}).get(d)
        if cached is None:
            cached = diagnostic_json(d, cols, uri)
        self._json_next[d] = cached
        return cached

    def publish(self, snap: Snapshot, diags: list[Diag]) -> None:
        if not self._is_latest(snap.uri, snap.version):
            return
        extra_version, extra = self.extra_diags.get(snap.uri, (None, []))
        if extra_version == snap.version:
            diags = diags + extra
        if snap.arch_note is not None:
            diags = [snap.arch_note, *diags]
        cols = self.columns(snap.doc)
        send = getattr(self.protocol, "_send_data", None)
        if (
            send is not None
        ):  # fast path: plain JSON (cattrs costs ~30 us per diagnostic, 170 ms on first use)
            self._json_next = {}
            params = {
                "uri": snap.uri,
                "version": snap.version,
                "diagnostics": [self._json(d, cols, snap.uri) for d in diags],
            }
            self._json_cache[snap.uri] = self._json_next  # what this publish sent: all the next one can reuse
            send({"jsonrpc": "2.0", "method": lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, "params": params})
        else:
            self.text_document_publish_diagnostics(
                lsp.PublishDiagnosticsParams(
                    uri=snap.uri,
                    version=snap.version,
                    diagnostics=[to_lsp_diagnostic(d, cols, snap.uri) for d in diags],
                )
            )
        self.published[snap.uri] = (snap.version, time.perf_counter(), len(diags))

    async def _diagnose(self, uri: str, version: int, delay: float) -> None:
        """Publish what is known at once; ``delay`` (the debounce) holds back only the slow lanes."""
        try:
            if not self._is_latest(uri, version):
                return
            snap = self.snapshot(uri)
            if snap is None:
                return
            self.send_status(snap)
            await self._run_lanes(snap, delay)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("diagnostics failed for %s v%s", uri, version)

    async def _run_lanes(self, snap: Snapshot, delay: float = 0.0) -> None:
        settings = self.settings
        index = snap.index
        base = snap.base
        if base is not None and base.parse_diags is not None:
            changed = snap.changed_lines
            parse = [d for d in base.parse_diags if d.line not in changed]
            parse += diag_mod.parse_diagnostics(index, sorted(changed))
            parse.sort(key=lambda d: (d.line, d.col))
        else:
            parse = diag_mod.parse_diagnostics(index)
        snap.parse_diags = parse
        # the encoder lane from its caches only: the first publish never waits for the encoder's tables
        encode_arch = snap.arch if settings.encoderDiagnostics else None
        encode: list[Diag] = []
        pending: list = []
        base_map = snap.base.encode_map if snap.base is not None and snap.base.arch == snap.arch else None
        if encode_arch is not None and base_map is not None:
            encode_map = dict(base_map)
            for line in snap.changed_lines:
                encode_map.pop(line, None)
            known = diag_mod.encode_known(index, encode_arch, sorted(snap.changed_lines))
            pending = known.pending
            encode_map.update((d.line, d) for d in known.diags)
            encode = list(encode_map.values())
        elif encode_arch is not None:
            known = diag_mod.encode_known(index, encode_arch)
            encode, pending = known.diags, known.pending
        hazards: list[Diag] = []
        stale_kernels = []
        previous = self.last_hazards.get(snap.uri, {}) if snap.base is not None else {}
        if settings.hazardDiagnostics and snap.arch:
            for kernel in index.kernels:
                cached = diag_mod.cached_findings(index, kernel, snap.arch)
                if cached is None:
                    stale_kernels.append(kernel)
                    hazards += previous.get(kernel.section.line, [])  # until the re-check lands
                else:
                    hazards += diag_mod.hazard_diagnostics(index, kernel, snap.arch, settings)
        snap.base = None  # drop the chain of old snapshots
        self.publish(snap, parse + encode + hazards)
        if delay > 0 and (pending or stale_kernels):
            await asyncio.sleep(delay)  # the debounce: a keystroke within it cancels this task
            if not self._is_latest(snap.uri, snap.version):
                return
        adapter = None
        if pending:
            assert encode_arch is not None
            adapter = await self._encoder(encode_arch)
            if not self._is_latest(snap.uri, snap.version):
                return
            if adapter is None:  # no tables for this arch: no encoder diagnostics
                pending = []
        if not pending and not stale_kernels:
            self._done(snap, parse, encode, index, publish=False)
            self._prepare_views(snap)
            return
        # slow lane 1: the encoder on instructions not seen before, time-sliced on the event loop
        t_slice = time.perf_counter()
        for job in pending:
            d = diag_mod.encode_pending(index, adapter, job)  # type: ignore[arg-type]
            if d is not None:
                encode.append(d)
            t_slice = await self._next_slice(snap, t_slice)
            if t_slice is None:
                return
        encode.sort(key=lambda d: d.line)
        snap.encode_map = {d.line: d for d in encode}
        if pending and stale_kernels:
            self.publish(snap, parse + encode + hazards)
        # slow lane 2: the checker on edited kernels, in a worker thread (one at a time per document)
        lock = self._checker_locks.setdefault(snap.uri, asyncio.Lock())
        async with lock:
            for kernel in stale_kernels:
                if not self._is_latest(snap.uri, snap.version):
                    return
                arch = snap.arch
                assert arch is not None
                try:
                    await self._check_kernel(index, kernel, arch)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # contained to this kernel: a diagnostic on its section line
                    diag_mod.store_findings(index, kernel, arch, diag_mod.checker_failed(index, kernel, exc))
        if not self._is_latest(snap.uri, snap.version):
            return
        self._done(snap, parse, encode, index)
        self._prepare_views(snap)

    def _prepare_views(self, snap: Snapshot) -> None:
        """Once a snapshot's diagnostics are complete, build in the background what hover and navigation
        read of its kernels: register indexes (hover, highlights, references are then look-ups), basic
        blocks and the issue timeline of every stretch. Most edits carry all of these over (the timeline:
        every stretch but the edited one), so after them there is little or nothing to do."""
        running = self._view_tasks.get(snap.uri)
        if running is not None and not running[1].done():
            if running[0] is snap.index:
                return  # already building these
            running[1].cancel()
        task = asyncio.ensure_future(self._build_views(snap))
        self._view_tasks[snap.uri] = (snap.index, task)

    async def _build_views(self, snap: Snapshot) -> None:
        index = snap.index
        steps: list[Iterator[None]] = []
        for kernel in index.kernels:
            steps += [build_steps(index, kernel), block_steps(index, kernel)]
        if snap.arch:
            for kernel in index.kernels:
                timeline = kernel_timeline(index, kernel.section.line, snap.arch)
                if timeline is not None:
                    steps.append(timeline.fill_steps())
        t_slice = time.perf_counter()
        for step in steps:
            for _ in step:
                t_slice = await self._next_slice(snap, t_slice)
                if t_slice is None:
                    return
        freeze_heap()

    async def _next_slice(self, snap: Snapshot, started: float) -> float | None:
        """Give the event loop a turn once the time slice that began at ``started`` is over. Returns when the
        current slice began, or None once ``snap`` is no longer the latest version (stop the work)."""
        if time.perf_counter() - started <= SLICE_S:
            return started
        freeze_heap()
        await asyncio.sleep(0)
        waited_until = time.perf_counter() + REQUEST_DEADLINE_S
        while self.protocol.serving() and time.perf_counter() < waited_until:
            await asyncio.sleep(SLICE_S)  # a request in flight has the event loop (and the GIL) first
        return time.perf_counter() if self._is_latest(snap.uri, snap.version) else None

    async def _encoder(self, arch: str) -> EncoderAdapter | None:
        """The encoder for ``arch``; its tables (~0.2 s) load in a thread so that requests are served."""
        if encoder_loaded(arch):
            return encoder_for(arch)
        adapter = await asyncio.to_thread(encoder_for, arch)
        freeze_heap()
        return adapter

    async def _check_kernel(self, index: DocumentIndex, kernel: Kernel, arch: str) -> None:
        """Run the checker on one kernel in the worker process (in a thread if no process can be had)."""
        sec = kernel.section
        lines = list(index.lines[sec.line : sec.end_line])
        pool = self._worker_pool()
        if pool is not None:
            try:
                loop = asyncio.get_running_loop()
                findings = await loop.run_in_executor(
                    pool, diag_mod.check_section_lines, lines, sec.line, arch
                )
                diag_mod.store_findings(index, kernel, arch, findings)
                return
            except (BrokenProcessPool, OSError):
                log.warning("checker worker process failed; checking in a thread", exc_info=True)
                self._pool = None
        await asyncio.to_thread(diag_mod.kernel_findings, index, kernel, arch)

    def close_workers(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    def _worker_pool(self) -> ProcessPoolExecutor | None:
        if self._pool is None and not self._pool_failed:
            try:
                self._pool = ProcessPoolExecutor(
                    max_workers=1,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=exit_with,  # the worker dies with the server, SIGKILL included
                    initargs=(os.getpid(),),
                )
            except Exception:
                log.warning("no worker process for the checker", exc_info=True)
                self._pool_failed = True
        return self._pool

    def _done(
        self,
        snap: Snapshot,
        parse: list[Diag],
        encode: list[Diag],
        index: DocumentIndex,
        publish: bool = True,
    ) -> None:
        """Publish the complete diagnostics of a snapshot and remember them for the next edit."""
        snap.encode_map = {d.line: d for d in encode}
        per_kernel: dict[int, list[Diag]] = {}
        if self.settings.hazardDiagnostics and snap.arch:
            for kernel in index.kernels:
                if diag_mod.cached_findings(index, kernel, snap.arch) is not None:
                    per_kernel[kernel.section.line] = diag_mod.hazard_diagnostics(
                        index, kernel, snap.arch, self.settings
                    )
        self.last_hazards[snap.uri] = per_kernel
        hazards = [d for diags in per_kernel.values() for d in diags]
        self.full_diagnostics[snap.uri] = parse + encode + hazards
        freeze_heap()
        if publish:
            self.publish(snap, parse + encode + hazards)
