"""Reorder suggestions off the request path: one job per (uri, version, kernel), run in a worker thread (the
policy's and the performance model's numpy forward passes), cached until the document changes. Both models
load in a background thread once the server is initialized (:meth:`SuggestionJobs.preload`), so the
first code action does not wait for them; the server answers everything else meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from sass_lsp import app
from sass_lsp.app.policy import NO_CHECKPOINT, NO_EXTRA, NOT_INSTALLED
from sass_lsp.ide import reorder
from sass_lsp.ide.reorder import SuggestionView
from sass_lsp.policy.checkpoint import POLICY_HINT, SERVING_MODULES, missing_policy_modules
from sass_lsp.server.state import SassLanguageServer, Snapshot

log = logging.getLogger("sass_lsp.server")


class PolicyUnavailable(Exception):
    """The policy cannot be used (the extra missing, no checkpoint, a bad one); ``str()`` says why and what to
    do."""


def policy_message(exc: app.PolicyUnavailable) -> str:
    """Why suggestions are off, in the editor's words (the setting to change, what still works)."""
    if exc.reason == NO_CHECKPOINT:
        return (
            f"Reorder suggestions are off: no policy checkpoint at {exc.path} (set sass-lsp.policyModelPath)."
        )
    if exc.reason == NO_EXTRA:
        return (
            f"Reorder suggestions are off: {exc.detail} (the server's Python); {POLICY_HINT}. "
            "Everything else works without it."
        )
    if exc.reason == NOT_INSTALLED:
        return f"Reorder suggestions are not available in this installation: {exc.detail}"
    return f"Reorder suggestions are off: cannot load the policy {exc.path}: {exc.detail}"


def load_net(path: Path, *, torch_net: bool = False) -> Any:
    """The policy network at ``path``: its numpy forward pass, or (``torch_net``, for the GPU search) the
    torch network, loaded once per version of the checkpoint; raises :class:`PolicyUnavailable`."""
    try:
        if torch_net:
            return _torch_net(path, _version(path))
        return app.load_policy(path)
    except app.PolicyUnavailable as exc:
        raise PolicyUnavailable(policy_message(exc)) from None


@functools.lru_cache(maxsize=1)
def _torch_net(path: Path, version: int | None) -> Any:
    return app.load_policy(path, torch_net=True)


def _version(path: Path) -> int | None:
    """When the checkpoint folder last changed (a replaced file changes it), None where there is none."""
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


def load_models(path: Path) -> tuple[Any, Any]:
    """(the policy at ``path``, the performance model that ranks its candidates), or
    :class:`PolicyUnavailable`."""
    net = load_net(path)
    try:
        return net, app.load_perf_model()
    except app.PolicyUnavailable as exc:
        message = f"Reorder suggestions are off: cannot load the performance model: {exc}"
        raise PolicyUnavailable(message) from None


BUDGET_S = 0.2
"""Search time per request, as ``suggest`` and ``benchmarks/suggest_latency.py`` use it: rollouts stop
extending once it is spent (what they reached is ranked)."""


def suggest(text: str, arch: str, models: tuple[Any, Any], kernel: str | None) -> list[SuggestionView]:
    """The policy's suggestions for ``kernel`` (None: the largest kernel) of the document ``text``, ranked
    by the performance model."""
    net, perf = models
    found = app.suggest(text, arch, net=net, perf=perf, top=TOP, kernel=kernel, time_budget_s=BUDGET_S)
    return [reorder.view(s) for s in found]


TOP = 3  # suggestions per kernel
PRELOAD_AFTER_S = 1.0  # after initialization: an editor opens its first document within this
PRELOADED = "policy and performance model loaded in the background"


Key = tuple[int, str | None]  # (document version, kernel name or None for the largest kernel)


