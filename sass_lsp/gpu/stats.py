"""Summary statistics for timings: median and IQR per side, and a paired bootstrap CI of the speedup.

Each round timed the original and the edit back to back, so a round's pair shares the same clock and thermal
state: the speedup is built from per-round ratios, which cancel a drifting clock (on an H200 a 245 µs
matmul's SM clock fell from 1980 to 1425 MHz within one timing; the ratio of the two sides' medians then
spread over ±1.5%, the paired ratio does not). Rounds are the unit of resampling; the RNG seed is fixed so
the same samples always give the same interval.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BOOTSTRAP_SEED = 20261129


@dataclass(frozen=True)
class Summary:
    n: int
    median: float
    q1: float
    q3: float
    mean: float
    min: float
    max: float

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1


def summarize(samples: list[float] | np.ndarray) -> Summary:
    data = np.asarray(samples, dtype=np.float64)
    if data.size == 0:
        raise ValueError("no samples")
    q1, median, q3 = np.percentile(data, [25, 50, 75])
    return Summary(
        int(data.size),
        float(median),
        float(q1),
        float(q3),
        float(data.mean()),
        float(data.min()),
        float(data.max()),
    )


@dataclass(frozen=True)
class RatioCI:
    ratio: float
    """original / edit, the median over a block's rounds (geometric mean over blocks): above 1, the edit is
    faster."""
    low: float
    high: float
    confidence: float
    n_resamples: int

    @property
    def width(self) -> float:
        return self.high - self.low

    @property
    def contains_one(self) -> bool:
        return self.low <= 1.0 <= self.high


def bootstrap_ratio_ci(
    orig_ms: list[float] | np.ndarray,
    edit_ms: list[float] | np.ndarray,
    *,
    blocks: list[int] | np.ndarray | None = None,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = BOOTSTRAP_SEED,
) -> RatioCI:
    """Percentile bootstrap of the speedup: the median per-round ratio orig/edit, resampling rounds.

    With ``blocks`` (each round's block number) the speedup is the geometric mean of the blocks' median
    ratios, and rounds are resampled within their block: every resample keeps the counterbalanced design
    (each module-load order's bias enters once per block, so opposite orders cancel).
    """
    a = np.asarray(orig_ms, dtype=np.float64)
    b = np.asarray(edit_ms, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1 or a.size < 2:
        raise ValueError("need two equally long series of at least 2 paired rounds")
    block_of = np.zeros(a.size, dtype=np.int64) if blocks is None else np.asarray(blocks, dtype=np.int64)
    if block_of.shape != a.shape:
        raise ValueError("need one block number per round")
    strata = [np.flatnonzero(block_of == blk) for blk in np.unique(block_of)]
    per_round = a / b
    rng = np.random.default_rng(seed)
    ratios = np.empty(n_resamples)
    # Chunked so 10k resamples of long series stay within a few MB.
    chunk = max(1, 2_000_000 // a.size)
    for start in range(0, n_resamples, chunk):
        stop = min(n_resamples, start + chunk)
        log_medians = [
            np.log(
                np.median(per_round[rows[rng.integers(0, rows.size, size=(stop - start, rows.size))]], axis=1)
            )
            for rows in strata
        ]
        ratios[start:stop] = np.exp(np.mean(log_medians, axis=0))
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(ratios, [tail, 1.0 - tail])
    ratio = float(np.exp(np.mean([np.log(np.median(per_round[rows])) for rows in strata])))
    return RatioCI(ratio, float(low), float(high), confidence, n_resamples)
