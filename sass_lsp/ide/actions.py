"""Feature: code actions. Quick fixes for control-field errors (obsolete 6-field form, stall > 15, a
wait-mask digit in the wrong place) and for hazard findings, built from the typed fixes each finding
carries (``analysis.findings``: wait on a scoreboard, raise a stall, drop a ``.reuse``), never from its
message. Every action is a list of text edits for the client to apply: the server never writes a user's
.cuasm itself.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, replace

from sass_lsp.analysis.findings import ClearReuse, RaiseStall, SetWait
from sass_lsp.ide.backends import Finding
from sass_lsp.ide.diagnostics import kernel_findings
from sass_lsp.ide.editing import TextEdit
from sass_lsp.ide.index import DocumentIndex
from sass_lsp.isa.control import format_control

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CodeAction:
    title: str
    kind: str  # quickfix | refactor.rewrite | source
    edits: tuple[TextEdit, ...]
    diagnostic_codes: tuple[str, ...] = ()
    preferred: bool = False
    command: str = ""
    """A server command the client runs when the action is chosen (after the edits, if any)."""
    arguments: tuple[object, ...] = ()


_CTRL6 = re.compile(r"[^:\]]*:(B[0-5-]{6}:R[0-5-]:W[0-5-]:[Y-]:S\d\d)$")
_STALL = re.compile(r"S(\d\d+)$")


def control_fixes(index: DocumentIndex, line: int) -> list[CodeAction]:
    info = index.info(line)
    if info is None or info.kind != "instruction" or info.error is None or info.ctrl_end < 0:
        return []
    if info.error.code not in ("", "control-field"):  # not a control-field error (text after ';')
        return []
    ctrl = info.ctrl_text
    a, b = info.ctrl_start + 1, info.ctrl_end - 1

    def action(title: str, new: str) -> CodeAction:
        return CodeAction(title, "quickfix", (TextEdit(line, a, line, b, new),), ("control-field",), True)

    m = _CTRL6.match(ctrl)
    if m:
        return [action("Drop the obsolete reuse field", m.group(1))]
    fields = ctrl.split(":")
    out = []
    if len(fields) == 5:
        sm = _STALL.match(fields[4])
        if sm and int(sm.group(1)) > 15:
            out.append(action("Clamp the stall to S15", ":".join([*fields[:4], "S15"])))
        wait = fields[0]
        if len(wait) == 7 and wait[0] == "B":
            digits = {int(ch) for ch in wait[1:] if ch.isdigit() and int(ch) <= 5}
            fixed = "B" + "".join(str(i) if i in digits else "-" for i in range(6))
            if fixed != wait:
                out.append(
                    action(f"Put the wait mask in canonical form ({fixed})", ":".join([fixed, *fields[1:]]))
                )
    return out


def code_actions(
    index: DocumentIndex,
    start: int,
    end: int,
    arch: str | None,
    settings: object,
    eol: str = "\n",
    recompute: bool = True,
) -> list[CodeAction]:
    """Every action for lines ``start..end``; ``recompute``: also "Recompute control codes for this basic
    block", which analyses the whole kernel once per document version (seconds on 20,000 instructions)."""
    from sass_lsp.ide.schedule_view import recompute_block_action  # it builds on CodeAction

    out: list[CodeAction] = []
    for line in range(max(0, start), min(end, len(index.lines) - 1) + 1):
        out += control_fixes(index, line)
    kernel = index.kernel_at(start)
    if kernel is not None and arch:
        for finding in kernel_findings(index, kernel, arch):
            if not (finding.line <= end and finding.end_line >= start):
                continue
            out += hazard_fixes(index, finding)
        try:
            block = recompute_block_action(index, start, arch, eol) if recompute else None
        except Exception:  # a gap in the repair engine costs this one action, not the quick fixes
            log.exception("recomputing control codes failed")
            block = None
        out += [block] if block is not None else []
    unique: dict[tuple, CodeAction] = {}
    for action in out:
        key = (action.title, action.edits)
        if key in unique:
            merged = tuple(dict.fromkeys(unique[key].diagnostic_codes + action.diagnostic_codes))
            unique[key] = replace(unique[key], diagnostic_codes=merged)
        else:
            unique[key] = action
    return list(unique.values())


def hazard_fixes(index: DocumentIndex, finding: Finding) -> list[CodeAction]:
    """The quick fixes of a checker finding, one per typed fix it carries."""
    out = []
    for fix in finding.fixes:
        if isinstance(fix, SetWait):
            action = _set_wait(index, fix, finding.code)
        elif isinstance(fix, RaiseStall):
            action = _raise_stall(index, fix, finding.code)
        else:
            action = _clear_reuse(index, fix, finding.code)
        if action is not None:
            out.append(action)
    return out


def _set_wait(index: DocumentIndex, fix: SetWait, code: str) -> CodeAction | None:
    info = index.info(fix.line)
    if info is None or info.ctrl is None:
        return None
    edit = set_control_edit(
        index, fix.line, replace(info.ctrl, wait_mask=info.ctrl.wait_mask | 1 << fix.scoreboard)
    )
    title = f"Wait on SB{fix.scoreboard} before this instruction"
    return CodeAction(title, "quickfix", (edit,), (code,), True) if edit else None


def _raise_stall(index: DocumentIndex, fix: RaiseStall, code: str) -> CodeAction | None:
    info = index.info(fix.line)
    if info is None or info.ctrl is None or fix.cycles <= 0:
        return None
    stall = min(15, info.ctrl.stall + fix.cycles)
    new = replace(info.ctrl, stall=stall, yield_flag=info.ctrl.yield_flag or stall >= 12)
    edit = set_control_edit(index, fix.line, new)
    title = f"Raise the stall of line {fix.line + 1} to S{stall:02d} (+{fix.cycles} cycles)"
    return CodeAction(title, "quickfix", (edit,), (code,), True) if edit else None


def _clear_reuse(index: DocumentIndex, fix: ClearReuse, code: str) -> CodeAction | None:
    if not 0 <= fix.line < len(index.lines):
        return None
    at = index.lines[fix.line].find(".reuse", fix.col)
    if at < 0:
        return None
    edit = TextEdit(fix.line, at, fix.line, at + len(".reuse"), "")
    return CodeAction("Drop this .reuse", "quickfix", (edit,), (code,), True)


def set_control_edit(index: DocumentIndex, line: int, new_ctrl: object) -> TextEdit | None:
    """A text edit that replaces one instruction's control field (used by recompute-control-code actions)."""
    info = index.info(line)
    if info is None or info.ctrl_end < 0:
        return None
    return TextEdit(line, info.ctrl_start, line, info.ctrl_end, format_control(new_ctrl))  # type: ignore[arg-type]
