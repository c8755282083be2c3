"""Feature: document index. The whole-document view every feature reads: sections, kernels, labels,
instructions with their pcs, basic blocks and the file's arch. Built from cached per-line lexing, so
rebuilding after an edit costs a dictionary look-up per unchanged line. Never raises.

Architecture Invariant: the index is immutable once built and owns no IO; it is keyed by (uri, version)
in the server.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Generator
from dataclasses import dataclass, field
from functools import cached_property

from sass_lsp.ide.isa_facts import BLOCK_ENDERS
from sass_lsp.ide.lexer import LineDetail, LineInfo, classify_line, line_detail, split_lines

_SECTION_ARGS = re.compile(r'\s*(?:"([^"]*)"|([^,\s]+))\s*(?:,(.*))?$')
_OPCODE_AT = re.compile(r"(?:@!?U?P[0-6T]\s+)?([A-Z][A-Z0-9_]*)")
_HIDDEN = re.compile(r"//\s*hidden\s+0x([0-9a-fA-F]+)")
_RAW = re.compile(r"//\s*raw\s+0x([0-9a-fA-F]+)")
_SEGMENT = "\0segment"
_SM = re.compile(r"\bsm_(\d+)([af]?)\b|EF_CUDA_SM(\d+)")


@dataclass(frozen=True)
class SectionSpan:
    name: str
    line: int  # the .section line
    end_line: int  # exclusive
    type_text: str

    @property
    def is_text(self) -> bool:
        return self.name.startswith(".text")


@dataclass(frozen=True)
class LabelDef:
    name: str
    line: int
    start: int
    end: int
    section: str


@dataclass(frozen=True)
class Block:
    start_line: int  # first line (label or instruction)
    end_line: int  # last instruction line (inclusive)
    label: str | None
    n_instrs: int


@dataclass(frozen=True)
class Kernel:
    """A ``.text.<name>`` section: one kernel or device function and the code of its section."""

    name: str
    section: SectionSpan
    instr_lines: tuple[int, ...]
    entry: bool
    functions: tuple[LabelDef, ...]  # function labels inside the section (kernel and sub-functions)

    def contains(self, line: int) -> bool:
        return self.section.line <= line < self.section.end_line


@dataclass
class DocumentIndex:
    lines: list[str]
    infos: list[LineInfo]
    sections: list[SectionSpan] = field(default_factory=list)
    labels: dict[str, list[LabelDef]] = field(default_factory=dict)
    kernels: list[Kernel] = field(default_factory=list)
    pcs: dict[int, int] = field(default_factory=dict)  # instruction line -> pc within its section
    file_arch: str | None = None  # from .__elf_flags / .target / .headerflags
    structure_errors: list[tuple[int, int, int, str, str]] = field(default_factory=list)
    functions: set[str] = field(default_factory=set)
    entries: set[str] = field(default_factory=set)

    # ------------------------------------------------------------------ look-ups
    def info(self, line: int) -> LineInfo | None:
        return self.infos[line] if 0 <= line < len(self.infos) else None

    def detail(self, line: int) -> LineDetail | None:
        return line_detail(self.lines[line]) if 0 <= line < len(self.lines) else None

    def section_at(self, line: int) -> SectionSpan | None:
        lo, hi = 0, len(self.sections)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.sections[mid].line <= line:
                lo = mid + 1
            else:
                hi = mid
        if lo == 0:
            return None
        sec = self.sections[lo - 1]
        return sec if line < sec.end_line else None

    def kernel_at(self, line: int) -> Kernel | None:
        for kernel in self.kernels:
            if kernel.contains(line):
                return kernel
        return None

    def instruction_text(self, line: int) -> str:
        info = self.infos[line]
        return self.lines[line][info.text_start : info.text_end]

    def label_def(self, name: str) -> LabelDef | None:
        defs = self.labels.get(name)
        return defs[0] if defs else None

    def blocks(self, kernel: Kernel) -> list[Block]:
        return _blocks_cache(self, kernel)

    @cached_property
    def branch_targets(self) -> set[str]:
        out: set[str] = set()
        for kernel in self.kernels:
            for line in kernel.instr_lines:
                if "`(" in self.lines[line]:
                    detail = line_detail(self.lines[line])
                    out.update(name for name, _, _ in detail.targets)
        return out

    def opcode(self, line: int) -> str | None:
        info = self.infos[line]
        m = _OPCODE_AT.match(self.lines[line], info.text_start, info.text_end)
        return m.group(1) if m else None


def _blocks_cache(index: DocumentIndex, kernel: Kernel) -> list[Block]:
    cache = index.__dict__.setdefault("_blocks", {})
    if kernel.name not in cache:
        for _ in block_steps(index, kernel):
            pass
    return cache[kernel.name]


def block_steps(index: DocumentIndex, kernel: Kernel, step_lines: int = 1024) -> Generator[None, None, None]:
    """Compute the kernel's basic blocks into the index's cache, yielding every ``step_lines`` lines (so
    that a server can compute them in the background without holding up requests)."""
    cache = index.__dict__.setdefault("_blocks", {})
    if kernel.name in cache:
        return
    blocks: list[Block] = []
    start: int | None = None
    label: str | None = None
    last_instr = -1
    n_instrs = 0

    def close() -> None:
        nonlocal start, label, n_instrs
        if start is not None and n_instrs:
            blocks.append(Block(start, last_instr, label, n_instrs))
        start, label, n_instrs = None, None, 0

    for line in range(kernel.section.line + 1, kernel.section.end_line):
        info = index.infos[line]
        if info.kind == "label":
            close()
            start, label = line, info.label
        elif info.kind == "instruction" and info.text_end > info.text_start:
            if start is None:
                start = line
            n_instrs += 1
            last_instr = line
            if index.opcode(line) in BLOCK_ENDERS:
                close()
        if line % step_lines == 0:
            yield
    close()
    cache[kernel.name] = blocks


def _parse_section_args(args: str) -> tuple[str, str]:
    m = _SECTION_ARGS.match(args)
    if not m:
        return args.strip(), ""
    name = m.group(1) if m.group(1) is not None else (m.group(2) or "")
    rest = [p.strip() for p in (m.group(3) or "").split(",") if p.strip()]
    return name, rest[-1] if rest else ""


def arch_from_flags(osabi: int | None, flags: int) -> str:
    sm = (flags >> 8) & 0xFF if osabi == 0x41 else flags & 0xFF
    return f"sm_{sm}"


def build_index(text: str | list[str] | tuple[str, ...]) -> DocumentIndex:
    lines = split_lines(text) if isinstance(text, str) else list(text)
    infos = [classify_line(line) for line in lines]
    index = DocumentIndex(lines, infos)
    section_starts: list[tuple[int, str, str]] = []
    osabi: int | None = None
    flags: int | None = None
    target: str | None = None
    header_sm: str | None = None
    in_text = False
    pc = 0
    cur_section = ""
    for line_no, info in enumerate(infos):
        kind = info.kind
        if kind == "instruction":
            if not in_text:
                msg = (
                    "instruction outside any section"
                    if not cur_section
                    else "instruction outside a .text section"
                )
                index.structure_errors.append(
                    (line_no, info.indent, len(lines[line_no]), msg, "put it in a .text section")
                )
            elif info.text_end > info.text_start:
                index.pcs[line_no] = pc
                pc += 16
        elif kind == "directive":
            name = info.directive or ""
            if name == ".section":
                sec_name, type_text = _parse_section_args(info.args)
                section_starts.append((line_no, sec_name, type_text))
                cur_section = sec_name
                in_text = sec_name.startswith(".text")
                pc = 0
            elif name.startswith(".__segment"):
                cur_section = ""
                in_text = False
                if name == ".__segment" and section_starts:
                    section_starts.append((line_no, "", _SEGMENT))  # closes the previous section
            elif name == ".__elf_ident_osabi":
                osabi = _int(info.args)
            elif name == ".__elf_flags":
                flags = _int(info.args)
            elif name == ".target":
                target = info.args.strip()
            elif name == ".type" and "@function" in info.args:
                index.functions.add(info.args.split(",")[0].strip())
            elif name == ".other" and "STO_CUDA_ENTRY" in info.args:
                index.entries.add(info.args.split(",")[0].strip())
        elif kind == "label":
            assert info.label is not None
            label_name = info.label
            start = lines[line_no].index(label_name)
            if not cur_section:
                index.structure_errors.append(
                    (
                        line_no,
                        start,
                        start + len(label_name),
                        f"label '{label_name}' outside any section",
                        "put labels after a .section line",
                    )
                )
            index.labels.setdefault(label_name, []).append(
                LabelDef(label_name, line_no, start, start + len(label_name), cur_section)
            )
        elif kind == "comment" and header_sm is None and "headerflags" in lines[line_no]:
            m = _SM.search(lines[line_no])
            if m:
                header_sm = f"sm_{m.group(3) or m.group(1)}"
        elif kind == "other" and info.error is None:
            stripped = lines[line_no].strip()
            if in_text:
                msg = f"instruction without a control code: '{stripped[:60]}'"
                hint = "prefix it with a control field such as [B------:R-:W-:-:S01]"
            else:
                msg = f"unrecognised line: '{stripped[:60]}'"
                hint = "expected a directive, a label or an instruction line"
            index.structure_errors.append((line_no, info.indent, len(lines[line_no].rstrip()), msg, hint))
    # sections
    for idx, (line_no, sec_name, type_text) in enumerate(section_starts):
        if type_text == _SEGMENT:
            continue
        end = section_starts[idx + 1][0] if idx + 1 < len(section_starts) else len(lines)
        index.sections.append(SectionSpan(sec_name, line_no, end, type_text))
    # kernels
    for sec in index.sections:
        if not sec.is_text:
            continue
        instr_lines = tuple(ln for ln in range(sec.line, sec.end_line) if ln in index.pcs)
        kname = sec.name[len(".text.") :] if sec.name.startswith(".text.") else sec.name
        funcs = tuple(
            d
            for name, defs in index.labels.items()
            for d in defs
            if d.section == sec.name and name in index.functions
        )
        index.kernels.append(Kernel(kname, sec, instr_lines, kname in index.entries, funcs))
    if target and _SM.search(target):
        m = _SM.search(target)
        assert m is not None
        index.file_arch = f"sm_{m.group(1)}"
    elif flags is not None:
        index.file_arch = arch_from_flags(osabi, flags)
    else:
        index.file_arch = header_sm
    return index


def _int(text: str) -> int | None:
    try:
        return int(text.split("//")[0].strip(), 0)
    except ValueError:
        return None


def instruction_hidden(line: str) -> tuple[int, int | None]:
    """The ``// hidden 0x..`` and ``// raw 0x..`` values of an instruction line (as the parser reads them)."""
    hidden = _HIDDEN.search(line)
    raw = _RAW.search(line)
    return (int(hidden.group(1), 16) if hidden else 0, int(raw.group(1), 16) if raw else None)


