"""The steps every use case starts with: a ``.cuasm`` text's arch and kernels, its launch spec, its cubin."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sass_lsp.app.errors import AppError

if TYPE_CHECKING:
    from sass_lsp.gpu import LaunchSpec


def kernel_arch(text: str, source: str, kernel: str | None = None) -> str:
    """The arch of the ``.cuasm`` ``text`` (named ``source`` in messages). :class:`AppError` when it does
    not parse (``parse_error``, at the first error), has no kernel or no ``kernel`` of that name
    (``no_kernel``)."""
    from sass_lsp.cuasm import parse_cuasm
    from sass_lsp.cuasm.assembler import module_arch

    module, diags = parse_cuasm(text)
    errors = [d for d in diags if d.severity == "error"]
    if errors:
        d = errors[0]
        raise AppError("parse_error", f"{source}:{d.line}:{d.col}: error: {d.message}", d.hint or "")
    kernels = [
        s.name[len(".text.") :] for s in module.sections if s.name.startswith(".text.") and s.instructions
    ]
    if not kernels:
        raise AppError(
            "no_kernel",
            f"{source}: error: no kernel: no .text.<kernel> section with instructions",
            "pass a .cuasm made by `sass-lsp disasm K.cubin -o K.cuasm`",
        )
    if kernel is not None and kernel not in kernels:
        raise AppError(
            "no_kernel",
            f"{source}: error: no kernel {kernel!r} in the file",
            f"--kernel takes one of: {', '.join(kernels)}",
        )
    return module_arch(module)


def launch_spec(launch: Path | LaunchSpec) -> LaunchSpec:
    """The launch spec at ``launch`` (a spec passes through); :class:`AppError` ``spec_error`` when it
    cannot be read."""
    from sass_lsp.gpu import SpecError, load_spec

    if not isinstance(launch, Path):
        return launch
    try:
        return load_spec(launch)
    except (SpecError, OSError) as exc:
        raise AppError("spec_error", f"{launch}: {exc}") from exc


def assemble(text: str, source: str, side: str = "original") -> bytes:
    """The cubin of ``text``, verified by nvdisasm; :class:`AppError` ``assemble_error`` (``side`` says which
    text, ``diagnostics`` in editor terms) when it does not assemble."""
    from sass_lsp.ide import commands

    result = commands.assemble(text, source)
    if result.cubin is None:
        errors = [d for d in result.diagnostics if d.severity == "error"]
        # the assembler's own words (``Diagnostic.format``): the editor's Diag counts from 0, hint appended
        where = [
            f"{source}:{d.line + 1}:{d.col + 1}: error: " + d.message.replace("\nhint: ", "\n  hint: ")
            for d in errors[:20]
        ]
        message = "\n".join(where) or f"{source}: does not assemble"
        raise AppError("assemble_error", message, side=side, diagnostics=result.diagnostics)
    return result.cubin
