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
