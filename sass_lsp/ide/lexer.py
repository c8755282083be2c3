"""Feature: line lexing. One `.cuasm` line in, a frozen :class:`LineInfo` out; never raises.

Two levels, both cached by the exact line text so that an edit re-lexes only the lines it touched:

* :func:`classify_line` — cheap: what the line is (instruction, label, directive, comment, blank, other),
  the control field and its decoded value or error, the instruction text span. Enough for the first
  diagnostics and for the document index.
* :func:`line_detail` — the full token list (opcode, modifiers, registers, predicates, constants, labels,
  comments ...) with operand boundaries and the registers each operand names. Used by semantic tokens,
  hover, navigation and completion, computed on demand.

Columns are 0-based offsets in the line (Python str indices, i.e. code points).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from sass_lsp.isa.control import ControlCode, ControlCodeError, parse_control


class Token(NamedTuple):
    start: int
    end: int
    kind: str  # see TOKEN_KINDS


TOKEN_KINDS = (
    "opcode",
    "modifier",
    "register",
    "uniformRegister",
    "predicate",
    "controlCode",
    "number",
    "label",
    "directive",
    "comment",
    "string",
    "specialRegister",
    "address",
)


@dataclass(frozen=True)
class LineError:
    col: int
    end_col: int
    message: str
    hint: str = ""
    code: str = ""  # the diagnostic's code; "": control-field on instruction lines, syntax elsewhere


class LineInfo(NamedTuple):
    """What one line is. ``kind``: blank, comment, label, directive, instruction, other."""

    kind: str
    indent: int = 0
    label: str | None = None
    directive: str | None = None
    args: str = ""
    args_col: int = 0
    ctrl_text: str = ""  # inside the brackets
    ctrl_start: int = -1  # column of '['
    ctrl_end: int = -1  # column after ']'
    ctrl: ControlCode | None = None
    addr_start: int = -1  # /*0000*/ address comment
    addr_end: int = -1
    text_start: int = -1  # instruction text (from guard/opcode up to and including ';')
    text_end: int = -1
    comment_start: int = -1  # start of a trailing // comment
    error: LineError | None = None


class RegRef(NamedTuple):
    """A register token (for colouring and the cursor). ``name`` is canonical (R12, UR4, P0, UP1, B1, SB2,
    RZ, PT). What an instruction reads and writes: ``ide.registers.line_registers`` (``isa.semantics``)."""

    name: str
    kind: str  # R, UR, P, UP, B, SB
    start: int
    end: int


@dataclass(frozen=True)
class LineDetail:
    tokens: tuple[Token, ...]
    opcode: str | None = None  # base opcode, e.g. LDG
    modifiers: tuple[str, ...] = ()
    opcode_start: int = -1
    opcode_end: int = -1  # end of the opcode with its modifiers
    guard: RegRef | None = None
    operands: tuple[tuple[int, int], ...] = ()  # spans
    regs: tuple[RegRef, ...] = ()
    targets: tuple[tuple[str, int, int], ...] = ()  # (label, start, end) of `(label) operands
    label_def: tuple[str, int, int] | None = None


_CTRL_LINE = re.compile(r"(\s*)\[([^\]\n]*)(\]?)")
_ADDR = re.compile(r"\s*(/\*[0-9a-fA-F]+\*/)")
_LABEL = re.compile(r"(\s*)([A-Za-z0-9._$@#]+):\s*$")
_DIRECTIVE = re.compile(r"(\s*)(\.[A-Za-z_][\w.]*)(\s*)")
_WS = re.compile(r"\s*")


def split_lines(text: str) -> list[str]:
    """Split like LSP does: on ``\\n``, ``\\r\\n`` and ``\\r`` only (not on form feeds, unlike splitlines)."""
    if "\r" not in text:
        return text.split("\n")
    return re.split(r"\r\n|\r|\n", text)


def comment_start(line: str, start: int = 0) -> int:
    """Column of a ``//`` comment outside strings, or -1."""
    idx = line.find("//", start)
    if idx < 0:
        return -1
    if '"' not in line:
        return idx
    in_string = False
    pos = start
    while pos < len(line):
        ch = line[pos]
        if in_string:
            if ch == "\\":
                pos += 2
                continue
            if ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif line.startswith("//", pos):
            return pos
        pos += 1
    return -1


@lru_cache(maxsize=4096)
def decode_control(ctrl: str) -> ControlCode | ControlCodeError:
    try:
        return parse_control(ctrl)
    except ControlCodeError as err:
        return err


_CLASSIFIED: dict[str, LineInfo] = {}
MAX_CLASSIFIED = 400_000


