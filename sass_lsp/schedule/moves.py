"""What the per-instruction move kinds (control codes, renames, cross-block, pipeline) share: drawing one
move, chains of moves, and the search's proposer over the move lists of the texts a walk proposes from."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar


class Move(Protocol):
    @property
    def kind(self) -> str: ...

    @property
    def description(self) -> str: ...


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


def apply_some(
    text: str,
    moves: list[M],
    rng: random.Random,
    apply: Callable[[str, M], str],
    errors: tuple[type[Exception], ...] = (),
) -> tuple[str, M] | None:
    """A random move of ``moves`` (:func:`pick_move`) applied; one that ``apply`` cannot make (it raises one
    of ``errors``) is dropped from ``moves`` and another drawn. None when none is left."""
    while True:
        move = pick_move(moves, rng)
        if move is None:
            return None
        try:
            return apply(text, move), move
        except errors:
            moves.remove(move)


def random_chain(
    text: str,
    n: int,
    rng: random.Random,
    enumerate_moves: Callable[[str], list[M]],
    apply: Callable[[str, M], str],
    errors: tuple[type[Exception], ...] = (),
) -> tuple[str, list[M]]:
    """``n`` moves in a row, each legal on the text the previous ones left (fewer where none is left)."""
    done: list[M] = []
    for _ in range(n):
        made = apply_some(text, enumerate_moves(text), rng, apply, errors)
        if made is None:
            break
        text, move = made
        done.append(move)
    return text, done


def proposer(
    enumerate_moves: Callable[[str], list[M]],
    apply: Callable[[str, M], str],
    source: str,
    errors: tuple[type[Exception], ...] = (),
    cache: int = 8,
) -> Callable[[str, random.Random], Any]:
    """``propose(text, rng)`` for :func:`sass_lsp.schedule.search.annealing`: one move away from ``text``,
    as a ``Candidate`` of ``source``; None where no move is left. The move lists of the last ``cache`` texts
    are kept (a walk proposes from one text until a move is accepted)."""
    from sass_lsp.schedule.search import Candidate

    moves_of = recent_moves(enumerate_moves, cache)

    def propose(text: str, rng: random.Random) -> Candidate | None:
        made = apply_some(text, moves_of(text), rng, apply, errors)
        if made is None:
            return None
        return Candidate(made[0], source, (made[1].description,))

    return propose
