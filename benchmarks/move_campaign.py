"""A GPU measurement campaign of random schedules over every move kind (reorder, control codes, renaming,
cross-block motion).

For each kernel (default: the ``train`` set of the frozen split ``benchmarks/kernels/split_compute_v1.toml``;
a ``held_out`` kernel is refused: it is never measured for training data), schedules are drawn at random and
measured, not chosen by a search, so the data covers what no search would have liked. A schedule is a chain
of 1..``--max-moves`` moves whose kinds are drawn uniformly from ``--kinds``; each move is legal on the text
the moves before it left. The chain applies its renames first (:mod:`sass_lsp.schedule.rename_moves`, on
ptxas's text), then its cross-block moves (:mod:`sass_lsp.schedule.crossblock_moves`), then its reorders
(random legal moves of the reorder game built on that text, which keeps
ptxas's order and control codes), then its control-code moves (:mod:`sass_lsp.schedule.control_moves`,
stalls up to ptxas's): a reorder game takes its text's control codes for ptxas's, so control moves come
last, and a rename of a reordered text would drop its reorders (``app.structural_search`` does the same).
A chain that changes nothing, or repeats a schedule measured before, is drawn again. Chain j of a kernel
comes from its own random stream (seed, kernel, j), so the chains are the same however many processes draw
them (``--draw-workers``).

Each schedule is measured by the pipeline ``reorder_eval.py`` uses (``app.kernel_measure``: bit-exact
verification on two seeds, then interleaved timing against ptxas's cubin) until ``--budget`` GPU seconds are
spent per kernel, the kernels sharing ``--time-limit`` wall seconds. Nothing is confirmed: these are screens,
one per distinct schedule. The log holds, per kernel, a ``device`` record (the runner's GPU and clocks
before its first measurement) and, before each measurement, a ``schedule`` record (key, kinds and moves in
the order applied); ``sass_lsp.perf.dataset.read_logs`` reads the campaign back with each row's kinds.

The output is one compressed file per campaign, written atomically: ``NAME.tar.xz`` (members
``NAME_measurements.jsonl`` and ``NAME_manifest.json``) or ``NAME.jsonl.gz`` (the manifest as the first
record). The manifest: kernels (and the kinds each could draw: renames that keep the occupancy may have
none), seed, kinds, budget, a digest of the tree's sources (and ``git describe`` where git answers), the
GPU and its clocks. While it runs, the log grows next to the output (``NAME.log.jsonl``); it is packed and
removed at the end, also when the run is interrupted or reaches its time limit.

    python benchmarks/move_campaign.py --dry-run --count 12         # draw, assemble, check, print; no GPU
    python benchmarks/move_campaign.py --seed 0 --out CAMPAIGN.tar.xz

On the GPU machine: ``bash benchmarks/h200/pack.sh`` here fills ``.whl`` with the wheels its image lacks and
its setup script; then one call per campaign,

    run(command="source .whl/setup.sh && python3 benchmarks/move_campaign.py --seed 0 --budget 100
        --time-limit 500 --out $OUT/CAMPAIGN.tar.xz", carry=[".whl"])

and the file that comes back goes to ``benchmarks/results``. The kernels share ``--time-limit``: each gets
an equal part of the wall time left, and stops at that or at ``--budget`` GPU seconds, whichever comes
first (drawing and assembling a schedule take CPU time beside its GPU time), so a 600 s call holds the five
train kernels at up to 100 GPU s each, with time left to compile the CUDA C kernels and pack the file (a
call killed before that still brings back the live log, ``NAME.log.jsonl``, in ``$OUT``). Further calls
with other ``--seed`` values (or ``--kernels``) make further campaigns.

Exit codes: 0 done, 1 a drawn schedule did not assemble or the checker flags it (``--dry-run``), 2 bad
arguments (a held-out or unknown kernel), 3 no GPU.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import io
import itertools
import json
import math
import multiprocessing
import os
import random
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel_split import SPLIT_COMPUTE_V1, SplitError, load_split
from reorder_eval import ROOT, load_kernels

from sass_lsp.files import write_atomic
from sass_lsp.schedule.search import Measured, schedule_key

KINDS = ("reorder", "control", "rename", "cross-block")
METHOD = "random_moves"  # the log's method for these rows (sass_lsp.perf.dataset.RANDOM_METHODS)
APPLY_ORDER = {"rename": 0, "cross-block": 1, "reorder": 2, "control": 3}  # a chain's order (docstring)
MAX_REDRAWS = 200  # draws in a row that give nothing new before a kernel is given up


@dataclass(frozen=True)
class Kernel:
    """One kernel to measure: its ptxas text, arch, function name and threads per block."""

    name: str
    origin: str
    text: str
    arch: str
    function: str | None
    threads: int | None  # rename moves keep the occupancy of this block size
    cubin: bytes = b""
    spec: Any = None


@dataclass(frozen=True)
class Schedule:
    kernel: str
    text: str
    key: str
    kinds: tuple[str, ...]  # one per move, in the order applied
    moves: tuple[str, ...]  # the moves' descriptions, same order

    @property
    def kind_set(self) -> str:
        """The kinds it combines, sorted and joined ("control+reorder"): the summary's groups."""
        return "+".join(sorted(set(self.kinds)))


