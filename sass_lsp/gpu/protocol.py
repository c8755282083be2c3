"""The worker's JSON-lines protocol: one JSON object per line, each way.

Request:   ``{"id": 7, "op": "verify", "orig_b64": "...", "edit_b64": "...", "spec": {...}, "seeds": [0, 1]}``
Progress:  ``{"id": 7, "progress": {"phase": "edit seed 1", "done": 3, "total": 11}}`` (zero or more; also the
           heartbeat the parent's watchdog listens for)
Reply:     ``{"id": 7, "ok": true, "result": {...}, "context_lost": false}`` or
           ``{"id": 7, "ok": false, "error": {"kind": "spec_error", "message": "...", ...}}``

Ops: ``hello``, ``verify``, ``time``, ``launch``, ``shutdown``; over TCP the first line must be
``{"op": "auth", "token": "..."}``. Error kinds: ``bad_request``, ``spec_error``, ``no_device``, ``cuda``,
``internal``, ``auth``; the parent adds ``timeout`` (no message within the watchdog limit) and ``crash`` (the
worker died). ``context_lost: true`` means the worker is exiting (its CUDA context is poisoned) and the next
request starts a new one.
"""

from __future__ import annotations

import base64
import json
from typing import Any

PROTOCOL_VERSION = 1
OPS = ("hello", "verify", "time", "launch", "shutdown")


def encode(msg: dict[str, Any]) -> bytes:
    # NaN/Infinity tokens are allowed: both ends are Python; the CLI's --json output is sanitised separately.
    return (json.dumps(msg, separators=(",", ":")) + "\n").encode()


def decode(line: bytes | str) -> dict[str, Any]:
    msg = json.loads(line)
    if not isinstance(msg, dict):
        raise ValueError("a protocol message is a JSON object")
    return msg


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def unb64(text: str) -> bytes:
    return base64.b64decode(text.encode("ascii"), validate=True)


def error_reply(req_id: Any, kind: str, message: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": req_id,
        "ok": False,
        "error": {"kind": kind, "message": message, **extra},
        "context_lost": bool(extra.get("fatal", False)),
    }
