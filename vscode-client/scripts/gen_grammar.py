# ruff: noqa: E501  (regexes and verbatim corpus lines are long)
"""Writes ../syntaxes/cuasm.tmLanguage.json (the TextMate grammar for CuAssembler's .cuasm format).

The regexes are easier to read and review here, as raw strings, than JSON-escaped; edit this file, run
`python3 scripts/gen_grammar.py`, and commit both. `npm run test:grammar` and `npm run test:corpus` check it.
"""

import json
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "syntaxes" / "cuasm.tmLanguage.json"
S = ".cuasm"
ctrl_re = (
    r"(\[)"  # 1
    r"(?:([R-]{4})(:))?"  # 2 reuse (old 6-field form), 3
    r"(B[0-9-]{6})(:)"  # 4 wait, 5
    r"(R[0-9-])(:)"  # 6 read SB, 7
    r"(W[0-9-])(:)"  # 8 write SB, 9
    r"([Y-])(:)"  # 10 yield, 11
    r"(S\d{2,})"  # 12 stall
    r"(\])"
)  # 13
ctrl_caps = {
    "1": {"name": "punctuation.definition.control-code.begin" + S},
    "2": {"name": "constant.other.control.reuse" + S},
    "3": {"name": "punctuation.separator.control-code" + S},
    "4": {"name": "constant.other.control.wait-mask" + S},
    "5": {"name": "punctuation.separator.control-code" + S},
    "6": {"name": "constant.other.control.read-barrier" + S},
    "7": {"name": "punctuation.separator.control-code" + S},
    "8": {"name": "constant.other.control.write-barrier" + S},
    "9": {"name": "punctuation.separator.control-code" + S},
    "10": {"name": "constant.other.control.yield" + S},
    "11": {"name": "punctuation.separator.control-code" + S},
    "12": {"name": "constant.other.control.stall" + S},
    "13": {"name": "punctuation.definition.control-code.end" + S},
}
head_tail = (
    r"\s*(?:(/\*)([0-9a-fA-F]+)(\*/)\s*)?"  # 14 15 16 address
    r"(\{\s*)?"  # 17 dual-issue brace
    r"(?:(@)(!?)(U?P(?:[0-6]|T))\s+)?"  # 18 19 20 predicate
    r"([A-Z][A-Z0-9_]*)"  # 21 opcode
    r"((?:\.[A-Za-z0-9_]+)*)"
)  # 22 modifiers


def head_caps(off):
    c = {
        str(off + 0): {"name": "comment.block.address" + S + " punctuation.definition.comment.begin" + S},
        str(off + 1): {"name": "comment.block.address" + S + " constant.numeric.address" + S},
        str(off + 2): {"name": "comment.block.address" + S + " punctuation.definition.comment.end" + S},
        str(off + 3): {"name": "punctuation.section.dual-issue.begin" + S},
        str(off + 4): {"name": "keyword.other.predicate" + S + " punctuation.definition.predicate" + S},
        str(off + 5): {"name": "keyword.other.predicate" + S + " keyword.operator.negation" + S},
        str(off + 6): {"name": "keyword.other.predicate" + S},
        str(off + 7): {"name": "keyword.mnemonic" + S},
        str(off + 8): {"name": "storage.modifier.opcode" + S},
    }
    return c


def meta_caps(base):
    return base


