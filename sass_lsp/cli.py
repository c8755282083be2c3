"""The ``sass-lsp`` command line: thin edges over the core (files in, files out, exit codes)."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from sass_lsp import __version__
from sass_lsp.children import exit_on_termination
from sass_lsp.files import write_atomic

EXAMPLES = Path(__file__).parent / "examples"
DEMO_CUBIN = EXAMPLES / "triton_add.cubin"


EXIT_MISSING = 3  # a tool or device the command needs (ncu, a GPU) is not there
EXIT_INTERNAL = 4  # a bug in sass-lsp: one line and a hint instead of a traceback

PROFILE_EPILOG = """exit status:
  0  the profile was written
  1  ncu ran but gave no profile (its output is printed)
  2  an input cannot be read or is invalid
  3  ncu (Nsight Compute) is not installed or not on PATH"""


class CliError(Exception):
    """A user-facing failure: ``message`` is printed as is (``file[:line:col]: error: …``), then ``hint`` on a
    ``  hint:`` line when given; exit status ``code`` (2: bad input)."""

    def __init__(self, message: str, hint: str = "", *, code: int = 2) -> None:
        super().__init__(message)
        self.hint = hint
        self.code = code

    def __str__(self) -> str:
        text = clip_lines(super().__str__())
        return f"{text}\n  hint: {self.hint}" if self.hint else text


# Exit codes, shown in each command's help (the epilogs below).
EXIT_CODES = (
    "exit codes: 0 done; 2 unreadable or invalid input, or an output it refuses to write (nothing is "
    "written then); 4 an internal error (a bug: please report it)"
)
CHECK_EXIT_CODES = (
    "exit codes: 0 no errors (warnings allowed); 1 errors found; 2 a file unreadable or unparsable "
    "(an unknown instruction, a bad line) or an arch without tables; 4 an internal error (a bug)"
)
DEBUG_ENV = "SASS_LSP_DEBUG"  # set: an internal error shows its traceback

_MAX_LINE = 400  # characters of one printed error line: a bad 1 MB line is not echoed in full


def clip_lines(text: str, limit: int = _MAX_LINE) -> str:
    """Each line of ``text`` cut to ``limit`` characters with an ellipsis."""
    return "\n".join(ln if len(ln) <= limit else ln[: limit - 1] + "…" for ln in text.split("\n"))


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise CliError(
            f"{path}: error: cannot read: {exc.strerror}", "check the path and that the file is readable"
        ) from exc


def _read_text(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as exc:
        raise CliError(
            f"{path}: error: cannot read: {exc.strerror}", "check the path and that the file is readable"
        ) from exc
    except UnicodeDecodeError as exc:
        raise CliError(
            f"{path}: error: not a text file (byte {exc.start} is not UTF-8)",
            "pass a .cuasm text file; `sass-lsp disasm K.cubin -o K.cuasm` makes one from a cubin",
        ) from exc


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return a.resolve() == b.resolve()


def check_output(output: Path, *inputs: Path) -> None:
    """Refuse an output that is one of the inputs or whose folder does not exist (before any work)."""
    for path in inputs:
        if _same_file(output, path):
            raise CliError(
                f"{output}: error: refusing to overwrite the input file",
                "name another output with -o",
            )
    folder = output.parent
    if not folder.is_dir():
        raise CliError(
            f"{output}: error: folder {folder} does not exist",
            f"create it first (mkdir -p {folder}) or name an output in an existing folder",
        )
    if output.is_dir():
        raise CliError(f"{output}: error: is a folder", "name an output file, not a folder")


def _write_output(output: Path, data: bytes | str) -> None:
    try:
        write_atomic(output, data)
    except OSError as exc:
        raise CliError(
            f"{output}: error: cannot write: {exc.strerror}", "check that the folder is writable"
        ) from exc


def _load_launch_spec(path: Path):  # noqa: ANN202 (LaunchSpec; imported lazily: the gpu package is an edge)
    from sass_lsp.gpu import SpecError, load_spec

    try:
        return load_spec(path)
    except (SpecError, OSError) as exc:
        raise CliError(f"{path}: {exc}") from exc


_NOT_A_CUBIN_HINT = (
    "disasm reads a cubin (an ELF file from ptxas, nvcc -cubin or Triton); `sass-lsp asm` assembles a .cuasm"
)


def disassemble_file(cubin_path: Path, data: bytes | None = None) -> str:
    """``cubin_path`` (or ``data`` read from it) as .cuasm text; :class:`CliError` on anything not a cubin."""
    import struct

    from sass_lsp.cuasm.writer import write_cuasm
    from sass_lsp.elf.reader import ElfError, read_cubin
    from sass_lsp.nvdisasm import NvdisasmError

    if data is None:
        data = _read_bytes(cubin_path)
    try:
        read_cubin(data)
    except ElfError as exc:
        raise CliError(f"{cubin_path}: error: not a cubin: {exc}", _NOT_A_CUBIN_HINT) from exc
    try:
        return write_cuasm(data, source_name=cubin_path.name)
    except NvdisasmError as exc:
        raise CliError(
            f"{cubin_path}: error: {exc}",
            "nvdisasm reads complete cubins only: is the file damaged or cut short?",
        ) from exc
    except (ValueError, LookupError, struct.error, UnicodeDecodeError) as exc:
        # an ELF file whose headers hold together but whose contents do not (a damaged cubin)
        raise CliError(
            f"{cubin_path}: error: malformed cubin: {type(exc).__name__}: {exc}", _NOT_A_CUBIN_HINT
        ) from exc


def assemble_text(text: str, source_name: str, *, verify: bool = True) -> bytes:
    from sass_lsp.cuasm.assembler import AssembleError, assemble_cuasm

    try:
        return assemble_cuasm(text, source_name=source_name, verify=verify)
    except AssembleError as exc:
        raise CliError(str(exc)) from exc


def cmd_disasm(args: argparse.Namespace) -> int:
    to_stdout = args.output is None or str(args.output) == "-"
    data = _read_bytes(args.cubin)
    if not to_stdout:
        check_output(args.output, args.cubin)
    text = disassemble_file(args.cubin, data)
    if to_stdout:
        sys.stdout.write(text)
    else:
        _write_output(args.output, text)
        print(f"wrote {args.output}", file=sys.stderr)
    return 0


def cmd_asm(args: argparse.Namespace) -> int:
    text = _read_text(args.cuasm)
    output = args.output or args.cuasm.with_suffix(".cubin")
    check_output(output, args.cuasm)
    data = assemble_text(text, str(args.cuasm), verify=not args.no_verify)
    _write_output(output, data)
    print(f"wrote {output} ({len(data)} bytes)", file=sys.stderr)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """Disassemble the bundled sm_90 cubin, re-assemble it, and show the round trip is exact."""
    from rich.console import Console
    from rich.markup import escape

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

    from sass_lsp.analysis import check_module
    from sass_lsp.cuasm import parse_cuasm

    module = parse_cuasm(text)[0]
    findings = check_module(module, "sm_90")
    errors = sum(f.severity == "error" for f in findings)
    console.print(
        f"4. hazard check of the control codes: {errors} errors, {len(findings) - errors} other findings"
    )

    from sass_lsp import cli_policy

    try:
        net = cli_policy.load_net(None)
        perf = cli_policy.load_perf()
    except CliError as exc:
        console.print(f"5. reorder suggestions: skipped ({escape(str(exc))})")  # escaped: it names [policy]
        return 1 if errors else 0
    from sass_lsp import app

    app.suggest(text, "sm_90", net=net, perf=perf)  # warm-up: the editor keeps the game cached
    t0 = time.perf_counter()
    found = app.suggest(text, "sm_90", net=net, perf=perf)
    took = (time.perf_counter() - t0) * 1e3
    console.print(
        f"5. reorder policy: {len(found)} suggestion{'' if len(found) == 1 else 's'} in {took:.0f} ms"
        " (ranked by the performance model: predicted, not measured)"
    )
    if not found:
        console.print("   none is predicted faster: `sass-lsp optimize` searches for one on the GPU")
    for s in found:
        console.print(f"   {s.title}")
    return _demo_gpu(console, original, text, found) or (1 if errors else 0)


def _demo_gpu(console, original: bytes, text: str, found: list) -> int:  # noqa: ANN001
    """Step 6: verify and time the best suggestion against the original, where a GPU is present."""
    from rich.markup import escape

    from sass_lsp.gpu import format_bench, load_spec, run_bench
    from sass_lsp.gpu.availability import gpu_problem
    from sass_lsp.schedule.search import apply_edits

    if not found:
        console.print("6. GPU timing: no suggestion to time")
        return 0
    problem = gpu_problem()
    if problem:
        console.print(f"6. GPU timing: skipped ({escape(problem)})")  # escaped: it names [gpu]
        return 0
    edited = apply_edits(text, [(a, b, list(new)) for a, b, new in found[0].edits])
    spec = load_spec(EXAMPLES / "triton_add.launch.toml")
    result = run_bench(original, assemble_text(edited, "suggestion 1"), spec, seeds=5, rounds=20)
    console.print(f"6. suggestion 1 on the GPU: {format_bench(result)}")
    return 0 if result.verification.get("status") == "match" else 1


def _load_cubin_or_cuasm(path: Path) -> bytes:
    """A cubin as is, or a .cuasm assembled (and verified) on the fly."""
    if path.suffix == ".cuasm":
        return assemble_text(_read_text(path), str(path))
    return _read_bytes(path)


def cmd_bench(args: argparse.Namespace) -> int:
    """Verify EDIT against ORIG on fresh inputs, then time both interleaved; exit 0 only if outputs match."""
    from rich.progress import Progress

    from sass_lsp.gpu import bench_to_json, format_bench, run_bench

    spec = _load_launch_spec(args.launch)
    orig, edit = _load_cubin_or_cuasm(args.orig), _load_cubin_or_cuasm(args.edit)
    with Progress(transient=True, disable=args.json) as bar:
        task = bar.add_task("bench", total=None)

        def progress(phase: str, done: int, total: int) -> None:
            bar.update(task, description=phase, completed=done, total=total or None)

        result = run_bench(orig, edit, spec, seeds=args.seeds, rounds=args.rounds, progress=progress)
    print(bench_to_json(result) if args.json else format_bench(result))
    return 0 if result.verification.get("status") == "match" else 1


def cmd_spec_from_json(args: argparse.Namespace) -> int:
    import json

    from sass_lsp.elf.reader import ElfError, read_cubin
    from sass_lsp.gpu import SpecError, spec_from_json, write_spec

    cubin_path = args.cubin or args.json_file.with_suffix(".cubin")
    json_text = _read_text(args.json_file)
    if args.output is not None:
        check_output(args.output, args.json_file, cubin_path)
    try:
        raw = json.loads(json_text)
    except json.JSONDecodeError as exc:
        raise CliError(
            f"{args.json_file}:{exc.lineno}:{exc.colno}: error: invalid JSON: {exc.msg}",
            "fix the JSON syntax at that position (a corpus JSON is one object)",
        ) from exc
    cubin = _read_bytes(cubin_path)
    try:
        read_cubin(cubin)
    except ElfError as exc:
        raise CliError(
            f"{cubin_path}: error: not a cubin: {exc}",
            "pass the kernel's cubin with --cubin (default: NAME.cubin beside NAME.json)",
        ) from exc
    try:
        spec_text = write_spec(spec_from_json(raw, cubin))
    except SpecError as exc:
        raise CliError(f"{args.json_file}: error: {exc}", exc.hint or "fix that field of the JSON") from exc
    if args.output is None:
        sys.stdout.write(spec_text)
    else:
        _write_output(args.output, spec_text)
        print(f"wrote {args.output}", file=sys.stderr)
    return 0


def cmd_capture(args: argparse.Namespace) -> int:
    """Run a Python program and record every Triton kernel it launches (cubin, .cuasm, launch spec)."""
    from sass_lsp.gpu.capture import capture_main

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    return capture_main(command, args.out, snapshot=args.snapshot)


def cmd_worker(args: argparse.Namespace) -> int:
    from sass_lsp.gpu.worker import main as worker_main

    argv = ["--timeout", str(args.timeout)]
    if args.listen:
        argv += ["--listen", args.listen, "--token-file", args.token_file or ""]
    return worker_main(argv)


def cmd_profile(args: argparse.Namespace) -> int:
    import dataclasses
    import json

    from sass_lsp.gpu.profile import find_ncu, profile

    cubin, spec = _load_cubin_or_cuasm(args.kernel), _load_launch_spec(args.launch)
    ncu = find_ncu()
    if ncu is None:
        raise CliError(
            "profile: error: ncu (Nsight Compute) not found: nothing profiled, nothing written",
            "install Nsight Compute (part of the CUDA Toolkit, or "
            "https://developer.nvidia.com/nsight-compute) and put its `ncu` on PATH",
            code=EXIT_MISSING,
        )
    result = profile(cubin, spec, ncu=ncu)
    if not result.ok:
        raise CliError(f"profile: error: {result.message}\n  nothing written", code=1)
    output = args.output or args.kernel.with_suffix(".profile.json")
    write_atomic(output, json.dumps(dataclasses.asdict(result), indent=1))
    print(f"wrote {output}", file=sys.stderr)
    return 0


def _say(message: str) -> None:
    print(f"sass-lsp: {message}", file=sys.stderr)


def cmd_calibrate(args: argparse.Namespace) -> int:
    """Measure minimum safe stalls on the attached GPU; writes the raw data and the measured table."""
    import json

    from sass_lsp.gpu.calibrate import CalibrationError, calibrate, merge_measured
    from sass_lsp.gpu.runner import GpuRunner

    runner = GpuRunner(timeout_s=120)
    try:
        hello = runner.hello()
        if not hello.ok:
            print(f"calibrate: {hello.reason}; nothing measured")
            return 0
        seeds = list(range(args.seeds))

        def verify(reference: bytes, variant: bytes, spec: object) -> str:
            reply = runner.verify(reference, variant, spec, seeds)  # type: ignore[arg-type]
            if not reply.ok:
                return (reply.error or {}).get("kind", "error")
            return reply.result.get("status", "error")

        try:
            raw = calibrate(args.arch, verify, progress=_say)
        except CalibrationError as exc:
            raise CliError(f"calibrate: {exc}") from exc
        raw["device"] = hello.result
    finally:
        runner.close()
    args.out.mkdir(parents=True, exist_ok=True)
    raw_path = args.out / f"calibrate_{args.arch}_raw.json"
    write_atomic(raw_path, json.dumps(raw, indent=1) + "\n")
    table_path = args.table or Path(__file__).parent / "isa" / "data" / f"semantics_{args.arch}.json"
    merged = merge_measured(json.loads(table_path.read_text()), raw, raw_path.name)
    write_atomic(table_path, json.dumps(merged, indent=1, sort_keys=True) + "\n")
    print(f"wrote {raw_path}; measured rows merged into {table_path}", file=sys.stderr)
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from sass_lsp.server import run

    return run(args)


def cmd_check(args: argparse.Namespace) -> int:
    from sass_lsp.analysis import run_check

    output, code = run_check([str(p) for p in args.files], args.arch, args.format)
    sys.stdout.write(output if output.endswith("\n") or not output else output + "\n")
    return code


class HelpFormatter(argparse.HelpFormatter):
    """Each option's default after its help (unless the help already says what it is, or there is none: a
    flag, a required option); descriptions and epilogs keep their line breaks, each line wrapped alone."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        out = []
        for line in text.splitlines():
            lead = indent + line[: len(line) - len(line.lstrip())]
            out.append(
                textwrap.fill(
                    line.strip(),
                    width,
                    initial_indent=lead,
                    subsequent_indent=lead + "   " * (lead != indent),
                )
            )
        return "\n".join(out)

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if (
            "default" in text
            or action.default is None
            or action.default is False
            or action.default is argparse.SUPPRESS
            or action.required
            or not action.option_strings
        ):
            return text
        return text + " (default: %(default)s)"