_REUSABLE_KINDS = frozenset({"instruction", "blank", "comment"})


def update_index(
    old: DocumentIndex, start: int, n_old: int, new_lines: tuple[str, ...] | list[str]
) -> DocumentIndex:
    """The index after ``lines[start:start + n_old]`` became ``new_lines``.

    When the edit only changes the content of instruction, blank or comment lines (same line count, same
    kinds, same instruction positions), the old structure (sections, labels, pcs, label pcs) is shared and
    only the edited lines are re-lexed; otherwise the index is rebuilt from the (cached) lines.
    """
    lines = list(old.lines)
    lines[start : start + n_old] = list(new_lines)
    if n_old != len(new_lines) or start + n_old > len(old.lines):
        return build_index(lines)
    if any(start <= err[0] < start + n_old for err in old.structure_errors):
        return build_index(lines)
    new_infos = [classify_line(line) for line in new_lines]
    drop_blocks = False
    for offset, info in enumerate(new_infos):
        line_no = start + offset
        before = old.infos[line_no]
        if info.kind != before.kind or info.kind not in _REUSABLE_KINDS:
            return build_index(lines)
        if info.kind == "comment" and (
            "headerflags" in new_lines[offset] or "headerflags" in old.lines[line_no]
        ):
            return build_index(lines)  # the file's arch may come from this comment
        if info.kind == "instruction":
            if (info.text_end > info.text_start) != (before.text_end > before.text_start):
                return build_index(lines)  # the line gained or lost an instruction: pcs move
            old_text = old.lines[line_no]
            if "`(" in old_text or "`(" in new_lines[offset]:
                drop_blocks = True
            if _ends_block(old_text) or _ends_block(new_lines[offset]):
                drop_blocks = True
    infos = list(old.infos)
    infos[start : start + n_old] = new_infos
    index = DocumentIndex(
        lines,
        infos,
        old.sections,
        old.labels,
        old.kernels,
        old.pcs,
        old.file_arch,
        old.structure_errors,
        old.functions,
        old.entries,
    )
    if "_label_pcs" in old.__dict__:
        index.__dict__["_label_pcs"] = old.__dict__["_label_pcs"]
    if "_scoreboards" in old.__dict__:
        index.__dict__["_scoreboards"] = _update_scoreboards(old, index, range(start, start + n_old))
    if "_registers" in old.__dict__:
        from sass_lsp.ide.registers import update_registers  # registers reads lines through the lexer

        index.__dict__["_registers"] = update_registers(old, index, range(start, start + n_old))
    if not drop_blocks:
        for key in ("_blocks", "branch_targets"):
            if key in old.__dict__:
                index.__dict__[key] = old.__dict__[key]
    return index


