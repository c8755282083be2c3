"""Diagnostics in editor terms: 1-based line and column, message and a hint for the fix."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Diagnostic:
    line: int  # 1-based
    col: int  # 1-based
    message: str
    hint: str = ""
    severity: str = "error"  # "error" | "warning" | "note"

    def format(self, file: str = "<input>") -> str:
        text = f"{file}:{self.line}:{self.col}: {self.severity}: {self.message}"
        return f"{text}\n  hint: {self.hint}" if self.hint else text


def has_errors(diags: list[Diagnostic]) -> bool:
    return any(d.severity == "error" for d in diags)
