import assert from "node:assert/strict";
import { test } from "node:test";
import { archFromText, smFromElfFlags } from "../../src/pure/arch";

// Header lines copied from sass_lsp/corpus/sm_90/triton_add.cuasm.
const CORPUS_HEADER = [
  "\t.__elf_ident_osabi      51",
  "\t.__elf_ident_abiversion 7",
  "\t.__elf_flags            0x5a0d5a \t\t// Flags, SM_90(0x5a), COMPUTE_90(0x5a) ",
].join("\n");

test("corpus header: arch from the .__elf_flags comment", () => {
  assert.deepEqual(archFromText(CORPUS_HEADER), { arch: "sm_90", source: ".__elf_flags" });
});

test(".target wins over .__elf_flags", () => {
  assert.deepEqual(archFromText(`${CORPUS_HEADER}\n\t.target\tsm_90a\n`), { arch: "sm_90a", source: ".target" });
});

test("flags without a comment: old layout (ABI 7) keeps the SM in the low byte", () => {
  assert.deepEqual(archFromText("\t.__elf_ident_abiversion 7\n\t.__elf_flags 0x4b054b\n"), { arch: "sm_75", source: ".__elf_flags" });
});

test("flags without a comment: CUDA 13 layout (ABI 8) has the SM in bits 8-15", () => {
  assert.deepEqual(archFromText("\t.__elf_ident_abiversion 8\n\t.__elf_flags 0x6005a04\n"), { arch: "sm_90", source: ".__elf_flags" });
  assert.equal(smFromElfFlags(0x6006402), 100); // sm_100a, layout guessed from the low byte
  assert.equal(smFromElfFlags(0x6007802, 8), 120);
  assert.equal(smFromElfFlags(0x5a0d5a), 90);
});

test("no header: no arch; nonsense flags: no arch", () => {
  assert.equal(archFromText("      [B------:R-:W-:Y:S00]         /*02a0*/                   NOP;"), undefined);
  assert.equal(smFromElfFlags(0x3), undefined);
  assert.equal(smFromElfFlags(Number.NaN), undefined);
});

test("only the head of a big file is scanned", () => {
  const big = `${"// filler\n".repeat(10_000)}\t.target sm_90\n`;
  assert.equal(archFromText(big), undefined);
  assert.equal(archFromText(big, big.length)?.arch, "sm_90");
});