class Drawer:
    """Random chains of moves over one kernel's ptxas text."""

    def __init__(
        self,
        kernel: Kernel,
        kinds: Sequence[str],
        max_moves: int,
        rng: random.Random,
        *,
        available: Sequence[str] | None = None,
    ) -> None:
        """``available``: the kinds known to have a move on ptxas's text (another drawer's ``kinds``);
        by default each of ``kinds`` is tried."""
        self.kernel, self.max_moves, self.rng = kernel, max_moves, rng
        self._game: Any = None  # the reorder game of ptxas's text, reused (renamed texts get their own)
        # only the kinds with a move on ptxas's text are drawn (renames keeping the occupancy may be none)
        if available is None:
            available = [kind for kind in kinds if self._available(kind)]
        self.kinds = tuple(available)

    def _available(self, kind: str) -> bool:
        text, _ = self._move(kind)(self.kernel.text, 1, self.rng)
        return text != self.kernel.text

    def draw(self, rng: random.Random | None = None) -> Schedule | None:
        """One chain drawn from ``rng`` (default: the drawer's); None when no drawn move applied."""
        rng, k = rng or self.rng, self.kernel
        if not self.kinds:
            return None
        drawn = Counter(rng.choice(self.kinds) for _ in range(rng.randint(1, self.max_moves)))
        text, kinds, moves = k.text, [], []
        for kind in sorted(drawn, key=APPLY_ORDER.__getitem__):
            text, done = self._move(kind)(text, drawn[kind], rng)
            kinds += [kind] * len(done)
            moves += done
        if not moves:
            return None
        return Schedule(k.name, text, schedule_key(text), tuple(kinds), tuple(moves))

    def _move(self, kind: str) -> Callable[[str, int, random.Random], tuple[str, list[str]]]:
        """``(text, n, rng) -> (text after up to n moves of the kind, their descriptions)``."""
        return getattr(self, f"_{kind.replace('-', '_')}")

    def _cross_block(self, text: str, n: int, rng: random.Random) -> tuple[str, list[str]]:
        from sass_lsp.schedule import crossblock_moves

        out, done = crossblock_moves.random_moves(text, n, rng, arch=self.kernel.arch)
        return out, [m.description for m in done]

    def _rename(self, text: str, n: int, rng: random.Random) -> tuple[str, list[str]]:
        from sass_lsp.schedule import rename_moves

        k = self.kernel
        out, done = rename_moves.random_moves(text, n, rng, arch=k.arch, threads_per_block=k.threads)
        return out, [m.description for m in done]

    def _reorder(self, text: str, n: int, rng: random.Random) -> tuple[str, list[str]]:
        from sass_lsp.schedule.baselines import random_legal
        from sass_lsp.schedule.game import ReorderGame
        from sass_lsp.schedule.search import game_candidate

        k = self.kernel
        if text != k.text:  # a renamed text: its own game, whose dependences the renames freed
            game = ReorderGame.from_text(text, k.arch, kernel=k.function)
        else:
            if self._game is None:
                game = ReorderGame.from_text(text, k.arch, kernel=k.function)
                self._game = (game, game.snapshot())
            game, start = self._game
            game.restore(start)
        random_legal(game, n, rng)
        cand = game_candidate(game, text, "campaign")
        return cand.text, list(cand.moves)

    def _control(self, text: str, n: int, rng: random.Random) -> tuple[str, list[str]]:
        from sass_lsp.schedule import control_moves

        k = self.kernel
        out, done = control_moves.random_moves(text, n, rng, arch=k.arch, original=k.text)
        return out, [m.description for m in done]


