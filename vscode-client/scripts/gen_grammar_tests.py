# ruff: noqa: E501  (regexes and verbatim corpus lines are long)
"""Writes ../test/grammar/*.test.cuasm: real corpus lines (copied verbatim from sass_lsp/corpus/sm_90)
with vscode-tmgrammar-test assertions; the caret columns are computed here from (token, scope[, nth]).
Run `python3 scripts/gen_grammar_tests.py` after adding a case, then `npm run test:grammar`.
"""

from pathlib import Path

C = ".cuasm"


def find(line, tok, nth=1):
    i = -1
    for _ in range(nth):
        i = line.index(tok, i + 1)
    return i


def asserts(line, specs):
    out = []
    for spec in specs:
        tok, scope = spec[0], spec[1]
        nth = spec[2] if len(spec) > 2 else 1
        i = find(line, tok, nth)
        n = len(tok)
        if i == 0:
            out.append("// <" + "-" * n + " " + scope)
            continue
        if i < 2:
            n -= 2 - i
            i = 2
        out.append("//" + " " * (i - 2) + "^" * n + " " + scope)
    return out


def write(path, title, cases):
    lines = [
        f'// SYNTAX TEST "source.cuasm" "{title}"',
        "// Every tested line is copied verbatim from sass_lsp/corpus/sm_90/*.cuasm (sm_90, CuAssembler format).",
        "",
    ]
    for src, specs in cases:
        lines.append(src)
        lines += asserts(src, specs)
    Path(path).write_text("\n".join(lines) + "\n")


