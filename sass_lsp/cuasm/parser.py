"""Feature: .cuasm parsing. Text in, :class:`Module` plus diagnostics out; never raises.

Reads both our own output and files written by CuAssembler (its header/section/segment
pseudo-directives, nvdisasm section text, control-code prefixed instruction lines).
"""

from __future__ import annotations

import re

from sass_lsp.isa.control import ControlCodeError, parse_control
from sass_lsp.model import (
    Diagnostic,
    Directive,
    Field,
    Instruction,
    Label,
    Module,
    RecordedReloc,
    SectionBlock,
    SegmentBlock,
)

_LABEL_RE = re.compile(r"([A-Za-z0-9._$@#]+):\s*$")
_DIRECTIVE_RE = re.compile(r"(\.[A-Za-z_][\w.]*)(\s*)(.*)$")
_HIDDEN_RE = re.compile(r"//\s*hidden\s+0x([0-9a-fA-F]+)")
_RAW_RE = re.compile(r"//\s*raw\s+0x([0-9a-fA-F]+)")
_RELOC_RE = re.compile(
    r"//\s*Relocation\[\d+\].*?'r_offset':\s*(\d+).*?'r_info_sym':\s*(\d+),\s*'r_info_type':\s*(\d+)"
    r"(?:,\s*'r_addend':\s*(-?\d+))?"
)
_SYMBOLS_RE = re.compile(r"\s*//-+\s*SYMBOLS\s*-+")
# The head of an instruction line as the writer prints it: a well-formed control field and an optional
# /*addr*/. With no '/' or '"' after it, the rest is the text: such a line is read without the general
# path's comment stripping and control parsing, with the same result (nothing of it is a comment but the
# /*addr*/, and the text is the rest, stripped).
_PLAIN_HEAD_RE = re.compile(
    r"[ \t]*\[(B(?:0|-)(?:1|-)(?:2|-)(?:3|-)(?:4|-)(?:5|-):R[0-5-]:W[0-5-]:[Y-]:S(?:0\d|1[0-5]))\]"
    r"[ \t]*(?:/\*[0-9a-fA-F]*\*/)?[ \t]*"
)
# ... and the text: no '/' or '"', no ';' but at its end, no whitespace at either end (trailing spaces and
# tabs are dropped)
_PLAIN_RE = re.compile(_PLAIN_HEAD_RE.pattern + r'([^/";\s](?:[^/";]*[^/"\s])?)[ \t]*$')
# _PLAIN_RE for the writer's lines, whose blanks are spaces: single-character repeats scan in the regex
# engine's tight loops, where classes ([ \t], [^/"]) test each character. Where it matches and the text holds
# no '"', _PLAIN_RE matches with the same groups; elsewhere _PLAIN_RE decides.
_SPACED_RE = re.compile(_PLAIN_HEAD_RE.pattern.replace("[ \\t]", " ") + r'([^/";\s](?:[^/;]*[^/"\s])?) *$')


CLIP = 120  # characters of source text a message quotes: a bad 1 MB line is not echoed in full


def clip(text: str, limit: int = CLIP) -> str:
    """``text`` cut to ``limit`` characters, with an ellipsis where it was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


_COMMENT_OR_STRING = re.compile(r'"(?:\\.|[^"\\])*"?|//.*|/\*.*?(?:\*/|$)')


def _blank_comment(match: re.Match[str]) -> str:
    token = match.group()
    if token.startswith('"'):
        return token
    return "" if token.startswith("//") else " " * len(token)


def strip_comments(line: str) -> str:
    """Blank out ``//`` and ``/* */`` comments outside strings; columns are preserved."""
    if "/" not in line:
        return line
    if '"' in line:
        return _COMMENT_OR_STRING.sub(_blank_comment, line)
    # No strings (every instruction line): the same scan without a callback per comment.
    pieces, pos = [], 0
    while (slash := line.find("/", pos)) >= 0:
        after = line[slash + 1 : slash + 2]
        if after == "/":
            pieces.append(line[pos:slash])
            return "".join(pieces)
        if after == "*":
            close = line.find("*/", slash + 2)
            end = len(line) if close < 0 else close + 2
            pieces += (line[pos:slash], " " * (end - slash))
            pos = end
        else:
            pieces.append(line[pos : slash + 1])
            pos = slash + 1
    pieces.append(line[pos:])
    return "".join(pieces)


