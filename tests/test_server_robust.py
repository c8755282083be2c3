"""Robustness of the server on hostile text (issues #39 and #40): LSP line breaks in incremental edits,
semantic tokens linear on long non-ASCII lines, an arch without tables, a check that raises contained to
its kernel, and the real server over stdio under random edits and requests (no traceback, every request
answered, incremental results equal to a fresh open)."""

from __future__ import annotations

import asyncio
import random
import re
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from lsp_stdio import (
    CORPUS,
    REQUESTS,
    StdioClient,
    apply_change,
    comparable_diagnostics,
    lsp_lines,
    random_edit,
    request_params,
    tracebacks,
    views,
)
from lsprotocol import types as lsp
from test_server_handlers_fuzz import call, make_server

from sass_lsp.ide import diagnostics as diag_mod
from sass_lsp.ide.text import Document

ADD = (CORPUS / "triton_add.cuasm").read_text()


def lsp_split(text: str) -> list[str]:
    return re.split(r"\r\n|\r|\n", text)


# ------------------------------------------------------------------------------------------ line breaks
@pytest.mark.parametrize(
    ("text", "start", "end", "new", "expected"),
    [
        ("a\nb\nc", (0, 1), (0, 1), "\r", "a\r\nb\nc"),  # \r before \n: one break, not two
        ("a\rb\nc", (1, 0), (1, 0), "\n", "a\r\nb\nc"),  # \n after a lone \r joins it
        ("a\rb\nc", (1, 0), (1, 1), "", "a\r\nc"),  # deleting what stood between \r and \n
        ("a\r\nb", (0, 1), (0, 1), "\r", "a\r\r\nb"),  # \r before \r\n: a break of its own
        ("a\rb", (0, 1), (0, 1), "\r", "a\r\rb"),  # \r before a lone \r
        ("a\nb", (1, 1), (1, 1), "\r", "a\nb\r"),  # at the end: a new empty last line
        ("a\r\nb\r\nc", (0, 1), (1, 0), "x\ny", "ax\nyb\r\nc"),  # mixed breaks stay as typed
    ],
)
def test_incremental_line_breaks_follow_lsp(text: str, start, end, new: str, expected: str) -> None:  # noqa: ANN001
    doc, edit = Document.from_text("u", 1, text).apply_edit(start, end, new, 2)
    assert doc.text == expected
    assert list(doc.lines) == lsp_split(expected)
    old = Document.from_text("u", 1, text).lines
    assert doc.lines == old[: edit.start] + edit.new_lines + old[edit.start + edit.n_old :]


def test_random_edits_keep_lsp_lines() -> None:
    rng = random.Random(7)
    alphabet = ["a", "\r", "\n", "\r\n", "\u00e9"]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))
        doc = Document.from_text("u", 1, text)
        for _ in range(3):
            lines = lsp_split(text)
            l1, l2 = sorted((rng.randrange(len(lines)), rng.randrange(len(lines))))
            c1, c2 = rng.randint(0, len(lines[l1])), rng.randint(0, len(lines[l2]))
            if l1 == l2:
                c1, c2 = sorted((c1, c2))
            new = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 3)))
            change = {
                "range": {"start": {"line": l1, "character": c1}, "end": {"line": l2, "character": c2}},
                "text": new,
            }
            text = apply_change(text, change)
            doc = doc.apply((l1, c1), (l2, c2), new, 2)
            assert doc.text == text and list(doc.lines) == lsp_split(text)


async def _cr_before_lf_in_server() -> None:
    server = make_server()
    uri = "file:///robust/add.cuasm"
    await call(
        server,
        lsp.TEXT_DOCUMENT_DID_OPEN,
        lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri, "cuasm", 1, ADD)),
    )
    n = len(server.docs[uri].lines)
    at = lsp.Position(5, len(ADD.split("\n")[5]))
    change = lsp.TextDocumentContentChangePartial(range=lsp.Range(at, at), text="\r")
    params = lsp.DidChangeTextDocumentParams(
        lsp.VersionedTextDocumentIdentifier(version=2, uri=uri), [change]
    )
    await call(server, lsp.TEXT_DOCUMENT_DID_CHANGE, params)
    assert len(server.docs[uri].lines) == n
    assert server.snapshot(uri).index.lines == list(Document.from_text(uri, 2, server.docs[uri].text).lines)


def test_cr_before_lf_in_the_server() -> None:
    asyncio.run(_cr_before_lf_in_server())


