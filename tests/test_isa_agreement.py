"""The editor and the checker read one instruction the same way: on every instruction of the corpus (and of
tests/kernels compiled for every arch), the registers the editor's register index says a line reads and
writes equal the checker's (``isa.semantics`` effects), wide and paired operands included.

    python tests/test_isa_agreement.py [ARCH ...]   # prints the disagreement count per arch
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from paths import GENERATED_CORPUS, TRITON_CORPUS  # noqa: E402

from sass_lsp.analysis.program import kernels_of  # noqa: E402
from sass_lsp.cuasm.parser import parse_cuasm  # noqa: E402
from sass_lsp.ide.index import build_index  # noqa: E402
from sass_lsp.ide.registers import build_steps, kernel_registers  # noqa: E402
from sass_lsp.isa.semantics import UNIT_BASE, ZERO_INDEX, load_semantics, supported_arches  # noqa: E402

GENERATED_ARCHES = ["sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100a", "sm_120"]


def _unit(name: str) -> int | None:
    """A register name as the checker's unit; None for the zero registers and non-units (B1, SB2)."""
    for kind in ("UR", "UP", "R", "P"):
        if name.startswith(kind) and name[len(kind) :].isdigit():
            n = int(name[len(kind) :])
            return None if n == ZERO_INDEX[kind] else UNIT_BASE[kind] + n
    return None


Sets = dict[int, tuple[frozenset[int], frozenset[int]]]  # 0-based line -> (read units, written units)


def editor_sets(text: str) -> Sets:
    """Per instruction line, the units the editor's register index has reads and writes of."""
    index = build_index(text)
    reads: dict[int, set[int]] = {}
    writes: dict[int, set[int]] = {}
    for kernel in index.kernels:
        for _ in build_steps(index, kernel):
            pass
        reg_index = kernel_registers(index, kernel)
        assert reg_index is not None
        for line in kernel.instr_lines:
            reads.setdefault(line, set())
            writes.setdefault(line, set())
        for name, occs in reg_index.occurrences.items():
            unit = _unit(name)
            if unit is None:
                continue
            for o in occs:
                (writes if o.is_def else reads).setdefault(o.line, set()).add(unit)
    return {ln: (frozenset(reads.get(ln, ())), frozenset(writes.get(ln, ()))) for ln in reads}


def checker_sets(text: str, arch: str) -> Sets:
    """Per instruction line, the units the checker reads and writes (``Effects.use_units``/``def_units``)."""
    sem = load_semantics(arch)
    module = parse_cuasm(text)[0]
    out: Sets = {}
    for k in kernels_of(module, sem):
        for nd in k.nodes:
            out[nd.line - 1] = (nd.eff.use_units, nd.eff.def_units)
    return out


def disagreements(text: str, arch: str) -> tuple[int, list[str]]:
    """(instructions compared, a description of each that differs)."""
    lines = text.splitlines()
    ed, ch = editor_sets(text), checker_sets(text, arch)
    out = []
    for line in sorted(ch):
        e = ed.get(line, (frozenset(), frozenset()))
        if e != ch[line]:
            out.append(f"{line + 1}: {lines[line].strip()}: editor {_names(e)} checker {_names(ch[line])}")
    return len(ch), out


def _names(sets: tuple[frozenset[int], frozenset[int]]) -> str:
    from sass_lsp.isa.semantics import unit_name

    r, w = (",".join(unit_name(u) for u in sorted(s)) for s in sets)
    return f"reads {{{r}}} writes {{{w}}}"


def corpus_texts(arch: str) -> list[tuple[str, str]]:
    """(name, .cuasm text) of the corpus kernels for ``arch``: the Triton corpus for sm_90, and
    tests/kernels compiled for it (sm_90a: sm_90's table)."""
    from sass_lsp.cuasm import write_cuasm

    out = []
    if arch == "sm_90":
        out += [(p.name, p.read_text()) for p in sorted(TRITON_CORPUS.glob("*.cuasm"))]
    for p in sorted((GENERATED_CORPUS / arch).glob("*.cubin")):
        out.append((f"{arch}/{p.name}", write_cuasm(p.read_bytes(), source_name=p.name)))
    return out


def table_arch(arch: str) -> str:
    return arch if arch in supported_arches() else arch.rstrip("a")


def test_every_arch_has_a_table() -> None:
    assert {table_arch(a) for a in GENERATED_ARCHES} <= set(supported_arches())


