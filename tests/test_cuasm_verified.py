"""Words nvdisasm already read back as their text skip it; a new or wrong word never does."""

from __future__ import annotations

import random
import re
from collections.abc import Mapping

import pytest
from paths import TRITON_CORPUS

import sass_lsp.cuasm.assembler as assembler
import sass_lsp.cuasm.disasm as disasm
from sass_lsp.cuasm import AssembleError, assemble_cuasm, parse_cuasm, write_cuasm
from sass_lsp.cuasm.assembler import module_arch, verify_instructions
from sass_lsp.cuasm.verified import VerifiedWords
from sass_lsp.schedule.search import random_candidates


@pytest.fixture
def nvdisasm_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A fresh memo for the test, and a count of nvdisasm runs."""
    monkeypatch.setattr(assembler, "VERIFIED", VerifiedWords())
    runs = [0]
    real = disasm.run_nvdisasm

    def counted(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        runs[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(disasm, "run_nvdisasm", counted)
    return runs


@pytest.mark.slow
def test_new_control_codes_and_orders_of_verified_words_need_no_nvdisasm(nvdisasm_runs: list[int]) -> None:
    data = (TRITON_CORPUS / "triton_matmul.cubin").read_bytes()
    text = write_cuasm(data)  # disassembles once
    assert assemble_cuasm(text) == data and nvdisasm_runs[0] == 2
    nvdisasm_runs[0] = 1
    assert assemble_cuasm(text) == data and nvdisasm_runs[0] == 1

    # Every stall count changed: the words differ only in bits nvdisasm does not print.
    restalled = re.sub(r":S(\d\d)\]", lambda m: f":S{(int(m.group(1)) + 1) % 16:02d}]", text)
    assert restalled != text
    out = assemble_cuasm(restalled)
    assert out != data and nvdisasm_runs[0] == 1
    assert verify_instructions(parse_cuasm(restalled)[0], out) == []  # and nvdisasm agrees
    nvdisasm_runs[0] -= 1

    # Random legal reorderings (moves and repaired control codes): nvdisasm runs only for one with a new
    # word, and whatever the memo skipped nvdisasm verifies too.
    arch = module_arch(parse_cuasm(text)[0])
    memo = assembler.VERIFIED
    fresh = 0
    for _, cand in zip(range(12), random_candidates(text, arch, random.Random(1)), strict=False):
        before = nvdisasm_runs[0]
        module = parse_cuasm(cand.text)[0]
        unverified = assemble_cuasm(cand.text, verify=False)
        new = not memo.known(memo.keys(module, unverified, arch) or [None])
        assert assemble_cuasm(cand.text) == unverified
        assert nvdisasm_runs[0] - before == int(new)
        fresh += new
        assert verify_instructions(module, unverified) == []
    assert fresh < 12


@pytest.mark.slow
def test_a_wrong_word_is_caught_after_its_text_was_verified(nvdisasm_runs: list[int]) -> None:
    data = (TRITON_CORPUS / "triton_add.cubin").read_bytes()
    words = {ins.pc: ins.word for ins in disasm.disassemble(data).sections[".text.add_kernel"].instrs}
    text = write_cuasm(data)
    assemble_cuasm(text)
    nvdisasm_runs[0] = 0
    real = assembler.default_encoder("sm_90")

    def wrong(text_: str, *, pc: int, labels: Mapping[str, int]) -> object:
        # at 0x40 the next instruction's word (its scheduling bits cleared, as an encoder returns it)
        return words[0x50] & ~assembler.CTRL_MASK if pc == 0x40 else real(text_, pc=pc, labels=labels)

    for _ in range(2):  # a failed verification records nothing
        with pytest.raises(AssembleError) as info:
            assemble_cuasm(text, encode=wrong)
        (diag,) = info.value.diagnostics
        assert "disassembles as" in diag.message
    assert nvdisasm_runs[0] == 2


def test_a_label_keeps_its_place_in_the_key_and_a_guard_does_not() -> None:
    data = (TRITON_CORPUS / "triton_matmul.cubin").read_bytes()
    module = parse_cuasm(write_cuasm(data))[0]
    keys = VerifiedWords().keys(module, data, "sm_90")
    assert keys is not None
    texts = [ins.text for block in module.sections for ins in block.instructions]
    assert len(keys) == len(texts)
    placed = {text: where for (_, _, text, where) in keys}
    branch = next(t for t in placed if "`" in t)
    guarded = next(t for t in placed if t.startswith("@") and "`" not in t)
    assert placed[branch] is not None and placed[guarded] is None
    # a cubin cut short is not the source's layout: nvdisasm must look
    assert VerifiedWords().keys(module, data[:-64], "sm_90") is None


def test_setting_yield_on_a_reuse_word_is_read_back_by_nvdisasm(nvdisasm_runs: list[int]) -> None:
    """With the yield bit set nvdisasm prints no `.reuse`: a verified word with its yield flipped is a new
    key, so the mismatch is caught instead of skipped."""
    text = write_cuasm((TRITON_CORPUS / "triton_matmul.cubin").read_bytes())
    assemble_cuasm(text)  # every word verified and remembered
    lines = text.splitlines()
    i = next(n for n, ln in enumerate(lines) if ".reuse" in ln and ":-:S" in ln.split("]")[0])
    lines[i] = lines[i].replace(":-:S", ":Y:S", 1)
    nvdisasm_runs[0] = 0
    with pytest.raises(AssembleError) as info:
        assemble_cuasm("\n".join(lines) + "\n")
    assert nvdisasm_runs[0] == 1 and "disassembles as" in info.value.diagnostics[0].message