# ------------------------------------------------------------------------------------ semantic tokens
async def _long_line_tokens(n_chars: int) -> float:
    server = make_server()
    uri = "file:///robust/long.cuasm"
    lines = ADD.split("\n")
    at = next(i for i, line in enumerate(lines) if "IMAD.WIDE" in line)
    lines[at] = lines[at].replace(" ;", ", " + "R1, R2, \u00e9, 0x10, " * (n_chars // 17) + " ;")
    text = "\n".join(lines)
    await call(
        server,
        lsp.TEXT_DOCUMENT_DID_OPEN,
        lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri, "cuasm", 1, text)),
    )
    started = time.perf_counter()
    tokens = await call(
        server,
        lsp.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL,
        lsp.SemanticTokensParams(lsp.TextDocumentIdentifier(uri)),
    )
    elapsed = time.perf_counter() - started
    # no token starts past MAX_TOKEN_COL of the long line; the rest of the file keeps its tokens
    data = tokens.data
    line = col = 0
    on_long = []
    for i in range(0, len(data), 5):
        line, col = line + data[i], (col + data[i + 1]) if data[i] == 0 else data[i + 1]
        if line == at:
            on_long.append(col)
    assert on_long and max(on_long) < 4000 * 2
    assert len(data) > 5 * 1000
    return elapsed


def test_semantic_tokens_on_a_200k_non_ascii_line_are_fast() -> None:
    assert asyncio.run(_long_line_tokens(200_000)) < 2.0


# ---------------------------------------------------------------------------------------- unknown arch
async def _unknown_arch() -> None:
    server = make_server()
    server.apply_settings({"diagnosticsDebounceMs": 0})
    uri = "file:///robust/sm0.cuasm"
    text = re.sub(r"\.__elf_flags\s+0x[0-9a-f]+", ".__elf_flags            0x000000", ADD)
    await call(
        server,
        lsp.TEXT_DOCUMENT_DID_OPEN,
        lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri, "cuasm", 1, text)),
    )
    for _ in range(200):
        await asyncio.sleep(0.02)
        if all(t.done() for t in server._diag_tasks.values()):
            break
    header = next(i for i, line in enumerate(text.split("\n")) if ".__elf_flags" in line)
    published = [
        m
        for m in server.sent
        if isinstance(m, dict) and m.get("method") == lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS
    ]
    diags = published[-1]["params"]["diagnostics"]
    notes = [d for d in diags if d["code"] == "unknown-arch"]
    assert len(notes) == 1 and notes[0]["range"]["start"]["line"] == header
    assert "sm_0" in notes[0]["message"] and "hint:" in notes[0]["message"]
    assert server.snapshot(uri).arch is None
    # the features that need no tables still answer: hover, symbols, tokens, inlay hints, lenses
    doc = lsp.TextDocumentIdentifier(uri)
    line = next(i for i, ln in enumerate(text.split("\n")) if "IMAD.WIDE" in ln)
    assert (
        await call(server, lsp.TEXT_DOCUMENT_HOVER, lsp.HoverParams(doc, lsp.Position(line, 60))) is not None
    )
    assert await call(server, lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL, lsp.DocumentSymbolParams(doc))
    hints = lsp.InlayHintParams(doc, lsp.Range(lsp.Position(0, 0), lsp.Position(len(text.split("\n")), 0)))
    assert await call(server, lsp.TEXT_DOCUMENT_INLAY_HINT, hints)  # stall hints read the control codes
    assert await call(server, lsp.TEXT_DOCUMENT_CODE_LENS, lsp.CodeLensParams(doc))


def test_unknown_arch_falls_back_to_no_tables_with_a_diagnostic(caplog: pytest.LogCaptureFixture) -> None:
    asyncio.run(_unknown_arch())
    assert "Traceback" not in caplog.text and not any(r.exc_info for r in caplog.records)


# --------------------------------------------------------------------------------- check containment
async def _check_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    server = make_server()
    server.apply_settings({"diagnosticsDebounceMs": 0})
    server._pool_failed = True  # the checker in a thread, where the patched function is seen

    def broken(module, arch):  # noqa: ANN001, ANN202
        raise TypeError("tuple[Ctrl, tuple] or None object expected; got object")

    monkeypatch.setattr(diag_mod, "run_checker", broken)
    uri = "file:///robust/broken_check.cuasm"
    text = ADD.replace("NOP", "NOP.BOGUS_OPCODE", 1) + "\n  garbage line\n"
    await call(
        server,
        lsp.TEXT_DOCUMENT_DID_OPEN,
        lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri, "cuasm", 1, text)),
    )
    for _ in range(300):
        await asyncio.sleep(0.02)
        if server.full_diagnostics.get(uri) is not None and all(
            t.done() for t in server._diag_tasks.values()
        ):
            break
    diags = server.full_diagnostics[uri]
    kernel = server.snapshot(uri).index.kernels[0]
    failed = [d for d in diags if d.code == "check-failed"]
    assert len(failed) == 1 and failed[0].line == kernel.section.line
    assert "TypeError" in failed[0].message
    assert any(d.code != "check-failed" for d in diags)  # the other lanes' diagnostics still show


