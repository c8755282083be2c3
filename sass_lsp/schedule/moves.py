"""What the per-instruction move kinds (control codes, renames, cross-block) share: drawing one move."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Protocol, TypeVar


class Move(Protocol):
    @property
    def kind(self) -> str: ...


M = TypeVar("M", bound=Move)


def pick_move(moves: Sequence[M], rng: random.Random) -> M | None:
    """A kind uniformly among those with a move, then one of its moves uniformly (so a kind with many moves,
    like stalls, does not crowd out the others)."""
    by_kind: dict[str, list[M]] = {}
    for m in moves:
        by_kind.setdefault(m.kind, []).append(m)
    if not by_kind:
        return None
    return rng.choice(by_kind[rng.choice(sorted(by_kind))])
