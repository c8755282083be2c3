"""Feature: static analysis of SASS kernels: CFG, scoreboard/latency hazards, issue timeline, reports.

Entry points: :func:`check_module`, :func:`timeline`, :func:`run_check`, formatters. No IO except
``run_check``; no pygls/torch/CUDA imports.
"""

from sass_lsp.analysis.check import check_module
from sass_lsp.analysis.findings import RULES, Finding, Related
from sass_lsp.analysis.report import format_json, format_sarif, format_text, run_check
from sass_lsp.analysis.timeline import BlockTimeline, Issue, timeline

__all__ = [
    "RULES",
    "BlockTimeline",
    "Finding",
    "Issue",
    "Related",
    "check_module",
    "format_json",
    "format_sarif",
    "format_text",
    "run_check",
    "timeline",
]
