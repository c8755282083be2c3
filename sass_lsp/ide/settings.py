"""Feature: settings. Raw client options (initializationOptions or the ``sass-lsp`` configuration section)
are structured once into :class:`Settings`; unknown keys and bad values become warnings and defaults.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

SEVERITIES = ("error", "warning", "information", "hint", "off")


@dataclass(frozen=True)
class Settings:
    arch: str | None = None
    """Architecture override, e.g. ``"sm_90"``; ``None`` reads it from ``.__elf_flags`` / ``.target``."""

    gpuDevice: int = 0
    """CUDA device that "Time on GPU" and "Optimize schedule" run on, counted among the devices
    ``CUDA_VISIBLE_DEVICES`` leaves visible to the server (0: the first); the status bar says whether it
    answers. Both need an NVIDIA driver and ``sass-lsp[gpu]``."""

    optimizeBudgetS: float = 60.0
    """GPU seconds that "Optimize schedule" spends screening candidates (then it confirms the best)."""

    optimizeUniformShare: float = 0.5
    """Share of the 16 moves "Optimize schedule"'s surrogate walk draws uniformly instead of from the policy
    (0-1, as ``optimize --uniform-share``): higher explores schedules the policy would not propose, 0 follows
    the policy only."""

    policyModelPath: str | None = None
    """Checkpoint of the reorder policy (a directory; relative to the workspace folder); ``None``: the one
    bundled with sass-lsp. Suggestions need the ``[policy]`` extra (torch) in the server's Python."""

    hazardSeverities: Mapping[str, str] = field(default_factory=dict)
    """Per hazard-rule severity override: rule code -> error | warning | information | hint | off."""

    diagnosticsDebounceMs: int = 150
    """Delay after the last edit before the slow diagnostics (the encoder on new instructions, the hazard
    checker) are recomputed; parse errors and cached results are published at once (milliseconds, 0-5000)."""

    encoderDiagnostics: bool = True
    """Report instructions the encoder cannot encode for the file's arch."""

    hazardDiagnostics: bool = True
    """Report hazards found by the checker (when ``sass_lsp.analysis`` is installed)."""

    inlayStallHints: bool = False
    """Show each instruction's stall cycles as an inlay hint at the end of the line."""

    formatRenumberAddresses: bool = True
    """Formatting rewrites the ``/*0000*/`` address comments to the instruction's pc."""


_ARCH = re.compile(r"sm_\d{2,3}[af]?$")

REMOVED = {
    "gpuTiming": "GPU timing is offered wherever a K.launch.toml is beside the file; remove the setting",
}


def _check(name: str, value: Any) -> Any:
    if name == "arch":
        if value is None or value == "":
            return None  # clients send "" for "read it from the file"
        if isinstance(value, str) and _ARCH.match(value):
            return value
        raise ValueError("expected an arch such as 'sm_90'")
    if name in (
        "encoderDiagnostics",
        "hazardDiagnostics",
        "inlayStallHints",
        "formatRenumberAddresses",
    ):
        if isinstance(value, bool):
            return value
        raise ValueError("expected true or false")
    if name == "gpuDevice":
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
        raise ValueError("expected a device index >= 0")
    if name == "optimizeBudgetS":
        if isinstance(value, int | float) and not isinstance(value, bool) and 0 < value <= 3600:
            return float(value)
        raise ValueError("expected seconds between 0 and 3600")
    if name == "optimizeUniformShare":
        if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1:
            return float(value)
        raise ValueError("expected a share between 0 and 1")
    if name == "policyModelPath":
        if value is None or isinstance(value, str):
            return value or None
        raise ValueError("expected a path")
    if name == "diagnosticsDebounceMs":
        if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 5000:
            return int(value)
        raise ValueError("expected milliseconds between 0 and 5000")
    if name == "hazardSeverities":
        if not isinstance(value, Mapping):
            raise ValueError("expected an object mapping rule codes to severities")
        bad = {k: v for k, v in value.items() if v not in SEVERITIES}
        if bad:
            raise ValueError(f"unknown severities {bad}; use one of {', '.join(SEVERITIES)}")
        return dict(value)
    raise KeyError(name)


def settings_from_raw(raw: Any, base: Settings | None = None) -> tuple[Settings, list[str]]:
    """Structure raw options; return the settings and one warning per ignored key or value."""
    base = base or Settings()
    if raw is None:
        return base, []
    if isinstance(raw, Mapping) and isinstance(raw.get("sass-lsp"), Mapping):
        raw = raw["sass-lsp"]
    if not isinstance(raw, Mapping):
        return base, [f"sass-lsp settings must be an object, got {type(raw).__name__}; using defaults"]
    names = {f.name for f in dataclasses.fields(Settings)}
    changes: dict[str, Any] = {}
    warnings: list[str] = []
    for key, value in raw.items():
        if key in REMOVED:
            warnings.append(f"sass-lsp: setting '{key}' no longer exists: {REMOVED[key]}")
            continue
        if key not in names:
            warnings.append(f"sass-lsp: unknown setting '{key}' ignored")
            continue
        try:
            changes[key] = _check(key, value)
        except ValueError as exc:
            warnings.append(f"sass-lsp: setting '{key}' = {value!r} ignored: {exc}")
    return dataclasses.replace(base, **changes), warnings


def settings_doc() -> dict[str, str]:
    """Setting name -> its docstring (for the client's package.json and the README)."""
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(Settings))
    docs: dict[str, str] = {}
    body = tree.body[0].body  # type: ignore[attr-defined]
    for node, nxt in zip(body, body[1:], strict=False):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(nxt, ast.Expr)
            and isinstance(nxt.value, ast.Constant)
        ):
            docs[node.target.id] = str(nxt.value.value)  # type: ignore[union-attr]
    return docs
