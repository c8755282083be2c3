"""Fit the performance model on the measured schedules of the package's campaign files (CPU, minutes).

    python -m sass_lsp.perf.train                      # -> sass_lsp/perf/models/perf-v1
    python -m sass_lsp.perf.train --exclude sgemm_tiled --out /tmp/m   # leave a kernel out

Rows are weighted so that every kernel counts alike (a kernel measured ten times as often does not dominate)
and, within a kernel, a schedule measured several times counts once. Deterministic given ``--seed``.

Featurizing every row takes a minute or two; the matrix is cached (``--cache``, keyed by the campaign files
and the feature code) so a second run, or the leave-one-kernel-out evaluation, starts at once."""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sass_lsp.perf import dataset as ds
from sass_lsp.perf import features as pf

MODELS = Path(__file__).parent / "models"
DEFAULT_OUT = MODELS / "perf-v1"
DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "sass-lsp" / "perf"


@dataclass
class Table:
    """Every measured schedule of some campaigns, featurized."""

    x: np.ndarray  # [N, F]
    y: np.ndarray  # [N] log speedup
    low: np.ndarray  # [N] log CI low
    high: np.ndarray  # [N] log CI high
    kernel: np.ndarray  # [N] str: the kernel's name (campaigns sharing a kernel name share it)
    key: np.ndarray  # [N] str: schedule key
    method: np.ndarray  # [N] str
    random: np.ndarray  # [N] bool: an independent random draw

    def select(self, mask: np.ndarray) -> Table:
        return Table(*(getattr(self, f)[mask] for f in self.__dataclass_fields__))

    def cap(self, per_kernel: int, seed: int = 0) -> Table:
        """At most ``per_kernel`` rows of each kernel (a seeded uniform sample): what a fit on two shared CPU
        cores affords; kernel weights are balanced anyway."""
        rng = np.random.default_rng(seed)
        keep = []
        for name in sorted(set(self.kernel.tolist())):
            rows = np.flatnonzero(self.kernel == name)
            keep.append(rows if len(rows) <= per_kernel else rng.choice(rows, per_kernel, replace=False))
        return self.select(np.sort(np.concatenate(keep)))

    def weights(self) -> np.ndarray:
        """Each kernel's rows sum to the same total; a schedule's repeats share one row's weight."""
        w = np.ones(len(self.y))
        pair = np.char.add(np.char.add(self.kernel.astype(str), "/"), self.key.astype(str))
        _, inv, cnt = np.unique(pair, return_inverse=True, return_counts=True)
        w /= cnt[inv]
        names, kinv = np.unique(self.kernel, return_inverse=True)
        per = np.bincount(kinv, weights=w)
        w = w / per[kinv] * (len(w) / len(names))
        return w / w.mean()


def featurize(camp: ds.Campaign, arch: str = "sm_90") -> np.ndarray:
    """The feature rows of every schedule of ``camp``."""
    from sass_lsp.schedule.canonical import OriginalOrders

    facts = [
        pf.KernelFacts.of(OriginalOrders(text, arch, fn or None).k)
        for text, fn in zip(camp.originals, camp.functions, strict=True)
    ]
    x = np.zeros((len(camp), pf.N_FEATURES), np.float32)
    ptr = camp.moved_ptr
    for i in range(len(camp)):
        a, b = ptr[i], ptr[i + 1]
        x[i] = facts[int(camp.kernel[i])].features(camp.moved_slot[a:b], camp.moved_node[a:b])
    return x


def _cache_key(path: Path) -> str:
    h = hashlib.sha256(path.read_bytes())
    h.update(Path(pf.__file__).read_bytes())
    return h.hexdigest()[:20]


def campaign_table(camp: ds.Campaign, x: np.ndarray) -> Table:
    """One campaign's rows with their features ``x`` (:func:`featurize`)."""
    names = np.array(camp.kernels)
    return Table(
        x=x,
        y=np.log(camp.speedup),
        low=np.log(camp.low),
        high=np.log(camp.high),
        kernel=names[camp.kernel],
        key=camp.key.astype(str),
        method=np.array(camp.methods)[camp.method],
        random=camp.random,
    )


