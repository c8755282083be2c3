"""Feature: the learned reorder policy (issue #6): network, PPO training and editor suggestions.

Its training and search modules are the only ones that import torch (``infer`` and ``suggest`` serve
without it). Modules:

- :mod:`~sass_lsp.policy.model` — ``PolicyNet`` (kernel-agnostic transformer over the game's observation),
  ``save_policy`` / ``load_policy`` (safetensors + JSON, no pickle);
- :mod:`~sass_lsp.policy.ppo` — CleanRL-style PPO over gymnasium vector envs;
- :mod:`~sass_lsp.policy.train` — ``train(kernel_texts, ...)`` and ``evaluate(net, kernel_texts)``;
- :mod:`~sass_lsp.policy.infer` — ``NumpyPolicy``: the network's forward pass in numpy, what serving loads;
- :mod:`~sass_lsp.policy.suggest` — ``suggest(text, arch, net=...)`` -> ``Suggestion`` s with text edits.

Names are exported lazily so that ``import sass_lsp.policy`` costs nothing until one is used. The functions
named like their modules (``ppo.ppo``, ``train.train``, ``suggest.suggest``) are imported from the module.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "PolicyConfig": "model",
    "PolicyNet": "model",
    "load_policy": "model",
    "save_policy": "model",
    "PPOConfig": "ppo",
    "evaluate": "train",
    "Suggestion": "suggest",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
