"""Measured schedules: every matched, timed candidate of the GPU measurement logs, as (kernel, original
text, schedule, speedup and 95% CI, GPU, clocks, search method, source log).

Two sources. :func:`read_logs` reads ``GpuMeasure``'s JSON-lines logs (:mod:`sass_lsp.gpu.measure`),
plain, gzipped or as members of a ``.tar.xz`` archive read in place, and yields each screened schedule's
exact edited text. :func:`build` turns one campaign's logs into one compact ``.npz`` (the originals' texts
once, each schedule as the node order it gives the original's blocks, its measurement and provenance);
:func:`load` reads that back as a :class:`Campaign`, whose :meth:`Campaign.text` rebuilds a schedule's text
with the control codes the repair gives its order (what ``OriginalOrders.canonical`` writes).

Screens carry no clock readings; a row's clocks are those its search's confirmation read (``clocks_before``
of the ``confirm`` record that closes its segment of the log), absent when the segment has none. A row's
``method`` comes from the run's ``reorder_eval`` rows (same archive, ``..._eval_..._runN.json``): rows of
``random`` draw independent random legal moves from ptxas's order; every other method's rows are what a
search chose to measure, so their schedules are confounded with what measured fast.

A log that records its schedules (``benchmarks/move_campaign.py``: a ``schedule`` record before each
measurement, with its method, move kinds and moves; a ``device`` record per kernel with the GPU and its
clocks) gives each row those kinds and its method, and the clocks when its segment has no confirmation.
Only pure reorderings enter a campaign file (:func:`build` counts the others as dropped).

    python -m sass_lsp.perf.dataset build            # every campaign of benchmarks/results
    python -m sass_lsp.perf.dataset build-trial      # the campaigns tried as more training data
    python -m sass_lsp.perf.dataset stats [FILE.npz]  # counts per kernel and method
"""

from __future__ import annotations

import argparse
import fnmatch
import gzip
import hashlib
import io
import json
import re
import sys
import tarfile
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from sass_lsp.schedule.search import apply_edits

DATA_DIR = Path(__file__).parent / "data"
RESULTS = Path("benchmarks/results")

# The campaigns built by default: name -> (source, member pattern, methods of logs without an eval json).
CAMPAIGNS: dict[str, tuple[str, str]] = {
    "reorder_eval_h200": ("reorder_eval_h200.tar.xz", "reorder_measurements_h200_run*.jsonl"),
    "policy_finetune_h200": ("policy_training_h200.tar.xz", "*measurements*.jsonl"),
    "reorder_run18_h200": ("reorder_measurements_h200_run18.jsonl.gz", "*"),
}
# Campaigns measured to try as more training data, which the packaged checkpoint does not train on (its
# model card says why): built into ``benchmarks/results`` and added to a fit by ``perf_model_eval.py
# --extra``. perf_v2: random reorderings of benchmarks/kernels/perf_train_v2.toml (``move_campaign.py``),
# its first five kernels, then the other four.
TRIAL_CAMPAIGNS: dict[str, tuple[str, str]] = {
    "perf_v2_s0_h200": ("move_campaign_perf_v2_s0.tar.xz", "*measurements*"),
    "perf_v2_s1_h200": ("move_campaign_perf_v2_s1.tar.xz", "*measurements*"),
}
# Campaigns no checkpoint trains on: the compute-bound kernels held out for the optimizer (frozen split
# ``benchmarks/kernels/split_compute_v1.toml``), measured by its searches on an H100. Built into
# ``benchmarks/results`` (never the package's training folder) and read by ``perf_model_eval.py --unseen``;
# only the rows whose text is exactly the repaired reordering of the original are kept (the searches also
# measured control-code and structural edits, which an order does not describe).
UNSEEN_CAMPAIGNS: dict[str, list[tuple[str, str]]] = {
    "perf_unseen_h100": [
        # flash_attn_fwd's later rows first: their original (CUDA 13.5's nvdisasm) is the one the campaign
        # keeps; the first row's, written by an older nvdisasm, differs in its text
        ("heldout_flash_baselines_h100.tar.xz", "reorder_measurements_*"),
        ("heldout_flash_ablation_h100.tar.xz", "reorder_measurements_*"),
        ("heldout_crossblock_h100.tar.xz", "reorder_measurements_*"),
        ("heldout_conv2d_h100.tar.xz", "reorder_measurements_*"),
        ("heldout_fp8_pipeline_h100.tar.xz", "reorder_measurements_*"),
        ("heldout_rename_h100.tar.xz", "measurements_bf16.tar.xz"),  # an archive inside the archive
    ],
}
# Logs whose run left no eval json; their method from docs (reorder_eval_history.md in the archive).
KNOWN_METHODS = {
    "reorder_measurements_h200_run7.jsonl": "beam",
    "reorder_measurements_h200_run16.jsonl": "beam",
    "reorder_measurements_h200_run18.jsonl.gz": "annealing",
    "policy_finetune_measurements_h200.jsonl": "policy_finetune",
}
# independent random draws: reorder_eval.py's random moves and random_all chains, move_campaign.py's chains
RANDOM_METHODS = frozenset({"random", "random_moves", "random_all"})