def parse_int(text: str) -> int | None:
    text = text.strip()
    try:
        return int(text, 0)
    except ValueError:
        try:
            return int(text, 16) if text.lower().startswith(("0x", "-0x")) else None
        except ValueError:
            return None


def _field_value(text: str) -> int | str:
    value = parse_int(text)
    return value if value is not None else text.strip().strip('"')


def _parse_section_line(args: str) -> tuple[str, str]:
    """Name and type text of ``.section "name", 0, SHT_X`` or ``.section name,"flags",@type``."""
    args = args.strip()
    if args.startswith('"'):
        end = args.find('"', 1)
        name = args[1:end]
        rest = [p.strip() for p in args[end + 1 :].split(",") if p.strip()]
        return name, rest[-1] if rest else ""
    parts = [p.strip() for p in args.split(",")]
    return parts[0], parts[-1] if len(parts) > 1 else ""


_OTHER_BREAKS = ("\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e")  # str.splitlines' ASCII line ends besides \n


def _lines(text: str) -> list[str]:
    """``text.splitlines()``; an ASCII text that ends lines with ``\n`` alone (every file the writer makes)
    is split on ``\n``, which finds them with a memchr where splitlines tests each character."""
    if not text.isascii() or any(brk in text for brk in _OTHER_BREAKS):
        return text.splitlines()
    lines = text.split("\n")
    if not lines[-1]:  # splitlines makes no empty line after the last line end
        lines.pop()
    return lines


def parse_cuasm(text: str) -> tuple[Module, list[Diagnostic]]:
    module = Module()
    diags: list[Diagnostic] = []
    section: SectionBlock | None = None
    segment: SegmentBlock | None = None
    in_trailer = False
    spaced_match, plain_match = _SPACED_RE.match, _PLAIN_RE.match
    for lineno, raw in enumerate(_lines(text), 1):
        if section is not None:
            plain = spaced_match(raw)  # the writer's instruction line (_PLAIN_RE): the fast path
            if plain is None or '"' in raw:  # (where it matches, a '"' of the line is in its text)
                plain = plain_match(raw)
            if plain is not None:
                section.items.append(
                    Instruction(plain[1], plain[2], lineno, plain.start(1) + 1, plain.start(2) + 1)
                )
                continue
        if "SYMBOLS" in raw and _SYMBOLS_RE.match(raw):
            in_trailer = True
            continue
        reloc = _RELOC_RE.search(raw) if "Relocation[" in raw else None
        if reloc and section is not None:
            addend = None if reloc.group(4) is None else int(reloc.group(4))
            section.relocs.append(
                RecordedReloc(int(reloc.group(1)), int(reloc.group(2)), int(reloc.group(3)), addend, lineno)
            )
            continue
        code = strip_comments(raw)
        stripped = code.strip()
        if not stripped:
            continue
        col = len(code) - len(code.lstrip()) + 1
        if stripped.startswith("["):
            _parse_instruction(raw, code, lineno, col, section, diags)
            continue
        label = _LABEL_RE.match(stripped)
        if label and not stripped.startswith(".__"):
            if section is None:
                diags.append(
                    Diagnostic(
                        lineno,
                        col,
                        f"label '{clip(label.group(1))}' outside any section",
                        "put labels after a .section line",
                    )
                )
            else:
                name = label.group(1)
                if name.endswith(".#"):  # CuAssembler's per-line offset labels: make each unique
                    name = f"{name[:-1]}L{lineno:08x}"
                section.items.append(Label(name, lineno, col))
            continue
        match = _DIRECTIVE_RE.match(stripped)
        if not match:
            if section is not None and section.name.startswith(".text"):
                diags.append(
                    Diagnostic(
                        lineno,
                        col,
                        f"instruction without a control code: '{clip(stripped)}'",
                        "prefix it with a control field such as [B------:R-:W-:-:S01]",
                    )
                )
            else:
                diags.append(
                    Diagnostic(
                        lineno,
                        col,
                        f"unrecognised line: '{clip(stripped)}'",
                        "expected a directive, a label or an instruction line",
                    )
                )
            continue
        name, args = match.group(1), match.group(3).strip()
        args_col = col + len(match.group(1)) + len(match.group(2))
        if name.startswith(".__elf_"):
            module.elf[name[7:]] = Field(name[7:], _field_value(args), lineno, args_col)
        elif name == ".__segment":
            parts = [p.strip().strip('"') for p in args.split(",")]
            flags = parse_int(parts[1]) if len(parts) > 1 else None
            segment = SegmentBlock(parts[0], flags or 0, lineno)
            module.segments.append(segment)
            section = None
        elif name.startswith(".__segment_"):
            if segment is None:
                diags.append(
                    Diagnostic(lineno, col, f"{name} before any .__segment", "add a .__segment line")
                )
            else:
                segment.fields[name[11:]] = Field(name[11:], _field_value(args), lineno, args_col)
        elif name == ".section":
            sec_name, type_text = _parse_section_line(args)
            section = SectionBlock(sec_name, lineno, type_text, args)
            module.sections.append(section)
            in_trailer = False
        elif name.startswith(".__section_"):
            if section is None:
                diags.append(
                    Diagnostic(lineno, col, f"{name} outside a section", "add a .section line first")
                )
            else:
                section.fields[name[11:]] = Field(name[11:], _field_value(args), lineno, args_col)
        elif in_trailer:
            module.trailer.append(Directive(name, args, lineno, col, args_col))
        elif section is None:
            module.preamble.append(Directive(name, args, lineno, col, args_col))
        else:
            section.items.append(Directive(name, args, lineno, col, args_col))
    return module, diags


