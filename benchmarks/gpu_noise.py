"""Self-vs-self timing noise per corpus kernel: how wide is the speedup CI when nothing changed?

    python benchmarks/gpu_noise.py [--rounds 30] [--repeats 2] [--cache rotate|flush] [--json F] [NAME ...]

Each kernel is timed against a bit-identical copy of itself (loaded as a second module) with the same method
as ``sass-lsp bench``; a CI that excludes 1.0 here is a false "speedup". The table goes to stdout last.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from sass_lsp.gpu.bench import bench_to_dict, run_bench
from sass_lsp.gpu.corpus import corpus_dir, corpus_names, load_kernel
from sass_lsp.gpu.runner import GpuRunner


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=2, help="independent self-vs-self runs per kernel")
    parser.add_argument("--cache", default="rotate", choices=["rotate", "flush"])
    parser.add_argument("--json", help="write every result here")
    args = parser.parse_args(argv)
    if not corpus_names():
        print(f"no kernels in {corpus_dir()}", file=sys.stderr)
        return 2
    names = args.names or corpus_names()
    rows = []
    results = []
    with GpuRunner(timeout_s=300) as runner:
        hello = runner.hello()
        if not hello.ok:
            print(f"no GPU: {hello.error}", file=sys.stderr)
            return 2
        print(f"# {hello.result['device']}", flush=True)
        for name in names:
            cubin, spec = load_kernel(name)
            for repeat in range(args.repeats):
                started = time.monotonic()
                result = run_bench(
                    cubin,
                    bytes(bytearray(cubin)),
                    spec,
                    seeds=1,
                    rounds=args.rounds,
                    runner=runner,
                    cache=args.cache,
                )
                results.append({"name": name, "repeat": repeat, **bench_to_dict(result)})
                timing = result.timing
                if timing is None:
                    rows.append(f"{name:<18} {repeat:>2}  {result.verdict}: {result.message}")
                    continue
                ci = timing.ci
                flag = "" if ci.contains_one else "  <-- CI excludes 1"
                rows.append(
                    f"{name:<18} {repeat:>2}  {timing.orig.median * 1000:9.2f} "
                    f"{timing.edit.median * 1000:9.2f} "
                    f"{timing.orig.iqr / timing.orig.median * 100:6.2f}% {ci.ratio:7.4f} [{ci.low:.4f}, "
                    f"{ci.high:.4f}] {ci.width:7.4f} {timing.batch:6d} {timing.n_sets:4d} "
                    f"{result.clocks_before.get('clocks.sm', '?'):>5}->"
                    f"{result.clocks_after.get('clocks.sm', '?'):<5}"
                    f" {time.monotonic() - started:5.1f}s{flag}"
                )
                print(rows[-1], flush=True)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=1)
    print(f"\nself-vs-self, {args.rounds} rounds, cache={args.cache}")
    print(
        f"{'kernel':<18} rep  orig(us)  copy(us)    IQR   ratio  95% CI            width  batch sets  SM MHz"
    )
    print("\n".join(rows))
    widths = [r["timing"]["ci"]["width"] for r in results if r.get("timing")]
    if widths:
        print(f"CI width: median {sorted(widths)[len(widths) // 2]:.4f}, max {max(widths):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
