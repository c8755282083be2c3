"""Loading the reorder policy: the one place that resolves its path (``policy.checkpoint`` knows the default),
checks the ``[policy]`` extra and loads the network. torch is imported only when a policy is loaded."""

from __future__ import annotations

import importlib
import logging
from pathlib import Path
from typing import Any

from sass_lsp.app.errors import AppError
from sass_lsp.policy.checkpoint import (
    POLICY_HINT,
    POLICY_MODULES,
    SERVING_MODULES,
    default_policy_path,
    missing_policy_modules,
)

log = logging.getLogger("sass_lsp.app")

NO_CHECKPOINT, NO_EXTRA, NOT_INSTALLED, BAD_CHECKPOINT = "no_checkpoint", "no_extra", "not_installed", "bad"


class PolicyUnavailable(AppError):
    """The policy cannot be used. ``reason``: :data:`NO_CHECKPOINT`, :data:`NO_EXTRA` (torch, gymnasium or
    safetensors missing), :data:`NOT_INSTALLED` (``sass_lsp.policy`` cannot be imported) or
    :data:`BAD_CHECKPOINT`; ``path`` the checkpoint; ``detail`` what went wrong. Each edge words it."""

    def __init__(self, reason: str, path: Path, detail: str) -> None:
        hint = POLICY_HINT if reason == NO_EXTRA else ""
        super().__init__("no_policy", f"{path}: {detail}", hint)
        self.reason = reason
        self.path = path
        self.detail = detail


def policy_path(path: Path | None = None) -> Path:
    """``path``, or the default checkpoint (``$SASS_LSP_POLICY``, else the bundled one)."""
    return path or default_policy_path()


def load_policy(path: Path | None = None, *, torch_net: bool = False) -> Any:
    """The policy network at ``path`` (None: the default): its numpy forward pass, warmed up, as the CLI and
    the server suggest with it (no torch imported); with ``torch_net`` the torch network, which the GPU
    searches sample from and fine-tuning trains. Raises :class:`PolicyUnavailable`."""
    path = policy_path(path)
    if not path.exists():  # first: asking for the extra imports its modules
        raise PolicyUnavailable(NO_CHECKPOINT, path, "no policy checkpoint there")
    missing = missing_policy_modules(POLICY_MODULES if torch_net else SERVING_MODULES)
    if missing:
        raise PolicyUnavailable(NO_EXTRA, path, missing)
    try:
        policy_suggest = importlib.import_module("sass_lsp.policy.suggest")
    except ImportError as exc:
        raise PolicyUnavailable(NOT_INSTALLED, path, str(exc)) from None
    try:
        if torch_net:
            from sass_lsp.policy.model import load_policy as load_torch

            return load_torch(path)
        return policy_suggest.load_for_suggestions(path)
    except Exception as exc:  # a bad checkpoint (any loader error) is the user's to fix, not a crash
        log.warning("cannot load policy %s", path, exc_info=True)
        raise PolicyUnavailable(BAD_CHECKPOINT, path, str(exc)) from exc


def load_perf_model(folder: Path | None = None) -> Any:
    """The performance model that ranks suggestions (None: the packaged one), loaded once per process.
    Raises :class:`PolicyUnavailable` (it needs the same extra as the policy)."""
    from sass_lsp.perf.predict import DEFAULT_MODEL

    folder = folder or DEFAULT_MODEL
    missing = missing_policy_modules(SERVING_MODULES)
    if missing:
        raise PolicyUnavailable(NO_EXTRA, folder, missing)
    from sass_lsp.perf.predict import load_model

    try:
        return load_model(folder)
    except Exception as exc:  # a missing or bad checkpoint is reported, not a crash
        log.warning("cannot load performance model %s", folder, exc_info=True)
        raise PolicyUnavailable(BAD_CHECKPOINT, folder, str(exc)) from exc
