"""Why a use case stopped: one exception the CLI turns into ``file: error`` + hint + exit code and the server
into a refusal (``verdict`` + message)."""

from __future__ import annotations

from collections.abc import Sequence

VERDICTS = ("parse_error", "no_kernel", "spec_error", "no_device", "assemble_error", "no_policy")


class AppError(Exception):
    """A use case cannot go on. ``verdict`` names the step that refused (one of :data:`VERDICTS`);
    ``str()`` is the message (for the CLI, with ``file[:line:col]:`` where there is one); ``hint`` what to do;
    ``diagnostics``: the assembler's, when an edit does not assemble (editor terms, for the server)."""

    def __init__(
        self, verdict: str, message: str, hint: str = "", *, side: str = "", diagnostics: Sequence = ()
    ) -> None:
        super().__init__(message)
        self.verdict = verdict
        self.hint = hint
        self.side = side  # assemble_error: "original" or "edit"
        self.diagnostics = tuple(diagnostics)
