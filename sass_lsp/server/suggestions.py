"""Reorder suggestions off the request path: one job per (uri, version, kernel), run in a worker thread (the
policy is torch inference), cached until the document changes. The policy (and torch) is loaded on first use
only: the server starts and answers everything else without it.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from sass_lsp import app
from sass_lsp.app.policy import NO_CHECKPOINT, NO_EXTRA, NOT_INSTALLED
from sass_lsp.ide import reorder
from sass_lsp.ide.reorder import SuggestionView
from sass_lsp.policy.checkpoint import POLICY_HINT
from sass_lsp.server.state import SassLanguageServer, Snapshot

log = logging.getLogger("sass_lsp.server")


class PolicyUnavailable(Exception):
    """The policy cannot be used (no torch, no checkpoint, a bad one); ``str()`` says why and what to do."""


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


def load_net(path: Path) -> Any:
    """The policy network at ``path`` (imports torch); raises :class:`PolicyUnavailable`."""
    try:
        return app.load_policy(path)
    except app.PolicyUnavailable as exc:
        raise PolicyUnavailable(policy_message(exc)) from None


BUDGET_S = 2.0
"""Search time per request: rollouts stop extending once it is spent (each keeps its best prefix)."""


def suggest(text: str, arch: str, net: Any, kernel: str | None, top: int = 3) -> list[SuggestionView]:
    """The policy's suggestions for ``kernel`` (None: the largest kernel) of the document ``text``."""
    found = app.suggest(text, arch, net=net, top=top, kernel=kernel, time_budget_s=BUDGET_S)
    return [reorder.view(s) for s in found]


Key = tuple[int, str | None]  # (document version, kernel name or None for the largest kernel)


class SuggestionJobs:
    def __init__(self, ls: SassLanguageServer) -> None:
        self.ls = ls
        self._nets: dict[Path, Any] = {}  # loaded policies (a PolicyUnavailable when loading failed)
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
            path = self.policy_path()
            net = self._nets.get(path)
            if net is None:
                try:
                    net = await asyncio.to_thread(load_net, path)
                except PolicyUnavailable as exc:
                    net = exc
                self._nets[path] = net
            if isinstance(net, PolicyUnavailable):
                raise net.with_traceback(None)  # raised again each time: a kept traceback would grow
            return await asyncio.to_thread(suggest, snap.doc.text, snap.arch, net, kernel)

    async def get(self, snap: Snapshot, kernel: str | None, timeout: float | None) -> list[SuggestionView]:
        """Wait up to ``timeout`` seconds (None: until done) for the job; [] while it runs on or if it failed
        (a missing policy is said once in a message)."""
        job = self.job(snap, kernel)
        try:
            return await asyncio.wait_for(asyncio.shield(job), timeout) if timeout != 0 else job.result()
        except (TimeoutError, asyncio.InvalidStateError, asyncio.CancelledError):
            return []
        except PolicyUnavailable as exc:
            self.tell(str(exc))
            return []
        except Exception as exc:  # a bug in the policy must not cost the user the other code actions
            log.exception("reorder suggestions failed")
            self.tell(f"Reorder suggestions failed: {type(exc).__name__}: {exc}")
            return []

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
        self._nets = {path: net for path, net in self._nets.items() if not isinstance(net, PolicyUnavailable)}
        self._jobs.clear()
        self._shown.clear()
