"""Report formatters (text, JSON, SARIF 2.1.0) and ``run_check`` for the ``sass-lsp check`` command.

``run_check`` is the CLI edge: it reads files. Everything else here is pure.
"""

from __future__ import annotations

import json
from pathlib import Path

from sass_lsp.analysis.check import check_module
from sass_lsp.analysis.findings import RULES, Finding
from sass_lsp.isa.semantics import UnsupportedArch

_SARIF_LEVEL = {"error": "error", "warning": "warning", "information": "note", "hint": "note"}


def format_text(results: list[tuple[str, list[Finding]]]) -> str:
    lines = []
    for path, findings in results:
        for f in findings:
            lines.append(f"{path}:{f.line}:{f.col}: {f.severity}: {f.code} {f.message}")
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
    """Check .cuasm files (arch from each file's header unless given).

    Exit code: 0 no errors, 1 errors found, 2 a file unreadable/unparsable.
    """
    from sass_lsp.cuasm.assembler import module_arch
    from sass_lsp.cuasm.parser import parse_cuasm

    results: list[tuple[str, list[Finding]]] = []
    code = 0
    for path in paths:
        try:
            text = Path(path).read_text()
        except (OSError, UnicodeDecodeError) as err:
            results.append((path, [Finding("SASS015", "error", 1, 1, 1, 1, f"cannot read file: {err}")]))
            code = 2
            continue
        module, diags = parse_cuasm(text)
        # Out-of-range control fields are a checker rule (SASS012), not an unparsable file.
        findings = [
            Finding(
                "SASS012" if "control field" in d.message else "SASS015",
                "error",
                d.line,
                d.col,
                d.line,
                d.col + 1,
                d.message,
            )
            for d in diags
            if d.severity == "error"
        ]
        if any(f.code == "SASS015" for f in findings):
            code = 2
        try:
            findings += check_module(module, arch or module_arch(module))
        except UnsupportedArch as err:
            return f"error: {err}\n", 2
        results.append((path, sorted(findings, key=lambda f: (f.line, f.col, f.code))))
    if code == 0 and any(f.severity == "error" for _, fs in results for f in fs):
        code = 1
    return FORMATTERS[fmt](results), code