def _ends_block(line: str) -> bool:
    return any(op in line for op in BLOCK_ENDERS)


def section_label_pcs(index: DocumentIndex, section: SectionSpan) -> dict[str, int]:
    """Label -> pc of the next instruction in the section (for the encoder's branch targets)."""
    cache = index.__dict__.setdefault("_label_pcs", {})
    if section.line in cache:
        return cache[section.line]
    out: dict[str, int] = {}
    pending: list[str] = []
    pc = 0
    for line in range(section.line, section.end_line):
        info = index.infos[line]
        if info.kind == "label" and info.label:
            pending.append(info.label)
        elif line in index.pcs:
            pc = index.pcs[line]
            for name in pending:
                out[name] = pc
            pending = []
            pc += 16
    for name in pending:
        out[name] = pc
    cache[section.line] = out
    return out


# ------------------------------------------------------------------------------------------ scoreboards

SCOREBOARD_ROLES = ("write", "read", "wait", "depbar")


def _scoreboard_entries(info: LineInfo, text: str) -> list[tuple[str, int]]:
    """(role, scoreboard) pairs of one instruction line: sets W#/R#, waits on B#, DEPBAR on SB#."""
    cc = info.ctrl
    if cc is None:
        return []
    out: list[tuple[str, int]] = []
    if cc.write_sb is not None:
        out.append(("write", cc.write_sb))
    if cc.read_sb is not None:
        out.append(("read", cc.read_sb))
    mask = cc.wait_mask
    out += [("wait", sb) for sb in range(6) if mask >> sb & 1]
    if "DEPBAR" in text:
        out += [("depbar", sb) for sb in range(6) if f"SB{sb}" in text]
    return out


