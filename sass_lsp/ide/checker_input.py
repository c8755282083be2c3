"""The checker's input: a :class:`~sass_lsp.model.Module` holding one kernel's section, built from the
index's cached lines (1-based lines and columns, exactly as ``parse_cuasm`` would give them) so that the
per-kernel analysis can be re-run for the edited kernel only (and the timeline for one stretch of it).
"""

from __future__ import annotations

from sass_lsp.ide.index import DocumentIndex, Kernel, instruction_hidden
from sass_lsp.model import Directive, Instruction, Label, Module, SectionBlock


def kernel_module(
    index: DocumentIndex, kernel: Kernel, start: int | None = None, end: int | None = None
) -> Module:
    """The kernel's section as a module; with ``start``/``end``, only the items on those lines."""
    sec = kernel.section
    block = SectionBlock(sec.name, sec.line + 1, sec.type_text)
    first = sec.line + 1 if start is None else max(start, sec.line + 1)
    last = sec.end_line if end is None else min(end, sec.end_line)
    for line in range(first, last):
        info = index.infos[line]
        text = index.lines[line]
        if info.kind == "label" and info.label:
            col = text.index(info.label)
            block.items.append(Label(info.label, line + 1, col + 1))
        elif info.kind == "instruction" and line in index.pcs:
            code_end = len(text) if info.comment_start < 0 else info.comment_start
            hidden, raw = instruction_hidden(text[code_end:]) if info.comment_start >= 0 else (0, None)
            block.items.append(
                Instruction(
                    info.ctrl_text,
                    text[info.text_start : code_end].strip(),
                    line + 1,
                    info.ctrl_start + 2,
                    info.text_start + 1,
                    hidden,
                    raw,
                )
            )
        elif info.kind == "directive" and info.directive and not info.directive.startswith(".__"):
            col = text.index(info.directive)
            block.items.append(
                Directive(info.directive, info.args.strip(), line + 1, col + 1, info.args_col + 1)
            )
    return Module(sections=[block])