def _command(  # noqa: ANN202
    sub: argparse._SubParsersAction, name: str, summary: str, description: str, epilog: str | None = None
):
    """A sub-command: ``summary`` in ``sass-lsp --help``, ``description`` (what it does) in its own help."""
    return sub.add_parser(
        name, help=summary, description=description, epilog=epilog, formatter_class=HelpFormatter
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sass-lsp",
        description="A language server, checker and assembler for NVIDIA SASS (.cuasm files), with GPU "
        "verification and timing of schedule edits. `sass-lsp COMMAND --help` describes a command.",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"sass-lsp {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    from sass_lsp.server import add_arguments as add_server_arguments

    p = _command(
        sub,
        "serve",
        "the language server (stdio, or loopback TCP)",
        "Run the SASS (.cuasm) language server: over stdin/stdout, as editors start it, or on a loopback "
        "TCP port (--tcp) for a client that connects to it.",
    )
    add_server_arguments(p)
    p.set_defaults(func=cmd_serve)

    p = _command(
        sub,
        "check",
        "hazard check: file:line:col: severity: CODE message",
        "Check the control codes of .cuasm files for hazards (missing waits, short stalls, barrier misuse) "
        "and print one line per finding.",
        epilog=CHECK_EXIT_CODES,
    )
    p.add_argument("files", type=Path, nargs="+", help=".cuasm files to check")
    p.add_argument("--arch", help="target architecture, e.g. sm_90 (default: the one the file declares)")
    p.add_argument(
        "--format",
        choices=["text", "json", "sarif"],
        default="text",
        help="text: one line per finding; json: a list of findings; sarif: SARIF 2.1 for code-scanning tools",
    )
    p.set_defaults(func=cmd_check)

    p = _command(
        sub,
        "disasm",
        "cubin -> .cuasm (CuAssembler format)",
        "Disassemble a cubin into .cuasm text (the CuAssembler format) that `sass-lsp asm` assembles back.",
        epilog=EXIT_CODES,
    )
    p.add_argument("cubin", type=Path, help="the cubin (ELF) to disassemble")
    p.add_argument("-o", "--output", type=Path, help="output .cuasm; - for stdout (default: stdout)")
    p.set_defaults(func=cmd_disasm)

    p = _command(
        sub,
        "asm",
        ".cuasm -> cubin, verified instruction by instruction with nvdisasm",
        "Assemble a .cuasm file into a cubin. Each instruction's encoding is checked with nvdisasm unless "
        "--no-verify is given.",
        epilog=EXIT_CODES,
    )
    p.add_argument("cuasm", type=Path, help="the .cuasm file to assemble")
    p.add_argument("-o", "--output", type=Path, help="output cubin (default: the input with a .cubin suffix)")
    p.add_argument(
        "--no-verify",
        action="store_true",
        help="skip the nvdisasm check of each encoding (faster; use when nvdisasm is not installed)",
    )
    p.set_defaults(func=cmd_asm)

    p = _command(
        sub,
        "bench",
        "verify an edit against the original on the GPU and time both",
        "Run the original and the edited kernel on fresh inputs, compare every output bit for bit, then time "
        "both interleaved and print the speedup with a 95% confidence interval. Exit 0 only when the outputs "
        "match. Needs an NVIDIA GPU and driver, and `pip install 'sass-lsp[gpu]'`.",
    )
    p.add_argument("orig", type=Path, help="original .cubin or .cuasm")
    p.add_argument("edit", type=Path, help="edited .cubin or .cuasm")
    p.add_argument(
        "--launch", type=Path, required=True, help="launch spec K.launch.toml (grid, block, buffers)"
    )
    p.add_argument(
        "--seeds", type=int, default=5, help="fresh input sets the outputs are compared on; more catch more"
    )
    p.add_argument(
        "--rounds", type=int, default=40, help="timing rounds; more narrow the confidence interval"
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON instead of a table")
    p.set_defaults(func=cmd_bench)

    p = _command(
        sub,
        "spec-from-json",
        "corpus NAME.json (+ NAME.cubin) -> NAME.launch.toml",
        "Write a launch spec (K.launch.toml, what bench, profile and optimize read) from a captured launch "
        "description NAME.json and its cubin.",
        epilog=EXIT_CODES,
    )
    p.add_argument("json_file", type=Path, help="the launch description NAME.json")
    p.add_argument("--cubin", type=Path, help="the kernel's cubin (default: NAME.cubin beside the JSON)")
    p.add_argument("-o", "--output", type=Path, help="output launch spec (default: stdout)")
    p.set_defaults(func=cmd_spec_from_json)

    p = _command(
        sub,
        "capture",
        "run a Python program and record every Triton kernel it launches",
        "Run a Python program and write, for every Triton kernel it launches, the cubin, its .cuasm and a "
        "launch spec, so that bench, profile and optimize can run the kernel alone.",
    )
    p.add_argument("--out", default=".", help="output folder (created if missing)")
    p.add_argument("--snapshot", action="store_true", help="also save each buffer's inputs (NAME.inputs.npz)")
    p.add_argument(
        "command", nargs=argparse.REMAINDER, help="the program to run, after --: -- python prog.py ARGS..."
    )
    p.set_defaults(func=cmd_capture)

    p = _command(
        sub,
        "worker",
        "GPU worker: JSON lines on stdio, or TCP on loopback with a token",
        "Run the GPU worker that bench, optimize and the editor send kernels to: JSON lines on stdin/stdout, "
        "or a loopback TCP port (--listen) that accepts only clients presenting the token in --token-file.",
    )
    p.add_argument(
        "--listen", metavar="HOST:PORT", help="serve on this loopback TCP address (default: stdio)"
    )
    p.add_argument(
        "--token-file",
        help="file holding the shared token TCP clients must send (default: none; required with --listen)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        help="with --listen: seconds a request may run before the worker is restarted (a hung kernel); on "
        "stdio the parent process keeps the watchdog",
    )
    p.set_defaults(func=cmd_worker)

    p = _command(
        sub,
        "profile",
        "per-instruction stall sampling with Nsight Compute (ncu)",
        "Profile one launch of the kernel with Nsight Compute and write the warp-stall samples and executed "
        "counts of each SASS instruction to K.profile.json, which the editor shows on hover. Needs `ncu` "
        "on PATH and an NVIDIA GPU.",
    )
    p.epilog = PROFILE_EPILOG
    p.add_argument("kernel", type=Path, help=".cubin or .cuasm")
    p.add_argument("--launch", type=Path, required=True, help="launch spec K.launch.toml")
    p.add_argument(
        "-o", "--output", type=Path, help="output JSON (default: K.profile.json beside the kernel)"
    )
    p.set_defaults(func=cmd_profile)

    p = _command(
        sub,
        "calibrate",
        "measure minimum safe stalls per producer class on the GPU",
        "Measure, with microbenchmarks on the attached GPU, the smallest stall each class of producer "
        "instruction needs, and merge the figures into the architecture's semantics table (used by check). "
        "Without a GPU it says so and exits 0.",
    )
    p.add_argument("--arch", default="sm_90", help="architecture to calibrate")
    p.add_argument(
        "--seeds", type=int, default=3, help="input sets each microbenchmark is verified on; more are surer"
    )
    p.add_argument("--out", type=Path, default=Path("."), help="directory for the raw measurements")
    p.add_argument(
        "--table", type=Path, help="semantics table to merge into (default: the package's, for --arch)"
    )
    p.set_defaults(func=cmd_calibrate)

    p = _command(
        sub,
        "demo",
        "round-trip the bundled sm_90 example",
        "Disassemble the bundled sm_90 example, assemble it back byte for byte, check it, show the reorder "
        "policy's suggestions and, where a GPU is present, time the first one.",
    )
    p.add_argument("--out", help="directory for the demo's files (default: a new temporary directory)")
    p.set_defaults(func=cmd_demo)

    from sass_lsp import cli_policy  # suggest, optimize, train: the reorder policy's commands

    cli_policy.add_parsers(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    exit_on_termination()  # a killed command removes its temp files and children as Ctrl-C does
    try:
        return args.func(args)
    except CliError as exc:
        print(exc, file=sys.stderr)
        return exc.code
    except BrokenPipeError:
        return 1
    except Exception as exc:  # a bug: one line and a hint, not a traceback, unless asked for
        if os.environ.get(DEBUG_ENV):
            raise
        print(
            clip_lines(f"sass-lsp {args.command}: internal error: {type(exc).__name__}: {exc}"),
            file=sys.stderr,
        )
        print(
            f"  hint: this is a bug in sass-lsp; {DEBUG_ENV}=1 shows the traceback for a report",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


if __name__ == "__main__":  # the package's module, not this copy: its CliError is the one commands raise
    from sass_lsp.cli import main as package_main

    sys.exit(package_main())
