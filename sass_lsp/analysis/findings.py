"""Findings in editor terms (1-based lines and columns) and the rule catalogue (see RULES.md)."""

from __future__ import annotations

from dataclasses import dataclass, field

SEVERITIES = ("error", "warning", "information", "hint")


@dataclass(frozen=True)
class Related:
    line: int
    message: str


# Structured fixes a finding offers (1-based lines and columns, like the finding): editors build their
# quick fixes from these, never from the message text.


@dataclass(frozen=True)
class SetWait:
    """Wait on scoreboard ``scoreboard`` before the instruction on ``line`` (add it to the wait mask)."""

    line: int
    scoreboard: int


@dataclass(frozen=True)
class RaiseStall:
    """Stall the instruction on ``line`` ``cycles`` cycles longer (the field holds at most 15)."""

    line: int
    cycles: int


@dataclass(frozen=True)
class ClearReuse:
    """Drop the ``.reuse`` flag at column ``col`` of ``line`` (the column of its dot)."""

    line: int
    col: int


Fix = SetWait | RaiseStall | ClearReuse


@dataclass(frozen=True)
class Finding:
    code: str
    severity: str  # error | warning | information | hint
    line: int
    col: int
    end_line: int
    end_col: int
    message: str
    related: tuple[Related, ...] = ()
    kernel: str = ""
    hint: str = ""  # how to fix it, where the message alone does not say (parse and encoding errors)
    # What would clear it; not part of a finding's identity (two findings that say the same are one).
    fixes: tuple[Fix, ...] = field(default=(), repr=False, compare=False)


@dataclass(frozen=True)
class Rule:
    code: str
    severity: str
    title: str


RULES: dict[str, Rule] = {
    r.code: r
    for r in (
        Rule("SASS001", "error", "RAW on a variable-latency result without a scoreboard wait"),
        Rule("SASS002", "error", "too few stall cycles after a fixed-latency producer"),
        Rule(
            "SASS003",
            "error",
            "WAR: source of a pending load/store overwritten without a read-scoreboard wait",
        ),
        Rule("SASS004", "error", "WAW: pending variable-latency result overwritten without a wait"),
        Rule("SASS005", "error", "partial wait on a scoreboard shared by producers of different queues"),
        Rule("SASS006", "warning", "wait on a scoreboard that no pending producer set"),
        Rule("SASS007", "error", "variable-latency producer without a scoreboard whose result is read"),
        Rule("SASS008", "error", "shared-memory access too soon after BAR.SYNC"),
        Rule("SASS009", "warning", "moved `@!PT LDS RZ, [RZ]` placeholder"),
        Rule("SASS010", "warning", ".reuse that cannot hit"),
        Rule("SASS011", "warning", "yield/stall/reuse combination ptxas never emits"),
        Rule("SASS012", "error", "control-code field out of range"),
        Rule("SASS013", "error", "register of an in-flight HGMMA accessed before WARPGROUP.DEPBAR"),
        Rule("SASS014", "warning", "control flow the checker cannot follow"),
        Rule("SASS015", "error", "instruction or control field the checker cannot parse"),
        Rule("SASS016", "error", "a wait issues before the scoreboard it waits on is set"),
        Rule("SASS017", "error", "a uniform register rewritten before a uniform instruction read it"),
        Rule("SASS018", "error", "LDGSTS above (or without) its `@!PT LDS RZ, [RZ]` placeholders"),
    )
}
