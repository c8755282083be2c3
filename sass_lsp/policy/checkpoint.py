"""Where the reorder policy's checkpoint is, and whether this Python can run it. No torch here: the CLI and
the server ask before they import the policy.

The trained checkpoint ships inside the package (``sass_lsp/policy/models/reorder-v2``; its model card is
``policy_models/README.md`` in the repository); ``$SASS_LSP_POLICY`` points at another checkpoint directory.
"""

from __future__ import annotations

import importlib
import os
from importlib import resources
from pathlib import Path

POLICY_ENV = "SASS_LSP_POLICY"
BUNDLED = "reorder-v2"
BUNDLED_MOVES = "moves-v1"  # the move game's policy, which ``optimize --search policy_moves`` draws from
POLICY_HINT = "install the policy extra: pip install 'sass-lsp[policy]'"
POLICY_MODULES = ("torch", "gymnasium", "safetensors", "threadpoolctl")
"""What the ``[policy]`` extra installs: the policy's imports beyond the base install."""
SERVING_MODULES = ("gymnasium", "safetensors", "threadpoolctl")
"""Of those, what suggesting needs (the numpy forward pass; torch is for training and the GPU searches)."""


def bundled_policy() -> Path:
    """The checkpoint shipped with the package."""
    return Path(str(resources.files("sass_lsp.policy") / "models" / BUNDLED))


def bundled_moves_policy() -> Path:
    """The move game's checkpoint shipped with the package."""
    return Path(str(resources.files("sass_lsp.policy") / "models" / BUNDLED_MOVES))


def default_policy_path() -> Path:
    """``$SASS_LSP_POLICY`` when set, else the bundled checkpoint: the one place that knows the default."""
    override = os.environ.get(POLICY_ENV, "")
    return Path(override) if override else bundled_policy()


def missing_policy_modules(modules: tuple[str, ...] = POLICY_MODULES) -> str | None:
    """None when this Python has ``modules`` (default: all the policy's), else what it lacks (each module is
    imported: a broken install counts as missing)."""
    missing = []
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    if not missing:
        return None
    names = ", ".join(missing[:-1]) + (" and " if len(missing) > 1 else "") + missing[-1]
    return f"the reorder policy needs {names}, which this Python lacks"