def table(
    folder: Path = ds.DATA_DIR, cache: Path | None = DEFAULT_CACHE, extra: Sequence[Path] = ()
) -> Table:
    """Every campaign file of ``folder`` and the ``extra`` ones, featurized (the features cached in
    ``cache``)."""
    parts = []
    for path in [*sorted(folder.glob("*.npz")), *extra]:
        camp = ds.load(path)
        cached = cache / f"{path.stem}-{_cache_key(path)}.npy" if cache else None
        if cached is not None and cached.is_file():
            x = np.load(cached)
        else:
            x = featurize(camp)
            if cached is not None:
                from sass_lsp.files import write_atomic

                cached.parent.mkdir(parents=True, exist_ok=True)
                buf = io.BytesIO()
                np.save(buf, x)
                write_atomic(cached, buf.getvalue())
        parts.append(campaign_table(camp, x))
    if not parts:
        raise FileNotFoundError(f"{folder}: no campaign file (*.npz)")
    return Table(*(np.concatenate([getattr(p, f) for p in parts]) for f in Table.__dataclass_fields__))


PER_KERNEL = 2500


def train(
    t: Table,
    *,
    seed: int = 0,
    epochs: int = 10,
    members: int = 3,
    per_kernel: int = PER_KERNEL,
    calibrate: bool = True,
    rank_weight: float = 0.0,
):
    """The model (a ``PerfModel``) fitted on ``t``, at most ``per_kernel`` rows of each kernel."""
    import torch

    from sass_lsp.perf.model import PerfConfig, fit

    torch.set_num_threads(1)  # the machine is shared; one thread is as fast as two under contention
    t = t.cap(per_kernel, seed)
    kernels = sorted(set(t.kernel.tolist()))
    meta = {
        "kernels": kernels,
        "rows": len(t.y),
        "seed": seed,
        "epochs": epochs,
        "per_kernel": per_kernel,
        "rank_weight": rank_weight,
    }
    cfg = PerfConfig(members=members, meta=meta)
    model = fit(
        t.x, t.y, t.weights(), cfg=cfg, epochs=epochs, seed=seed, groups=t.kernel, rank_weight=rank_weight
    )
    if calibrate:
        floor = sd_floor(t, seed=seed, epochs=epochs)
        model.sd_floor.fill_(floor)
        cfg.meta["sd_floor"] = floor
    return model


def sd_floor(t: Table, *, seed: int, epochs: int, level: float = 0.9) -> float:
    """The sd (log speedup) to add in quadrature so that the ``level`` intervals of kernels never seen
    cover ``level`` of their measurements: a one-member model is fitted without each kernel of ``t`` (of at
    least 32 distinct schedules) in turn and the floor bisected on its held-out rows, each kernel weighted
    alike."""
    from sass_lsp.perf.model import Z90, PerfConfig, fit

    held_out = []
    for name in sorted(set(t.kernel.tolist())):
        held = t.kernel == name
        if len(set(t.key[held].tolist())) < 32:
            continue
        rest = t.select(~held)
        cfg = PerfConfig(members=1)
        inner = fit(rest.x, rest.y, rest.weights(), cfg=cfg, epochs=max(2, epochs // 2), seed=seed)
        mu, sd = inner.predict(t.x[held])
        held_out.append((np.abs(t.y[held] - mu), sd))
    if not held_out:
        return 0.0

    def cover(floor: float) -> float:
        return float(np.mean([np.mean(r <= Z90 * np.sqrt(sd**2 + floor**2)) for r, sd in held_out]))

    lo, hi = 0.0, 1.0
    if cover(lo) >= level:
        return 0.0
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if cover(mid) >= level else (mid, hi)
    return hi


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m sass_lsp.perf.train", description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=ds.DATA_DIR, help="folder of campaign files (*.npz)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="checkpoint folder to write")
    ap.add_argument("--exclude", nargs="*", default=[], help="kernels to leave out")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--members", type=int, default=3)
    ap.add_argument(
        "--rank-weight", type=float, default=0.0, help="weight of a same-kernel pairwise ranking loss"
    )
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="feature cache folder")
    args = ap.parse_args(argv)
    try:
        t = table(args.data, args.cache)
    except FileNotFoundError:
        print(
            f"{args.data}: error: no campaign file (*.npz) to train on\n"
            "hint: python -m sass_lsp.perf.dataset build",
            file=sys.stderr,
        )
        return 2
    t = t.select(~np.isin(t.kernel, args.exclude))
    try:
        from sass_lsp.perf.model import save
    except ImportError as exc:
        print(f"error: {exc}\nhint: pip install 'sass-lsp[policy]' (torch)", file=sys.stderr)
        return 3

    model = train(t, seed=args.seed, epochs=args.epochs, members=args.members, rank_weight=args.rank_weight)
    save(model, args.out)
    meta = model.cfg.meta
    print(f"{args.out}: fitted on {meta['rows']} of {len(t.y)} rows, {len(meta['kernels'])} kernels")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