def chains(drawer: Drawer, seed: str, workers: int = 1) -> Iterator[Schedule | None]:
    """Chains drawn without end, chain j from its own stream ``Random(f"{seed}:{j}")``: the same chains in
    the same order whatever ``workers``. With ``workers`` > 1 they are drawn in that many processes, a few
    ahead of the consumer (drawing and assembling a chain is the CPU's share of a measurement, and a GPU host
    has cores to spare)."""
    if workers <= 1:
        return (drawer.draw(random.Random(f"{seed}:{j}")) for j in itertools.count())
    return _pooled_chains(drawer, seed, workers)


def default_draw_workers() -> int:
    """Processes that draw chains: the host's cores but two (the measuring process and the GPU worker's),
    at most 8."""
    return max(1, min(8, (os.cpu_count() or 1) - 2))


_WORKER_DRAWER: Drawer | None = None  # a drawing process's own drawer


def _start_drawing(kernel: Kernel, kinds: Sequence[str], max_moves: int) -> None:
    global _WORKER_DRAWER
    _WORKER_DRAWER = Drawer(kernel, kinds, max_moves, random.Random(0), available=kinds)


def _draw_one(seed: str, j: int) -> Schedule | None:
    assert _WORKER_DRAWER is not None
    return _WORKER_DRAWER.draw(random.Random(f"{seed}:{j}"))


def _pooled_chains(drawer: Drawer, seed: str, workers: int) -> Iterator[Schedule | None]:
    bare = dataclasses.replace(drawer.kernel, cubin=b"", spec=None)  # what a chain needs, picklable
    pool = ProcessPoolExecutor(
        workers,
        mp_context=multiprocessing.get_context("spawn"),  # the caller may hold CUDA or torch threads
        initializer=_start_drawing,
        initargs=(bare, drawer.kinds, drawer.max_moves),
    )
    try:
        ahead = deque(pool.submit(_draw_one, seed, j) for j in range(2 * workers))
        for j in itertools.count(len(ahead)):
            done = ahead.popleft().result()
            ahead.append(pool.submit(_draw_one, seed, j))
            yield done
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def distinct_schedules(kernel: Kernel, draws: Iterable[Schedule | None]) -> Iterator[Schedule]:
    """The schedules of ``draws`` (:func:`chains`), each new (not ptxas's, not one drawn before); ends after
    ``MAX_REDRAWS`` draws in a row give nothing new."""
    seen = {schedule_key(kernel.text)}
    misses = 0
    for s in draws:
        if s is None or s.key in seen:
            misses += 1
            if misses >= MAX_REDRAWS:
                return
            continue
        misses = 0
        seen.add(s.key)
        yield s


# ------------------------------------------------------------------ the campaign


@dataclass
class Row:
    schedule: Schedule
    result: Measured


@dataclass
class Settings:
    """What a campaign draws (kinds, chain length, seed) and how long it measures."""

    kinds: tuple[str, ...] = KINDS
    max_moves: int = 4
    budget: float = 100.0  # GPU seconds per kernel
    time_limit: float = 500.0  # wall seconds, all kernels
    seed: int = 0
    draw_workers: int = 1  # processes drawing chains (``chains``)


@dataclass
class Progress:
    """What a campaign measured so far (kept when it is interrupted) and the kinds drawn per kernel."""

    rows: list[Row] = field(default_factory=list)
    kinds: dict[str, list[str]] = field(default_factory=dict)


