"""Report formatters (text, JSON, SARIF 2.1.0) and ``run_check`` for the ``sass-lsp check`` command.

``run_check`` is the CLI edge: it reads files. Everything else here is pure.
"""

from __future__ import annotations

import json
from pathlib import Path

from sass_lsp.analysis.check import check_module
from sass_lsp.analysis.findings import RULES, Finding
from sass_lsp.isa.semantics import UnsupportedArch
from sass_lsp.model import Diagnostic

_SARIF_LEVEL = {"error": "error", "warning": "warning", "information": "note", "hint": "note"}


def format_text(results: list[tuple[str, list[Finding]]]) -> str:
    lines = []
    for path, findings in results:
        for f in findings:
            lines.append(f"{path}:{f.line}:{f.col}: {f.severity}: {f.code} {f.message}")
            if f.hint:
                lines.append(f"  hint: {f.hint}")
            lines.extend(f"{path}:{r.line}: note: {r.message}" for r in f.related)
    return "\n".join(lines) + ("\n" if lines else "")


def _obj(path: str, f: Finding) -> dict:
    return {
        "file": path,
        "line": f.line,
        "column": f.col,
        "end_line": f.end_line,
        "end_column": f.end_col,
        "severity": f.severity,
        "code": f.code,
        "message": f.message,
        "kernel": f.kernel,
        "related": [{"line": r.line, "message": r.message} for r in f.related],
        "hint": f.hint,
    }


def format_json(results: list[tuple[str, list[Finding]]]) -> str:
    return json.dumps([_obj(p, f) for p, fs in results for f in fs], indent=1) + "\n"


def format_sarif(results: list[tuple[str, list[Finding]]]) -> str:
    rules = [
        {
            "id": r.code,
            "shortDescription": {"text": r.title},
            "defaultConfiguration": {"level": _SARIF_LEVEL[r.severity]},
            "helpUri": "sass_lsp/analysis/RULES.md#" + r.code.lower(),
        }
        for r in RULES.values()
    ]
    out = []
    for path, findings in results:
        for f in findings:
            loc = {
                "physicalLocation": {
                    "artifactLocation": {"uri": path},
                    "region": {
                        "startLine": f.line,
                        "startColumn": f.col,
                        "endLine": f.end_line,
                        "endColumn": f.end_col,
                    },
                }
            }
            res = {
                "ruleId": f.code,
                "level": _SARIF_LEVEL[f.severity],
                "message": {"text": f.message},
                "locations": [loc],
            }
            if f.related:
                res["relatedLocations"] = [
                    {
                        "id": i,
                        "message": {"text": r.message},
                        "physicalLocation": {
                            "artifactLocation": {"uri": path},
                            "region": {"startLine": r.line},
                        },
                    }
                    for i, r in enumerate(f.related)
                ]
            out.append(res)
    doc = {
        "version": "2.1.0",
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "runs": [{"tool": {"driver": {"name": "sass-lsp", "rules": rules}}, "results": out}],
    }
    return json.dumps(doc, indent=1) + "\n"


FORMATTERS = {"text": format_text, "json": format_json, "sarif": format_sarif}


def run_check(paths: list[str], arch: str | None = None, fmt: str = "text") -> tuple[str, int]:
    """Check .cuasm files (arch from each file's header unless given): the hazard rules, plus what the
    assembler would reject (unknown instructions, undefined labels) as SASS015.

    Exit code: 0 no errors, 1 errors found, 2 a file unreadable/unparsable (or an arch without tables).
    """
    results: list[tuple[str, list[Finding]]] = []
    code = 0
    for path in paths:
        try:
            text = Path(path).read_text()
        except OSError as err:
            message = f"cannot read file: {err.strerror}"
            results.append((path, [Finding("SASS015", "error", 1, 1, 1, 1, message, hint=_READ_HINT)]))
            code = 2
            continue
        except UnicodeDecodeError as err:
            message = f"not a text file (byte {err.start} is not UTF-8)"
            results.append((path, [Finding("SASS015", "error", 1, 1, 1, 1, message, hint=_TEXT_HINT)]))
            code = 2
            continue
        try:
            findings = check_text(text, arch)
        except UnsupportedArch as err:
            return f"{path}: error: {err}\n  hint: {_ARCH_HINT}\n", 2
        if any(f.code == "SASS015" for f in findings):
            code = 2
        results.append((path, findings))
    if code == 0 and any(f.severity == "error" for _, fs in results for f in fs):
        code = 1
    return FORMATTERS[fmt](results), code


_ARCH_HINT = "pass --arch with an arch that has tables, e.g. --arch sm_90"
_READ_HINT = "check the path and that the file is readable"
_TEXT_HINT = "pass a .cuasm text file; `sass-lsp disasm K.cubin -o K.cuasm` makes one from a cubin"


def check_text(text: str, arch: str | None = None) -> list[Finding]:
    """Every finding of ``run_check`` for one file's text, sorted: parse errors, the assembler's
    rejections and the hazard rules. Raises ``UnsupportedArch`` for an arch without tables."""
    from sass_lsp.cuasm.assembler import instruction_diagnostics, module_arch
    from sass_lsp.cuasm.encoding import default_encoder
    from sass_lsp.cuasm.parser import parse_cuasm

    module, diags = parse_cuasm(text)
    errors = [d for d in diags if d.severity == "error"]
    if not any(s.name.startswith(".text.") and s.instructions for s in module.sections):
        message = "no kernel: no .text.<kernel> section with instructions"
        none = Finding("SASS015", "error", 1, 1, 1, 1, message, hint=_NO_KERNEL_HINT)
        return [none, *(_parse_finding(d) for d in errors)]
    if arch is None and "flags" not in module.elf:
        raise UnsupportedArch("the file has no .__elf_flags header line to read the arch from")
    arch = arch or module_arch(module)
    found = check_module(module, arch)
    # A bad control field is reported by the checker, which kept the instruction (SASS012/SASS015).
    ctrl_lines = {f.line for f in found if f.code in ("SASS012", "SASS015")}
    encoder = default_encoder(arch)
    if encoder is not None:
        errors += instruction_diagnostics(module, encode=encoder)
    parse = [_parse_finding(d) for d in errors if not (d.line in ctrl_lines and "control field" in d.message)]
    # a branch the assembler rejects (undefined label) is not also a CFG gap
    rejected = {f.line for f in parse}
    found = [f for f in found if not (f.code == "SASS014" and f.line in rejected)]
    return sorted(parse + found, key=lambda f: (f.line, f.col, f.code))


_NO_KERNEL_HINT = "check a .cuasm made by `sass-lsp disasm` (or CuAssembler)"


def _parse_finding(d: Diagnostic) -> Finding:
    return Finding("SASS015", "error", d.line, d.col, d.line, d.col + 1, d.message, hint=d.hint)