T = str(Path(__file__).resolve().parent.parent / "test" / "grammar") + "/"
write(
    T + "control-code.test.cuasm",
    "control code sub-fields, address comments, predicates, opcodes",
    [
        (
            "      [B--2---:R-:W-:-:S01]         /*01d0*/                   FADD R12, R12, R16 ;",
            [
                ("[B--2---:R-:W-:-:S01]", "meta.instruction" + C),
                ("[", "punctuation.definition.control-code.begin" + C),
                ("B--2---", "constant.other.control.wait-mask" + C),
                ("R-", "constant.other.control.read-barrier" + C),
                ("W-", "constant.other.control.write-barrier" + C),
                ("-", "constant.other.control.yield" + C, 8),
                (":", "punctuation.separator.control-code" + C, 4),
                ("S01", "constant.other.control.stall" + C),
                ("]", "punctuation.definition.control-code.end" + C),
                ("01d0", "comment.block.address" + C + " constant.numeric.address" + C),
                ("/*", "comment.block.address" + C),
                ("FADD", "keyword.mnemonic" + C),
                ("R12", "variable.other.register" + C),
                (";", "punctuation.terminator.statement" + C),
            ],
        ),
        (
            "      [B------:R2:W-:-:S03]         /*1150*/                   STS.128 [R8+UR11], R24 ;",
            [
                ("R2", "constant.other.control.read-barrier" + C),
                ("W-", "constant.other.control.write-barrier" + C),
                ("STS", "keyword.mnemonic" + C),
                (".128", "storage.modifier.opcode" + C),
                ("[", "punctuation.definition.bracket.square" + C, 2),
                ("R8", "variable.other.register" + C),
                ("+", "keyword.operator" + C),
                ("UR11", "variable.other.register.uniform" + C),
            ],
        ),
        (
            "      [B------:R-:W-:Y:S04]         /*0bd0*/                   DEPBAR.LE SB0, 0x4 ;",
            [
                ("Y", "constant.other.control.yield" + C),
                ("S04", "constant.other.control.stall" + C),
                ("DEPBAR", "keyword.mnemonic" + C),
                (".LE", "storage.modifier.opcode" + C),
                ("SB0", "variable.other.scoreboard" + C),
                ("0x4", "constant.numeric.hex" + C),
            ],
        ),
        (
            "      [B------:R-:W2:-:S04]         /*0180*/              @!P0 LDG.E.128 R16, desc[UR4][R20.64] ;",
            [
                ("W2", "constant.other.control.write-barrier" + C),
                ("@", "keyword.other.predicate" + C + " punctuation.definition.predicate" + C),
                ("!", "keyword.other.predicate" + C + " keyword.operator.negation" + C),
                ("P0", "keyword.other.predicate" + C),
                ("LDG", "keyword.mnemonic" + C),
                (".E.128", "storage.modifier.opcode" + C),
                ("desc", "support.type.memory-space" + C),
                ("UR4", "variable.other.register.uniform" + C),
                ("R20", "variable.other.register" + C),
                (".64", "storage.modifier.operand" + C),
            ],
        ),
        (
            "      [B-----5:R-:W-:-:S01]         /*0260*/                   ULEA UR11, UR11, UR6, 0x18 ;",
            [
                ("B-----5", "constant.other.control.wait-mask" + C),
                ("ULEA", "keyword.mnemonic" + C),
                ("0x18", "constant.numeric.hex" + C),
            ],
        ),
        (
            "      [B------:R-:W-:-:S01]         /*05c0*/              @!PT LDS RZ, [RZ] ;",
            [
                ("PT", "keyword.other.predicate" + C),
                ("LDS", "keyword.mnemonic" + C),
                ("RZ", "variable.other.register" + C),
                ("RZ", "variable.other.register" + C, 2),
            ],
        ),
        (
            "      [B------:R-:W4:-:S01]         /*0ad0*/               @P5 MUFU.EX2 R28, R18 ;",
            [
                ("@P5", "keyword.other.predicate" + C),
                ("MUFU", "keyword.mnemonic" + C),
                (".EX2", "storage.modifier.opcode" + C),
            ],
        ),
    ],
)
write(
    T + "operands.test.cuasm",
    "operands: registers, .reuse, constant banks, immediates, branch targets",
    [
        (
            "      [B------:R-:W0:-:S01]         /*0000*/                   LDC R1, c[0x0][0x28] ;",
            [
                ("LDC", "keyword.mnemonic" + C),
                ("c", "support.type.memory-space" + C, 1),
                ("[", "punctuation.definition.bracket.square" + C, 2),
                ("0x0", "constant.numeric.hex" + C),
                ("0x28", "constant.numeric.hex" + C),
            ],
        ),
        (
            "      [B------:R-:W1:-:S07]         /*0010*/                   S2R R0, SR_TID.X ;",
            [
                ("S2R", "keyword.mnemonic" + C),
                ("SR_TID.X", "variable.language.special-register" + C),
            ],
        ),
        (
            "      [B------:R-:W-:-:S01]         /*0120*/                   ISETP.GE.AND P0, PT, R0.reuse, UR6, PT ;",
            [
                ("ISETP", "keyword.mnemonic" + C),
                (".GE.AND", "storage.modifier.opcode" + C),
                ("P0", "variable.other.predicate" + C),
                ("PT", "variable.other.predicate" + C),
                ("R0", "variable.other.register" + C),
                (".reuse", "storage.modifier.reuse" + C),
                ("UR6", "variable.other.register.uniform" + C),
            ],
        ),
        (
            "      [B------:R-:W-:-:S01]         /*0440*/                   FADD R10, -R14.reuse, R10 ;",
            [
                ("-", "keyword.operator" + C, 10),
                ("R14", "variable.other.register" + C),
                (".reuse", "storage.modifier.reuse" + C),
            ],
        ),
        (
            "      [B------:R-:W-:-:S01]         /*04b0*/                   FADD.FTZ R10, |R23|, -RZ ;",
            [
                ("|", "keyword.operator" + C),
                ("R23", "variable.other.register" + C),
                ("RZ", "variable.other.register" + C),
            ],
        ),
        (
            "      [B------:R-:W-:-:S01]         /*0c60*/                   FMUL R14, R9, 0.70710676908493041992 ;",
            [
                ("0.70710676908493041992", "constant.numeric.float" + C),
            ],
        ),
        (
            "      [B-1----:R-:W-:-:S01]         /*0120*/                   HFMA2.MMA R2, -RZ, RZ, 0, 0 ;",
            [
                ("HFMA2", "keyword.mnemonic" + C),
                (".MMA", "storage.modifier.opcode" + C),
                ("0", "constant.numeric.decimal" + C, 5),
            ],
        ),
        (
            "      [B-1----:R-:W-:-:S01]         /*0390*/                   IMAD.MOV.U32 R14, RZ, RZ, 0x3789ca3c ;",
            [
                ("0x3789ca3c", "constant.numeric.hex" + C),
            ],
        ),
        (
            "      [B------:R-:W-:-:S01]         /*0b30*/                   UIADD3 UR21, UR24, -0x60, URZ ;",
            [
                ("-0x60", "constant.numeric.hex" + C),
                ("URZ", "variable.other.register.uniform" + C),
            ],
        ),
        (
            "      [B------:R-:W-:-:S01]         /*00f0*/                   PLOP3.LUT P2, PT, PT, PT, UP0, 0x80, 0x0 ;",
            [
                ("UP0", "variable.other.predicate.uniform" + C),
            ],
        ),
        (
            "      [B------:R-:W0:-:S02]         /*0630*/                   SHFL.BFLY PT, R39, R2, 0x10, 0x1f ;",
            [
                ("SHFL", "keyword.mnemonic" + C),
                (".BFLY", "storage.modifier.opcode" + C),
            ],
        ),
        (
            "      [B------:R-:W-:-:S01]         /*0d90*/                   HGMMA.64x64x16.F32 R24, gdesc[UR12].tnspB, R24 ;",
            [
                ("HGMMA", "keyword.mnemonic" + C),
                (".64x64x16.F32", "storage.modifier.opcode" + C),
                ("gdesc", "support.type.memory-space" + C),
                (".tnspB", "storage.modifier.operand" + C),
            ],
        ),
        (
            "      [B------:R-:W-:-:S01]         /*01e0*/                   P2R R50, PR, RZ, 0x1 ;",
            [
                ("P2R", "keyword.mnemonic" + C),
                ("PR", "variable.other.predicate" + C, 1),
            ],
        ),
        (
            "      [B------:R-:W-:-:S02]         /*0e90*/                   WARPGROUP.DEPBAR.LE gsb0, 0x1 ;",
            [
                ("gsb0", "variable.other.scoreboard" + C),
            ],
        ),
        (
            "      [B------:R-:W-:-:S02]         /*05f0*/                   LDGSTS.E.BYPASS.128 [R19], desc[UR22][R10.64], P0 ;",
            [
                ("LDGSTS", "keyword.mnemonic" + C),
                ("P0", "variable.other.predicate" + C),
            ],
        ),
        (
            "      [B------:R-:W-:Y:S00]         /*0290*/                   BRA `(.L_x_0);",
            [
                ("BRA", "keyword.mnemonic" + C),
                ("`(", "meta.branch-target" + C),
                (".L_x_0", "entity.name.label.reference" + C),
                (";", "punctuation.terminator.statement" + C),
            ],
        ),
        (
            "      [B------:R-:W-:Y:S00]         /*02a0*/                   NOP;",
            [
                ("NOP", "keyword.mnemonic" + C),
                (";", "punctuation.terminator.statement" + C),
            ],
        ),
    ],
)
write(
    T + "directives.test.cuasm",
    "directives, labels, comments",
    [
        (
            "\t.__elf_flags            0x5a0d5a \t\t// Flags, SM_90(0x5a), COMPUTE_90(0x5a) ",
            [
                (".__elf_flags", "keyword.control.directive" + C),
                ("0x5a0d5a", "constant.numeric.hex" + C),
                ("// Flags", "comment.line.double-slash" + C),
            ],
        ),
        (
            '\t.section\t.text.add_kernel,"ax",@progbits',
            [
                (".section", "keyword.control.directive" + C),
                (".text.add_kernel", "entity.name.section" + C),
                ('"ax"', "string.quoted.double" + C),
                ("progbits", "support.constant.attribute" + C),
            ],
        ),
        (
            '\t.section  ".shstrtab", 0, SHT_STRTAB',
            [
                ('".shstrtab"', "string.quoted.double" + C),
                ("SHT_STRTAB", "support.constant.elf" + C),
            ],
        ),
        (
            '\t.section\t.nv.info.add_kernel,"",@"SHT_CUDA_INFO"',
            [
                ("SHT_CUDA_INFO", "support.constant.attribute" + C),
            ],
        ),
        (
            "\t.__section_type         SHT_PROGBITS",
            [
                (".__section_type", "keyword.control.directive" + C),
                ("SHT_PROGBITS", "support.constant.elf" + C),
            ],
        ),
        (
            '  .__segment  "PT_PHDR", 4 ',
            [
                (".__segment", "keyword.control.directive" + C),
                ('"PT_PHDR"', "string.quoted.double" + C),
                ("4", "constant.numeric.decimal" + C),
            ],
        ),
        (
            "    /*0000*/ .byte 0x00",
            [
                ("0000", "comment.block.address" + C),
                (".byte", "keyword.control.directive" + C),
                ("0x00", "constant.numeric.hex" + C),
            ],
        ),
        (
            "          /*0002*/ \t.short\t(.L_7 - .L_6)",
            [
                (".short", "keyword.control.directive" + C),
                (".L_7", "entity.name.label.reference" + C),
            ],
        ),
        (
            "          /*0084*/ \t.word\t.L_x_1@srel",
            [
                (".word", "keyword.control.directive" + C),
                (".L_x_1", "entity.name.label.reference" + C),
                ("srel", "support.function.relocation" + C),
            ],
        ),
        (
            "          .size           gelu_bias,(.L_x_3 - gelu_bias)",
            [
                (".size", "keyword.control.directive" + C),
                ("gelu_bias", "entity.name.function" + C),
            ],
        ),
        (
            '  \t.sectionflags\t@"SHF_BARRIERS=1"',
            [
                (".sectionflags", "keyword.control.directive" + C),
            ],
        ),
        (
            "  .text.add_kernel:",
            [
                (".text.add_kernel", "entity.name.label" + C),
                (":", "punctuation.separator.label" + C),
            ],
        ),
        (
            "  .L_x_0:",
            [
                (".L_x_0", "entity.name.label" + C),
            ],
        ),
        (
            "    // .shstrtab[6] = b'.text.add_kernel\\x00' ",
            [
                ("// .shstrtab", "comment.line.double-slash" + C),
            ],
        ),
    ],
)
