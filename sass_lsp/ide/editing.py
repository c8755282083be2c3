"""Feature: editing help. Semantic tokens, completion of opcodes / modifiers / registers / labels /
control fields (from the encoder's tables for the file's arch when available), and formatting that
aligns instruction lines the way CuAssembler writes them without changing any instruction text.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import NamedTuple

from sass_lsp.ide.backends import EncoderAdapter
from sass_lsp.ide.index import DocumentIndex
from sass_lsp.ide.isa_facts import COMMON_OPCODES, opcode_doc
from sass_lsp.ide.lexer import line_detail


class SemanticToken(NamedTuple):
    line: int
    start: int
    length: int
    kind: str


# No semantic tokens past this column of a line: a pasted megabyte line would otherwise cost every token
# request (and the client) hundreds of thousands of tokens that no one reads; its start stays coloured.
MAX_TOKEN_COL = 4000


def semantic_tokens(index: DocumentIndex, start: int = 0, end: int | None = None) -> list[SemanticToken]:
    """Tokens of lines ``start..end``; none starts at or past :data:`MAX_TOKEN_COL` of its line."""
    end = len(index.lines) - 1 if end is None else min(end, len(index.lines) - 1)
    out: list[SemanticToken] = []
    infos, lines = index.infos, index.lines
    for line in range(max(0, start), end + 1):
        if infos[line].kind == "blank":
            continue
        out += [
            SemanticToken(line, a, b - a, kind)
            for a, b, kind in line_detail(lines[line]).tokens
            if b > a and a < MAX_TOKEN_COL
        ]
    return out


# --------------------------------------------------------------------------------------------- completion


@dataclass(frozen=True)
class CompletionItem:
    label: str
    kind: str  # opcode | modifier | register | label | snippet
    detail: str = ""
    documentation: str = ""
    insert_text: str | None = None
    sort_text: str | None = None


CTRL_TEMPLATES = (
    ("B------:R-:W-:-:S01", "fixed-latency instruction, 1 cycle stall"),
    ("B------:R-:W-:Y:S04", "fixed-latency instruction, 4 cycle stall, yield"),
    ("B------:R-:W0:-:S01", "variable-latency producer on write scoreboard 0"),
    ("B0-----:R-:W-:-:S01", "consumer waiting on scoreboard 0"),
)

_SPECIAL = ("RZ", "PT", "URZ", "UPT", "SRZ")
MAX_REGISTER_ITEMS = 64


def completions(
    index: DocumentIndex, line: int, col: int, encoder: EncoderAdapter | None
) -> list[CompletionItem]:
    info = index.info(line)
    if info is None:
        return []
    text = index.lines[line]
    prefix = text[:col]
    if info.kind == "instruction" and info.ctrl_start >= 0 and (info.ctrl_end < 0 or col < info.ctrl_end):
        return [CompletionItem(t, "snippet", d, insert_text=t) for t, d in CTRL_TEMPLATES]
    if info.kind == "instruction" and info.ctrl_end >= 0 and col >= info.ctrl_end:
        body = prefix[info.ctrl_end :]
        body_wo_addr = re.sub(r"/\*[0-9a-fA-F]*\*/", "", body).lstrip()
        body_wo_guard = re.sub(r"^@!?U?P[0-6T]\s+", "", body_wo_addr)
        if "`(" in body and ")" not in body[body.rfind("`(") :]:
            return _label_items(index)
        if re.fullmatch(r"[A-Z0-9_]*", body_wo_guard):
            return _opcode_items(encoder)
        m = re.fullmatch(r"([A-Z][A-Z0-9_]*)((?:\.[A-Za-z0-9_]*)*)\.[A-Za-z0-9_]*", body_wo_guard)
        if m:
            return _modifier_items(m.group(1), encoder)
        return _register_items(index, line)
    if info.kind in ("blank", "other") and prefix.strip() == "":
        return [CompletionItem(f"[{t}]", "snippet", d, insert_text=f"[{t}] ") for t, d in CTRL_TEMPLATES]
    return []


def _opcode_items(encoder: EncoderAdapter | None) -> list[CompletionItem]:
    names = encoder.known_opcodes() if encoder is not None else []
    source = f"valid for {encoder.arch}" if names and encoder else "common opcode"
    names = names or list(COMMON_OPCODES)
    items = []
    for name in names:
        doc = opcode_doc(name)
        items.append(CompletionItem(name, "opcode", doc[0] if doc else source, doc[1] if doc else ""))
    return items


def _modifier_items(opcode: str, encoder: EncoderAdapter | None) -> list[CompletionItem]:
    mods = encoder.known_modifiers(opcode) if encoder is not None else []
    return [CompletionItem(m, "modifier", f"{opcode} modifier") for m in mods]


def _register_items(index: DocumentIndex, line: int) -> list[CompletionItem]:
    kernel = index.kernel_at(line)
    seen: dict[str, int] = {}
    if kernel is not None:
        pos = bisect.bisect_left(kernel.instr_lines, line)
        nearest = kernel.instr_lines[max(0, pos - 1000) : pos + 1000]
        for ln in nearest:
            for m in _REG_IN_TEXT.finditer(
                index.lines[ln], index.infos[ln].text_start, index.infos[ln].text_end
            ):
                seen[m.group()] = seen.get(m.group(), 0) + 1
    items = [CompletionItem(r, "register", "special register") for r in _SPECIAL]
    for name, count in sorted(seen.items(), key=lambda kv: -kv[1])[:MAX_REGISTER_ITEMS]:
        if name not in _SPECIAL:
            items.append(CompletionItem(name, "register", f"used {count}× in this kernel"))
    return items


_REG_IN_TEXT = re.compile(r"(?<![\w])(?:UR\d+|UP[0-6]|R\d+|P[0-6])\b")


def _label_items(index: DocumentIndex) -> list[CompletionItem]:
    return [CompletionItem(name, "label", f"line {defs[0].line + 1}") for name, defs in index.labels.items()]


# --------------------------------------------------------------------------------------------- formatting


@dataclass(frozen=True)
class TextEdit:
    line: int
    start: int
    end_line: int
    end: int
    new_text: str


_GUARD = re.compile(r"(@!?U?P[0-6T])\s+")


def canonical_instruction_line(index: DocumentIndex, line: int, renumber: bool) -> str | None:
    """The line as CuAssembler writes it: 6 spaces, [ctrl], 9 spaces, /*addr*/, guard right-aligned in 18
    columns then a space, the instruction text unchanged, then the rest of the line (comments) as written."""
    info = index.infos[line]
    if info.kind != "instruction" or info.ctrl is None or info.error is not None or line not in index.pcs:
        return None
    text = index.lines[line]
    body = text[info.text_start : info.text_end]
    rest = text[info.text_end :].rstrip()
    if renumber:
        addr = f"/*{index.pcs[line]:04x}*/"
    elif info.addr_start >= 0:
        addr = text[info.addr_start : info.addr_end]
    else:
        addr = ""
    guard = ""
    m = _GUARD.match(body)
    if m:
        guard, body = m.group(1), body[m.end() :]
    head = f"      [{info.ctrl_text}]"
    if addr:
        head += f"         {addr}"
    pred = f"{guard:>18} " if guard else " " * 19
    return f"{head}{pred}{body}{rest}"


def format_edits(
    index: DocumentIndex, start: int = 0, end: int | None = None, renumber: bool = True
) -> list[TextEdit]:
    end = len(index.lines) - 1 if end is None else min(end, len(index.lines) - 1)
    edits: list[TextEdit] = []
    for line in range(max(0, start), end + 1):
        info = index.infos[line]
        text = index.lines[line]
        new: str | None = None
        if info.kind == "instruction":
            new = canonical_instruction_line(index, line, renumber)
        elif info.kind == "label" and index.section_at(line) is not None and info.label:
            new = f"  {info.label}:" + (" " + text[info.comment_start :] if info.comment_start >= 0 else "")
        if new is not None and new != text:
            edits.append(TextEdit(line, 0, line, len(text), new))
    return edits