@dataclass(frozen=True)
class Measurement:
    """One matched, timed screen of a measurement log."""

    kernel: str  # the log's kernel label
    function: str | None  # the kernel's function name in the text
    original: str  # the original's .cuasm text
    text: str  # the measured schedule's .cuasm text
    key: str  # its schedule key
    speedup: float  # original time / its time (median ratio)
    low: float  # 95% bootstrap CI
    high: float
    gpu: str | None
    clock_sm_mhz: int | None
    method: str  # the search that measured it ("unknown" when the log does not say)
    log: str  # the source log's name
    kinds: tuple[str, ...] = ()  # its moves' kinds in the order applied; () where the log does not say
    moves: tuple[str, ...] = ()  # those moves' descriptions

    @property
    def random(self) -> bool:
        """An independent random draw (not a search's pick)."""
        return self.method in RANDOM_METHODS


# ------------------------------------------------------------------ reading logs


def _lines(fh: IO[bytes], name: str) -> Iterator[dict[str, Any]]:
    data = fh.read()  # a tar stream's member is not seekable, so no TextIOWrapper
    if name.endswith(".gz"):
        data = gzip.decompress(data)
    for line in data.decode("utf-8").splitlines():
        if line.strip():
            yield json.loads(line)


def _eval_name(log_name: str) -> str:
    return re.sub(r"\.jsonl(\.gz)?$", ".json", log_name.replace("_measurements_", "_eval_"))


def open_logs(source: Path, pattern: str = "*") -> Iterator[tuple[str, list[dict[str, Any]], dict | None]]:
    """(log name, its records, its run's eval json or None) of ``source``: a ``.tar.xz`` archive's members
    matching ``pattern`` (read in place, in the archive's order; a matching member that is itself a
    ``.tar.xz`` gives all its logs), or one ``.jsonl``/``.jsonl.gz`` file."""
    if source.name.endswith(".tar.xz"):
        # Two sequential passes (an xz stream cannot seek back): the small eval jsons, then the logs.
        evals: dict[str, dict] = {}
        with tarfile.open(source, "r|xz") as tar:
            for m in tar:
                if m.isfile() and m.name.endswith(".json") and "_eval_" in Path(m.name).name:
                    evals[Path(m.name).name] = json.load(tar.extractfile(m))  # type: ignore[arg-type]
        with tarfile.open(source, "r|xz") as tar:
            for m in tar:
                base = Path(m.name).name
                if not m.isfile() or not fnmatch.fnmatch(base, pattern):
                    continue
                if base.endswith(".tar.xz"):
                    yield from _inner_logs(tar.extractfile(m).read(), evals)  # type: ignore[union-attr]
                elif base.endswith((".jsonl", ".jsonl.gz")):
                    records = list(_lines(tar.extractfile(m), base))  # type: ignore[arg-type]
                    yield base, records, evals.get(_eval_name(base))
    else:
        with open(source, "rb") as fh:
            yield source.name, list(_lines(fh, source.name)), None


Log = tuple[str, list[dict[str, Any]], dict | None]  # (log name, its records, its run's eval json)


