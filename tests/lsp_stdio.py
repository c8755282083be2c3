"""A small synchronous LSP client for the real server process over stdio, and the hostile edits the
robustness tests and ``benchmarks/lsp_fuzz.py`` throw at it.

The client answers the server's own requests (configuration, progress, refreshes), records every
``publishDiagnostics`` and reports requests that get no answer within their time limit.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "sass_lsp" / "corpus" / "sm_90"
TRACEBACK = "Traceback (most recent call last)"


class Unanswered(AssertionError):
    """A request got no answer (result or error) within its time limit."""


@dataclass
class Reply:
    result: object = None
    error: dict | None = None
    seconds: float = 0.0


@dataclass
class StdioClient:
    log_file: Path
    settings: dict = field(default_factory=dict)
    env: dict | None = None

    def __post_init__(self) -> None:
        env = dict(os.environ if self.env is None else self.env)
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "sass_lsp.server", "--log-file", str(self.log_file)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=ROOT,
        )
        self._next_id = 0
        self._replies: dict[int, dict] = {}
        self._cond = threading.Condition()
        self._write_lock = threading.Lock()
        self.diagnostics: dict[str, tuple[int | None, list]] = {}
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        init = {
            "processId": os.getpid(),
            "rootUri": None,
            "capabilities": {
                "general": {"positionEncodings": ["utf-16"]},
                "textDocument": {"synchronization": {"didSave": True}},
                "window": {"workDoneProgress": True},
            },
            "initializationOptions": self.settings,
        }
        self.request("initialize", init, timeout=60)
        self.notify("initialized", {})

    # ---------------------------------------------------------------- transport
    def _send(self, message: dict) -> None:
        body = json.dumps(message).encode()
        with self._write_lock:
            assert self.proc.stdin is not None
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.proc.stdin.flush()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    with self._cond:
                        self._cond.notify_all()
                    return
                line = line.strip()
                if not line:
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if length is None:
                continue
            message = json.loads(out.read(length))
            self._dispatch(message)

    def _dispatch(self, message: dict) -> None:
        if "id" in message and "method" in message:  # the server asks the client something
            method = message["method"]
            result: object = None
            if method == "workspace/configuration":
                result = [self.settings for _ in message["params"].get("items", [])]
            self._send({"jsonrpc": "2.0", "id": message["id"], "result": result})
        elif "id" in message:
            with self._cond:
                self._replies[message["id"]] = message
                self._cond.notify_all()
        elif message.get("method") == "textDocument/publishDiagnostics":
            params = message["params"]
            with self._cond:
                self.diagnostics[params["uri"]] = (params.get("version"), params["diagnostics"])
                self._cond.notify_all()

    # ---------------------------------------------------------------- API
    def notify(self, method: str, params: object) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def send_request(self, method: str, params: object) -> int:
        self._next_id += 1
        self._send({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params})
        return self._next_id

    def wait_reply(self, request_id: int, method: str, timeout: float, started: float) -> Reply:
        deadline = started + timeout
        with self._cond:
            while request_id not in self._replies:
                left = deadline - time.perf_counter()
                if left <= 0 or self.proc.poll() is not None:
                    raise Unanswered(f"{method} (request {request_id}) got no answer within {timeout} s")
                self._cond.wait(left)
            message = self._replies.pop(request_id)
        return Reply(message.get("result"), message.get("error"), time.perf_counter() - started)

    def request(self, method: str, params: object, timeout: float = 20.0) -> Reply:
        started = time.perf_counter()
        return self.wait_reply(self.send_request(method, params), method, timeout, started)

    def open(self, uri: str, text: str, version: int = 1) -> None:
        item = {"uri": uri, "languageId": "cuasm", "version": version, "text": text}
        self.notify("textDocument/didOpen", {"textDocument": item})

    def change(self, uri: str, version: int, changes: list[dict]) -> None:
        doc = {"uri": uri, "version": version}
        self.notify("textDocument/didChange", {"textDocument": doc, "contentChanges": changes})

    def close(self, uri: str) -> None:
        self.notify("textDocument/didClose", {"textDocument": {"uri": uri}})

    def settled_diagnostics(
        self, uri: str, version: int, quiet_s: float = 0.6, timeout: float = 60.0
    ) -> list:
        """The diagnostics of ``version`` once none has been published for ``quiet_s`` seconds."""
        deadline = time.perf_counter() + timeout
        last = None
        last_change = time.perf_counter()
        with self._cond:
            while True:
                now = time.perf_counter()
                got = self.diagnostics.get(uri)
                if got != last:
                    last, last_change = got, now
                if got is not None and got[0] == version and now - last_change >= quiet_s:
                    return got[1]
                if now > deadline or self.proc.poll() is not None:
                    raise Unanswered(f"no settled diagnostics for {uri} v{version} within {timeout} s")
                self._cond.wait(0.05)

    def rss_mb(self) -> float:
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def shutdown(self) -> None:
        try:
            self.request("shutdown", None, timeout=20)
            self.notify("exit", None)
            self.proc.wait(10)
        except Exception:
            self.proc.kill()
            self.proc.wait()


def tracebacks(log_file: Path) -> list[str]:
    """Every logged traceback (its last line, the exception) in the server log."""
    if not log_file.exists():
        return []
    lines = log_file.read_text(errors="replace").splitlines()
    out = []
    for i, line in enumerate(lines):
        if line.startswith(TRACEBACK):
            j = i + 1
            while j < len(lines) and (lines[j].startswith(" ") or lines[j].startswith("Traceback")):
                j += 1
            out.append(lines[j] if j < len(lines) else line)
    return out


# -------------------------------------------------------------------- hostile edits
def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def lsp_lines(text: str) -> list[str]:
    """Lines as LSP counts them (``\\r\\n``, ``\\r`` and ``\\n`` each end one)."""
    import re

    return re.split(r"\r\n|\r|\n", text)


def to_offset(text: str, line: int, character: int) -> int:
    """The code-point offset of an LSP (UTF-16) position in ``text``."""
    import re

    starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]
    line = min(line, len(starts) - 1)
    start = starts[line]
    end = len(text) if line + 1 >= len(starts) else starts[line + 1]
    content = text[start:end].rstrip("\r\n") if line + 1 < len(starts) else text[start:end]
    units = 0
    for i, ch in enumerate(content):
        if units >= character:
            return start + i
        units += 2 if ord(ch) > 0xFFFF else 1
    return start + len(content)


def apply_change(text: str, change: dict) -> str:
    rng = change["range"]
    a = to_offset(text, rng["start"]["line"], rng["start"]["character"])
    b = to_offset(text, rng["end"]["line"], rng["end"]["character"])
    a, b = min(a, b), max(a, b)
    return text[:a] + change["text"] + text[b:]


def lsp_range(text: str, a: int, b: int) -> dict:
    """The LSP range of code-point offsets ``a``..``b`` of ``text``."""

    def pos(offset: int) -> dict:
        head = text[:offset]
        lines = lsp_lines(head)
        return {"line": len(lines) - 1, "character": utf16_len(lines[-1])}

    return {"start": pos(a), "end": pos(b)}


BAD_FIELDS = ["[B------:R-:W-:-:S0x]", "[B------:R-:W-:Y:S99]", "[B:R:W:S]", "[B------:R9:W9:Y:S04]", "[]"]
FLAGS = ["0x5a0d5a", "0x000000", "0xffffff", "0x500550", "zz", "", "0x5a0d5a0d5a0d5a0d5a"]


def random_edit(rng: random.Random, text: str, pastes: list[str]) -> str | dict:
    """One hostile change: a full-text replacement (str) or an incremental change (dict)."""
    n = len(text)
    kind = rng.choice(
        [
            "bytes",
            "unicode",
            "delete",
            "cr",
            "crlf",
            "paste",
            "longline",
            "header",
            "control",
            "digit",
            "empty",
        ]
        + ["digit"] * 4
    )
    a = rng.randint(0, n)
    b = min(n, a + rng.choice([0, 0, 1, 3, 20, 200]))
    new = ""
    if kind == "bytes":
        new = bytes(rng.randrange(256) for _ in range(rng.randint(1, 12))).decode("latin-1")
    elif kind == "unicode":
        new = "".join(chr(rng.choice([0xE9, 0x3B1, 0x4E2D, 0x1F600, 0x200B, 0xFEFF, 0x0A])) for _ in range(3))
    elif kind == "cr":
        new = "\r"
        nl = text.find("\n", a)
        if nl >= 0 and rng.random() < 0.7:
            a = b = nl  # just before an existing \n
    elif kind == "crlf":
        new = rng.choice(["\r\n", "\n", "\r\r\n", "\n\r"])
    elif kind == "paste" and pastes:
        src = rng.choice(pastes)
        s = rng.randrange(len(src))
        new = src[s : s + rng.choice([50, 500, 5000])]
    elif kind == "longline":
        new = ("R1, R2, é " if rng.random() < 0.5 else "FADD R1, R2, R3 ; ") * rng.randint(100, 600)
    elif kind == "header":
        i = text.find(".__elf_flags")
        if i >= 0:
            j = text.find("//", i)
            a, b = i, j if j >= 0 else i
            new = f".__elf_flags {rng.choice(FLAGS)} "
    elif kind == "control":
        i = text.find("[B", a)
        if i >= 0:
            j = text.find("]", i)
            a, b = i, j + 1 if j >= 0 else i
            new = rng.choice(BAD_FIELDS)
    elif kind == "digit":
        i = text.find("R", a)
        if i >= 0 and i + 1 < n and text[i + 1].isdigit():
            a, b = i + 1, i + 2
            new = str(rng.randrange(10))
    elif kind == "empty" and rng.random() < 0.1:
        return ""
    return {"range": lsp_range(text, a, b), "text": new}


REQUESTS = [
    "textDocument/hover",
    "textDocument/definition",
    "textDocument/references",
    "textDocument/documentHighlight",
    "textDocument/semanticTokens/full",
    "textDocument/documentSymbol",
    "textDocument/foldingRange",
    "textDocument/inlayHint",
    "textDocument/codeLens",
    "textDocument/codeAction",
    "textDocument/completion",
]


def request_params(method: str, uri: str, line: int, character: int, n_lines: int) -> dict:
    doc = {"uri": uri}
    pos = {"line": line, "character": character}
    whole = {"start": {"line": 0, "character": 0}, "end": {"line": n_lines, "character": 0}}
    if method in ("textDocument/semanticTokens/full", "textDocument/documentSymbol"):
        return {"textDocument": doc}
    if method in ("textDocument/foldingRange", "textDocument/codeLens"):
        return {"textDocument": doc}
    if method == "textDocument/inlayHint":
        return {"textDocument": doc, "range": whole}
    if method == "textDocument/codeAction":
        rng = {"start": pos, "end": pos}
        return {"textDocument": doc, "range": rng, "context": {"diagnostics": []}}
    if method == "textDocument/references":
        return {"textDocument": doc, "position": pos, "context": {"includeDeclaration": True}}
    if method == "textDocument/formatting":
        return {"textDocument": doc, "options": {"tabSize": 4, "insertSpaces": True}}
    if method == "textDocument/semanticTokens/range":
        span = {"start": {"line": line, "character": 0}, "end": {"line": line + 100, "character": 0}}
        return {"textDocument": doc, "range": span}
    return {"textDocument": doc, "position": pos}


def views(client: StdioClient, uri: str, n_lines: int, timeout: float = 30.0) -> dict:
    """What must not depend on how a text was reached: tokens, symbols, folding, inlay hints."""
    out = {}
    for method in (
        "textDocument/semanticTokens/full",
        "textDocument/documentSymbol",
        "textDocument/foldingRange",
        "textDocument/inlayHint",
    ):
        reply = client.request(method, request_params(method, uri, 0, 0, n_lines), timeout)
        out[method] = reply.error if reply.error else reply.result
    return out


def comparable_diagnostics(diags: list) -> list:
    """Diagnostics as sorted JSON, the document's URI left out (a fresh copy is opened under another)."""
    out = []
    for d in diags:
        d = {k: v for k, v in d.items() if k != "data"}
        for info in d.get("relatedInformation") or []:
            info["location"] = info["location"]["range"]
        out.append(json.dumps(d, sort_keys=True))
    return sorted(out)
