"""The observation facts a policy checkpoint depends on (no torch: the numpy forward pass checks them too)."""

from __future__ import annotations

from typing import Any

from sass_lsp.schedule import observation as ob


def observation_contract() -> dict[str, Any]:
    """The observation.py facts a checkpoint depends on: a mismatch on load is an error, not a misread."""
    return {
        "W_MAX": ob.W_MAX,
        "C_MAX": ob.C_MAX,
        "STOP": ob.STOP,
        "TOKEN_COLUMNS": list(ob.TOKEN_COLUMNS),
        "TOKEN_VOCAB": list(ob.TOKEN_VOCAB),
        "NUM_COLUMNS": list(ob.NUM_COLUMNS),
        "EDGES": [ob.EDGE_RAW, ob.EDGE_WAR, ob.EDGE_WAW, ob.EDGE_MEMORY, ob.EDGE_ORDER],
    }
