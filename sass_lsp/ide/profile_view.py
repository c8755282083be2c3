"""Feature: a measured profile in the editor. ``sass-lsp profile`` writes ``K.profile.json`` beside the kernel
(:mod:`sass_lsp.model.profile`: per-instruction records keyed by the SASS offset from the kernel's first
instruction). Here those records are mapped onto lines of the ``.cuasm`` text: hover on an instruction shows
its top stall reasons and executed count, and the kernel's code lens names the hottest window of
instructions.

Offsets map to lines through the ``/*0040*/`` comments of the kernel's text section, or, where a line has
none, through the instruction order (16 bytes each). The profile names no kernel, so the kernel whose
opcodes agree with the records' SASS at the most offsets is the one profiled. Pure: the server reads the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sass_lsp.ide.index import DocumentIndex, Kernel
from sass_lsp.ide.outline import Lens
from sass_lsp.model.profile import InstructionProfile, profile_records

WINDOW = 16
TOP_REASONS = 3

_ADDR = re.compile(r"/\*([0-9a-fA-F]{4,})\*/")
_PRED = re.compile(r"^@!?U?P[T0-9]+\s+")


def offset_lines(index: DocumentIndex, kernel: Kernel) -> dict[int, int]:
    """SASS offset → line of the kernel's instructions (``/*addr*/`` comment, else instruction order)."""
    out: dict[int, int] = {}
    for line in kernel.instr_lines:
        m = _ADDR.search(index.lines[line])
        offset = int(m.group(1), 16) if m else index.pcs.get(line)
        if offset is not None:
            out.setdefault(offset, line)
    return out


def _opcode(sass: str) -> str:
    text = _PRED.sub("", sass.strip())
    return text.split(None, 1)[0].split(".", 1)[0] if text else ""


def match_kernel(index: DocumentIndex, records: list[InstructionProfile]) -> Kernel | None:
    """The kernel whose opcodes agree with the records at the most offsets (ties: the first)."""
    best: tuple[int, Kernel | None] = (0, None)
    sample = [r for r in records if r.sass][:256]
    for kernel in index.kernels:
        lines = offset_lines(index, kernel)
        score = 0
        for rec in sample:
            line = lines.get(rec.offset)
            if line is not None and _opcode(index.instruction_text(line)) == _opcode(rec.sass):
                score += 1
        if score > best[0]:
            best = (score, kernel)
    if best[1] is None and len(index.kernels) == 1 and not sample:
        return index.kernels[0]
    return best[1]


def reason_name(column: str) -> str:
    name = column.strip()
    for prefix in ("smsp__pcsamp_warps_issue_stalled_", "stall_", "Stall "):
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


@dataclass(frozen=True)
class ProfileView:
    kernel: Kernel
    by_line: dict[int, InstructionProfile]
    total_samples: float

    def instruction_markdown(self, line: int) -> str | None:
        rec = self.by_line.get(line)
        if rec is None:
            return None
        head = "**Measured** (ncu profile)"
        parts: list[str] = []
        if rec.executed is not None:
            parts.append(f"executed **{rec.executed:,.0f}** times")
        samples = rec.samples
        share = samples / self.total_samples if self.total_samples else 0.0
        parts.append(f"**{samples:,.0f}** stall samples ({share:.1%} of the kernel's)")
        out = [f"{head}: " + ", ".join(parts)]
        reasons = sorted(((v, k) for k, v in rec.reasons.items() if v > 0), reverse=True)[:TOP_REASONS]
        denom = samples or sum(v for v, _ in reasons)
        for value, key in reasons:
            pct = f" ({value / denom:.0%})" if denom else ""
            out.append(f"- `{reason_name(key)}`: {value:,.0f} samples{pct}")
        if not reasons and samples == 0:
            out[0] = f"{head}: " + ", ".join(parts[:-1] + ["no stall samples"])
        return "\n".join(out)

    def hottest(self, index: DocumentIndex, window: int = WINDOW) -> tuple[int, int, float] | None:
        """(first line, last line, share of all stall samples) of the ``window`` consecutive instructions
        with the most samples."""
        lines = list(self.kernel.instr_lines)
        if not lines or self.total_samples <= 0:
            return None
        values = [self.by_line[ln].samples if ln in self.by_line else 0.0 for ln in lines]
        width = min(window, len(values))
        current = sum(values[:width])
        best, best_at = current, 0
        for start in range(1, len(values) - width + 1):
            current += values[start + width - 1] - values[start - 1]
            if current > best:
                best, best_at = current, start
        return lines[best_at], lines[best_at + width - 1], best / self.total_samples

    def lens(self, index: DocumentIndex) -> Lens | None:
        hot = self.hottest(index)
        if hot is None:
            return None
        first, last, share = hot
        return Lens(
            self.kernel.section.line, f"hottest: lines {first + 1}–{last + 1}, {share:.0%} of stall samples"
        )


def profile_view(index: DocumentIndex, data: Any) -> ProfileView | None:
    """Map a ``K.profile.json`` document onto ``index``; None when it does not fit any kernel."""
    records = profile_records(data)
    if not records:
        return None
    kernel = match_kernel(index, records)
    if kernel is None:
        return None
    lines = offset_lines(index, kernel)
    by_line = {lines[r.offset]: r for r in records if r.offset in lines}
    if not by_line:
        return None
    total = sum(r.samples for r in records)
    return ProfileView(kernel, by_line, total)