def _parse_instruction(
    raw: str, code: str, lineno: int, col: int, section: SectionBlock | None, diags: list[Diagnostic]
) -> None:
    close = code.find("]")
    if close < 0:
        diags.append(Diagnostic(lineno, col, "unterminated control field", "close it with ']'"))
        return
    ctrl = code[col:close].strip()
    ctrl_col = col + 1
    try:
        parse_control(ctrl)
    except ControlCodeError as err:
        hint = err.hint
        if ctrl.count(":") == 5:
            hint = "the 6-field form with a leading reuse field is obsolete; drop the first field"
        diags.append(
            Diagnostic(
                lineno,
                ctrl_col + err.col,
                f"bad control field '[{clip(ctrl, 40)}]': {clip(err.message)}",
                hint,
            )
        )
        # The instruction is still kept (a module with this error is not assembled): a checker that
        # lost it would report the hazards its waits guard against (analysis.check reads it as unknown).
        bad_ctrl = True
    else:
        bad_ctrl = False
    body = code[close + 1 :]
    text = body.strip()
    text_col = close + 2 + (len(body) - len(body.lstrip()))
    if bad_ctrl and (section is None or not text):
        return  # one error per line
    if section is None:
        diags.append(Diagnostic(lineno, col, "instruction outside any section", "put it in a .text section"))
        return
    if not text:
        diags.append(
            Diagnostic(
                lineno,
                ctrl_col,
                "control field without an instruction",
                "write the instruction after the control field, ending with ';'",
            )
        )
        return
    semi = text.find(";")
    if semi >= 0 and semi < len(text) - 1:
        rest = text[semi + 1 :]
        extra_col = text_col + semi + 1 + len(rest) - len(rest.lstrip())
        diags.append(
            Diagnostic(
                lineno,
                extra_col,
                f"text after ';': '{clip(rest.strip(), 60)}'",
                "an instruction ends at ';': remove the rest or make it a comment with //",
            )
        )
        text = text[: semi + 1]  # the instruction is kept for the checker; the error stops assembly
    comment = raw[len(code) :]
    hidden = _HIDDEN_RE.search(comment) if comment else None
    raw_word = _RAW_RE.search(comment) if comment else None
    section.items.append(
        Instruction(
            ctrl,
            text,
            lineno,
            ctrl_col,
            text_col,
            int(hidden.group(1), 16) if hidden else 0,
            int(raw_word.group(1), 16) if raw_word else None,
        )
    )
