"""Launch one kernel once from a cubin and a launch spec, in this process: the program ``ncu`` profiles.

    python -m sass_lsp.gpu.launch_once KERNEL.cubin K.launch.toml [--seed N] [--repeats N]

Prints the session's launch result as one JSON line. Not used for verification (that runs in the worker).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from sass_lsp.gpu.spec import SpecError, load_spec


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sass_lsp.gpu.launch_once", description=__doc__.splitlines()[0]
    )
    parser.add_argument("cubin", type=Path)
    parser.add_argument("spec", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args(argv)
    try:
        spec = load_spec(args.spec)
    except SpecError as exc:
        print(f"{args.spec}: {exc}", file=sys.stderr)
        return 2
    from sass_lsp.gpu.device import CudaDevice
    from sass_lsp.gpu.session import Session

    result = Session(CudaDevice()).launch(args.cubin.read_bytes(), spec, seed=args.seed, repeats=args.repeats)
    print(json.dumps(result))
    return 0 if result.get("status") == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