def classify_line(line: str) -> LineInfo:
    """Cached by line text (a plain dict: inserting into it is ~30x cheaper than into an lru_cache)."""
    info = _CLASSIFIED.get(line)
    if info is None:
        try:
            info = _classify(line)
        except Exception as exc:  # never let one odd line break the document
            info = LineInfo("other", error=LineError(0, len(line), f"internal lexer error: {exc}"))
        if len(_CLASSIFIED) >= MAX_CLASSIFIED:
            _CLASSIFIED.clear()
        _CLASSIFIED[line] = info
    return info


def _classify(line: str) -> LineInfo:
    stripped = line.strip()
    if not stripped:
        return _BLANK_INFO
    indent = len(line) - len(line.lstrip())
    if stripped.startswith("//") or (
        stripped.startswith("/*") and stripped.endswith("*/") and "*/" not in stripped[2:-2]
    ):
        return LineInfo("comment", indent, comment_start=indent)
    if stripped.startswith("["):
        return _classify_instruction(line, indent)
    cstart = comment_start(line, indent)
    code = line if cstart < 0 else line[:cstart]
    if stripped.startswith("/*"):  # '/*0000*/ .byte ...': a leading offset comment
        close = code.find("*/")
        if close >= 0:
            code = " " * (close + 2) + code[close + 2 :]
    m = _LABEL.match(code)
    if m and not m.group(2).startswith(".__"):
        return LineInfo("label", indent, label=m.group(2), comment_start=cstart)
    m = _DIRECTIVE.match(code)
    if m:
        args = code[m.end() :].rstrip()
        return LineInfo(
            "directive", indent, directive=m.group(2), args=args, args_col=m.end(), comment_start=cstart
        )
    return LineInfo("other", indent, comment_start=cstart)


_FAST_INSTR = re.compile(
    r"(\s*+)\[([^\]\n:]*+:[^\]\n]*+)\](\s*+)(/\*[0-9a-fA-F]++\*/)?"  # indent [ctrl] /*addr*/
    r"\s*+((?:[^;/\[(\"]++|\[[^\]/]*+\])*+;)([ \t]*+)(//.*)?$"  # text up to ';', a // comment
)
_BLANK_INFO = LineInfo("blank")


def _classify_instruction(line: str, indent: int) -> LineInfo:
    fast = _FAST_INSTR.match(line)
    if fast is not None:
        ctrl_inner = fast.group(2).strip()
        decoded = decode_control(ctrl_inner)
        if not isinstance(decoded, ControlCodeError) and ctrl_inner == fast.group(2):
            return LineInfo(
                "instruction",
                indent,
                None,
                None,
                "",
                0,
                ctrl_inner,
                fast.start(2) - 1,
                fast.end(2) + 1,
                decoded,
                fast.start(4),
                fast.end(4),
                fast.start(5),
                fast.end(5),
                fast.start(7),
                None,
            )
    return _classify_instruction_slow(line, indent)


def _classify_instruction_slow(line: str, indent: int) -> LineInfo:
    m = _CTRL_LINE.match(line)
    assert m is not None
    ctrl_start = m.end(1)
    if not m.group(3):
        return LineInfo(
            "instruction",
            indent,
            ctrl_start=ctrl_start,
            error=LineError(
                ctrl_start, len(line.rstrip()), "unterminated control field", "close it with ']'"
            ),
        )
    ctrl_end = m.end()
    ctrl_text = m.group(2)
    ctrl_inner = ctrl_text.strip()
    decoded = decode_control(ctrl_inner)
    error = None
    ctrl = None
    if isinstance(decoded, ControlCodeError):
        hint = decoded.hint
        if ctrl_inner.count(":") == 5:
            hint = "the 6-field form with a leading reuse field is obsolete; drop the first field"
        lead = len(ctrl_text) - len(ctrl_text.lstrip())
        col = ctrl_start + 1 + lead + decoded.col
        error = LineError(
            col, max(col + 1, ctrl_end - 1), f"bad control field '[{ctrl_inner}]': {decoded.message}", hint
        )
    else:
        ctrl = decoded
    pos = ctrl_end
    addr_start = addr_end = -1
    am = _ADDR.match(line, pos)
    if am:
        addr_start, addr_end = am.start(1), am.end(1)
        pos = am.end()
    cstart = comment_start(line, pos)
    code_end = len(line) if cstart < 0 else cstart
    wm = _WS.match(line, pos, code_end)
    text_start = wm.end() if wm else pos
    semi = _find_semicolon(line, text_start, code_end)
    text_end = semi + 1 if semi >= 0 else len(line[:code_end].rstrip())
    if text_start >= text_end and error is None:
        error = LineError(
            ctrl_start,
            ctrl_end,
            "control field without an instruction",
            "write the instruction after the control field, ending with ';'",
        )
    junk = _WS.match(line, text_end, code_end) if semi >= 0 else None
    junk_start = junk.end() if junk else text_end
    if semi >= 0 and junk_start < len(line[:code_end].rstrip()) and error is None:
        # the assembler rejects it: it must not look clean here
        error = LineError(
            junk_start,
            len(line[:code_end].rstrip()),
            f"text after ';': '{_clip(line[junk_start:code_end].strip())}'",
            "an instruction ends at ';'; remove the rest, or make it a comment with //",
            "syntax",
        )
    return LineInfo(
        "instruction",
        indent,
        ctrl_text=ctrl_inner,
        ctrl_start=ctrl_start,
        ctrl_end=ctrl_end,
        ctrl=ctrl,
        addr_start=addr_start,
        addr_end=addr_end,
        text_start=text_start,
        text_end=max(text_start, text_end),
        comment_start=cstart,
        error=error,
    )


