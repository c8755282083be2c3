"""Feature: hover. On an instruction: its control code in words, the opcode's meaning and latency class,
and the checker's timeline when one is available. On a register: its definitions and uses in the kernel.
On a scoreboard digit of the control field: every instruction that sets it and every one that waits on it.
On a label: where it is and what branches to it.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass

from sass_lsp.ide.index import DocumentIndex, Kernel, scoreboard_table
from sass_lsp.ide.isa_facts import opcode_doc
from sass_lsp.ide.lexer import line_detail
from sass_lsp.ide.navigation import label_references, search_register, target_at
from sass_lsp.ide.registers import line_registers
from sass_lsp.isa.control import ControlCode

MAX_LISTED = 12
HOVER_BUDGET_S = 0.008

TimelineFn = Callable[[int], str | None]  # line -> markdown about that instruction's issue timeline


@dataclass(frozen=True)
class HoverResult:
    markdown: str
    line: int
    start: int
    end: int


def control_words(cc: ControlCode) -> list[str]:
    out = [f"stall **{cc.stall}** cycle{'s' if cc.stall != 1 else ''} before the next instruction issues"]
    out.append(
        "yield (`Y`): the scheduler may switch to another warp"
        if cc.yield_flag
        else "no yield (`-`): keeps issuing from this warp"
    )
    if cc.write_sb is not None:
        out.append(
            f"sets **write scoreboard SB{cc.write_sb}**: released when the result registers are written"
        )
    if cc.read_sb is not None:
        out.append(
            f"sets **read scoreboard SB{cc.read_sb}**: released once the source registers have been read"
        )
    waits = [f"SB{i}" for i in range(6) if cc.wait_mask >> i & 1]
    out.append(f"waits on **{', '.join(waits)}** before issuing" if waits else "waits on no scoreboard")
    return out


def code(text: str) -> str:
    """Markdown inline code that survives backquotes in SASS (`` BRA `(.L_x_0) ``)."""
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def _loc(index: DocumentIndex, line: int) -> str:
    pc = index.pcs.get(line)
    where = f"line {line + 1}" + (f", pc 0x{pc:04x}" if pc is not None else "")
    return (
        f"{where}: {code(index.instruction_text(line) if line in index.pcs else index.lines[line].strip())}"
    )


def _listing(title: str, lines: list[int], index: DocumentIndex) -> list[str]:
    if not lines:
        return [f"**{title}:** none"]
    out = [f"**{title}** ({len(lines)}):"]
    out += [f"- {_loc(index, ln)}" for ln in lines[:MAX_LISTED]]
    if len(lines) > MAX_LISTED:
        out.append(f"- … {len(lines) - MAX_LISTED} more")
    return out


def hover(
    index: DocumentIndex, line: int, col: int, timeline: TimelineFn | None = None
) -> HoverResult | None:
    info = index.info(line)
    if info is None:
        return None
    target = target_at(index, line, col)
    kernel = index.kernel_at(line)
    if target is not None and target.kind == "register" and kernel is not None:
        return HoverResult(
            _register_md(index, kernel, target.name, line), line, target.span.start, target.span.end
        )
    if target is not None and target.kind == "scoreboard" and kernel is not None:
        return HoverResult(
            _scoreboard_md(index, kernel, int(target.name[2:])), line, target.span.start, target.span.end
        )
    if target is not None and target.kind == "label":
        return HoverResult(_label_md(index, target.name), line, target.span.start, target.span.end)
    if info.kind == "instruction" and (info.ctrl_start <= col < max(info.text_end, info.ctrl_end)):
        return HoverResult(
            _instruction_md(index, line, timeline), line, info.ctrl_start, max(info.text_end, info.ctrl_end)
        )
    return None


def _instruction_md(index: DocumentIndex, line: int, timeline: TimelineFn | None) -> str:
    info = index.infos[line]
    detail = line_detail(index.lines[line])
    parts: list[str] = []
    if detail.opcode:
        full = ".".join((detail.opcode, *detail.modifiers))
        doc = opcode_doc(detail.opcode)
        parts.append(f"**{full}**" + (f" — {doc[0]}" if doc else ""))
        if doc:
            parts.append(f"*{doc[1]}*")
    if info.ctrl is not None:
        parts.append(f"**Control** `[{info.ctrl_text}]`")
        parts += [f"- {w}" for w in control_words(info.ctrl)]
    elif info.error is not None:
        parts.append(f"**Control** `[{info.ctrl_text}]`: {info.error.message}")
    reuse = [
        index.lines[line][r.start : r.end]
        for r in detail.regs
        if index.lines[line].startswith(".reuse", r.end)
    ]
    if reuse:
        parts.append("- operand reuse cache: " + ", ".join(f"`{r}`" for r in reuse))
    if line in index.pcs:
        parts.append(f"pc `0x{index.pcs[line]:04x}`")
        kernel = index.kernel_at(line)
        if kernel is not None:
            issue = issue_cycle(index, kernel, line)
            if issue is not None:
                label, cycle = issue
                parts.append(
                    f"issues at cycle **+{cycle}** of block `{label}` "
                    "*(sum of the stalls before it; scoreboard waits not modelled)*"
                )
            consumers = result_consumers(index, kernel, line)
            if consumers:
                parts += _listing("Consumers of its result", consumers, index)
    if timeline is not None:
        extra = timeline(line)
        if extra:
            parts.append(extra)
    return _join(parts)


def _join(parts: list[str]) -> str:
    out: list[str] = []
    for part in parts:
        if part.startswith("- ") and out and (out[-1].startswith("- ") or out[-1].endswith((":", "`"))):
            out.append(part)
        else:
            if out:
                out.append("")
            out.append(part)
    return "\n".join(out)


def issue_cycle(index: DocumentIndex, kernel: Kernel, line: int) -> tuple[str, int] | None:
    """(block label, cycle of issue counted from the block start by summing stalls) of the instruction on
    ``line``; only its own block is read, so the cost does not grow with the kernel."""
    blocks = index.blocks(kernel)
    pos = bisect.bisect_right([b.start_line for b in blocks], line) - 1
    if pos < 0 or line > blocks[pos].end_line or index.infos[line].ctrl is None or line not in index.pcs:
        return None
    block = blocks[pos]
    cycle = 0
    for ln in range(block.start_line, line):
        cc = index.infos[ln].ctrl if ln in index.pcs else None
        if cc is not None:
            cycle += cc.stall
    return block.label or f"line {block.start_line + 1}", cycle


def result_consumers(index: DocumentIndex, kernel: Kernel, line: int, window: int = 256) -> list[int]:
    """Instructions after ``line`` (within ``window`` instructions) that read a register it writes,
    before that register is written again."""
    arch = index.file_arch
    dests = {name for reg in line_registers(index.lines[line], arch) if reg.is_def for name in reg.covers}
    dests -= {"RZ", "PT", "URZ", "UPT"}
    if not dests:
        return []
    lines = kernel.instr_lines
    pos = bisect.bisect_right(lines, line)
    out: list[int] = []
    for ln in lines[pos : pos + window]:
        regs = line_registers(index.lines[ln], arch)
        if any(not r.is_def and set(r.covers) & dests for r in regs):
            out.append(ln)
        for r in regs:
            if r.is_def:
                dests -= set(r.covers)
        if not dests:
            break
    return out


def _register_md(index: DocumentIndex, kernel: Kernel, name: str, line: int) -> str:
    search = search_register(index, kernel, name, line, HOVER_BUDGET_S)
    occ = search.occurrences
    defs = sorted({o.line for o in occ if o.is_def})
    uses = sorted({o.line for o in occ if not o.is_def})
    head = f"**{name}** in `{kernel.name}` — {len(defs)} definition(s), {len(uses)} use(s)"
    note = "*(written = leading destination operands, by operand position)*"
    if not search.complete:
        first, last = search.searched
        note += f"\n\n*(searched lines {first + 1}–{last + 1} of the kernel; Find References searches all)*"
    return "\n".join(
        [head, "", *_listing("Defined", defs, index), "", *_listing("Used", uses, index), "", note]
    )


def _scoreboard_md(index: DocumentIndex, kernel: Kernel, sb: int) -> str:
    table = scoreboard_table(index, kernel)
    writers, readers, waiters, depbars = (table[k][sb] for k in ("write", "read", "wait", "depbar"))
    out = [f"**Scoreboard SB{sb}** in `{kernel.name}`", ""]
    out += _listing(f"Sets W{sb} (write)", writers, index) + [""]
    out += _listing(f"Sets R{sb} (read)", readers, index) + [""]
    out += _listing(f"Waits on SB{sb}", waiters, index)
    if depbars:
        out += ["", *_listing(f"DEPBAR on SB{sb}", depbars, index)]
    return "\n".join(out)


def _label_md(index: DocumentIndex, name: str) -> str:
    defs = index.labels.get(name, [])
    refs = label_references(index, name, False)
    if not defs:
        return f"**{name}** — undefined label"
    d = defs[0]
    kind = "function" if name in index.functions else "label"
    if name in index.entries:
        kind = "kernel entry"
    pcs = [index.pcs[ln] for ln in range(d.line, min(d.line + 64, len(index.lines))) if ln in index.pcs][:1]
    at = f" at pc `0x{pcs[0]:04x}`" if pcs else ""
    out = [f"**{name}** — {kind} in `{d.section}`{at}, line {d.line + 1}", ""]
    out += _listing("Referenced by", sorted({s.line for s in refs}), index)
    return "\n".join(out)
