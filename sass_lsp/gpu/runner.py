"""Feature: GPU runner. The parent side of the worker protocol, with a watchdog and restarts.

:class:`GpuRunner` never raises for what happens on the GPU: every request returns a :class:`Reply`. A worker
that says nothing for ``timeout_s`` seconds (progress messages count) is killed and the reply says
``timeout``; one that dies says ``crash``; one that reports a poisoned context exits by itself. In each case
the
next request starts a fresh worker.
"""

from __future__ import annotations

import collections
import contextlib
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sass_lsp.gpu.protocol import b64, decode, encode
from sass_lsp.gpu.spec import LaunchSpec, spec_to_dict

ProgressCallback = Callable[[str, int, int], None]

_EOF = object()


@dataclass(frozen=True)
class Reply:
    ok: bool
    result: dict[str, Any] = field(default_factory=dict)
    error: dict[str, Any] | None = None
    """``{"kind": ..., "message": ...}``; kinds in :mod:`sass_lsp.gpu.protocol`."""
    context_lost: bool = False
    """The worker is gone (fault, hang or crash); the next request starts a new one."""

    @property
    def kind(self) -> str:
        return self.error["kind"] if self.error else ""

    @property
    def reason(self) -> str:
        """The error in words: a ``no_device`` reply's message says what to install or why no GPU answers
        (:mod:`sass_lsp.gpu.availability`); other kinds are prefixed with theirs."""
        message = str((self.error or {}).get("message", ""))
        return message if self.kind == "no_device" else f"{self.kind or 'error'}: {message}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ok": self.ok, "result": self.result, "context_lost": self.context_lost}
        if self.error is not None:
            out["error"] = self.error
        return out


class _Transport:
    """A line stream to a worker, read by a thread into a queue so reads can time out."""

    def __init__(self) -> None:
        self.lines: queue.Queue[Any] = queue.Queue()

    def _pump(self, stream: Any) -> None:
        try:
            for line in stream:
                self.lines.put(line)
        except (OSError, ValueError):
            pass
        self.lines.put(_EOF)

    def send(self, msg: dict[str, Any]) -> None:
        raise NotImplementedError

    def kill(self) -> None:
        raise NotImplementedError

    def describe_exit(self) -> str:
        return "connection closed"