def _generator():  # noqa: ANN202
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "tools" / "isa" / "build_semantics.py"
    spec = importlib.util.spec_from_file_location("build_semantics", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("arch", supported_arches())
def test_effect_rows_are_the_generators(arch: str) -> None:
    """The memory-space, ordering and positional-read rows of each table are what
    ``tools/isa/build_semantics.py`` emits (``--only-rows`` rewrites them without compiling)."""
    import json

    gen = _generator()
    path = Path(gen.DATA) / f"semantics_{arch}.json"
    text = path.read_text()
    assert gen.table_text(gen.effect_rows(json.loads(text))) == text
    sem = load_semantics(arch)
    assert sem.memory_spaces("LDGSTS") == (1, 2)  # reads global, writes shared
    assert sem.is_fence("HGMMA") and sem.is_barrier("DEPBAR") and not sem.is_barrier("IMAD")
    assert sem.positional("CS2R R4, SR_CLOCKLO ;") and not sem.positional("S2R R0, SR_TID.X ;")


def test_triton_corpus_editor_equals_checker() -> None:
    texts = [(p.name, p.read_text()) for p in sorted(TRITON_CORPUS.glob("*.cuasm"))]
    assert texts
    total, differ = 0, []
    for name, text in texts:
        n, bad = disagreements(text, "sm_90")
        total += n
        differ += [f"{name}:{b}" for b in bad]
    assert total > 2000
    assert differ == []


@pytest.mark.slow
@pytest.mark.parametrize("arch", GENERATED_ARCHES)
def test_generated_corpus_editor_equals_checker(arch: str) -> None:
    from conftest import generated_cubins

    cubins = generated_cubins(arch)
    assert cubins, f"no cubins for {arch} in {GENERATED_CORPUS}"
    differ = []
    for name, text in corpus_texts(arch):
        if name.endswith(".cuasm"):
            continue
        differ += [f"{name}:{b}" for b in disagreements(text, table_arch(arch))[1]]
    assert differ == []


def main(arches: list[str]) -> None:
    grand = grand_bad = 0
    for arch in arches or ["sm_90", *[a for a in GENERATED_ARCHES if a != "sm_90"]]:
        total = bad = 0
        for name, text in corpus_texts(arch):
            n, differ = disagreements(text, table_arch(arch))
            total, bad = total + n, bad + len(differ)
            for d in differ[:2]:
                print(f"  {name}:{d}")
        print(f"{arch}: {bad} of {total} instructions differ")
        grand, grand_bad = grand + total, grand_bad + bad
    print(f"all: {grand_bad} of {grand} instructions differ")


if __name__ == "__main__":
    main(sys.argv[1:])


# ---------------------------------------------------------------- over LSP

import asyncio  # noqa: E402

import pytest_lsp  # noqa: E402
from lsprotocol import types as lsp  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities  # noqa: E402


@pytest_lsp.fixture(
    scope="module",
    config=ClientServerConfig(server_command=[sys.executable, "-m", "sass_lsp.server"]),
)
async def client(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("ws")
    await lsp_client.initialize_session(
        lsp.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            root_uri=root.as_uri(),
            initialization_options={"diagnosticsDebounceMs": 20},
        )
    )
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio(loop_scope="module")
async def test_highlight_of_a_read_finds_its_wide_producer(client: LanguageClient, tmp_path: Path) -> None:
    """R40 read by F2FP in triton_matmul was last written by the HGMMA whose accumulator R24 covers
    R24..R87: highlighting the read marks that HGMMA's R24 as a write."""
    path = tmp_path / "triton_matmul.cuasm"
    text = (TRITON_CORPUS / "triton_matmul.cuasm").read_text()
    path.write_text(text)
    lines = text.split("\n")
    uri = path.as_uri()
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=uri, language_id="cuasm", version=1, text=text)
        )
    )
    reader = next(i for i, ln in enumerate(lines) if "F2FP.F16.F32.PACK_AB R40, R41, R40" in ln)
    col = lines[reader].rindex("R40") + 1
    producer = max(i for i, ln in enumerate(lines[:reader]) if "HGMMA.64x128x16.F32 R24" in ln)
    assert not any("R40" in ln for ln in lines[producer + 1 : reader])  # the HGMMA is the last writer
    want = lsp.Range(
        lsp.Position(producer, lines[producer].index("R24")),
        lsp.Position(producer, lines[producer].index("R24") + 3),
    )
    got: list[lsp.DocumentHighlight] = []
    for _ in range(100):  # the register index is built after the first diagnostics
        got = (
            await client.text_document_document_highlight_async(
                lsp.DocumentHighlightParams(lsp.TextDocumentIdentifier(uri), lsp.Position(reader, col))
            )
        ) or []
        if any(h.range == want for h in got):
            break
        await asyncio.sleep(0.1)
    assert lsp.DocumentHighlight(want, lsp.DocumentHighlightKind.Write) in got
    read = lsp.Range(lsp.Position(reader, col - 1), lsp.Position(reader, col + 2))
    assert lsp.DocumentHighlight(read, lsp.DocumentHighlightKind.Read) in got