def _append(log: Path, record: dict[str, Any]) -> None:
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record, default=str) + "\n")


def run_campaign(
    kernels: Sequence[Kernel],
    measure_for: Callable[[Kernel], Callable[[str], Measured]],
    device_for: Callable[[Kernel], dict[str, Any]],
    log: Path,
    settings: Settings,
    progress: Progress,
    *,
    clock: Callable[[], float] = time.monotonic,
) -> Progress:
    """Measure random schedules of each kernel (``measure_for(kernel)``: a ``GpuMeasure`` logging to ``log``)
    until its GPU budget or its share of the wall-clock limit is spent; each kernel's ``device_for`` record
    and every schedule's record go to ``log`` before its measurements. Rows go to ``progress`` as they
    come (an interrupted run keeps them)."""
    deadline = clock() + settings.time_limit
    for i, k in enumerate(kernels):
        share_end = clock() + (deadline - clock()) / (len(kernels) - i)  # the kernels left share the time
        drawer = Drawer(k, settings.kinds, settings.max_moves, random.Random(f"{settings.seed}:{k.name}"))
        progress.kinds[k.name] = list(drawer.kinds)
        _append(log, {"kind": "device", "kernel": k.name, "kinds_drawn": list(drawer.kinds), **device_for(k)})
        measure = measure_for(k)
        spent = 0.0
        # closed when the kernel is done: drawing processes stop before the next kernel's start
        with contextlib.closing(chains(drawer, f"{settings.seed}:{k.name}", settings.draw_workers)) as draws:
            for s in distinct_schedules(k, draws):
                if spent >= settings.budget or clock() >= share_end:
                    break
                _append(
                    log,
                    {
                        "kind": "schedule",
                        "kernel": k.name,
                        "key": s.key,
                        "method": METHOD,
                        "kinds": list(s.kinds),
                        "moves": list(s.moves),
                    },
                )
                result = measure(s.text)
                spent += result.seconds
                progress.rows.append(Row(s, result))
    return progress


