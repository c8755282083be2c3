"""What the per-instruction move kinds (control codes, renames, cross-block) share: drawing one move, and
keeping the move lists of the texts a walk proposes from."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
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


def recent_moves(enumerate_moves: Callable[[str], list[M]], keep: int = 8) -> Callable[[str], list[M]]:
    """``enumerate_moves`` remembering the lists of the last ``keep`` texts it was asked for: an annealing
    walk proposes from one text until a move is accepted, and enumerating costs a parse of the whole text.
    The same list object comes back, so a caller that drops a move from it drops it for later asks too."""
    kept: dict[str, list[M]] = {}

    def moves_of(text: str) -> list[M]:
        moves = kept.pop(text, None)
        if moves is None:
            moves = enumerate_moves(text)
        kept[text] = moves  # the most recent last
        while len(kept) > keep:
            kept.pop(next(iter(kept)))
        return moves

    return moves_of
