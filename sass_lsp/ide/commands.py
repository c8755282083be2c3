"""Feature: assemble and disassemble commands, as pure functions (bytes or text in, values out). The
server does the file IO around them (reading the cubin, writing outputs atomically).
"""

from __future__ import annotations

from dataclasses import dataclass

from sass_lsp.ide.diagnostics import Diag


@dataclass(frozen=True)
class AssembleResult:
    cubin: bytes | None
    diagnostics: tuple[Diag, ...]


def disassemble(cubin: bytes, source_name: str) -> str:
    from sass_lsp.cuasm.writer import write_cuasm

    return write_cuasm(cubin, source_name=source_name)


def assemble(text: str, source_name: str, verify: bool = True) -> AssembleResult:
    from sass_lsp.cuasm.assembler import AssembleError, assemble_cuasm

    try:
        data = assemble_cuasm(text, source_name=source_name, verify=verify)
    except AssembleError as exc:
        diags = tuple(_diag(d) for d in exc.diagnostics)
        return AssembleResult(None, diags)
    return AssembleResult(data, ())


def _diag(d: object) -> Diag:
    line = max(0, int(getattr(d, "line", 1)) - 1)
    col = max(0, int(getattr(d, "col", 1)) - 1)
    severity = str(getattr(d, "severity", "error"))
    severity = {"note": "information"}.get(severity, severity)
    message = str(getattr(d, "message", d))
    hint = str(getattr(d, "hint", "") or "")
    if hint:
        message += f"\nhint: {hint}"
    return Diag(line, col, line, col + 1, severity, message, "assemble", "sass-lsp assemble")
