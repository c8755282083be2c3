"""The application layer: each use case composed once, for the CLI, the language server and the benchmarks.

- :func:`suggest` — a text's arch, the policy's rollouts, ranked by the performance model (or the cost model).
- :func:`time_edit` — assemble an edit and its original, verify and time them in the GPU worker.
- :func:`original_kernel` + :func:`optimize_kernel` — the original (arch, launch spec, device, cubin), the
  policy's search screened on the GPU within a budget, the best confirmed, the outputs written.
- :func:`load_policy` — the policy checkpoint (its default path from ``policy.checkpoint``), loaded.

Failures are :class:`AppError` (``verdict``, message, hint): the CLI prints them with an exit code, the server
refuses with them. No argparse, no LSP here; torch is imported only inside the functions that load or run the
policy, the GPU packages only inside those that use them.
"""

from sass_lsp.app.errors import AppError
from sass_lsp.app.kernel import assemble, kernel_arch, launch_spec
from sass_lsp.app.optimize import (
    DEFAULT_MOVES,
    MOVE_KINDS,
    STRUCTURAL,
    Optimized,
    Original,
    SearchChoice,
    kernel_measure,
    optimize_kernel,
    original_kernel,
    policy_search,
)
from sass_lsp.app.policy import PolicyUnavailable, load_perf_model, load_policy, policy_path
from sass_lsp.app.suggest import RANKINGS, suggest
from sass_lsp.app.timing import time_edit

__all__ = [
    "DEFAULT_MOVES",
    "MOVE_KINDS",
    "STRUCTURAL",
    "AppError",
    "Optimized",
    "Original",
    "RANKINGS",
    "PolicyUnavailable",
    "SearchChoice",
    "assemble",
    "kernel_arch",
    "kernel_measure",
    "launch_spec",
    "load_perf_model",
    "load_policy",
    "optimize_kernel",
    "original_kernel",
    "policy_path",
    "policy_search",
    "suggest",
    "time_edit",
]
