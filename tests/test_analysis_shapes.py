"""The checker's fast paths against their plain counterparts.

- Scanner shapes (one scan per register-free template, re-numbered for every text of it) give exactly
  the effects a direct scan of each text gives, for corpus texts and renumbered variants that reach the
  slots' caps and the zero registers.
- The columnar program built from a module and the one built from a kernel's nodes check the same.
- ``Checker.entry`` still hands out :class:`State`/:class:`Event` with frozensets; the table builder's
  hooks (horizon, observer) still see every fixed-latency pair.
"""

from __future__ import annotations

import dataclasses
import gc
import random
import re

import pytest
from paths import TRITON_CORPUS

from sass_lsp.analysis import check_module
from sass_lsp.analysis.check import check_kernel
from sass_lsp.analysis.hazards import Checker, Event, State
from sass_lsp.analysis.program import Facts, context, facts_of_text, gc_paused, kernels_of
from sass_lsp.cuasm.parser import parse_cuasm
from sass_lsp.isa import semantics as S

_REG = re.compile(r"\b(UR|UP|R|P)(\d+)\b")
_HEX = re.compile(r"0x[0-9a-fA-F]+")
_LAB = re.compile(r"`\(([^)]*)\)")
EDGE = ["0", "5", "6", "7", "8", "61", "62", "63", "64", "127", "128", "252", "253", "254", "255", "300"]
EDGE += ["07"]  # a leading zero is not a template hole
ODD = [
    "BRA `(R1) ;",  # a register-like name inside a label
    "IADD3 R1, R2, R3, RZ // R4",
    'BRX R6 (*"BRANCH_TARGETS .L_1,.L_2"*) ;',
    'MOV R3, (*"R1"*) R2 ;',
    "MOV R1, 0x\x01 ;",
    "IADD3 R\x001, R2, RZ, RZ ;",
    "@P10 BRA `(.L_x_1) ;",
    "@P07 MOV R1, R2 ;",
    "MOV R1.P2, R3 ;",
    "LDS R1, [0x10+R2] ;",
    "STS [`(x)], R1 ;",
    "BRA `(a b) ;",
    "DEPBAR.LE SB0, -0x3 ;",
    "HGMMA.64x256x16.F32.BF16 R200, gdesc[UR60], RZ ;",
    "IMAD.WIDE.U32 R254, R3, 0x4, R252 ;",
]


def _corpus_texts() -> list[str]:
    texts: set[str] = set()
    for path in sorted(TRITON_CORPUS.glob("*.cuasm")):
        module, _ = parse_cuasm(path.read_text())
        for sec in module.sections:
            texts.update(ins.text for ins in sec.instructions)
    return sorted(texts)


def _variants(texts: list[str]) -> list[str]:
    rng = random.Random(7)
    out = []
    for t in texts:
        for _ in range(2):
            v = _REG.sub(lambda m: m.group(1) + rng.choice(EDGE + [str(rng.randrange(250))] * 3), t)
            v = _HEX.sub(lambda m: rng.choice(["0x0", "0x1", "0x10", "0xff", "0x7fffffff"]), v)
            v = _LAB.sub(lambda m: "`(" + rng.choice([".L_x_1", ".L_x_77", "R1", ""]) + ")", v)
            out.append(v)
    return out


def _key(eff: S.Effects) -> tuple:
    return repr(eff), dataclasses.astuple(eff)


@pytest.mark.slow
def test_shapes_renumber_like_a_fresh_scan() -> None:
    texts = _corpus_texts()
    assert len(texts) > 500
    every = texts + _variants(texts) + ODD
    for arch in ("sm_90", "sm_80"):
        table = S.load_semantics(arch).data
        one = S.Semantics(arch, table)  # text by text
        bulk = S.Semantics(arch, table)  # all at once
        shapes, nums = bulk.shapes_of(every)
        bad = []
        for text, shape, n in zip(every, shapes, nums, strict=True):
            want = _key(S._scan(one, text).eff)
            if _key(one.effects(text)) != want or _key(shape.effects(text, n)) != want:
                bad.append(text)
        assert not bad, f"{arch}: {len(bad)} texts differ, e.g. {bad[:5]}"
        assert len(bulk.template_shapes) < len(texts) / 2  # texts do share shapes


def test_skeleton_templates_are_the_regexes() -> None:
    """Templates and numbers from skeletons (``Semantics._templates_by_skeleton``) equal one regex pass,
    batch by batch and text by text, with the skeletons learnt from earlier texts reused."""
    texts = _corpus_texts()
    plain = [t for t in texts + _variants(texts) + ODD if "\x00" not in t and "\x01" not in t]
    rng = random.Random(3)
    sem = S.Semantics("sm_90", S.load_semantics("sm_90").data)
    batches = [texts, plain] + [rng.sample(plain, 500) for _ in range(10)]
    for batch in batches:
        assert sem.templates_of(batch) == S._templates_by_regex("\n".join(batch))
    covered = 0
    for text in plain:
        got = sem._templates_by_skeleton([text], text)
        covered += got is not None
        assert got in (None, S._templates_by_regex(text)), text
    assert sem._templates_by_skeleton(texts, "\n".join(texts)) is not None  # ptxas text is covered
    assert covered > 0.9 * len(plain)


