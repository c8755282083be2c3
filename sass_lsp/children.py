"""Child processes die with their parent, and a terminated command cleans up like an interrupted one.

``with_parent`` is a ``preexec_fn``: on Linux the kernel sends the child SIGKILL when the process that started
it dies, however it dies (SIGKILL included), so no nvdisasm or worker outlives a killed server or CLI.
``exit_on_termination`` turns SIGTERM and SIGHUP into ``SystemExit`` so that ``finally`` blocks and context
managers (temp files, temp directories, children) run as they do for Ctrl-C.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time
from types import FrameType

_PR_SET_PDEATHSIG = 1


def with_parent() -> None:
    """preexec_fn: the child gets SIGKILL when its parent dies (Linux; elsewhere a no-op)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):  # no prctl: nothing better to do here
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _exit(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def exit_on_termination() -> None:
    """SIGTERM/SIGHUP raise SystemExit(128 + signal) in the main thread; a no-op elsewhere."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if sig is not None:
            signal.signal(sig, _exit)


def exit_with(parent_pid: int, interval_s: float = 0.5) -> None:
    """Pool initializer: this process exits once ``parent_pid`` is no longer its parent, however it died.

    (PR_SET_PDEATHSIG would follow the *thread* that started the process, which for a pool is not the
    server's lifetime; a watchdog thread polling the parent pid is.)"""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(interval_s)
        os._exit(0)  # the pool's queues have no reader left: nothing to flush

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()