class SuggestionJobs:
    def __init__(self, ls: SassLanguageServer) -> None:
        self.ls = ls
        self._models: dict[Path, Any] = {}  # (policy, perf model) per policy path, or the PolicyUnavailable
        self._loading: asyncio.Future | None = None  # the background load of the default models
        self._jobs: dict[str, dict[Key, asyncio.Future[list[SuggestionView]]]] = {}
        self._lock = asyncio.Lock()  # one inference at a time: the machine has few cores to share
        self._shown: set[str] = set()

    def policy_path(self) -> Path:
        setting = reorder.policy_path(self.ls.settings.policyModelPath, self.ls.workspace.root_path)
        return app.policy_path(setting)

    def job(self, snap: Snapshot, kernel: str | None) -> asyncio.Future[list[SuggestionView]]:
        """The suggestions for ``kernel`` of this snapshot, computed once (older versions are dropped)."""
        jobs = self._jobs.setdefault(snap.uri, {})
        key = (snap.version, kernel)
        if key not in jobs:
            for old in [k for k in jobs if k[0] != snap.version]:
                del jobs[old]  # a stale job still queued skips its work (see _run); a running one finishes
            job = jobs[key] = asyncio.ensure_future(self._run(snap, kernel))
            # an error of a job nobody asks for any more (the document changed) is not news
            job.add_done_callback(lambda j: j.cancelled() or j.exception())
        return jobs[key]

    async def _run(self, snap: Snapshot, kernel: str | None) -> list[SuggestionView]:
        async with self._lock:
            if (snap.version, kernel) not in self._jobs.get(snap.uri, {}):
                return []  # the document changed while this job waited for its turn
            if not snap.arch:
                raise PolicyUnavailable("Reorder suggestions need the file's arch (set sass-lsp.arch).")
            models = await self.models()
            return await asyncio.to_thread(suggest, snap.doc.text, snap.arch, models, kernel)

    async def models(self) -> tuple[Any, Any]:
        """The policy of ``policyModelPath`` and the performance model, loaded once (in a thread);
        :class:`PolicyUnavailable` every time when they cannot be."""
        path = self.policy_path()
        got = self._models.get(path)
        if got is None:
            try:
                got = await asyncio.to_thread(load_models, path)
            except PolicyUnavailable as exc:
                got = exc
            self._models[path] = got
        if isinstance(got, PolicyUnavailable):
            raise got.with_traceback(None)  # raised again each time: a kept traceback would grow
        return got

    def preload(self) -> None:
        """Start loading the models in the background (where the extra is installed), so that the first
        code action finds them ready; what cannot load is said when suggestions are first asked for. The
        load (the game's imports and the first forward pass: a few hundred ms of the interpreter) waits
        until the first document's diagnostics are out."""
        if self._loading is None and not missing_policy_modules(SERVING_MODULES):
            self._loading = asyncio.ensure_future(self._preload())

    async def _preload(self) -> None:
        await asyncio.sleep(PRELOAD_AFTER_S)
        await self.ls.diagnostics_settled()
        async with self._lock:
            t0 = time.perf_counter()
            with contextlib.suppress(PolicyUnavailable):  # said at the first request for suggestions
                await self.models()
                log.info("%s: %.0f ms", PRELOADED, (time.perf_counter() - t0) * 1000)

    async def get(
        self, snap: Snapshot, kernel: str | None, timeout: float | None
    ) -> list[SuggestionView] | None:
        """Wait up to ``timeout`` seconds (None: until done) for the job: its suggestions ([]: none is
        predicted faster), or None while it runs on or if it failed (a missing policy is said once in a
        message)."""
        job = self.job(snap, kernel)
        try:
            return await asyncio.wait_for(asyncio.shield(job), timeout) if timeout != 0 else job.result()
        except (TimeoutError, asyncio.InvalidStateError, asyncio.CancelledError):
            return None
        except PolicyUnavailable as exc:
            self.tell(str(exc))
            return None
        except Exception as exc:  # a bug in the policy must not cost the user the other code actions
            log.exception("reorder suggestions failed")
            self.tell(f"Reorder suggestions failed: {type(exc).__name__}: {exc}")
            return None

    def tell(self, message: str) -> None:
        """Show ``message`` once per server lifetime."""
        if message in self._shown:
            return
        self._shown.add(message)
        log.warning(message)
        self.ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Warning, message=message))

    def forget(self, uri: str) -> None:
        self._jobs.pop(uri, None)

    def reset(self) -> None:
        """Settings changed (maybe the policy path): suggest afresh; a policy that failed to load is tried
        again, one that loaded is kept."""
        self._models = {p: got for p, got in self._models.items() if not isinstance(got, PolicyUnavailable)}
        self._jobs.clear()
        self._shown.clear()
