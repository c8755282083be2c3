"""The ``sass-lsp`` command line: thin edges over the core (files in, files out, exit codes)."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from sass_lsp import __version__
from sass_lsp.files import write_atomic

EXAMPLES = Path(__file__).parent / "examples"
DEMO_CUBIN = EXAMPLES / "triton_add.cubin"


class CliError(Exception):
    """A user-facing failure: printed as is, exit status 2."""


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise CliError(f"{path}: cannot read: {exc.strerror}") from exc


def disassemble_file(cubin_path: Path) -> str:
    from sass_lsp.cuasm.writer import write_cuasm

    return write_cuasm(_read_bytes(cubin_path), source_name=cubin_path.name)


def assemble_text(text: str, source_name: str, *, verify: bool = True) -> bytes:
    from sass_lsp.cuasm.assembler import AssembleError, assemble_cuasm

    try:
        return assemble_cuasm(text, source_name=source_name, verify=verify)
    except AssembleError as exc:
        raise CliError(str(exc)) from exc


def cmd_disasm(args: argparse.Namespace) -> int:
    text = disassemble_file(args.cubin)
    if args.output is None or str(args.output) == "-":
        sys.stdout.write(text)
    else:
        write_atomic(args.output, text)
        print(f"wrote {args.output}", file=sys.stderr)
    return 0


def cmd_asm(args: argparse.Namespace) -> int:
    try:
        text = args.cuasm.read_text()
    except OSError as exc:
        raise CliError(f"{args.cuasm}: cannot read: {exc.strerror}") from exc
    data = assemble_text(text, str(args.cuasm), verify=not args.no_verify)
    output = args.output or args.cuasm.with_suffix(".cubin")
    if output.resolve() == args.cuasm.resolve():
        raise CliError(f"{output}: refusing to overwrite the input file")
    write_atomic(output, data)
    print(f"wrote {output} ({len(data)} bytes)", file=sys.stderr)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """Disassemble the bundled sm_90 cubin, re-assemble it, and show the round trip is exact."""
    from rich.console import Console

    console = Console(soft_wrap=True)
    original = DEMO_CUBIN.read_bytes()
    out_dir = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="sass-lsp-demo-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    console.print(f"[bold]sass-lsp {__version__} demo[/bold] on {DEMO_CUBIN.name} ({len(original)} bytes)")

    from sass_lsp.cuasm.writer import write_cuasm_stats

    t0 = time.perf_counter()
    text, stats = write_cuasm_stats(original, source_name=DEMO_CUBIN.name)
    t_disasm = time.perf_counter() - t0
    cuasm_path = out_dir / "triton_add.cuasm"
    write_atomic(cuasm_path, text)
    n_exact = stats["n_instrs"] - stats["n_hidden"] - stats["n_raw"]
    console.print(
        f"1. disassembled {stats['n_instrs']} instructions -> {cuasm_path} ({t_disasm * 1e3:.0f} ms); "
        f"{n_exact} encode bit-exact from their text, {stats['n_hidden']} carry hidden bits, "
        f"{stats['n_raw']} raw words"
    )

    t0 = time.perf_counter()
    rebuilt = assemble_text(text, str(cuasm_path))
    t_asm = time.perf_counter() - t0
    cubin_path = out_dir / "triton_add.cubin"
    write_atomic(cubin_path, rebuilt)
    console.print(f"2. re-assembled and verified with nvdisasm -> {cubin_path} ({t_asm * 1e3:.0f} ms)")

    if rebuilt != original:
        n_diff = abs(len(rebuilt) - len(original))
        n_diff += sum(a != b for a, b in zip(rebuilt, original, strict=False))
        console.print(f"[red]3. round trip differs from the original in {n_diff} bytes[/red]")
        return 1
    console.print(f"3. round trip is byte-identical ({len(rebuilt)} bytes)  [green]OK[/green]")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sass-lsp", description=__doc__)
    parser.add_argument("--version", action="version", version=f"sass-lsp {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("disasm", help="cubin -> .cuasm (CuAssembler format)")
    p.add_argument("cubin", type=Path)
    p.add_argument("-o", "--output", type=Path, help="output .cuasm (default: stdout)")
    p.set_defaults(func=cmd_disasm)

    p = sub.add_parser("asm", help=".cuasm -> cubin, verified instruction by instruction with nvdisasm")
    p.add_argument("cuasm", type=Path)
    p.add_argument("-o", "--output", type=Path, help="output cubin (default: input with .cubin suffix)")
    p.add_argument("--no-verify", action="store_true", help="skip the nvdisasm verification pass")
    p.set_defaults(func=cmd_asm)

    p = sub.add_parser("demo", help="round-trip the bundled sm_90 example")
    p.add_argument("--out", help="directory for the demo's files (default: a new temp dir)")
    p.set_defaults(func=cmd_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except CliError as exc:
        print(exc, file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 1


if __name__ == "__main__":
    sys.exit(main())