def test_template_groups_are_the_regexes() -> None:
    """``Semantics.template_groups`` (numbers read off each group of one skeleton at once) gives every text
    the template and numbers of one regex pass, and ``_Ctx.facts_of`` built from the groups gives every
    text its plain facts; a batch with a number the regexes do not read as a register (a leading zero,
    above 511) gives None."""
    texts = _corpus_texts()
    plain = [t for t in texts + _variants(texts) + ODD if "\x00" not in t and "\x01" not in t]
    rng = random.Random(5)
    table = S.load_semantics("sm_90").data
    sem = S.Semantics("sm_90", table)
    one = context(S.Semantics("sm_90", table))
    grouped = none = 0
    for batch in [texts] + [rng.sample(plain, 12) for _ in range(120)]:
        groups = sem.template_groups(batch)
        if groups is None:
            none += 1
            continue
        grouped += 1
        got = {}
        for template, part, cols in groups:
            for k, text in enumerate(part):
                got[text] = (template, [col[k] for col in cols])
        templates, nums, _big = S._templates_by_regex("\n".join(batch))
        pos = 0
        for text, template in zip(batch, templates, strict=True):
            n = template.count("\x00")
            assert got[text] == (template, nums[pos : pos + n]), text
            pos += n
        bulk = context(S.Semantics("sm_90", table))
        for text, f in zip(batch, bulk.facts_of(batch), strict=True):
            shape, n = one.sem.shape_of(text)
            assert _units_key(f) == _units_key(facts_of_text(text, one.shape_facts(shape), n)), text
    assert grouped > 40 and none > 5


def _units_key(f: Facts) -> tuple:
    """What the checker reads of ``f``, with the units resolved: a text may stand for its template's shape
    or have one of its own (which one depends on the texts of the template seen before it), alike here."""
    uo = tuple((f.nx[slot] + add, kind) for slot, add, kind, _need in f.uo)
    ds = tuple(f.nx[slot] + add for slot, add in f.ds)
    return (f.fb, f.flow, uo, ds, f.dp, f.guard, f.use_mask, f.def_mask, f.x, f.reuse)


def _facts_key(f: Facts) -> tuple:
    return (f.s.shape.template, f.fb, f.flow, f.nx, f.uo, f.ds, f.dp, f.guard, f.use_mask, f.def_mask, f.x)


def test_bulk_facts_are_each_texts_plain_facts() -> None:
    """``_Ctx.facts_of`` (one regex pass and one loop over all new texts) gives every text the facts
    :func:`facts_of_text` gives it from its own shape and numbers."""
    texts = _corpus_texts()
    every = texts + _variants(texts) + ODD
    for arch in ("sm_90", "sm_80"):
        table = S.load_semantics(arch).data
        bulk = context(S.Semantics(arch, table))
        one = context(S.Semantics(arch, table))
        got = bulk.facts_of(every)
        bad = []
        for text, f in zip(every, got, strict=True):
            shape, nums = one.sem.shape_of(text)
            want = facts_of_text(text, one.shape_facts(shape), nums)
            if _facts_key(f) != _facts_key(want) or f.reuse != want.reuse:
                bad.append(text)
        assert not bad, f"{arch}: {len(bad)} texts differ, e.g. {bad[:5]}"


def _shared_modules() -> list:
    return [parse_cuasm(p.read_text())[0] for p in sorted(TRITON_CORPUS.glob("*.cuasm"))]


def test_module_and_kernel_programs_check_alike() -> None:
    sem = S.load_semantics("sm_90")
    for module in _shared_modules():
        by_kernel = sorted(
            (f for k in kernels_of(module, sem) for f in check_kernel(k, sem)),
            key=lambda f: (f.line, f.col, f.code),
        )
        assert check_module(module, "sm_90") == by_kernel


def test_public_entry_states_and_table_builder_hooks() -> None:
    sem = S.load_semantics("sm_90")
    module = _shared_modules()[0]
    (k, *_rest) = kernels_of(module, sem)
    ch = Checker(k, sem)
    ch.run()
    assert len(ch.entry) == len(k.blocks)
    for st in ch.entry:
        assert isinstance(st, State) and isinstance(st.fixed, dict)
        assert isinstance(st.wunits, frozenset) and isinstance(st.aunits, frozenset)
        for e in st.events:
            assert isinstance(e, Event) and isinstance(e.units, frozenset)
        assert st.wunits == frozenset().union(*(e.units for e in st.events if e.kind == "W"))
    seen = []
    hooked = Checker(k, sem, horizon=40)
    hooked.observer = lambda nd, kind, p, info: seen.append((kind, info))
    hooked.run()
    assert any(kind == "raw_fixed" for kind, _ in seen)
    assert all(info[3] >= 0 for kind, info in seen if kind == "raw_fixed")


def test_gc_paused_restores_the_collector() -> None:
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
