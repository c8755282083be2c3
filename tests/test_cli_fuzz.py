"""Bad input through the command line: random bytes, cut-short and damaged real cubins, mutated real
.cuasm lines and corpus JSONs. Whatever comes in, a command exits with one of its documented codes, prints
no traceback, leaves its input as it was and writes either nothing or a complete output (on exit 0), with
no temp file beside it. Most cases run in-process through ``cli.main`` (the console script's own code; a
subprocess start per example would not fit CI); a few run the real console command."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from paths import TRITON_CORPUS

from sass_lsp import cli
from sass_lsp.elf.reader import read_cubin

CUBIN = (TRITON_CORPUS / "triton_add.cubin").read_bytes()
CUASM_LINES = (TRITON_CORPUS / "triton_add.cuasm").read_text().splitlines()
INSTR_LINES = [i for i, line in enumerate(CUASM_LINES) if line.lstrip().startswith("[B")]
CORPUS_JSON = (TRITON_CORPUS / "triton_add.json").read_text()
EXIT_CODES = {"disasm": {0, 2}, "asm": {0, 2}, "spec-from-json": {0, 2}, "check": {0, 1, 2}}
MAX_LINE = 600  # no printed line echoes a long input line in full

FUZZ = settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def run_main(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(list(argv))
        except SystemExit as exc:  # argparse
            code = exc.code if isinstance(exc.code, int) else 2
    return code, out.getvalue(), err.getvalue()


def assert_well_behaved(
    command: str, code: int, stdout: str, stderr: str, inputs: dict[Path, bytes], output: Path | None
) -> None:
    assert code in EXIT_CODES[command], (code, stderr[-2000:])
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr[-2000:]
    assert max((len(line) for line in (stdout + stderr).splitlines()), default=0) <= MAX_LINE
    said = stderr + stdout  # check prints its findings on stdout
    if code != 0:
        assert ": error: " in said, said[-2000:]
    if code == 2:  # bad input: what to do about it
        assert "hint:" in said, said[-2000:]
    for path, data in inputs.items():
        assert path.read_bytes() == data, f"{path} changed"
    folder = next(iter(inputs)).parent
    expected = {p.name for p in inputs}
    if output is not None and code == 0:
        expected.add(output.name)
    assert {p.name for p in folder.iterdir()} == expected  # no partial output, no temp file left


# -------------------------------------------------------------------------------------------- strategies

_cubins = st.one_of(
    st.binary(max_size=300),
    st.integers(0, len(CUBIN) - 1).map(lambda n: CUBIN[:n]),
    st.lists(st.tuples(st.integers(0, 127), st.integers(0, 255)), min_size=1, max_size=4).map(
        lambda flips: bytes(dict(flips).get(i, b) for i, b in enumerate(CUBIN))
    ),
    st.just(CUASM_LINES[0].encode()),
)

_odd_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)


@st.composite
def _mutated_line(draw: st.DrawFn) -> str:
    line = CUASM_LINES[draw(st.sampled_from(INSTR_LINES))]
    pos = draw(st.integers(0, len(line) - 1))
    kind = draw(
        st.sampled_from(["delete", "duplicate", "control", "opcode", "unicode", "long", "after_semicolon"])
    )
    if kind == "delete":
        return line[:pos] + line[pos + 1 :]
    if kind == "duplicate":
        return line[:pos] + line[pos] + line[pos:]
    if kind == "control":
        return "[" + draw(_odd_text) + "]" + line[line.index("]") + 1 :]
    if kind == "opcode":
        opcode = draw(st.from_regex(r"[A-Z][A-Z0-9.]{0,8}", fullmatch=True))
        head, _, text = line.partition("*/")
        return head + "*/ " + opcode + " " + text.strip().split(" ", 1)[-1]
    if kind == "unicode":
        return line[:pos] + draw(_odd_text) + line[pos:]
    if kind == "long":
        return line[:pos] + "x" * 5_000 + line[pos:]  # beyond any cap on echoed text
    return line.rstrip() + " " + draw(_odd_text)


# A whole text (empty or garbage), or {line index: new line} over the real .cuasm (a short repr on failure).
_cuasm = st.one_of(
    st.sampled_from(["", "\n", "garbage ]][[", "\x00\x01"]),
    st.dictionaries(st.sampled_from(INSTR_LINES), _mutated_line(), min_size=1, max_size=2),
)


def _text_of(case: str | dict[int, str]) -> str:
    if isinstance(case, str):
        return case
    return "\n".join(case.get(i, line) for i, line in enumerate(CUASM_LINES)) + "\n"


@st.composite
def _corpus_json(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["cut", "text", "dtype", "value", "shape"]))
    if kind == "cut":
        return CORPUS_JSON[: draw(st.integers(0, len(CORPUS_JSON) - 1))]
    if kind == "text":
        return draw(_odd_text)
    raw = json.loads(CORPUS_JSON)
    arg = raw["args"][draw(st.integers(0, len(raw["args"]) - 1))]
    junk = draw(st.one_of(_odd_text, st.integers(), st.none(), st.lists(st.integers(), max_size=3)))
    arg[{"dtype": "dtype", "value": "value", "shape": "shape"}[kind]] = junk
    if kind == "dtype" and draw(st.booleans()):
        arg["dtype"] = draw(st.sampled_from(["int64", "i32", "u8", "bool"]))
    return json.dumps(raw)


# ------------------------------------------------------------------------------------------------ tests


@FUZZ
@given(data=_cubins)
def test_disasm_on_bad_cubins(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    folder = tmp_path_factory.mktemp("disasm")
    cubin, out = folder / "k.cubin", folder / "k.cuasm"
    cubin.write_bytes(data)
    code, stdout, stderr = run_main("disasm", str(cubin), "-o", str(out))
    assert_well_behaved("disasm", code, stdout, stderr, {cubin: data}, out)
    if code == 0:
        assert out.read_text().startswith("//")


@FUZZ
@given(case=_cuasm)
def test_asm_and_check_on_mutated_cuasm(tmp_path_factory: pytest.TempPathFactory, case: str | dict) -> None:
    folder = tmp_path_factory.mktemp("asm")
    src, out = folder / "k.cuasm", folder / "k.cubin"
    src.write_text(_text_of(case))
    data = src.read_bytes()
    code, stdout, stderr = run_main("asm", str(src), "-o", str(out))
    assert_well_behaved("asm", code, stdout, stderr, {src: data}, out)
    if code == 0:
        read_cubin(out.read_bytes())  # complete
        out.unlink()
    check_code, stdout, stderr = run_main("check", str(src), "--arch", "sm_90")
    assert_well_behaved("check", check_code, stdout, stderr, {src: data}, None)
    if code != 0:  # what asm rejects, check does not pass
        assert check_code != 0, stdout


@FUZZ
@given(text=_corpus_json())
def test_spec_from_json_on_bad_json(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    folder = tmp_path_factory.mktemp("spec")
    src, cubin, out = folder / "k.json", folder / "k.cubin", folder / "k.launch.toml"
    src.write_text(text)
    cubin.write_bytes(CUBIN)
    inputs = {src: src.read_bytes(), cubin: CUBIN}
    code, stdout, stderr = run_main("spec-from-json", str(src), "-o", str(out))
    assert_well_behaved("spec-from-json", code, stdout, stderr, inputs, out)


@pytest.mark.parametrize(
    ("command", "name", "data"),
    [
        ("disasm", "k.cubin", b""),
        ("disasm", "k.cubin", CUBIN[:1000]),
        ("asm", "k.cuasm", b""),
        ("asm", "k.cuasm", "\n".join(CUASM_LINES).replace("S01]", "S16]", 1).encode()),
        ("spec-from-json", "k.json", b'{"kernel": '),
        ("check", "k.cuasm", "\n".join(CUASM_LINES).replace("LDC R1", "FROB R1", 1).encode()),
    ],
)
def test_console_command_on_bad_input(tmp_path: Path, command: str, name: str, data: bytes) -> None:
    """The real console command (a subprocess): its exit code, message and files, as a user sees them."""
    src = tmp_path / name
    src.write_bytes(data)
    inputs = {src: data}
    out = tmp_path / "out.bin"
    argv = [command, str(src)] + ([] if command == "check" else ["-o", str(out)])
    if command == "spec-from-json":
        (tmp_path / "k.cubin").write_bytes(CUBIN)
        inputs[tmp_path / "k.cubin"] = CUBIN
    proc = subprocess.run(
        [sys.executable, "-m", "sass_lsp.cli", *argv], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2, proc.stderr
    assert_well_behaved(command, proc.returncode, proc.stdout, proc.stderr, inputs, out)
    assert f"{src}" in proc.stderr + proc.stdout
