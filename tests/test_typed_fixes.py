"""Quick fixes come from the typed fixes a finding carries, never from its message: each fix kind applied to
a real corpus kernel with an injected hazard clears the finding, and rewording every message changes no
quick fix."""

from __future__ import annotations

import dataclasses
import itertools
import random
import re

import pytest
from paths import TRITON_CORPUS

from sass_lsp.analysis import check_module
from sass_lsp.analysis.findings import ClearReuse, RaiseStall, SetWait
from sass_lsp.analysis.mutate import mutations, render
from sass_lsp.analysis.program import kernels_of
from sass_lsp.cuasm.parser import parse_cuasm
from sass_lsp.ide import backends
from sass_lsp.ide.actions import CodeAction, code_actions
from sass_lsp.ide.editing import TextEdit
from sass_lsp.ide.index import build_index
from sass_lsp.ide.settings import Settings
from sass_lsp.isa.semantics import load_semantics

ARCH = "sm_90"
KERNELS = sorted(p.name for p in TRITON_CORPUS.glob("*.cuasm"))


def apply(lines: list[str], edits: tuple[TextEdit, ...]) -> list[str]:
    out = list(lines)
    for e in sorted(edits, key=lambda e: (e.line, e.start), reverse=True):
        assert e.line == e.end_line
        out[e.line] = out[e.line][: e.start] + e.new_text + out[e.line][e.end :]
    return out


def findings_at(lines: list[str], line0: int, code: str) -> list:
    module = parse_cuasm("\n".join(lines))[0]
    return [f for f in check_module(module, ARCH) if f.line == line0 + 1 and f.code == code]


def fixes_for(lines: list[str], line0: int, code: str) -> list[CodeAction]:
    index = build_index("\n".join(lines))
    actions = code_actions(index, line0, line0, ARCH, Settings(), recompute=False)
    return [a for a in actions if a.kind == "quickfix" and code in a.diagnostic_codes]


def injected(kind: type, code: str) -> list[tuple[list[str], int]]:
    """(mutated lines, 0-based flagged line) for corpus mutants whose ``code`` finding offers ``kind``."""
    sem = load_semantics(ARCH)
    out = []
    for name in KERNELS:
        text = (TRITON_CORPUS / name).read_text()
        lines = text.split("\n")
        module = parse_cuasm(text)[0]
        for sec in module.sections:
            if not sec.name.startswith(".text."):
                continue
            for _cls, items, line, codes in mutations(sec, sem, random.Random(7), 8):
                if code not in codes:
                    continue
                new = render(lines, sec.items, items)
                found = findings_at(new, line - 1, code)
                if any(isinstance(fx, kind) for f in found for fx in f.fixes):
                    out.append((new, line - 1))
        if len(out) >= 3:
            break
    return out


def write_while_pending() -> list[tuple[list[str], int]]:
    """A fixed-latency instruction right after a load, its destination renamed to the load's: it overwrites
    a result still in flight without waiting on the load's scoreboard (SASS004)."""
    sem = load_semantics(ARCH)
    out = []
    for name in KERNELS:
        text = (TRITON_CORPUS / name).read_text()
        lines = text.split("\n")
        for k in kernels_of(parse_cuasm(text)[0], sem):
            for p, q in itertools.pairwise(k.nodes):
                sb = p.ctrl.write_sb
                if sb is None or p.eff.opcode not in ("LDG", "LDS") or q.ctrl.wait_mask >> sb & 1:
                    continue
                if q.eff.variable or len(q.eff.dsts) != 1 or len(q.eff.dsts[0].units) != 1 or q.eff.guard:
                    continue
                if any(k.blocks[b].start == q.idx for b in range(len(k.blocks))):
                    continue
                target = f"R{min(p.eff.def_units)}"
                new = list(lines)
                line = new[q.line - 1]
                at = line.index(q.text)
                head = q.text.index(" ")
                m = re.compile(r"R\d+").search(q.text, head)
                if m is None or m.start() != q.text.index(",") - len(m.group()):
                    continue
                new[q.line - 1] = line[: at + m.start()] + target + line[at + m.end() :]
                out.append((new, q.line - 1))
                if len(out) >= 3:
                    return out
    return out