def test_a_check_that_raises_is_a_diagnostic_on_its_kernel(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    diag_mod._HAZARD_CACHE.clear()
    asyncio.run(_check_raises(monkeypatch))
    diag_mod._HAZARD_CACHE.clear()
    assert not any(r.exc_info for r in caplog.records if r.levelname != "DEBUG")


# --------------------------------------------------------------------------- the real server, fuzzed
# The eight kernels of tools/make_triton_corpus.py: the compute-bound three are 2,500-4,400 lines, whose
# checker lane can publish more than the checkpoint's quiet window after the parse lane on a loaded CI
# machine (benchmarks/lsp_fuzz.py runs the property over every corpus kernel).
COMPUTE = {"fp8_blockscale_gemm", "bf16_gemm", "flash_attn_fwd"}
KERNELS = sorted(k for k in CORPUS.glob("*.cuasm") if k.stem not in COMPUTE)
TEXTS = {k.name: k.read_text() for k in KERNELS}
QUIET_S = 0.6  # a lane published no later than this after the one before it counts as the same answer


class HostileEditing(RuleBasedStateMachine):
    """Random hostile edits and requests over stdio; fails on a traceback in the server log, a request
    left unanswered, or (at checkpoints) results that differ from a fresh open of the same text."""

    log_dir: Path
    client: StdioClient | None = None

    def __init__(self) -> None:
        super().__init__()
        cls = type(self)
        if cls.client is None or cls.client.proc.poll() is not None:
            cls.client = StdioClient(
                cls.log_dir / "server.log",
                {
                    "diagnosticsDebounceMs": 10,
                    "inlayStallHints": True,
                    "policyModelPath": "/nonexistent/policy",
                },
            )
        self.client = cls.client
        self.uri: str | None = None
        self.text = ""
        self.version = 0
        self.n = 0

    @rule(kernel=st.sampled_from([k.name for k in KERNELS]))
    @precondition(lambda self: self.uri is None)
    def open(self, kernel: str) -> None:
        self.n += 1
        self.uri = f"file:///robust/{self.n}/{kernel}"
        self.text, self.version = TEXTS[kernel], 1
        self.client.open(self.uri, self.text)

    @rule(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 6))
    @precondition(lambda self: self.uri is not None)
    def edit(self, seed: int, n: int) -> None:
        rng = random.Random(seed)
        pastes = list(TEXTS.values())
        for _ in range(n):
            change = random_edit(rng, self.text, pastes)
            self.version += 1
            if isinstance(change, str):
                self.text = change
                self.client.change(self.uri, self.version, [{"text": change}])
            else:
                self.text = apply_change(self.text, change)
                self.client.change(self.uri, self.version, [change])

    @rule(method=st.sampled_from(REQUESTS), line=st.integers(0, 5000), character=st.integers(0, 300))
    @precondition(lambda self: self.uri is not None)
    def request(self, method: str, line: int, character: int) -> None:
        n_lines = len(lsp_lines(self.text))
        params = request_params(method, self.uri, line % (n_lines + 2), character, n_lines)
        self.client.request(method, params, timeout=20.0)  # raises Unanswered

    @rule()
    @precondition(lambda self: self.uri is not None)
    def checkpoint(self) -> None:
        n_lines = len(lsp_lines(self.text))
        edited = comparable_diagnostics(self.client.settled_diagnostics(self.uri, self.version, QUIET_S))
        edited_views = views(self.client, self.uri, n_lines)
        fresh_uri = self.uri.replace("/robust/", "/fresh/")
        self.client.open(fresh_uri, self.text)
        fresh = comparable_diagnostics(self.client.settled_diagnostics(fresh_uri, 1, QUIET_S))
        fresh_views = views(self.client, fresh_uri, n_lines)
        self.client.close(fresh_uri)
        assert edited == fresh
        assert edited_views == fresh_views

    @rule()
    @precondition(lambda self: self.uri is not None)
    def close(self) -> None:
        self.client.close(self.uri)
        self.uri = None

    @invariant()
    def no_traceback(self) -> None:
        assert self.client.proc.poll() is None, "the server exited"
        assert tracebacks(self.client.log_file) == []

    def teardown(self) -> None:
        if self.uri is not None:
            self.client.close(self.uri)


def _run_machine(tmp_path: Path, examples: int, steps: int) -> None:
    HostileEditing.log_dir = tmp_path
    HostileEditing.client = None
    config = settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
    )
    try:
        run_state_machine_as_test(HostileEditing, settings=config)
    finally:
        if HostileEditing.client is not None:
            HostileEditing.client.shutdown()
            HostileEditing.client = None


@pytest.mark.slow
def test_server_survives_hostile_editing(tmp_path: Path) -> None:
    _run_machine(tmp_path, examples=4, steps=12)


@pytest.mark.slow
def test_server_survives_long_hostile_editing(tmp_path: Path) -> None:
    _run_machine(tmp_path, examples=40, steps=40)
