"""A measured per-instruction profile record: made by the GPU edge (ncu), shown by the editor.

``sass-lsp profile`` writes ``K.profile.json``: ``dataclasses.asdict`` of ``gpu.profile.ProfileResult``, whose
``records`` are these, keyed by the SASS offset from the kernel's first instruction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# ncu's aggregate stall columns (all reasons together); their names differ between ncu versions.
ALL_SAMPLES = ("Warp Stall Sampling (All Samples)", "Warp Stall Sampling (All Cycles)")
EXECUTED = ("Instructions Executed", "inst_executed", "smsp__sass_inst_executed.sum")


@dataclass(frozen=True)
class InstructionProfile:
    offset: int
    """Byte offset from the kernel's first instruction (matches the .cuasm listing's ``/*0040*/``)."""
    sass: str
    metrics: dict[str, float] = field(default_factory=dict)
    """Every numeric column of ncu's Source page, by its column name."""

    @property
    def stalls(self) -> dict[str, float]:
        """Warp-stall sampling columns: the aggregates and the per-reason ones."""
        return {k: v for k, v in self.metrics.items() if "stall" in k.lower()}

    @property
    def reasons(self) -> dict[str, float]:
        """Per-reason stall samples only (the aggregate ``Warp Stall Sampling`` columns left out)."""
        return {k: v for k, v in self.stalls.items() if not k.lower().startswith("warp stall sampling")}

    @property
    def samples(self) -> float:
        """All stall samples of this instruction: ncu's aggregate column, else the sum of the reasons."""
        for key in ALL_SAMPLES:
            if key in self.metrics:
                return self.metrics[key]
        return sum(self.reasons.values())

    @property
    def executed(self) -> float | None:
        for key in EXECUTED:
            if key in self.metrics:
                return self.metrics[key]
        return None


def profile_records(data: Any) -> list[InstructionProfile]:
    """Records of a ``K.profile.json`` document; [] for anything that is not one (or a failed profile)."""
    if not isinstance(data, dict) or data.get("ok") is False:
        return []
    out: list[InstructionProfile] = []
    for raw in data.get("records") or []:
        if not isinstance(raw, dict) or not isinstance(raw.get("offset"), int):
            continue
        metrics = {
            str(k): float(v)
            for k, v in (raw.get("metrics") or {}).items()
            if isinstance(v, int | float) and not isinstance(v, bool)
        }
        out.append(InstructionProfile(raw["offset"], str(raw.get("sass", "")), metrics))
    return out