def _inner_logs(data: bytes, evals: dict[str, dict]) -> Iterator[Log]:
    """The logs of an archive held in memory; their eval jsons are the outer archive's (``evals``)."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:xz") as inner:
        for m in inner:
            base = Path(m.name).name
            if m.isfile() and base.endswith((".jsonl", ".jsonl.gz")):
                yield base, list(_lines(inner.extractfile(m), base)), evals.get(_eval_name(base))  # type: ignore[arg-type]


def _segment_methods(records: list[dict], eval_json: dict | None, log: str) -> list[str]:
    """The method of each confirm-delimited segment of ``records`` (one more for a trailing segment): the
    eval rows matched in order by kernel and candidate count; one method for a log of one method."""
    segments: list[tuple[str | None, int]] = []
    kernel, n = None, 0
    for r in records:
        if r.get("kind") == "screen":
            kernel, n = r["kernel"], n + 1
        elif r.get("kind") == "confirm":
            segments.append((r.get("label") or r.get("kernel"), n))
            n = 0
    segments.append((kernel, n))
    known = KNOWN_METHODS.get(log)
    if known is not None:
        return [known] * len(segments)
    rows = [r for r in (eval_json or {}).get("rows", []) if r.get("candidates", 0) + r.get("rejected", 0)]
    if len({r["method"] for r in rows}) == 1:
        return [rows[0]["method"]] * len(segments)
    out, i = [], 0
    for kern, count in segments:
        while i < len(rows) and not (rows[i]["kernel"] == kern and _count(rows[i]) == count):
            i += 1
        if i < len(rows):
            out.append(rows[i]["method"])
            i += 1
        else:
            out.append("unknown")
    return out


def _count(row: dict) -> int:
    return row.get("candidates", 0) + row.get("rejected", 0)


def _clock(confirm: dict | None) -> int | None:
    """The SM clock a confirmation read before timing (or a device record read)."""
    clocks = (confirm or {}).get("clocks_before") or (confirm or {}).get("clocks") or {}
    try:
        return int(float(clocks["clocks.sm"]))
    except (TypeError, KeyError, ValueError):
        return None


def measurements(records: list[dict], eval_json: dict | None, log: str) -> Iterator[Measurement]:
    """The matched, timed screens of one log that carry their edits (older logs lack the original)."""
    methods = _segment_methods(records, eval_json, log)
    confirms = [r for r in records if r.get("kind") == "confirm"] + [None]
    originals: dict[str, dict] = {}
    schedules: dict[tuple[str, str], dict] = {}  # (kernel, key) -> its schedule record
    devices: dict[str, dict] = {}  # kernel -> its latest device record
    seg = 0
    for r in records:
        kind = r.get("kind")
        if kind == "original":
            originals[r["kernel"]] = r
        elif kind == "schedule":
            schedules[(r["kernel"], r["key"])] = r
        elif kind == "device":
            devices[r["kernel"]] = r
        elif kind == "confirm":
            seg += 1
        elif kind == "screen" and r.get("verdict") == "match" and r.get("speedup") and "edits" in r:
            orig = originals.get(r["kernel"])
            if orig is None:
                continue
            confirm = confirms[seg] or devices.get(r["kernel"])  # a device record's clocks: "clocks"
            sched = schedules.get((r["kernel"], r["key"]), {})
            yield Measurement(
                kernel=r["kernel"],
                function=orig.get("function"),
                original=orig["text"],
                text=apply_edits(orig["text"], [tuple(e) for e in r["edits"]]),
                key=r["key"],
                speedup=float(r["speedup"]),
                low=float(r["low"]),
                high=float(r["high"]),
                gpu=((confirm or {}).get("device") or {}).get("gpu"),
                clock_sm_mhz=_clock(confirm),
                method=sched.get("method") or methods[seg],
                log=log,
                kinds=tuple(sched.get("kinds", ())),
                moves=tuple(sched.get("moves", ())),
            )


def read_logs(source: Path, pattern: str = "*") -> Iterator[Measurement]:
    """Every matched, timed screen of ``source`` (an archive's members matching ``pattern``, or one log)."""
    for log, records, eval_json in open_logs(source, pattern):
        yield from measurements(records, eval_json, log)


# ------------------------------------------------------------------ the compact campaign file


@dataclass
class Campaign:
    """One campaign's measured schedules. Row ``i``: kernel ``kernels[kernel[i]]``, its schedule the node
    permutation :meth:`order` (slot -> node of the kernel's instruction list), speedup and CI, method."""

    name: str
    kernels: list[str]
    functions: list[str]
    originals: list[str]
    logs: list[str]
    methods: list[str]
    gpus: list[str]
    kernel: np.ndarray  # int16 [N]
    log: np.ndarray  # int16 [N]
    method: np.ndarray  # int16 [N]
    gpu: np.ndarray  # int16 [N]
    clock_sm_mhz: np.ndarray  # int16 [N], 0 = not read
    speedup: np.ndarray  # float64 [N]
    low: np.ndarray
    high: np.ndarray
    key: np.ndarray  # str [N]
    reachable: np.ndarray  # bool [N]: legal moves from ptxas's order reach its order (else a chained walk's)
    moved_ptr: np.ndarray  # int64 [N + 1]: row i's moved slots are moved_slot[ptr[i]:ptr[i+1]]
    moved_slot: np.ndarray  # int32: a slot whose node differs from ptxas's order
    moved_node: np.ndarray  # int32: the node at that slot
    provenance: dict[str, Any]

    def __len__(self) -> int:
        return len(self.speedup)

    @property
    def random(self) -> np.ndarray:
        """Which rows are independent random draws (weight them apart from the searches' picks)."""
        flags = np.array([m in RANDOM_METHODS for m in self.methods], dtype=bool)
        return flags[self.method] if len(flags) else np.zeros(len(self), bool)

    def n_nodes(self, kernel: int) -> int:
        return int(self.provenance["n_nodes"][kernel])

    def order(self, i: int) -> np.ndarray:
        """Row ``i``'s schedule: the node at each slot of the kernel's instruction list."""
        perm = np.arange(self.n_nodes(int(self.kernel[i])))
        a, b = self.moved_ptr[i], self.moved_ptr[i + 1]
        perm[self.moved_slot[a:b]] = self.moved_node[a:b]
        return perm

    def text(self, i: int, arch: str = "sm_90") -> str:
        """Row ``i``'s schedule as ``.cuasm`` text: its order with the control codes the repair gives it."""
        from sass_lsp.schedule.canonical import OriginalOrders
        from sass_lsp.schedule.search import Candidate

        k = int(self.kernel[i])
        oo = OriginalOrders(self.originals[k], arch, self.functions[k] or None)
        perm = self.order(i)
        lines = list(oo.lines)
        for slot, node in enumerate(perm):
            if slot != node:
                lines[oo.k.nodes[slot].line - 1] = oo.lines[oo.k.nodes[int(node)].line - 1]
        text = "\n".join(lines) + ("\n" if oo.original.endswith("\n") else "")
        got = oo.canonical(Candidate(text, "dataset"))
        if got is None:  # an order no legal moves reach (``reachable`` False): no repair to give it
            raise ValueError(f"row {i}: its order is not reachable from {self.kernels[k]}'s by legal moves")
        return got.text


def _perm(orders: dict[int, tuple[int, ...]], blocks: Any) -> tuple[list[int], list[int]]:
    slots, nodes = [], []
    for b, order in sorted(orders.items()):
        start = blocks[b].start
        for p, node in enumerate(order):
            if start + p != node:
                slots.append(start + p)
                nodes.append(node)
    return slots, nodes


def build(
    name: str,
    rows: Iterable[Measurement],
    sources: list[Path],
    arch: str = "sm_90",
    *,
    as_repaired: bool = False,
) -> Campaign:
    """``rows`` as one campaign; a row whose text is no reordering of its original's blocks is dropped
    (counted in the provenance). ``as_repaired``: so is a row whose text is not exactly the repaired
    reordering (``OriginalOrders.canonical``), for logs whose searches also edited control codes and whose
    rows do not say their kinds."""
    from sass_lsp.schedule.canonical import OriginalOrders, reachable
    from sass_lsp.schedule.deps import block_deps

    kernels: dict[str, int] = {}
    deps: dict[tuple[str, int], Any] = {}
    funcs, origs, n_nodes = [], [], []
    index: dict[str, dict[str, int]] = {"log": {}, "method": {}, "gpu": {}}
    models: dict[str, OriginalOrders] = {}
    cols: dict[str, list] = {
        c: [] for c in ("kernel", "log", "method", "gpu", "clock", "s", "lo", "hi", "key", "reach")
    }
    ptr, slots, nodes = [0], [], []
    dropped: Counter = Counter()
    verdicts: dict[tuple[str, str], bool] = {}
    for m in rows:
        if set(m.kinds) - {"reorder"}:  # its control codes or registers differ: the order alone loses that
            dropped[f"{m.kernel}: not a reordering"] += 1
            continue
        if m.kernel not in kernels:
            kernels[m.kernel] = len(kernels)
            models[m.kernel] = OriginalOrders(m.original, arch, m.function)
            funcs.append(m.function or "")
            origs.append(m.original)
            n_nodes.append(len(models[m.kernel].k.nodes))
        elif m.original != origs[kernels[m.kernel]]:
            dropped[f"{m.kernel}: another original"] += 1
            continue
        orders = models[m.kernel].orders(m.text)
        if orders is None:
            dropped[f"{m.kernel}: not a reordering"] += 1
            continue
        if as_repaired and not _as_repaired(models[m.kernel], m, verdicts):
            dropped[f"{m.kernel}: other control codes"] += 1
            continue
        oo = models[m.kernel]
        for b in orders:
            if (m.kernel, b) not in deps:
                deps[(m.kernel, b)] = block_deps(oo.k, b, oo.sem)
        cols["reach"].append(all(reachable(o, deps[(m.kernel, b)]) for b, o in orders.items()))
        s, n = _perm(orders, oo.k.blocks)
        slots += s
        nodes += n
        ptr.append(len(slots))
        cols["kernel"].append(kernels[m.kernel])
        for c, v in (("log", m.log), ("method", m.method), ("gpu", m.gpu or "unknown")):
            cols[c].append(index[c].setdefault(v, len(index[c])))
        cols["clock"].append(m.clock_sm_mhz or 0)
        cols["s"].append(m.speedup)
        cols["lo"].append(m.low)
        cols["hi"].append(m.high)
        cols["key"].append(m.key)
    camp = Campaign(
        name=name,
        kernels=list(kernels),
        functions=funcs,
        originals=origs,
        logs=list(index["log"]),
        methods=list(index["method"]),
        gpus=list(index["gpu"]),
        kernel=np.array(cols["kernel"], np.int16),
        log=np.array(cols["log"], np.int16),
        method=np.array(cols["method"], np.int16),
        gpu=np.array(cols["gpu"], np.int16),
        clock_sm_mhz=np.array(cols["clock"], np.int16),
        speedup=np.array(cols["s"], np.float64),
        low=np.array(cols["lo"], np.float64),
        high=np.array(cols["hi"], np.float64),
        key=np.array(cols["key"], dtype="U16"),
        reachable=np.array(cols["reach"], bool),
        moved_ptr=np.array(ptr, np.int64),
        moved_slot=np.array(slots, np.int32),
        moved_node=np.array(nodes, np.int32),
        provenance={},
    )
    camp.provenance = {
        "campaign": name,
        "arch": arch,
        "sources": [{"path": str(p), "sha256": _sha256(p)} for p in sources],
        "n_nodes": n_nodes,
        "rows": len(camp),
        "dropped": dict(dropped),
        "counts": counts(camp),
        "unreachable": int((~camp.reachable).sum()),
        "note": "matched, timed screens with their edits; every measurement kept (repeats of a schedule "
        "included, same key); clocks: the SM clock its segment's confirmation read before timing",
    }
    return camp


def _as_repaired(oo: Any, m: Measurement, verdicts: dict[tuple[str, str], bool]) -> bool:
    """Whether ``m``'s text is exactly its order as the repair writes it (once per schedule key)."""
    from sass_lsp.schedule.search import Candidate

    hit = verdicts.get((m.kernel, m.key))
    if hit is None:
        got = oo.canonical(Candidate(m.text, "log"))
        hit = verdicts[(m.kernel, m.key)] = got is not None and got.text == m.text
    return hit


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def save(camp: Campaign, path: Path) -> None:
    """Write ``camp`` as a compressed ``.npz`` (atomically)."""
    from sass_lsp.files import write_atomic

    buf = io.BytesIO()
    np.savez_compressed(
        buf,
        kernels=np.array(camp.kernels),
        functions=np.array(camp.functions),
        originals=np.array(camp.originals),
        logs=np.array(camp.logs),
        methods=np.array(camp.methods),
        gpus=np.array(camp.gpus),
        kernel=camp.kernel,
        log=camp.log,
        method=camp.method,
        gpu=camp.gpu,
        clock_sm_mhz=camp.clock_sm_mhz,
        speedup=camp.speedup,
        low=camp.low,
        high=camp.high,
        key=camp.key,
        reachable=camp.reachable,
        moved_ptr=camp.moved_ptr,
        moved_slot=camp.moved_slot,
        moved_node=camp.moved_node,
        provenance=np.array(json.dumps(camp.provenance)),
    )
    write_atomic(path, buf.getvalue())


def load(path: Path) -> Campaign:
    """A campaign file written by :func:`save`."""
    with np.load(path, allow_pickle=False) as z:
        return Campaign(
            name=path.stem,
            kernels=[str(x) for x in z["kernels"]],
            functions=[str(x) for x in z["functions"]],
            originals=[str(x) for x in z["originals"]],
            logs=[str(x) for x in z["logs"]],
            methods=[str(x) for x in z["methods"]],
            gpus=[str(x) for x in z["gpus"]],
            **{c: z[c] for c in ("kernel", "log", "method", "gpu", "clock_sm_mhz", "speedup", "low", "high")},
            key=z["key"],
            reachable=z["reachable"],
            moved_ptr=z["moved_ptr"],
            moved_slot=z["moved_slot"],
            moved_node=z["moved_node"],
            provenance=json.loads(str(z["provenance"])),
        )


def load_all(folder: Path = DATA_DIR) -> list[Campaign]:
    """Every campaign file in ``folder`` (the package's by default), by name."""
    return [load(p) for p in sorted(folder.glob("*.npz"))]


def counts(camp: Campaign) -> dict[str, dict[str, int]]:
    """Rows per kernel and method, and distinct schedules per kernel."""
    out: dict[str, dict[str, int]] = {}
    for k, name in enumerate(camp.kernels):
        sel = camp.kernel == k
        c = Counter(camp.methods[m] for m in camp.method[sel])
        out[name] = {**dict(sorted(c.items())), "all": int(sel.sum()), "distinct": len(set(camp.key[sel]))}
    return out


def _stats(camps: list[Campaign]) -> None:
    for camp in camps:
        r = camp.random
        print(
            f"{camp.name}: {len(camp)} rows, {int(r.sum())} random draws, "
            f"{int((~camp.reachable).sum())} unreachable orders, dropped {camp.provenance['dropped']}"
        )
        for kernel, c in camp.provenance["counts"].items():
            log_s = np.log(camp.speedup[camp.kernel == camp.kernels.index(kernel)])
            half = np.log(camp.high / camp.low)[camp.kernel == camp.kernels.index(kernel)] / 2
            spread = f"log speedup sd {log_s.std():.4f}, median CI half-width {np.median(half):.4f}"
            print(f"  {kernel:18s} {json.dumps(c)}  ({spread})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m sass_lsp.perf.dataset", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="one .npz per campaign of the measurement archives")
    b.add_argument("--results", type=Path, default=RESULTS, help="the folder of the archives")
    b.add_argument("--out", type=Path, default=DATA_DIR)
    b.add_argument("--only", nargs="*", choices=sorted(CAMPAIGNS), help="build only these campaigns")
    for cmd, what in (
        ("build-unseen", "the evaluation-only campaigns (UNSEEN_CAMPAIGNS)"),
        ("build-trial", "the campaigns tried as training data (TRIAL_CAMPAIGNS)"),
    ):
        u = sub.add_parser(cmd, help=what)
        u.add_argument("--results", type=Path, default=RESULTS, help="the folder of the archives")
        u.add_argument("--out", type=Path, default=RESULTS)
    s = sub.add_parser("stats", help="counts per kernel and method")
    s.add_argument("files", type=Path, nargs="*")
    args = ap.parse_args(argv)
    if args.cmd == "stats":
        _stats([load(p) for p in args.files] if args.files else load_all())
        return 0
    if args.cmd == "build-unseen":
        todo = {name: (parts, True) for name, parts in UNSEEN_CAMPAIGNS.items()}
    elif args.cmd == "build-trial":
        todo = {n: ([p], False) for n, p in TRIAL_CAMPAIGNS.items()}
    else:
        todo = {n: ([p], False) for n, p in CAMPAIGNS.items() if not args.only or n in args.only}
    for name, (parts, as_repaired) in todo.items():
        paths = [args.results / source for source, _ in parts]
        missing = [p for p in paths if not p.is_file()]
        if missing:
            print(
                f"{missing[0]}: error: no such archive\n"
                "hint: --results names the folder of the archives (the repository's benchmarks/results)",
                file=sys.stderr,
            )
            return 2
        rows = (m for path, (_, pattern) in zip(paths, parts, strict=True) for m in read_logs(path, pattern))
        camp = build(name, rows, paths, as_repaired=as_repaired)
        out = args.out / f"{name}.npz"
        args.out.mkdir(parents=True, exist_ok=True)
        save(camp, out)
        print(f"{out}: {len(camp)} rows, {out.stat().st_size / 1e6:.2f} MB", flush=True)
        _stats([camp])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