grammar = {
    "$schema": "https://raw.githubusercontent.com/martinring/tmlanguage/master/tmlanguage.json",
    "name": "CuAsm SASS",
    "scopeName": "source.cuasm",
    "fileTypes": ["cuasm"],
    "patterns": [
        {"include": "#comments"},
        {"include": "#instruction"},
        {"include": "#instruction-no-control"},
        {"include": "#label-definition"},
        {"include": "#directive"},
        {"include": "#dual-issue-end"},
    ],
    "repository": {
        "comments": {
            "patterns": [
                {
                    "name": "comment.line.double-slash" + S,
                    "match": r"(//).*$",
                    "captures": {"1": {"name": "punctuation.definition.comment" + S}},
                },
                {
                    "name": "comment.block.address" + S,
                    "match": r"(/\*)([0-9a-fA-F]+)(\*/)",
                    "captures": {
                        "1": {"name": "punctuation.definition.comment.begin" + S},
                        "2": {"name": "constant.numeric.address" + S},
                        "3": {"name": "punctuation.definition.comment.end" + S},
                    },
                },
                {
                    "name": "comment.block" + S,
                    "begin": r"/\*",
                    "end": r"\*/",
                    "captures": {"0": {"name": "punctuation.definition.comment" + S}},
                },
                {"name": "comment.block.annotation" + S, "match": r"\(\*\"[^\"]*\"\*\)"},
            ]
        },
        "instruction": {
            "name": "meta.instruction" + S,
            "begin": r"^\s*(?=\[)" + ctrl_re + head_tail,
            "beginCaptures": {**ctrl_caps, **head_caps(14)},
            "end": r"(;)|(?=//)|$",
            "endCaptures": {"1": {"name": "punctuation.terminator.statement" + S}},
            "patterns": [{"include": "#operands"}],
        },
        "instruction-no-control": {
            "name": "meta.instruction" + S,
            "begin": r"^\s*(/\*)([0-9a-fA-F]+)(\*/)\s*(\{\s*)?(?:(@)(!?)(U?P(?:[0-6]|T))\s+)?([A-Z][A-Z0-9_]*)((?:\.[A-Za-z0-9_]+)*)(?=[\s;])",
            "beginCaptures": head_caps(1),
            "end": r"(;)|(?=//)|$",
            "endCaptures": {"1": {"name": "punctuation.terminator.statement" + S}},
            "patterns": [{"include": "#operands"}],
        },
        "dual-issue-end": {"match": r"\}", "name": "punctuation.section.dual-issue.end" + S},
        "label-definition": {
            "match": r"^\s*([A-Za-z0-9._$@#]+)(:)(?=\s*(?://.*)?$)",
            "captures": {
                "1": {"name": "entity.name.label" + S},
                "2": {"name": "punctuation.separator.label" + S},
            },
        },
        "directive": {
            "name": "meta.directive" + S,
            "begin": r"^\s*(?:(/\*)([0-9a-fA-F]+)(\*/)\s*)?(\.(?:__elf_\w+|__section_\w+|__segment\w*|section|sectioninfo|sectionflags|sectionentsize|align|byte|short|word|dword|zero|type|size|global|weak|other|headerflags|elftype|target|tkinfo|string|[A-Za-z_][\w]*))(?=\s|$)",
            "beginCaptures": {
                "1": {"name": "comment.block.address" + S + " punctuation.definition.comment.begin" + S},
                "2": {"name": "comment.block.address" + S + " constant.numeric.address" + S},
                "3": {"name": "comment.block.address" + S + " punctuation.definition.comment.end" + S},
                "4": {"name": "keyword.control.directive" + S},
            },
            "end": r"(?=//)|$",
            "patterns": [{"include": "#directive-arguments"}],
        },
        "directive-arguments": {
            "patterns": [
                {"name": "comment.block" + S, "match": r"/\*.*?\*/"},
                {
                    "match": r"(@)(srel)\b",
                    "captures": {
                        "1": {"name": "punctuation.definition.attribute" + S},
                        "2": {"name": "support.function.relocation" + S},
                    },
                },
                {
                    "match": r"(@)(\")([^\"]*)(\")",
                    "captures": {
                        "1": {"name": "punctuation.definition.attribute" + S},
                        "2": {
                            "name": "string.quoted.double" + S + " punctuation.definition.string.begin" + S
                        },
                        "3": {"name": "string.quoted.double" + S + " support.constant.attribute" + S},
                        "4": {"name": "string.quoted.double" + S + " punctuation.definition.string.end" + S},
                    },
                },
                {
                    "match": r"(@)([A-Za-z_]\w*)",
                    "captures": {
                        "1": {"name": "punctuation.definition.attribute" + S},
                        "2": {"name": "support.constant.attribute" + S},
                    },
                },
                {
                    "name": "string.quoted.double" + S,
                    "begin": '"',
                    "end": '"',
                    "patterns": [{"name": "constant.character.escape" + S, "match": r"\\."}],
                },
                {
                    "name": "support.constant.elf" + S,
                    "match": r"\b(?:SHT|SHF|SHN|ET|EM|PT|PF|STT|STB|STO|STV|EF|SHI|EIATTR)_\w+\b",
                },
                {"name": "entity.name.label.reference" + S, "match": r"(?<![\w$])\.L_\w+"},
                {
                    "name": "entity.name.section" + S,
                    "match": r"(?<![\w$])\.(?:text|nv|debug|rel|rela|shstrtab|strtab|symtab|note|nv_debug)[\w.$]*",
                },
                {"include": "#relocation"},
                {"include": "#numbers"},
                {"name": "entity.name.function" + S, "match": r"(?<![\w.$])[A-Za-z_$][\w$.]*"},
                {"name": "punctuation.separator.comma" + S, "match": ","},
            ]
        },
        "operands": {
            "patterns": [
                {"include": "#comments"},
                {"include": "#branch-target"},
                {"include": "#relocation"},
                {
                    "match": r"\b(desc|gdesc|cx|c)(?=\[)",
                    "captures": {"1": {"name": "support.type.memory-space" + S}},
                },
                {
                    "name": "variable.language.special-register" + S,
                    "match": r"\b(?:SR_[A-Za-z0-9_]+(?:\.[A-Z]+)?|SRZ)\b",
                },
                {"name": "variable.other.register.uniform" + S, "match": r"\bUR(?:\d{1,2}|Z)\b"},
                {"name": "variable.other.predicate.uniform" + S, "match": r"\bUP(?:[0-6]|T|R)\b"},
                {"name": "variable.other.register" + S, "match": r"\bR(?:\d{1,3}|Z)\b"},
                {"name": "variable.other.predicate" + S, "match": r"\bP(?:[0-6]|T|R)\b"},
                {"name": "variable.other.scoreboard" + S, "match": r"\b(?:SB[0-5]|gsb\d)\b"},
                {"name": "variable.other.barrier" + S, "match": r"\bB(?:\d{1,2})\b"},
                {"name": "storage.modifier.reuse" + S, "match": r"\.reuse\b"},
                {"include": "#numbers"},
                {"name": "storage.modifier.operand" + S, "match": r"\.[A-Za-z0-9_]+"},
                {"name": "keyword.operator" + S, "match": r"[-+!~|]"},
                {"name": "punctuation.definition.bracket.square" + S, "match": r"[\[\]]"},
                {"name": "punctuation.definition.set" + S, "match": r"[{}]"},
                {"name": "punctuation.separator.comma" + S, "match": ","},
                {"name": "variable.other.constant" + S, "match": r"\b[A-Za-z_][\w]*\b"},
            ]
        },
        "branch-target": {
            "name": "meta.branch-target" + S,
            "match": r"(`)(\()\s*([^)\s]+)\s*(\))",
            "captures": {
                "1": {"name": "punctuation.definition.branch-target" + S},
                "2": {"name": "punctuation.definition.branch-target.begin" + S},
                "3": {"name": "entity.name.label.reference" + S},
                "4": {"name": "punctuation.definition.branch-target.end" + S},
            },
        },
        "relocation": {
            "match": r"\b(\d+@(?:lo|hi))(\()",
            "captures": {
                "1": {"name": "support.function.relocation" + S},
                "2": {"name": "punctuation.definition.relocation" + S},
            },
        },
        "numbers": {
            "patterns": [
                {"name": "constant.numeric.hex" + S, "match": r"(?<![\w.$])-?0x[0-9a-fA-F]+\b"},
                {
                    "name": "constant.numeric.float" + S,
                    "match": r"(?<![\w.$])[-+]?\d+\.\d+(?:[eE][-+]?\d+)?\b|(?<![\w$])[-+]?(?:INF|QNAN|NAN)\b|(?<![\w$])0f[0-9a-fA-F]{8}\b",
                },
                {"name": "constant.numeric.decimal" + S, "match": r"(?<![\w.$])-?\d+\b"},
                {
                    "match": r"(@)(srel)\b",
                    "captures": {
                        "1": {"name": "punctuation.definition.attribute" + S},
                        "2": {"name": "support.function.relocation" + S},
                    },
                },
            ]
        },
    },
}
OUT.write_text(json.dumps(grammar, indent=2) + "\n")
