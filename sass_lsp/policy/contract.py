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


def move_contract(cand_kinds: int) -> list[str] | None:
    """The move kinds a policy of the move game scores (``cand_kinds`` rows' kinds); None for a reorder
    policy."""
    return list(ob.CAND_KINDS) if cand_kinds else None


def check_moves(config: dict[str, Any], path: object) -> None:
    """ValueError when a checkpoint's move kinds are not the ones the move game offers now."""
    kinds = int(config.get("arch", {}).get("cand_kinds", 0))
    if kinds and (config.get("moves") != list(ob.CAND_KINDS) or kinds != len(ob.CAND_KINDS)):
        raise ValueError(f"{path}: checkpoint was trained for other move kinds (observation.CAND_KINDS)")