def reuse_on_destination() -> list[tuple[list[str], int]]:
    """Corpus lines whose instruction reads its own destination: marking that source ``.reuse`` makes the
    cache hold the old value (SASS010)."""
    out = []
    lines = (TRITON_CORPUS / "triton_matmul.cuasm").read_text().split("\n")
    pattern = re.compile(r"(\s)(FFMA|FADD|IADD3|LOP3\.LUT) (R\d+), ((?:[^;]*?, )?)\3(?=[,;\s])")
    for n, text in enumerate(lines):
        m = pattern.search(text)
        if m and ".reuse" not in text:
            new = list(lines)
            new[n] = text[: m.end()] + ".reuse" + text[m.end() :]
            out.append((new, n))
        if len(out) >= 3:
            break
    return out


CASES = [
    (SetWait, "SASS001"),
    (SetWait, "SASS003"),
    (RaiseStall, "SASS002"),
    (RaiseStall, "SASS016"),
]


@pytest.mark.parametrize(("kind", "code"), CASES, ids=[f"{k.__name__}-{c}" for k, c in CASES])
def test_fix_clears_an_injected_hazard(kind: type, code: str) -> None:
    cases = injected(kind, code)
    assert cases, f"no corpus mutant gives {code} with a {kind.__name__} fix"
    for lines, line0 in cases:
        assert findings_at(lines, line0, code)
        actions = fixes_for(lines, line0, code)
        assert actions, f"no quick fix for {code} at line {line0 + 1}"
        fixed = apply(lines, actions[0].edits)
        assert findings_at(fixed, line0, code) == [], actions[0].title


def test_set_wait_clears_an_injected_write_after_write() -> None:
    cases = write_while_pending()
    assert cases
    for lines, line0 in cases:
        found = findings_at(lines, line0, "SASS004")
        assert found and any(isinstance(fx, SetWait) for f in found for fx in f.fixes), lines[line0]
        actions = fixes_for(lines, line0, "SASS004")
        assert actions
        fixed = apply(lines, actions[0].edits)
        assert findings_at(fixed, line0, "SASS004") == []


def test_clear_reuse_clears_a_reuse_of_the_destination() -> None:
    cases = reuse_on_destination()
    assert cases
    for lines, line0 in cases:
        found = findings_at(lines, line0, "SASS010")
        assert found and any(isinstance(fx, ClearReuse) for f in found for fx in f.fixes)
        actions = fixes_for(lines, line0, "SASS010")
        assert [a.title for a in actions] == ["Drop this .reuse"]
        fixed = apply(lines, actions[0].edits)
        assert ".reuse" not in fixed[line0]
        assert findings_at(fixed, line0, "SASS010") == []


def test_reworded_messages_keep_every_quick_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    cases = [c for kind, code in CASES for c in injected(kind, code)[:1]]
    cases += write_while_pending()[:1] + reuse_on_destination()[:1]

    def quick_fixes() -> list[set]:
        out = []
        for lines, line0 in cases:
            index = build_index("\n".join(lines))
            actions = code_actions(index, line0, line0, ARCH, Settings(), recompute=False)
            out.append({(a.title, a.edits, a.diagnostic_codes) for a in actions if a.kind == "quickfix"})
        return out

    before = quick_fixes()
    assert all(before)

    def reworded(module, arch):  # noqa: ANN001, ANN202
        return [
            dataclasses.replace(f, message=f"[{f.code}] {f.message[::-1]}")
            for f in check_module(module, arch)
        ]

    monkeypatch.setattr(backends, "check_module", reworded)
    from sass_lsp.ide import diagnostics

    diagnostics._HAZARD_CACHE.clear()
    try:
        assert quick_fixes() == before
    finally:
        diagnostics._HAZARD_CACHE.clear()