class _ProcessTransport(_Transport):
    def __init__(self, python: str, env: dict[str, str]) -> None:
        super().__init__()
        # Own session: the watchdog kills the whole process group, in case the worker ever starts helpers.
        self.proc = subprocess.Popen(
            [python, "-m", "sass_lsp.gpu.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=40)
        threading.Thread(target=self._pump, args=(self.proc.stdout,), daemon=True).start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr_tail.append(line.decode(errors="replace").rstrip())

    def send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(encode(msg))
        self.proc.stdin.flush()

    def kill(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=30)
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()

    def describe_exit(self) -> str:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        if code is not None and code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = str(-code)
            return f"worker killed by {name}"
        return f"worker exited with code {code}"


class _SocketTransport(_Transport):
    def __init__(self, host: str, port: int) -> None:
        super().__init__()
        self.sock = socket.create_connection((host, port), timeout=30)
        self.sock.settimeout(None)
        self.stream = self.sock.makefile("rwb", buffering=0)
        threading.Thread(target=self._pump, args=(self.stream,), daemon=True).start()

    def send(self, msg: dict[str, Any]) -> None:
        self.stream.write(encode(msg))

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()


def worker_env(extra: dict[str, str] | None) -> dict[str, str]:
    env = dict(os.environ)
    # The worker must import this very package, installed or not.
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(
        [root, *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]]
    )
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env


class GpuRunner:
    """Talks to one worker (a local process, or a ``--listen`` server given ``address`` and ``token``)."""

    def __init__(
        self,
        *,
        timeout_s: float = 120.0,
        env: dict[str, str] | None = None,
        python: str | None = None,
        address: str | None = None,
        token: str | None = None,
    ) -> None:
        self.timeout_s = timeout_s
        self._env = worker_env(env)
        self._python = python or sys.executable
        self._address = address
        self._token = token
        self._transport: _Transport | None = None
        self._next_id = 0
        self.n_starts = 0
        """Workers started so far (1 + restarts)."""

    def __enter__(self) -> GpuRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._transport is not None:
            with contextlib.suppress(OSError):
                self._transport.send({"id": -1, "op": "shutdown"})
            if isinstance(self._transport, _ProcessTransport):
                # Let the worker leave on its own so the driver tears its context down cleanly.
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._transport.proc.wait(timeout=5)
            self._transport.kill()
            self._transport = None

    def _start(self) -> Reply | None:
        self.n_starts += 1
        try:
            if self._address is None:
                self._transport = _ProcessTransport(self._python, self._env)
                return None
            host, _, port = self._address.rpartition(":")
            transport = _SocketTransport(host.strip("[]"), int(port))
        except (OSError, ValueError) as exc:
            self._transport = None
            return Reply(
                False, error={"kind": "crash", "message": f"cannot start or reach the worker: {exc}"}
            )
        self._transport = transport
        auth = self._exchange({"op": "auth", "token": self._token or ""}, None, self.timeout_s)
        if not auth.ok:
            return auth
        return None

    def request(
        self,
        op: str,
        *,
        progress: ProgressCallback | None = None,
        timeout_s: float | None = None,
        **fields: Any,
    ) -> Reply:
        if self._transport is None:
            failed = self._start()
            if failed is not None:
                return failed
        return self._exchange({"op": op, **fields}, progress, timeout_s or self.timeout_s)

    def _exchange(self, msg: dict[str, Any], progress: ProgressCallback | None, timeout_s: float) -> Reply:
        transport = self._transport
        assert transport is not None
        self._next_id += 1
        req_id = self._next_id
        phase = "sending the request"
        try:
            transport.send({"id": req_id, **msg})
        except OSError as exc:
            return self._lost("crash", f"{transport.describe_exit()} ({exc})", phase)
        phase = "waiting for the worker"
        while True:
            try:
                line = transport.lines.get(timeout=timeout_s)
            except queue.Empty:
                return self._lost(
                    "timeout", f"no answer for {timeout_s:g} s (hung kernel?); worker killed", phase
                )
            if line is _EOF:
                return self._lost("crash", transport.describe_exit(), phase)
            try:
                reply = decode(line)
            except ValueError:
                continue  # not ours (a stray line): the id check below would drop it anyway
            if reply.get("id") != req_id:
                continue  # left over from an earlier request that was abandoned
            if "progress" in reply:
                info = reply["progress"]
                phase = str(info.get("phase", phase))
                if progress is not None:
                    progress(phase, int(info.get("done", 0)), int(info.get("total", 0)))
                continue
            out = Reply(
                bool(reply.get("ok")),
                reply.get("result") or {},
                reply.get("error"),
                bool(reply.get("context_lost")),
            )
            if out.context_lost or msg.get("op") == "shutdown":
                transport.kill()
                self._transport = None
            return out

    def _lost(self, kind: str, message: str, phase: str) -> Reply:
        transport = self._transport
        tail: list[str] = []
        if transport is not None:
            transport.kill()
            if isinstance(transport, _ProcessTransport):
                tail = list(transport.stderr_tail)[-10:]
        self._transport = None
        return Reply(
            False,
            error={
                "kind": kind,
                "message": f"{message}; last phase: {phase}",
                "phase": phase,
                "stderr_tail": tail,
            },
            context_lost=True,
        )

    # -- typed helpers --------------------------------------------------------------------------------------
    def hello(self) -> Reply:
        return self.request("hello")

    def verify(
        self,
        orig: bytes,
        edit: bytes,
        spec: LaunchSpec,
        seeds: list[int],
        progress: ProgressCallback | None = None,
    ) -> Reply:
        return self.request(
            "verify",
            progress=progress,
            orig_b64=b64(orig),
            edit_b64=b64(edit),
            spec=spec_to_dict(spec),
            seeds=list(seeds),
        )

    def time(
        self,
        orig: bytes,
        edit: bytes,
        spec: LaunchSpec,
        *,
        rounds: int,
        progress: ProgressCallback | None = None,
        **options: Any,
    ) -> Reply:
        return self.request(
            "time",
            progress=progress,
            orig_b64=b64(orig),
            edit_b64=b64(edit),
            spec=spec_to_dict(spec),
            rounds=rounds,
            **options,
        )

    def launch(self, cubin: bytes, spec: LaunchSpec, *, seed: int = 0, repeats: int = 1) -> Reply:
        return self.request(
            "launch", cubin_b64=b64(cubin), spec=spec_to_dict(spec), seed=seed, repeats=repeats
        )
