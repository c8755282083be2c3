"""Kernel context: the sm_8x memory descriptor, which nvdisasm omits from LDG/STG, read from the kernel's
``ULDC.64 URx, c[0x0][0x118]``."""

from __future__ import annotations

from sass_lsp.cuasm.encoding import context_rules, default_encoder
from sass_lsp.isa.context import ContextRule, section_contexts
from sass_lsp.isa.encoder import Encoder

DESC = ContextRule("desc", "ULDC.64", "c[0x0][0x118]", 6)


def test_rule_reads_the_loaded_register() -> None:
    assert DESC.value("ULDC.64 UR4, c[0x0][0x118]") == 4
    assert DESC.value("ULDC.64 UR36, c[0x0][0x118] ;") == 36
    assert DESC.value("ULDC.64 UR4, c[0x0][0x160]") is None
    assert DESC.value("ULDC UR4, c[0x0][0x118]") is None
    assert DESC.value("@P0 ULDC.64 UR4, c[0x0][0x118]") is None  # a conditional load defines nothing


def test_section_contexts_take_the_last_load_before_else_the_first() -> None:
    texts = [
        "LDG.E R2, [R2.64]",  # before any load: the section's first one
        "ULDC.64 UR8, c[0x0][0x118]",
        "LDG.E R3, [R4.64]",
        "ULDC.64 UR6, c[0x0][0x118]",
        "STG.E [R4.64], R3",
    ]
    got = [ctx["desc"] if ctx else None for ctx in section_contexts([DESC], texts)]
    assert got == [8, 8, 8, 8, 6]
    assert section_contexts([DESC], ["NOP"]) == [None]
    assert section_contexts([], texts) == [None] * len(texts)


def test_sm80_descriptor_field_comes_from_the_context() -> None:
    enc = Encoder.for_arch("sm_80")
    assert [r.source for r in enc.context_rules] == ["c[0x0][0x118]"]
    plain = enc.encode("LDG.E R2, [R2.64]")
    for ur in (4, 8, 14, 36):
        got = enc.encode("LDG.E R2, [R2.64]", context={"desc": ur})
        assert (got.word >> 32) & 0x3F == ur
        assert not got.hidden_mask & (0x3F << 32)
        assert got.word & ~(0x3F << 32) == plain.word & ~(0x3F << 32)
        # the compiled plan agrees with the full path (the first call of a shape may return an Encoded)
        for _ in range(2):
            word = enc.encode_word("LDG.E R2, [R2.64] ;", context={"desc": ur})
            assert (word if isinstance(word, int) else word.word) == got.word
    store = enc.encode("STG.E [R2.64], R5", context={"desc": 14})
    assert (store.word >> 64) & 0x3F == 14


def test_context_rules_of_callbacks() -> None:
    assert context_rules(default_encoder("sm_80"))
    assert not context_rules(default_encoder("sm_90"))  # sm_90 prints desc[URx]
    assert not context_rules(lambda text, *, pc, labels: 0)
