"""One job per GPU with Ray: ``sass-lsp optimize`` over several kernels, on this machine or a Ray cluster.

Each job is a Ray task that asks for one GPU, so Ray runs as many at once as there are GPUs and gives each its
own ``CUDA_VISIBLE_DEVICES``; the GPU worker process a job starts inherits it. Timings stay honest because no
two jobs share a GPU. A cluster without GPUs (the fake backend in tests, a CPU box) runs one job per CPU.
Ray is optional (``pip install 'sass-lsp[ray]'``); a single kernel never needs it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

Job = TypeVar("Job")


class FanOutError(RuntimeError):
    pass


def fan_out(
    fn: Callable[[Job], dict[str, Any]],
    jobs: Sequence[Job],
    *,
    address: str | None = None,
    on_done: Callable[[int, dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """``fn(job)`` for every job as Ray tasks, one GPU each; results in job order.

    ``address`` joins a running cluster (else ``$RAY_ADDRESS``, else a local one is started and stopped).
    ``on_done(index, result)`` is called as each job finishes, in finishing order. A job that raises gives
    ``{"error": ...}`` and the others go on.
    """
    try:
        import ray
    except ImportError as exc:
        raise FanOutError(
            "several kernels need Ray to fan out\n"
            "  hint: pip install 'sass-lsp[ray]', or run one kernel at a time"
        ) from exc
    started = not ray.is_initialized()
    if started:
        ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        gpus = int(ray.cluster_resources().get("GPU", 0))
        task = ray.remote(num_gpus=1, num_cpus=0) if gpus else ray.remote(num_cpus=1)
        remote = task(fn)
        pending = {remote.remote(job): i for i, job in enumerate(jobs)}
        results: list[dict[str, Any]] = [{} for _ in jobs]
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            index = pending.pop(done[0])
            try:
                results[index] = ray.get(done[0])
            except Exception as exc:  # a job's failure is its own row, never the others'
                results[index] = {"error": f"{type(exc).__name__}: {exc}"}
            if on_done is not None:
                on_done(index, results[index])
        return results
    finally:
        if started:
            ray.shutdown()
