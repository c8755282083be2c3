"""The frozen kernel splits in ``benchmarks/kernels/split_*.toml``: which kernels a method may be tuned on
(``train``), which are measured once at the end (``held_out``), which must not get slower (``memory_bound``).

    from kernel_split import load_split
    names = load_split().sets["held_out"]     # or: reorder_eval.py --split held_out

A name is a CUDA C kernel (``benchmarks/kernels/NAME.cu`` + ``NAME.launch.toml``) or a Triton kernel of
the corpus (``NAME.json`` + ``NAME.cubin`` in ``sass_lsp/corpus/sm_90`` or ``$SASS_LSP_CORPUS``), looked up
the way ``reorder_eval.load_kernels`` does.
"""

from __future__ import annotations

import datetime
import tomllib
from dataclasses import dataclass
from pathlib import Path

from sass_lsp.gpu.corpus import corpus_dir

KERNELS = Path(__file__).resolve().parent / "kernels"
SPLIT_COMPUTE_V1 = KERNELS / "split_compute_v1.toml"
SET_NAMES = ("held_out", "train", "memory_bound")


class SplitError(ValueError):
    """The split file is unreadable or breaks a rule (message starts with the file's path)."""


@dataclass(frozen=True)
class Split:
    path: Path
    frozen: datetime.date
    """The day the split was fixed: no held-out kernel was timed before it."""
    sets: dict[str, tuple[str, ...]]


def load_split(path: Path = SPLIT_COMPUTE_V1) -> Split:
    """Parse and validate a split file: the three sets, each a non-empty list of distinct names, pairwise
    disjoint."""
    try:
        raw = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise SplitError(f"{path}: {exc}") from exc
    frozen = raw.get("frozen")
    if not isinstance(frozen, datetime.date) or isinstance(frozen, datetime.datetime):
        raise SplitError(f"{path}: frozen: must be a date (frozen = 2026-01-31), got {frozen!r}")
    table = raw.get("sets")
    if not isinstance(table, dict) or set(table) != set(SET_NAMES):
        got = sorted(table) if isinstance(table, dict) else table
        raise SplitError(f"{path}: [sets] must have exactly {', '.join(SET_NAMES)}; got {got!r}")
    sets: dict[str, tuple[str, ...]] = {}
    for key in SET_NAMES:
        names = table[key]
        if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
            raise SplitError(f"{path}: sets.{key}: must be a non-empty list of kernel names")
        if len(set(names)) != len(names):
            raise SplitError(f"{path}: sets.{key}: names a kernel twice")
        sets[key] = tuple(names)
    for idx, first in enumerate(SET_NAMES):
        for second in SET_NAMES[idx + 1 :]:
            both = set(sets[first]) & set(sets[second])
            if both:
                raise SplitError(f"{path}: {', '.join(sorted(both))} in both {first} and {second}")
    return Split(path, frozen, sets)


def kernel_origin(name: str, corpus: Path | None = None) -> str | None:
    """``"CUDA C"``, ``"Triton"`` or None (not found), in ``reorder_eval.load_kernels``' order."""
    if (KERNELS / f"{name}.cu").exists() and (KERNELS / f"{name}.launch.toml").exists():
        return "CUDA C"
    root = corpus if corpus is not None else corpus_dir()
    if (root / f"{name}.json").exists() and (root / f"{name}.cubin").exists():
        return "Triton"
    return None
