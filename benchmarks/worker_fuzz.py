"""Socket fuzz of the TCP GPU worker, and how long it takes to read a large request.

    python benchmarks/worker_fuzz.py [--cases 2000] [--request-mb 10] [--seed 0]

Starts ``sass-lsp worker --listen`` on loopback with the fake device, throws ``--cases`` hostile peers at it
(random bytes, partial lines, wrong tokens, resets, oversized lines; and, authenticated, malformed JSON,
unexpected fields, wrong types), checks after every 100 that a valid client is still served, then times one
``--request-mb`` request round trip (read, relay to the stdio worker, reply). Prints one line per figure.
"""

from __future__ import annotations

import argparse
import json
import random
import secrets
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from sass_lsp.gpu.protocol import b64, decode, encode
from sass_lsp.gpu.runner import GpuRunner, worker_env
from sass_lsp.gpu.spec import parse_spec, spec_to_dict

SPEC = spec_to_dict(
    parse_spec('kernel = "k"\ngrid = [1]\nblock = [32]\n[[params]]\nname = "y"\ndtype = "f32"\nshape = [8]\n')
)
KINDS = [
    "bytes",
    "partial",
    "wrong_token",
    "reset",
    "array",
    "oversized",
    "bad_json",
    "bad_field",
    "bad_type",
]


def hostile(address: tuple[str, int], token: str, kind: str, rng: random.Random) -> None:
    sock = socket.create_connection(address, timeout=10)
    try:
        if kind in ("bad_json", "bad_field", "bad_type"):
            sock.sendall(encode({"id": 0, "op": "auth", "token": token}))
            sock.recv(4096)
            raw = {
                "bad_json": b"{oops\n",
                "bad_field": encode({"id": 1, "op": "hello", "progress": rng.random()}),
                "bad_type": encode({"id": 2, "op": "launch", "cubin_b64": 7, "spec": SPEC}),
            }[kind]
            sock.sendall(raw)
            sock.recv(4096)
        elif kind == "bytes":
            sock.sendall(rng.randbytes(rng.randint(1, 8192)))
        elif kind == "partial":
            sock.sendall(b'{"op": "auth", "token": "')
        elif kind == "array":
            sock.sendall(b"[]\n")
        elif kind == "oversized":
            sock.sendall(b"x" * (3 << 20))
        else:
            sock.sendall(encode({"id": 1, "op": "auth", "token": secrets.token_hex(16)}))
    except OSError:
        pass
    if kind == "reset" or rng.random() < 0.5:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--request-mb", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        token = secrets.token_hex(16)
        token_file = Path(tmp) / "token"
        token_file.write_text(token)
        token_file.chmod(0o600)
        cmd = [sys.executable, "-m", "sass_lsp.gpu.worker", "--listen", "127.0.0.1:0", "--token-file"]
        cmd += [str(token_file), "--max-request-mb", str(max(2.0, args.request_mb * 2))]
        env = worker_env({"SASS_LSP_GPU_BACKEND": "fake"})
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        try:
            host, _, port = json.loads(proc.stdout.readline())["listening"].rpartition(":")
            address = (host, int(port))
            kinds: Counter[str] = Counter()
            served = 0
            t0 = time.monotonic()
            for i in range(args.cases):
                kind = rng.choice(KINDS)
                hostile(address, token, kind, rng)
                kinds[kind] += 1
                if (i + 1) % 100 == 0:
                    with GpuRunner(address=f"{host}:{port}", token=token, timeout_s=30) as client:
                        served += client.hello().ok
            fuzz_s = time.monotonic() - t0
            alive = proc.poll() is None
            with socket.create_connection(address, timeout=60) as sock:
                stream = sock.makefile("rwb")
                stream.write(encode({"id": 0, "op": "auth", "token": token}))
                stream.flush()
                decode(stream.readline())
                pad = b64(b"FAKE:ok" + bytes(int(args.request_mb * (1 << 20) * 3 / 4)))
                request = encode({"id": 1, "op": "launch", "cubin_b64": pad, "spec": SPEC})
                t1 = time.monotonic()
                stream.write(request)
                stream.flush()
                decode(stream.readline())
                big_s = time.monotonic() - t1
        finally:
            proc.kill()
            proc.wait()
    mix = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
    print(f"hostile peers: {args.cases} in {fuzz_s:.1f} s ({mix})")
    print(f"valid client served after every 100: {served} of {args.cases // 100}")
    print(f"worker alive at the end: {alive}")
    print(f"{len(request) / (1 << 20):.1f} MB request round trip (read, relay, reply): {big_s:.3f} s")
    return 0 if alive and served == args.cases // 100 else 1


if __name__ == "__main__":
    sys.exit(main())
