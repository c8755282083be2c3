"""Reorder suggestions for a ``.cuasm`` text: its arch, the policy's rollouts, ranked by the learned model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sass_lsp.app.kernel import kernel_arch
from sass_lsp.app.policy import load_perf_model, load_policy

RANKINGS = ("model", "cost")


def suggest(
    text: str,
    arch: str | None = None,
    *,
    source: str = "<text>",
    net: Any = None,
    policy: Path | None = None,
    kernel: str | None = None,
    top: int = 3,
    max_moves: int = 8,
    time_budget_s: float | None = None,
    rank: str = "model",
    perf: Any = None,
) -> list:
    """Up to ``top`` reorderings of ``kernel`` (None: the largest) predicted faster, best first
    (``policy.suggest.Suggestion``). ``rank``: "model" (the learned performance model ``perf``, None: the
    packaged one; each suggestion carries its predicted speedup and 90% interval) or "cost" (the static
    cost model's cycles). ``arch`` None: read from the text (:class:`AppError` if it does not parse);
    ``net`` None: the policy at ``policy`` is loaded (:class:`PolicyUnavailable`)."""
    if rank not in RANKINGS:
        raise ValueError(f"rank must be one of {RANKINGS}, not {rank!r}")
    if arch is None:
        arch = kernel_arch(text, source, kernel)
    if net is None:
        net = load_policy(policy)
    if rank == "model" and perf is None:
        perf = load_perf_model()
    from sass_lsp.policy.suggest import suggest as policy_suggest

    return policy_suggest(
        text,
        arch,
        net=net,
        top=top,
        kernel=kernel,
        max_moves=max_moves,
        time_budget_s=time_budget_s,
        perf=perf if rank == "model" else None,
    )