def tree_revision() -> dict[str, str]:
    """A digest of the tree's sources (``sass_lsp/**/*.py``, ``benchmarks/*.py``), and ``git describe`` where
    git answers. Only the digest identifies a copied tree: the GPU machine's copy carries a ``.git`` that is
    not the tree's (``benchmarks/h200/setup.sh``), so compare digests (``--revision`` prints this one's)."""
    h = hashlib.sha256()
    for p in sorted([*ROOT.glob("sass_lsp/**/*.py"), *ROOT.glob("benchmarks/*.py")]):
        h.update(p.relative_to(ROOT).as_posix().encode() + b"\0" + p.read_bytes())
    out = {"tree_sha256": h.hexdigest()}
    try:
        rev = subprocess.run(
            ["git", "-C", str(ROOT), "describe", "--always", "--dirty", "--abbrev=40"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout.strip()
        if rev:
            out["git_describe"] = rev
    except (OSError, subprocess.SubprocessError):
        pass
    return out


def pack(out: Path, log: Path, manifest: dict[str, Any]) -> None:
    """The campaign as one compressed file, written atomically: a ``.tar.xz`` of the log and the manifest,
    or a ``.jsonl.gz`` log whose first record is the manifest."""
    import gzip

    name = out.name.removesuffix(".tar.xz").removesuffix(".jsonl.gz")
    body = log.read_bytes() if log.exists() else b""
    meta = json.dumps(manifest, indent=1, default=str).encode()
    if out.name.endswith(".jsonl.gz"):
        head = json.dumps({"kind": "manifest", **manifest}, default=str).encode() + b"\n"
        write_atomic(out, gzip.compress(head + body, mtime=0))
        return
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz") as tar:
        for member, data in ((f"{name}_measurements.jsonl", body), (f"{name}_manifest.json", meta)):
            info = tarfile.TarInfo(member)
            info.size, info.mtime = len(data), int(time.time())
            tar.addfile(info, io.BytesIO(data))
    write_atomic(out, buf.getvalue())


def summary(rows: Sequence[Row]) -> str:
    """Per kernel and combination of kinds: schedules measured, verified (bit-exact), median and max speedup
    of the verified, and the share of them surely faster (95% CI above 1)."""
    groups: dict[tuple[str, str], list[Measured]] = {}
    for r in rows:
        groups.setdefault((r.schedule.kernel, r.schedule.kind_set), []).append(r.result)
        groups.setdefault((r.schedule.kernel, "all"), []).append(r.result)
    lines = [
        "| kernel | kinds | measured | verified | median speedup | max speedup | surely faster |",
        "|---" * 7 + "|",
    ]
    for (kernel, kinds), results in sorted(groups.items()):
        ok = [m for m in results if m.accepted]
        sp = [m.speedup for m in ok if m.speedup is not None]
        faster = sum((m.low or 0.0) > 1.0 for m in ok)
        med = f"{statistics.median(sp):.4f}" if sp else "-"
        top = f"{max(sp):.4f}" if sp else "-"
        share = f"{faster / len(ok):.1%}" if ok else "-"
        lines.append(f"| {kernel} | {kinds} | {len(results)} | {len(ok)} | {med} | {top} | {share} |")
    return "\n".join(lines)


# ------------------------------------------------------------------ command line


def _error(message: str, hint: str, where: str = "move_campaign.py") -> int:
    print(f"{where}: error: {message}\nhint: {hint}", file=sys.stderr)
    return 2


class HeldOut(ValueError):
    """A requested kernel is in the split's held-out set; ``str()`` names them, ``path`` the split file."""

    def __init__(self, path: Path, names: list[str]) -> None:
        super().__init__(
            f"{', '.join(names)} {'is' if len(names) == 1 else 'are'} held out: a held-out kernel is "
            "measured once, at the end, never for training data"
        )
        self.path = path


def kernel_names(requested: list[str] | None, split_path: Path = SPLIT_COMPUTE_V1) -> list[str]:
    """The kernels to measure: ``requested`` or the split's train set. Raises :class:`HeldOut`."""
    split = load_split(split_path)
    names = list(requested or split.sets["train"])
    held = [n for n in names if n in split.sets["held_out"]]
    if held:
        raise HeldOut(split_path, held)
    return names


def load(names: list[str], work: Path) -> list[Kernel]:
    """The kernels as ``reorder_eval.load_kernels`` finds them (corpus cubins, CUDA C compiled with nvcc)."""
    return [kernel_of(*found) for found in load_kernels(names, work)]


def kernel_of(name: str, origin: str, cubin: bytes, spec: Any) -> Kernel:
    """One of ``load_kernels``'s entries as a campaign's kernel."""
    from sass_lsp import app
    from sass_lsp.cuasm import write_cuasm

    text = write_cuasm(cubin, source_name=name)
    arch = app.kernel_arch(text, name)
    return Kernel(name, origin, text, arch, spec.kernel, math.prod(spec.block), cubin, spec)


def findings(text: str, arch: str) -> Counter:
    """The checker's findings on ``text`` (and parse errors), by code and message, lines left out."""
    from sass_lsp.analysis import check_module
    from sass_lsp.cuasm import parse_cuasm

    module, diags = parse_cuasm(text)
    got = Counter(f"parse: {d.message}" for d in diags if d.severity == "error")
    got.update(f"{f.code}: {f.message}" for f in check_module(module, arch))
    return got


def dry_run(kernels: list[Kernel], settings: Settings, count: int) -> int:
    """Draw ``count`` schedules per kernel, assemble and check each, print them and the counts per kind."""
    from sass_lsp.cuasm import AssembleError, assemble_cuasm

    failed = flagged = 0
    rows: Counter = Counter()
    for k in kernels:
        drawer = Drawer(k, settings.kinds, settings.max_moves, random.Random(f"{settings.seed}:{k.name}"))
        none = [kind for kind in settings.kinds if kind not in drawer.kinds]
        print(f"{k.name}: drawing {', '.join(drawer.kinds) or 'nothing'}", end="")
        print(f" (no {', '.join(none)} move on ptxas's text)" if none else "", flush=True)
        before = findings(k.text, k.arch)
        with contextlib.closing(chains(drawer, f"{settings.seed}:{k.name}", settings.draw_workers)) as draws:
            for _, s in zip(range(count), distinct_schedules(k, draws), strict=False):
                try:
                    assemble_cuasm(s.text, source_name=f"<{k.name} {s.key}>")
                    status = "assembles"
                except AssembleError as exc:
                    failed += 1
                    status = f"error: {str(exc).splitlines()[0][:200]}"
                new = findings(s.text, k.arch) - before  # what the checker says of it and not of ptxas's text
                if new:
                    flagged += 1
                    status += f", checker: {sum(new.values())} new finding(s), first: {next(iter(new))[:200]}"
                else:
                    status += ", checker silent"
                rows[(k.name, s.kind_set)] += 1
                kinds = ",".join(s.kinds)
                print(f"{k.name} {s.key} {len(s.moves)} moves [{kinds}] {status}", flush=True)
    print("\n| kernel | kinds | schedules |\n|---|---|---|")
    for (kernel, kinds), n in sorted(rows.items()):
        print(f"| {kernel} | {kinds} | {n} |")
    per_kind: Counter = Counter()
    for (_, kinds), n in rows.items():
        for kind in kinds.split("+"):
            per_kind[kind] += n
    print(
        f"schedules with each kind: {dict(sorted(per_kind.items()))}; not assembled: {failed}; "
        f"with checker findings ptxas's text lacks: {flagged}"
    )
    return 1 if failed or flagged else 0


def manifest(
    out: Path, kernels: Sequence[Kernel], settings: Settings, progress: Progress, **extra: Any
) -> dict:
    """The campaign's provenance: what was measured, with which settings, from which tree."""
    return {
        "campaign": out.name,
        "script": "benchmarks/move_campaign.py",
        "method": METHOD,
        "kernels": [
            {
                "name": k.name,
                "origin": k.origin,
                "function": k.function,
                "arch": k.arch,
                "key": schedule_key(k.text),
                "kinds_drawn": progress.kinds.get(k.name),
            }
            for k in kernels
        ],
        "seed": settings.seed,
        "chain_stream": "Random(f'{seed}:{kernel}:{j}') for chain j",
        "kinds": list(settings.kinds),
        "max_moves": settings.max_moves,
        "budget_gpu_s_per_kernel": settings.budget,
        "time_limit_s": settings.time_limit,
        "rows": len(progress.rows),
        "revision": tree_revision(),
        **extra,
    }


def campaign(
    kernels: Sequence[Kernel],
    settings: Settings,
    out: Path,
    measure_for: Callable[[Kernel, Path], Callable[[str], Measured]],
    device_for: Callable[[Kernel], dict[str, Any]],
) -> Progress:
    """Run the campaign (``measure_for(kernel, log)``: its measure, logging to ``log``) and pack its log and
    manifest into ``out``, also when it is interrupted."""
    log = out.with_name(out.name.removesuffix(".tar.xz").removesuffix(".jsonl.gz") + ".log.jsonl")
    log.unlink(missing_ok=True)
    progress = Progress()
    devices: dict[str, dict] = {}

    def device(k: Kernel) -> dict[str, Any]:
        devices[k.name] = device_for(k)
        return devices[k.name]

    started = time.time()
    try:
        run_campaign(kernels, lambda k: measure_for(k, log), device, log, settings, progress)
    finally:
        wall = round(time.time() - started, 1)
        pack(
            out,
            log,
            manifest(out, kernels, settings, progress, devices=devices, started=started, wall_s=wall),
        )
        log.unlink(missing_ok=True)
    return progress


def measure_all(kernels: list[Kernel], settings: Settings, out: Path) -> int:
    """The campaign on the GPU (``GpuMeasure``, as ``reorder_eval.py`` measures), packed into ``out``."""
    from sass_lsp import app
    from sass_lsp.app.errors import AppError
    from sass_lsp.gpu import GpuRunner

    with GpuRunner(timeout_s=120) as runner:
        try:
            originals = {
                k.name: app.original_kernel(k.text, k.name, k.spec, cubin=k.cubin, runner=runner)
                for k in kernels
            }
        except AppError as exc:
            print(
                f"move_campaign.py: error: {exc}\nhint: run it where an NVIDIA GPU is (or --dry-run)",
                file=sys.stderr,
            )
            return 3

        def device_for(_k: Kernel) -> dict[str, Any]:
            hello = runner.hello()  # the GPU and its clocks now, before the kernel's measurements
            return (
                {"device": hello.result.get("device"), "clocks": hello.result.get("clocks")}
                if hello.ok
                else {}
            )

        def measure_for(k: Kernel, log: Path) -> Callable[[str], Measured]:
            return app.kernel_measure(originals[k.name], runner, log, k.name)

        progress = campaign(kernels, settings, out, measure_for, device_for)
    print(summary(progress.rows))
    print(f"{out}: {len(progress.rows)} schedules measured, {out.stat().st_size / 1e6:.2f} MB")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="move_campaign.py", description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", nargs="+", help="default: the train set of the frozen split")
    ap.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS), help="the move kinds drawn")
    ap.add_argument("--max-moves", type=int, default=4, help="moves per schedule: 1..this, uniformly")
    ap.add_argument("--budget", type=float, default=100.0, help="GPU seconds per kernel")
    ap.add_argument("--time-limit", type=float, default=500.0, help="wall seconds for the whole campaign")
    ap.add_argument("--seed", type=int, default=0, help="the draws' random stream (per kernel)")
    ap.add_argument(
        "--draw-workers",
        type=int,
        default=default_draw_workers(),
        help="processes drawing chains (default: the cores but two, at most 8); any number draws the same",
    )
    ap.add_argument("--out", type=Path, help="the campaign file: NAME.tar.xz or NAME.jsonl.gz")
    ap.add_argument("--dry-run", action="store_true", help="draw, assemble and check schedules; no GPU")
    ap.add_argument("--count", type=int, default=12, help="--dry-run: schedules per kernel")
    ap.add_argument(
        "--revision", action="store_true", help="print the tree's digest (the manifest's) and stop"
    )
    args = ap.parse_args(argv)
    if args.revision:
        print(json.dumps(tree_revision()))
        return 0
    if args.max_moves < 1:
        return _error("--max-moves must be at least 1", "a schedule is a chain of 1..--max-moves moves")
    try:
        names = kernel_names(args.kernels)
    except HeldOut as exc:
        where = exc.path.relative_to(ROOT) if exc.path.is_relative_to(ROOT) else exc.path
        return _error(
            str(exc), "measure the split's train kernels (the default) or memory_bound ones", str(where)
        )
    except SplitError as exc:
        return _error(str(exc), "the split file is benchmarks/kernels/split_compute_v1.toml, as committed")
    out = args.out
    if not args.dry_run:
        if out is None or not out.name.endswith((".tar.xz", ".jsonl.gz")):
            return _error(f"--out {out}: must name a .tar.xz or .jsonl.gz file", "e.g. --out CAMPAIGN.tar.xz")
        if not out.parent.is_dir():
            return _error(f"{out.parent}: no such folder", "--out names a file in an existing folder")
    settings = Settings(
        tuple(dict.fromkeys(args.kinds)),
        args.max_moves,
        args.budget,
        args.time_limit,
        args.seed,
        max(1, args.draw_workers),
    )
    with tempfile.TemporaryDirectory() as tmp:
        kernels = load(names, Path(tmp))
        missing = sorted(set(names) - {k.name for k in kernels})
        if missing:
            return _error(
                f"{', '.join(missing)}: no such kernel",
                "a name is benchmarks/kernels/NAME.cu (+ .launch.toml) or a corpus kernel (SASS_LSP_CORPUS)",
            )
        if args.dry_run:
            return dry_run(kernels, settings, args.count)
        return measure_all(kernels, settings, out)


if __name__ == "__main__":
    sys.exit(main())
