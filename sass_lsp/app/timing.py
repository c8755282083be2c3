"""Verify and time an edit against its original on the GPU (in the worker process)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sass_lsp.app.kernel import assemble, launch_spec

if TYPE_CHECKING:
    from sass_lsp.gpu import GpuRunner, LaunchSpec

Progress = Callable[[str, int, int], None]  # (phase, done, total); total 0: a phase without steps


def time_edit(
    edited: str,
    original: bytes | str,
    launch: Path | LaunchSpec,
    *,
    source: str,
    runner: GpuRunner | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """``gpu.bench``'s result (``bench_to_dict``) of the ``edited`` text against ``original`` (its cubin, or
    a text assembled here) launched per ``launch``. :class:`AppError`: ``spec_error``, ``assemble_error``
    (``side`` says which text)."""
    from sass_lsp.gpu import bench_to_dict, run_bench

    spec = launch_spec(launch)
    report = progress or (lambda _phase, _done, _total: None)
    report("assembling the edit", 0, 0)
    edited_cubin = assemble(edited, source, side="edit")
    if isinstance(original, str):
        report("assembling the original", 0, 0)
        original = assemble(original, source, side="original")
    return bench_to_dict(run_bench(original, edited_cubin, spec, progress=progress, runner=runner))
