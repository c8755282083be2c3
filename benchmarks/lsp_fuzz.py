"""Hostile editing of every corpus kernel through the real server process (stdio), as issue #39 asks.

Random incremental edits (random bytes and unicode, truncation to empty, pasted text of other corpus files,
long lines, CR / CRLF, header arch changes, malformed control fields, digit flips) interleaved with every
reading request at random positions. At each checkpoint the edited document's diagnostics, semantic tokens,
symbols, folding ranges and inlay hints are compared with those of a fresh open of the same text.

Prints: edits, checkpoints, differences, tracebacks in the server log, unanswered requests, the server's
RSS (start, after warm-up, every 1,000 edits, after closing every document) and request latencies
(p50 / p99 / max per method).

    python benchmarks/lsp_fuzz.py [--edits 10000] [--checkpoint-every 250] [--seed 0] [--policy]
    python benchmarks/lsp_fuzz.py --steady 10000 [--policy]   # memory: one digit flipped back and forth

``--steady`` asks for code actions at every typing pause (every 50 edits), so with ``--policy`` the policy's
suggestions are computed for the edited versions.

``--policy`` loads the shipped schedule policy (the code-action suggestions); without it the server runs
with no policy, as a user without torch would.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from lsp_stdio import (  # noqa: E402
    CORPUS,
    REQUESTS,
    StdioClient,
    Unanswered,
    apply_change,
    comparable_diagnostics,
    lsp_lines,
    random_edit,
    request_params,
    tracebacks,
    views,
)


def checkpoint(client: StdioClient, uri: str, version: int, text: str, fresh_uri: str) -> list[str]:
    """Differences between the edited document and a fresh open of its text."""
    n_lines = len(lsp_lines(text))
    edited = comparable_diagnostics(client.settled_diagnostics(uri, version))
    edited_views = views(client, uri, n_lines)
    client.open(fresh_uri, text)
    fresh = comparable_diagnostics(client.settled_diagnostics(fresh_uri, 1))
    fresh_views = views(client, fresh_uri, n_lines)
    client.close(fresh_uri)
    out = []
    if edited != fresh:
        out.append(f"diagnostics: {sorted(set(edited) ^ set(fresh))[:3]}")
    for method, value in edited_views.items():
        if value != fresh_views[method]:
            out.append(method)
    return out


def steady(args: argparse.Namespace, settings: dict, log_file: Path) -> int:
    """Flip one digit back and forth ``--steady`` times in the largest kernel: RSS must hold steady."""
    kernel = max(CORPUS.glob("*.cuasm"), key=lambda p: p.stat().st_size)
    text = kernel.read_text()
    line_no, line = next((i, ln) for i, ln in enumerate(text.split("\n")) if "R2," in ln)
    col = line.index("R2,") + 1
    client = StdioClient(log_file, settings)
    rss = [("start", client.rss_mb())]
    uri = f"file:///steady/{kernel.name}"
    client.open(uri, text)
    client.settled_diagnostics(uri, 1)
    if args.policy:  # warm-up includes loading the policy (torch), which the first suggestions wait for
        client.request(
            "workspace/executeCommand", {"command": "sass-lsp.suggestReorders", "arguments": [uri]}, 300
        )
    rss.append(("after open", client.rss_mb()))
    rng = {"start": {"line": line_no, "character": col}, "end": {"line": line_no, "character": col + 1}}
    try:
        for i in range(1, args.steady + 1):
            client.change(uri, i + 1, [{"range": rng, "text": "3" if i % 2 else "2"}])
            if i % 50 == 0:  # let the diagnostics of this version finish, as a typing pause would
                client.settled_diagnostics(uri, i + 1, quiet_s=0.05)
                # the light bulb's request: with --policy, it runs the policy's suggestions on this version
                params = request_params("textDocument/codeAction", uri, line_no, col, 0)
                client.request("textDocument/codeAction", params, args.timeout)
            if i == 1000:
                rss.append(("after warm-up (1,000 edits)", client.rss_mb()))
            elif i % 1000 == 0:
                rss.append((f"{i} edits", client.rss_mb()))
        client.close(uri)
        time.sleep(1.0)
        rss.append(("after close", client.rss_mb()))
    finally:
        client.shutdown()
    print(f"steady editing of {kernel.name}: {args.steady} edits, tracebacks: {len(tracebacks(log_file))}")
    print("RSS (MB): " + ", ".join(f"{name} {mb:.0f}" for name, mb in rss))
    warm = [mb for name, mb in rss if name.endswith("edits") or name.startswith("after warm")]
    print(f"growth after warm-up: {(max(warm) - warm[0]) / warm[0] * 100:.1f}%")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--edits", type=int, default=10_000)
    parser.add_argument("--checkpoint-every", type=int, default=250)
    parser.add_argument("--request-every", type=int, default=3, help="one random request per N edits")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--policy", action="store_true", help="load the shipped schedule policy")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds a request may take")
    parser.add_argument("--steady", type=int, default=0, help="instead: flip one digit N times (memory)")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    kernels = sorted(CORPUS.glob("*.cuasm"))
    texts = {k.name: k.read_text() for k in kernels}
    settings: dict = {"diagnosticsDebounceMs": 20, "inlayStallHints": True}
    if not args.policy:
        settings["policyModelPath"] = "/nonexistent/policy"
    tmp = Path(tempfile.mkdtemp(prefix="lsp_fuzz_"))
    log_file = tmp / "server.log"
    if args.steady:
        return steady(args, settings, log_file)
    client = StdioClient(log_file, settings)
    rss = [("start", client.rss_mb())]
    latencies: dict[str, list[float]] = {}
    unanswered: list[str] = []
    differences: list[str] = []
    n_checkpoints = 0
    per_kernel = max(1, args.edits // len(kernels))
    edits_done = 0
    t0 = time.perf_counter()
    try:
        for k_i, kernel in enumerate(kernels):
            uri = f"file:///fuzz/{kernel.name}"
            text = texts[kernel.name]
            pastes = [t for name, t in texts.items() if name != kernel.name]
            client.open(uri, text)
            client.settled_diagnostics(uri, 1)
            version = 1
            if k_i == 0:
                rss.append(("after warm-up", client.rss_mb()))
            for _ in range(per_kernel):
                change = random_edit(rng, text, pastes)
                version += 1
                if isinstance(change, str):
                    text = change
                    client.change(uri, version, [{"text": change}])
                else:
                    text = apply_change(text, change)
                    client.change(uri, version, [change])
                edits_done += 1
                if edits_done % args.request_every == 0:
                    method = rng.choice(REQUESTS)
                    lines = lsp_lines(text)
                    line = rng.randrange(len(lines) + 2)
                    params = request_params(method, uri, line, rng.randrange(120), len(lines))
                    try:
                        reply = client.request(method, params, args.timeout)
                        latencies.setdefault(method, []).append(reply.seconds * 1000)
                    except Unanswered as exc:
                        unanswered.append(str(exc))
                if edits_done % args.checkpoint_every == 0:
                    n_checkpoints += 1
                    fresh_uri = f"file:///fresh/{n_checkpoints}/{kernel.name}"
                    try:
                        diffs = checkpoint(client, uri, version, text, fresh_uri)
                    except Unanswered as exc:
                        diffs = [f"unanswered: {exc}"]
                    differences += [f"{kernel.name} edit {edits_done}: {d}" for d in diffs]
                    if len(text) > 2_000_000:  # keep pasted growth from turning this into a size test
                        text = texts[kernel.name]
                        version += 1
                        client.change(uri, version, [{"text": text}])
                if edits_done % 1000 == 0:
                    rss.append((f"{edits_done} edits", client.rss_mb()))
                    print(f"  {edits_done} edits, {time.perf_counter() - t0:.0f} s, RSS {rss[-1][1]:.0f} MB")
            client.close(uri)
        time.sleep(1.0)
        rss.append(("after close", client.rss_mb()))
    finally:
        client.shutdown()
    found = tracebacks(log_file)
    print(f"edits: {edits_done}  checkpoints: {n_checkpoints}  differences: {len(differences)}")
    print(f"tracebacks: {len(found)}  unanswered requests: {len(unanswered)}")
    for d in differences[:20]:
        print("  difference:", d)
    for t in sorted(set(found))[:20]:
        print("  traceback:", t)
    for u in unanswered[:10]:
        print("  unanswered:", u)
    print("RSS (MB): " + ", ".join(f"{name} {mb:.0f}" for name, mb in rss))
    print("latency (ms)       p50     p99     max     n")
    for method, values in sorted(latencies.items()):
        values.sort()
        p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
        print(
            f"  {method.split('/')[-1]:<16} {statistics.median(values):7.1f} {p99:7.1f} {values[-1]:7.1f}"
            f" {len(values):5d}"
        )
    print(f"server log: {log_file}")
    return 0 if not (differences or found or unanswered) else 1


if __name__ == "__main__":
    sys.exit(main())
