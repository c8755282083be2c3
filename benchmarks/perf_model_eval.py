#!/usr/bin/env python3
"""Does the learned performance model predict the GPU on kernels it never saw? Leave one kernel out.

For each kernel with at least 32 distinct measured schedules, the model (``sass_lsp.perf``) is fitted on every
other kernel's measurements (the held-out kernel's name is asserted absent from the training rows) and scored
on all of the held-out kernel's measurements:

- **Spearman** between predicted and measured speedup (every measurement; a schedule measured twice is two
  rows with one prediction). ``retest`` beside it: Spearman between two measurements of the same schedules
  (the schedules the logs measured at least twice), the ceiling timing noise puts on any model's Spearman.
- **top of 32**: draw 32 distinct measured schedules of the kernel (one measurement each), take the model's
  top-predicted one; ``faster`` is the share of draws (``--draws``) where that pick measured faster than the
  original with its 95% CI above 1 (``low > 1``), ``>1`` the share where its median ratio is above 1.
  Beside it the same for a uniform pick of the 32 (what ranking adds) and for the best of the 32 (the
  ceiling: some schedule of the draw has ``low > 1``); and the same draws among the random legal moves
  only (independent of what a search chose to measure).
- **90% cover**: the share of measurements inside the model's central 90% interval.
- the same Spearman and top-of-32 for the **static cost model** (``ReorderGame.cost_original``, as
  ``benchmarks/cost_model_vs_gpu.py`` computes it), on a sample of ``--static`` distinct schedules per
  kernel (rebuilt from their orders with the repair's control codes; each costs a game), with the learned
  model's figures on the same sample.

Then the noise: per kernel the spread of measured log speedups (sd) against the median CI half-width.

    python benchmarks/perf_model_eval.py [--data sass_lsp/perf/data] [--draws 500] [--static 200]

``--unseen FILE`` scores the packaged checkpoint instead, on a campaign of kernels no checkpoint trains on
(``python -m sass_lsp.perf.dataset build-unseen``: the optimizer's held-out compute-bound kernels).
``--extra FILE...`` adds campaigns tried as training data (``build-trial``) to ``--data``'s, and
``--held-out KERNEL...`` scores only those kernels (each fit still trains on all the others).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from cost_model_vs_gpu import spearman

from sass_lsp.perf import dataset as ds
from sass_lsp.perf.model import Z90
from sass_lsp.perf.model import load as load_model
from sass_lsp.perf.predict import DEFAULT_MODEL
from sass_lsp.perf.train import DEFAULT_CACHE, Table, campaign_table, featurize, table, train

MIN_DISTINCT = 32
PICK = 32


def scored_kernels(t: Table) -> list[str]:
    """The kernels with at least MIN_DISTINCT distinct measured schedules, by name."""
    names = set(t.kernel.tolist())
    return sorted(k for k in names if len(set(t.key[t.kernel == k].tolist())) >= MIN_DISTINCT)


def one_per_key(t: Table, rng: np.random.Generator) -> np.ndarray:
    """One row index per distinct schedule (a random one of its measurements)."""
    order = rng.permutation(len(t.key))
    _, first = np.unique(t.key[order], return_index=True)
    return np.sort(order[first])


def top_of(scores: np.ndarray, t: Table, draws: int, rng: np.random.Generator) -> dict[str, float]:
    """Over ``draws`` draws of PICK distinct schedules: the share where the top-scored one has CI low > 1
    (``faster``), median > 1 (``above1``); the same for a uniform pick and for the best of the draw."""
    hits = {"faster": 0, "above1": 0, "uniform_faster": 0, "uniform_above1": 0, "any_faster": 0}
    for _ in range(draws):
        rows = one_per_key(t, rng)
        pick = rng.choice(rows, PICK, replace=False)
        top = pick[np.argmax(scores[pick] + 1e-12 * rng.random(PICK))]  # ties broken at random
        uni = pick[0]
        hits["faster"] += t.low[top] > 0
        hits["above1"] += t.y[top] > 0
        hits["uniform_faster"] += t.low[uni] > 0
        hits["uniform_above1"] += t.y[uni] > 0
        hits["any_faster"] += (t.low[pick] > 0).any()
    return {k: v / draws for k, v in hits.items()}


def retest(t: Table) -> float | None:
    """Spearman between the first two measurements of each schedule measured at least twice."""
    first: dict[str, float] = {}
    a, b = [], []
    for key, y in zip(t.key, t.y, strict=True):
        if key in first:
            if first[key] is not None:
                a.append(first[key])
                b.append(y)
                first[key] = None  # type: ignore[assignment]
        else:
            first[key] = y
    return spearman(a, b) if len(a) >= 10 else None


def static_scores(camps: list[ds.Campaign], kernel: str, keys: np.ndarray) -> np.ndarray:
    """The static model's predicted log speedup of each schedule ``keys`` of ``kernel`` (NaN where the
    schedule does not rebuild)."""
    from sass_lsp.schedule.game import ReorderGame

    where = {}
    for c in camps:
        if kernel in c.kernels:
            k = c.kernels.index(kernel)
            for i in np.flatnonzero(c.kernel == k):
                where.setdefault(str(c.key[i]), (c, int(i)))
    c0, i0 = next(iter(where.values()))
    fn = c0.functions[int(c0.kernel[i0])] or None
    base = ReorderGame.from_text(c0.originals[int(c0.kernel[i0])], "sm_90", kernel=fn).cost_original
    out = np.full(len(keys), np.nan)
    for j, key in enumerate(keys):
        c, i = where[str(key)]
        try:
            cost = ReorderGame.from_text(c.text(i), "sm_90", kernel=fn).cost_original
        except ValueError:
            continue
        out[j] = math.log(base / cost)
    return out


def score(
    mu: np.ndarray,
    sd: np.ndarray,
    held: Table,
    name: str,
    camps: list[ds.Campaign],
    rng: np.random.Generator,
    args: argparse.Namespace,
) -> dict[str, Any]:
    """The figures of one kernel's measurements ``held`` against a model's predictions ``mu``, ``sd``."""
    cover = np.abs(held.y - mu) <= Z90 * sd
    r = {
        "n": len(held.y),
        "distinct": len(set(held.key.tolist())),
        "random": int(held.random.sum()),
        "spearman": spearman(mu.tolist(), held.y.tolist()),
        "spearman_random": spearman(mu[held.random].tolist(), held.y[held.random].tolist())
        if held.random.sum() >= 10
        else None,
        "retest": retest(held),
        "cover90": float(cover.mean()),
        "sd_pred": float(np.median(sd)),
        "sd_y": float(held.y.std()),
        "ci_half": float(np.median((held.high - held.low) / 2)),
        **top_of(mu, held, args.draws, rng),
    }
    if held.random.sum() >= 2 * PICK:  # the same draws among the random legal moves only
        rnd = top_of(mu[held.random], held.select(held.random), args.draws, rng)
        r["random_faster"], r["random_any_faster"] = rnd["faster"], rnd["any_faster"]
    if args.static:
        sample = one_per_key(held, rng)
        sample = rng.choice(sample, min(args.static, len(sample)), replace=False)
        st = static_scores(camps, name, held.key[sample])
        ok = ~np.isnan(st)
        sub = held.select(sample[ok])
        r["static_n"] = int(ok.sum())
        r["static_spearman"] = spearman(st[ok].tolist(), sub.y.tolist())
        r["model_spearman_same"] = spearman(mu[sample[ok]].tolist(), sub.y.tolist())
        r["static_faster"] = top_of(st[ok], sub, args.draws, rng)["faster"] if ok.sum() >= PICK else None
        r["model_faster_same"] = (
            top_of(mu[sample[ok]], sub, args.draws, rng)["faster"] if ok.sum() >= PICK else None
        )
    return r


def fmt(x: float | None, spec: str = "+.2f") -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=ds.DATA_DIR)
    ap.add_argument("--draws", type=int, default=500)
    ap.add_argument("--static", type=int, default=64, help="schedules per kernel the static model costs")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--members", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rank-weight", type=float, default=0.0, help="see python -m sass_lsp.perf.train")
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument(
        "--extra",
        nargs="+",
        type=Path,
        default=[],
        metavar="NPZ",
        help="campaign files to add to --data's (python -m sass_lsp.perf.dataset build-trial)",
    )
    ap.add_argument(
        "--held-out",
        nargs="+",
        metavar="KERNEL",
        help="hold out only these kernels in turn (each fit still trains on every other kernel)",
    )
    ap.add_argument(
        "--unseen",
        type=Path,
        help="a campaign file of kernels no checkpoint trains on (python -m sass_lsp.perf.dataset "
        "build-unseen): score the packaged checkpoint on it instead of leaving kernels of --data out",
    )
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    if args.unseen:
        # The packaged checkpoint (trained on every kernel of --data) on kernels no checkpoint trains on.
        camp = ds.load(args.unseen)
        t = campaign_table(camp, featurize(camp))
        camps = [camp]
        names = scored_kernels(t)
        packaged = load_model(DEFAULT_MODEL)
        print(f"{len(t.y)} measurements of {', '.join(names)}, scored by {DEFAULT_MODEL.name}\n")
    else:
        t = table(args.data, DEFAULT_CACHE, args.extra)
        camps = [*ds.load_all(args.data), *map(ds.load, args.extra)]
        names = scored_kernels(t)
        if args.held_out:
            if unknown := set(args.held_out) - set(names):
                ap.error(f"--held-out: not a scored kernel of {args.data}: {', '.join(sorted(unknown))}")
            names = [n for n in names if n in args.held_out]
        print(
            f"{len(t.y)} measurements, {len(set(t.kernel.tolist()))} kernels; "
            f"held out in turn: {', '.join(names)}\n"
        )
    rows, pooled_pred, pooled_y, pooled_cov = {}, [], [], []
    for name in names:
        t0 = time.perf_counter()
        if args.unseen:
            model = packaged
        else:
            train_rows = t.select(t.kernel != name)
            assert name not in set(train_rows.kernel.tolist()), name  # never trained on the held-out kernel
            model = train(
                train_rows,
                seed=args.seed,
                epochs=args.epochs,
                members=args.members,
                rank_weight=args.rank_weight,
            )
        held = t.select(t.kernel == name)
        mu, sd = model.predict(held.x)
        r = score(mu, sd, held, name, camps, rng, args)
        r["train_s"] = time.perf_counter() - t0
        rows[name] = r
        pooled_pred += mu.tolist()
        pooled_y += held.y.tolist()
        pooled_cov += (np.abs(held.y - mu) <= Z90 * sd).tolist()
        print(f"  {name}: {r['train_s']:.0f} s", file=sys.stderr, flush=True)
    print(
        "| held-out kernel | rows (distinct, random) | Spearman | Spearman random rows | retest "
        "| top-of-32 faster (CI low>1) | top-of-32 >1 | uniform pick faster | best of 32 faster "
        "| random rows: top-of-32 faster, best of 32 | 90% cover "
        "| static: Spearman | static top-of-32 faster | model on same sample: Spearman, faster |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, r in rows.items():
        print(
            f"| {name} | {r['n']} ({r['distinct']}, {r['random']}) | {fmt(r['spearman'])} | "
            f"{fmt(r['spearman_random'])} | {fmt(r['retest'])} | {r['faster']:.0%} | {r['above1']:.0%} | "
            f"{r['uniform_faster']:.0%} | {r['any_faster']:.0%} | "
            f"{fmt(r.get('random_faster'), '.0%')}, {fmt(r.get('random_any_faster'), '.0%')} | "
            f"{r['cover90']:.0%} | "
            f"{fmt(r.get('static_spearman'))} (n={r.get('static_n', 0)}) | "
            f"{fmt(r.get('static_faster'), '.0%')} | "
            f"{fmt(r.get('model_spearman_same'))}, {fmt(r.get('model_faster_same'), '.0%')} |"
        )
    mean = {
        k: float(np.mean([r[k] for r in rows.values()]))
        for k in ("faster", "above1", "uniform_faster", "any_faster")
    }
    pooled = {
        "spearman": spearman(pooled_pred, pooled_y),
        "mean_kernel_spearman": float(
            np.mean([r["spearman"] for r in rows.values() if r["spearman"] is not None])
        ),
        "cover90": float(np.mean(pooled_cov)),
        **{f"mean_{k}": v for k, v in mean.items()},
    }
    print(
        f"| (pooled) | {len(pooled_y)} | {fmt(pooled['spearman'])} (mean per kernel "
        f"{fmt(pooled['mean_kernel_spearman'])}) | | | {mean['faster']:.0%} | {mean['above1']:.0%} | "
        f"{mean['uniform_faster']:.0%} | {mean['any_faster']:.0%} | | {pooled['cover90']:.0%} | | | |"
    )
    print(
        "\nNoise: per kernel, the spread of measured log speedups against the timing noise of one "
        "measurement."
    )
    print(
        "| kernel | sd of log speedup | median CI half-width (log) | noise share of variance "
        "| model's median sd |"
    )
    print("|---|---|---|---|---|")
    for name, r in rows.items():
        noise = (r["ci_half"] / 1.96) ** 2 / max(r["sd_y"] ** 2, 1e-30)
        print(f"| {name} | {r['sd_y']:.4f} | {r['ci_half']:.4f} | {noise:.0%} | {r['sd_pred']:.4f} |")
    if args.json:
        args.json.write_text(json.dumps({"per_kernel": rows, "pooled": pooled}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