def scoreboard_table(index: DocumentIndex, kernel: Kernel) -> dict[str, list[list[int]]]:
    """Per scoreboard 0-5: lines that set it as write / read scoreboard, wait on it, DEPBAR on it.
    Built once per kernel; an edit that keeps the structure updates it line by line (update_index)."""
    cache = index.__dict__.setdefault("_scoreboards", {})
    key = kernel.section.line
    if key not in cache:
        table: dict[str, list[list[int]]] = {k: [[] for _ in range(6)] for k in SCOREBOARD_ROLES}
        infos, lines = index.infos, index.lines
        for ln in kernel.instr_lines:
            for role, sb in _scoreboard_entries(infos[ln], lines[ln]):
                table[role][sb].append(ln)
        cache[key] = table
    return cache[key]


def _update_scoreboards(
    old: DocumentIndex, new: DocumentIndex, changed: range
) -> dict[int, dict[str, list[list[int]]]]:
    """The old index's scoreboard tables with the ``changed`` lines re-read (same structure: same pcs);
    lists that change are copied, the others shared."""
    tables = dict(old.__dict__["_scoreboards"])
    for line in changed:
        if line not in new.pcs:
            continue
        kernel = new.kernel_at(line)
        if kernel is None or kernel.section.line not in tables:
            continue
        before = _scoreboard_entries(old.infos[line], old.lines[line])
        after = _scoreboard_entries(new.infos[line], new.lines[line])
        if before == after:
            continue
        table = {role: list(per_sb) for role, per_sb in tables[kernel.section.line].items()}
        for role, sb in before:
            lines = table[role][sb] = list(table[role][sb])
            lines.pop(bisect.bisect_left(lines, line))
        for role, sb in after:
            lines = table[role][sb] = list(table[role][sb])
            bisect.insort(lines, line)
        tables[kernel.section.line] = table
    return tables
