"""Feature: code actions. Quick fixes for control-field errors (obsolete 6-field form, stall > 15, a
wait-mask digit in the wrong place), the checker's own fixes for hazard findings, and any actions from
providers registered in :mod:`sass_lsp.ide.backends` (reorder suggestions, GPU timing). Every action is a
list of text edits for the client to apply: the server never writes a user's .cuasm itself.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, replace

from sass_lsp.ide.backends import Finding, action_providers
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
            for fix in finding.fixes:
                action = _checker_fix(fix, finding.code)
                if action is not None:
                    out.append(action)
            out += hazard_fixes(index, finding)
        try:
            block = recompute_block_action(index, start, arch, eol) if recompute else None
        except Exception:  # a gap in the repair engine costs this one action, not the quick fixes
            log.exception("recomputing control codes failed")
            block = None
        out += [block] if block is not None else []
    for name, provider in action_providers().items():
        try:
            out += list(provider(index, start, end, settings))
        except Exception:
            log.exception("code action provider %s failed", name)
    unique: dict[tuple, CodeAction] = {}
    for action in out:
        key = (action.title, action.edits)
        if key in unique:
            merged = tuple(dict.fromkeys(unique[key].diagnostic_codes + action.diagnostic_codes))
            unique[key] = replace(unique[key], diagnostic_codes=merged)
        else:
            unique[key] = action
    return list(unique.values())


_WAIT_ON = re.compile(r"wait(?:ing)? on SB(\d)")
_LATENCY = re.compile(r"reads .* (\d+) cycles after .* latency is (\d+)")


def hazard_fixes(index: DocumentIndex, finding: Finding) -> list[CodeAction]:
    """Quick fixes derived from a checker finding: add the missing wait, raise the stall."""
    info = index.info(finding.line)
    if info is None or info.ctrl is None:
        return []
    cc = info.ctrl
    m = _WAIT_ON.search(finding.message)
    if m and finding.code in ("SASS001", "SASS003", "SASS004"):
        sb = int(m.group(1))
        new = replace(cc, wait_mask=cc.wait_mask | 1 << sb)
        edit = set_control_edit(index, finding.line, new)
        return (
            [
                CodeAction(
                    f"Wait on SB{sb} before this instruction", "quickfix", (edit,), (finding.code,), True
                )
            ]
            if edit
            else []
        )
    m = _LATENCY.search(finding.message)
    if m and finding.code == "SASS002":
        missing = int(m.group(2)) - int(m.group(1))
        prev = max(
            (
                ln
                for ln in index.pcs
                if ln < finding.line and index.section_at(ln) == index.section_at(finding.line)
            ),
            default=None,
        )
        prev_info = index.info(prev) if prev is not None else None
        if prev is None or prev_info is None or prev_info.ctrl is None or missing <= 0:
            return []
        stall = min(15, prev_info.ctrl.stall + missing)
        new = replace(prev_info.ctrl, stall=stall, yield_flag=prev_info.ctrl.yield_flag or stall >= 12)
        edit = set_control_edit(index, prev, new)
        title = f"Raise the stall of line {prev + 1} to S{stall:02d} (+{missing} cycles)"
        return [CodeAction(title, "quickfix", (edit,), (finding.code,), True)] if edit else []
    return []


def _checker_fix(fix: object, code: str) -> CodeAction | None:
    """Convert a checker fix: ``title`` and ``edits`` of (line, col, end_line, end_col, new_text), 1-based."""
    try:
        edits = []
        for e in getattr(fix, "edits", ()):
            if isinstance(e, tuple):
                line, col, end_line, end_col, new_text = e
            else:
                line, col, end_line, end_col, new_text = e.line, e.col, e.end_line, e.end_col, e.new_text
            edits.append(TextEdit(line - 1, col - 1, end_line - 1, end_col - 1, new_text))
        if not edits:
            return None
        return CodeAction(str(getattr(fix, "title", "Fix hazard")), "quickfix", tuple(edits), (code,), True)
    except Exception:
        log.exception("cannot convert checker fix %r", fix)
        return None


def set_control_edit(index: DocumentIndex, line: int, new_ctrl: object) -> TextEdit | None:
    """A text edit that replaces one instruction's control field (used by recompute-control-code actions)."""
    info = index.info(line)
    if info is None or info.ctrl_end < 0:
        return None
    return TextEdit(line, info.ctrl_start, line, info.ctrl_end, format_control(new_ctrl))  # type: ignore[arg-type]