def _clip(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _find_semicolon(line: str, start: int, end: int) -> int:
    depth = 0
    idx = start
    while idx < end:
        ch = line[idx]
        if ch == "(" and line.startswith("(*", idx):  # (*"annotation"*)
            close = line.find("*)", idx + 2)
            idx = end if close < 0 else close + 2
            continue
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        elif ch == ";" and depth <= 0:
            return idx
        idx += 1
    return -1


# ---------------------------------------------------------------------------------------------- detail

_GUARD = re.compile(r"@!?(U?P)([0-6T])\b")
_OPCODE = re.compile(r"([A-Z][A-Z0-9_]*)((?:\.[A-Za-z0-9_]+)*)")
_OPERAND_TOKEN = re.compile(
    r"(?P<label>`\((?P<lname>[^)]*)\))|(?P<annot>\(\*.*?\*\))|(?P<reloc>\d+@\w+)"
    r"|(?P<num>[+-]?(?:0x[0-9a-fA-F]+|0[fF][0-9a-fA-F]{8}\b|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?))|(?P<suffix>\.\w+)|(?P<word>[A-Za-z_$][\w$]*)"
)
_REG_WORD = re.compile(r"(?:UR(?:\d+|Z)|UP[0-6T]|R(?:\d+|Z)|P[0-6T]|SB[0-5]|B\d{1,2})$")
_FLOAT_WORDS = frozenset({"INF", "QNAN", "SNAN", "NAN"})
_SPACES = frozenset({"c", "cx", "desc", "gdesc"})
_REG_NAME = re.compile(r"(UR|UP|SB|R|P|B)(\d+|Z|T)$")


def _split_operands(line: str, start: int, end: int) -> list[tuple[int, int]]:
    segment = line[start:end]
    if "{" not in segment and "(" not in segment:
        out = []
        pos = start
        for piece in segment.split(","):
            a = pos + len(piece) - len(piece.lstrip())
            b = pos + len(piece.rstrip())
            if a < b:
                out.append((a, b))
            pos += len(piece) + 1
        return out
    spans = []
    depth = 0
    seg = start
    for idx in range(start, end):
        ch = line[idx]
        if ch in "[({":
            depth += 1
        elif ch in "])}":
            depth -= 1
        elif ch == "," and depth <= 0:
            spans.append((seg, idx))
            seg = idx + 1
    spans.append((seg, end))
    out = []
    for a, b in spans:
        while a < b and line[a].isspace():
            a += 1
        while b > a and line[b - 1].isspace():
            b -= 1
        if a < b:
            out.append((a, b))
    return out


def _canonical(reg: str) -> tuple[str, str]:
    m = _REG_NAME.match(reg)
    return (reg, m.group(1)) if m else (reg, "")


@lru_cache(maxsize=131072)
def line_detail(line: str) -> LineDetail:
    try:
        return _detail(line)
    except Exception:  # pragma: no cover - defensive: a detail failure degrades features, never the server
        return LineDetail(())


def _detail(line: str) -> LineDetail:
    info = classify_line(line)
    tokens: list[Token] = []
    if info.kind == "comment":
        return LineDetail((Token(info.comment_start, len(line), "comment"),))
    if info.kind == "label":
        assert info.label is not None
        start = line.rindex(info.label, 0, len(line) if info.comment_start < 0 else info.comment_start)
        end = start + len(info.label)
        tokens.append(Token(start, end, "label"))
        if info.comment_start >= 0:
            tokens.append(Token(info.comment_start, len(line), "comment"))
        return LineDetail(tuple(tokens), label_def=(info.label, start, end))
    if info.kind == "directive":
        assert info.directive is not None
        dstart = line.index(info.directive, info.indent)
        if dstart > info.indent:
            tokens.append(Token(info.indent, dstart, "address"))
        tokens.append(Token(dstart, dstart + len(info.directive), "directive"))
        tokens += _arg_tokens(line, info.args_col, info.args_col + len(info.args))
        if info.comment_start >= 0:
            tokens.append(Token(info.comment_start, len(line), "comment"))
        return LineDetail(tuple(tokens))
    if info.kind != "instruction" or info.ctrl_end < 0:
        if info.comment_start >= 0:
            tokens.append(Token(info.comment_start, len(line), "comment"))
        return LineDetail(tuple(tokens))
    tokens.append(Token(info.ctrl_start, info.ctrl_end, "controlCode"))
    if info.addr_start >= 0:
        tokens.append(Token(info.addr_start, info.addr_end, "address"))
    pos, end = info.text_start, info.text_end
    if end > pos and line[end - 1] == ";":
        end -= 1
    guard = None
    gm = _GUARD.match(line, pos, end)
    if gm:
        kind = gm.group(1)
        name = f"{kind}{gm.group(2)}"
        gstart = gm.start() + (2 if line[gm.start() + 1] == "!" else 1)
        guard = RegRef(name, kind, gstart, gm.end())
        tokens.append(Token(gstart, gm.end(), "predicate"))
        pos = gm.end()
        while pos < end and line[pos].isspace():
            pos += 1
    om = _OPCODE.match(line, pos, end)
    if not om:
        if info.comment_start >= 0:
            tokens.append(Token(info.comment_start, len(line), "comment"))
        return LineDetail(tuple(tokens), guard=guard, regs=(guard,) if guard else ())
    opcode = om.group(1)
    modifiers = tuple(m for m in om.group(2).split(".") if m)
    tokens.append(Token(om.start(1), om.end(1), "opcode"))
    mpos = om.end(1)
    for mod in modifiers:
        tokens.append(Token(mpos + 1, mpos + 1 + len(mod), "modifier"))
        mpos += 1 + len(mod)
    operands = _split_operands(line, om.end(), end)
    regs: list[RegRef] = [guard] if guard else []
    targets: list[tuple[str, int, int]] = []
    for a, b in operands:
        for m in _OPERAND_TOKEN.finditer(line, a, b):
            group = m.lastgroup
            if group == "word":
                word = m.group()
                if _REG_WORD.match(word):
                    name, kind = _canonical(word)
                    tok_kind = {"UR": "uniformRegister", "UP": "predicate", "P": "predicate"}.get(
                        kind, "register"
                    )
                    tokens.append(Token(m.start(), m.end(), tok_kind))
                    regs.append(RegRef(name, kind, m.start(), m.end()))
                elif word.startswith("SR_") or word == "SRZ":
                    tokens.append(Token(m.start(), m.end(), "specialRegister"))
                elif word in _FLOAT_WORDS:
                    tokens.append(Token(m.start(), m.end(), "number"))
                elif word in _SPACES:
                    tokens.append(Token(m.start(), m.end(), "specialRegister"))
                else:
                    tokens.append(Token(m.start(), m.end(), "label"))
            elif group == "label":
                tokens.append(Token(m.start("lname"), m.end("lname"), "label"))
                targets.append((m.group("lname"), m.start("lname"), m.end("lname")))
            elif group == "annot":
                tokens.append(Token(m.start(), m.end(), "comment"))
            elif group == "num":
                tokens.append(Token(m.start(), m.end(), "number"))
            elif group == "reloc":
                tokens.append(Token(m.start(), m.end(), "modifier"))
            elif group == "suffix":
                tokens.append(Token(m.start() + 1, m.end(), "modifier"))
    if info.comment_start >= 0:
        tokens.append(Token(info.comment_start, len(line), "comment"))
    tokens.sort(key=lambda t: t.start)
    return LineDetail(
        tuple(tokens),
        opcode=opcode,
        modifiers=modifiers,
        opcode_start=om.start(1),
        opcode_end=om.end(),
        guard=guard,
        operands=tuple(operands),
        regs=tuple(regs),
        targets=tuple(targets),
    )


_ARG_TOKEN = re.compile(
    r'(?P<string>"(?:[^"\\]|\\.)*"?)|(?P<num>[+-]?\b0x[0-9a-fA-F]+\b|[+-]?\b\d+\b)|(?P<name>[A-Za-z_.$][\w.$]*)'
)


def _arg_tokens(line: str, start: int, end: int) -> list[Token]:
    out = []
    for m in _ARG_TOKEN.finditer(line, start, end):
        kind = {"string": "string", "num": "number", "name": "label"}[m.lastgroup or "name"]
        out.append(Token(m.start(), m.end(), kind))
    return out
