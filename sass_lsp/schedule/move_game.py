"""Feature: the move game. The reorder game (:mod:`.game`) extended to every move kind ``optimize --moves``
makes: at each state the policy picks one of the reorder game's moves, a control-code move
(:mod:`.control_moves`), a register rename (:mod:`.rename_moves`), a cross-block move
(:mod:`.crossblock_moves`), a load issued an iteration ahead (:mod:`.pipeline_moves`), or STOP.

API (``MoveGame``, a gymnasium env like ``ReorderGame``):
- ``MoveGame(text, arch, kernel=None, *, kinds=MOVE_KINDS, max_steps=16, threads_per_block=None)``;
- ``reset(seed=None, options=None)`` (``options={"scramble": n}``: start ``n`` random moves away),
  ``step(action)``, ``candidates()``, ``peek(row)``, ``after(row)`` (the state a row leads to),
  ``snapshot()`` / ``restore(state)``;
- ``text``: the current kernel text; ``kinds_made`` / ``moves``: the move kinds and descriptions so far;
  ``cost``, ``cost_original``.

Phases. Structural moves (rename, cross-block, pipeline), then reorders, then control codes: the order
``optimize``'s searches make them in (a structural move gives the reorder game a new text to reorder; control
codes are set last, on the final order), so every state is a text those searches make and verify. A state
offers the moves of its phase and of the later ones; a control move closes the earlier phases, and a
structural move made after reorders is made on the text they reorder, dropping them (as ``optimize``'s
structural walk does).

Observation: the reorder game's (:mod:`.observation`) plus, per candidate row, its kind (``cand_kind``, an
index of ``observation.CAND_KINDS``) and one number (``cand_param``: a stall move's change in cycles / 15, 0
for the others). A move of another kind is the row (i, j) of window positions: the instruction it edits and
the one its effect reaches (a renamed value's last reader; the same instruction for the other kinds). A move
whose instruction lies outside the window is not offered: the policy sees only the window. Each kind offers
at most ``per_kind`` moves (a random sample), the reorder moves what room is left of ``C_MAX``.

Reward: as the reorder game's, (cost before - cost after) / cost of the original, the static model's cycles
of the current text's hot region (``ReorderGame.cost_original`` of that text).

Architecture Invariant: pure; no torch, pygls or CUDA.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from sass_lsp.schedule import control_moves, crossblock_moves, pipeline_moves, rename_moves
from sass_lsp.schedule import observation as ob
from sass_lsp.schedule.features import observation_space
from sass_lsp.schedule.game import ReorderGame, Snapshot, _Env, gym
from sass_lsp.schedule.repair import RepairError
from sass_lsp.schedule.search import game_candidate

PHASES = (("rename", "cross-block", "pipeline"), ("reorder",), ("control",))  # ``optimize --moves``'s names
MOVE_KINDS = tuple(kind for phase in PHASES for kind in phase)
PER_KIND = 256
GAMES_KEPT = 16  # reorder games (and move lists) of the last texts visited: peeks revisit them
# what a move that cannot be made on a text raises: every kind's error is a ValueError (ControlMoveError,
# RenameMoveError, ..., RepairError)
MOVE_ERRORS = (ValueError, RepairError)


def phase_of(kind: str) -> int:
    return next(p for p, kinds in enumerate(PHASES) if kind in kinds)


@dataclass(frozen=True)
class MoveState:
    text: str  # the current text
    base: str  # the text the reorder game plays (the reorder phase's start; the current text otherwise)
    phase: int
    snap: Snapshot | None  # the reorder game's state (None: its start)
    cost: float
    steps: int
    kinds: tuple[str, ...]  # the kind of each move made (the optimize kind: "reorder", "control", ...)
    moves: tuple[str, ...]  # their descriptions
    done: bool
    base_made: int = 0  # how many of the moves made ``base`` (the others are the reorder game's)


@dataclass(frozen=True)
class _Row:
    kind: int  # index of observation.CAND_KINDS
    pos: tuple[int, int]  # window positions
    param: float
    payload: Any  # the reorder game's candidate row, or the move object


class MoveGame(_Env):
    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(
        self,
        text: str,
        arch: str,
        kernel: str | None = None,
        *,
        kinds: tuple[str, ...] = MOVE_KINDS,
        max_steps: int = 16,
        scramble: int = 0,
        threads_per_block: int | None = None,
        per_kind: int = PER_KIND,
    ) -> None:
        unknown = set(kinds) - set(MOVE_KINDS)
        if unknown or not kinds:
            raise ValueError(f"kinds must be some of {', '.join(MOVE_KINDS)}")
        self.original, self.arch, self.kinds = text, arch, tuple(kinds)
        self.max_steps, self.scramble, self.per_kind = max_steps, scramble, per_kind
        self.threads = threads_per_block
        if gym is not None:
            space = dict(observation_space().spaces)
            space["cand_kind"] = gym.spaces.Box(0, len(ob.CAND_KINDS) - 1, (ob.C_MAX,), np.int64)
            space["cand_param"] = gym.spaces.Box(-1.0, 1.0, (ob.C_MAX,), np.float32)
            self.observation_space = gym.spaces.Dict(space)
            self.action_space = gym.spaces.Discrete(ob.C_MAX + 1)
        self._games: dict[str, tuple[ReorderGame, Snapshot]] = {}
        self._listed: dict[str, list[Any]] = {}
        self.kernel = kernel
        game, start = self._game(text)
        self.kernel = game.k0.name
        self.cost_original = start.cost
        self._start = MoveState(text, text, 0, None, start.cost, 0, (), (), False)
        self._set(self._start)

    # ------------------------------------------------------------------------------------ state

    def _set(self, state: MoveState) -> None:
        self._state = state
        self._rows: list[_Row] | None = None

    def snapshot(self) -> MoveState:
        return self._state

    def restore(self, state: MoveState) -> None:
        self._set(state)

    @property
    def text(self) -> str:
        return self._state.text

    @property
    def cost(self) -> float:
        return self._state.cost

    @property
    def kinds_made(self) -> tuple[str, ...]:
        return self._state.kinds

    @property
    def moves(self) -> list[str]:
        return list(self._state.moves)

    def _game(self, base: str) -> tuple[ReorderGame, Snapshot]:
        """The reorder game of ``base`` and its start (one per text, the last ``GAMES_KEPT`` kept)."""
        hit = self._games.pop(base, None)
        if hit is None:
            game = ReorderGame.from_text(base, self.arch, kernel=self.kernel, max_steps=1 << 30)
            hit = (game, game.snapshot())
        self._games[base] = hit
        while len(self._games) > GAMES_KEPT:
            self._games.pop(next(iter(self._games)))
        return hit

    def _reorder_game(self, state: MoveState) -> ReorderGame:
        game, start = self._game(state.base)
        game.restore(state.snap or start)
        return game

    # ------------------------------------------------------------------------------------ moves

    def _allowed(self, phase: int) -> set[str]:
        """The kinds a state of ``phase`` offers: its own and the later phases', and structural moves in the
        reorder phase too (made on the text it reorders, its reorders dropped, as ``optimize``'s structural
        walk makes them)."""
        if phase == phase_of("reorder"):
            phase = 0
        return {k for p, kinds in enumerate(PHASES) if p >= phase for k in kinds} & set(self.kinds)

    def _listed_moves(self, text: str, allowed: set[str]) -> list[Any]:
        """Every move of the other kinds ``allowed`` on ``text`` (cached per text and kinds)."""
        key = f"{sorted(allowed)}\0{text}"
        hit = self._listed.pop(key, None)
        if hit is None:
            hit = []
            if "rename" in allowed:
                hit += rename_moves.rename_moves(text, self.arch, threads_per_block=self.threads)
            if "cross-block" in allowed:
                hit += crossblock_moves.crossblock_moves(text, self.arch)
            if "pipeline" in allowed:
                hit += pipeline_moves.pipeline_moves(text, self.arch, threads_per_block=self.threads)
            if "control" in allowed:
                hit += control_moves.control_moves(text, self.arch, original=self.original)
        self._listed[key] = hit
        while len(self._listed) > GAMES_KEPT:
            self._listed.pop(next(iter(self._listed)))
        return hit

    def candidates(self) -> list[_Row]:
        """The legal moves of this state as rows (their window positions, kind, parameter and move)."""
        if self._rows is None:
            self._rows = self._candidates(self._state)
        return self._rows

    def _candidates(self, state: MoveState) -> list[_Row]:
        game = self._reorder_game(state)
        allowed = self._allowed(state.phase)
        structural = allowed & set(PHASES[0])
        listed = [  # structural moves on the text the game reorders, control moves on the current one
            (self._listed_moves(state.base, structural), _window_positions(game, now=False)),
            (self._listed_moves(state.text, allowed & {"control"}), _window_positions(game)),
        ]
        others: list[_Row] = []
        by_kind: dict[int, list[_Row]] = {}
        for moves, where in listed:
            for move in moves:
                row = _row_of(move, where)
                if row is not None:
                    by_kind.setdefault(row.kind, []).append(row)
        rng = np.random.default_rng(zlib.crc32(state.text.encode()))  # the same rows on a revisit
        for kind in sorted(by_kind):
            rows = by_kind[kind]
            if len(rows) > self.per_kind:
                rows = [rows[i] for i in sorted(rng.choice(len(rows), self.per_kind, replace=False))]
            others += rows
        reorders: list[_Row] = []
        if "reorder" in allowed:
            room = ob.C_MAX - len(others)
            reorders = [_Row(0, pos, 0.0, r) for r, pos in enumerate(game.candidates()[:room])]
        return reorders + others

    # ------------------------------------------------------------------------------------ making moves

    def _made(self, state: MoveState, row: _Row) -> MoveState:
        """The state after ``row``'s move (raises one of ``MOVE_ERRORS`` for a move that cannot be made)."""
        kind = ob.CAND_KINDS[row.kind]
        if kind == "reorder":
            game = self._reorder_game(state)
            game.apply(row.payload)
            text = game_candidate(game, state.base, "move game").text
            wp, wt = row.pos
            desc = f"reorder window position {wp} -> {wt}"
            return MoveState(
                text, state.base, 1, game.snapshot(), game.cost, state.steps + 1,
                (*state.kinds, "reorder"), (*state.moves, desc), False, state.base_made,
            )  # fmt: skip
        move = row.payload
        optimize_kind = OPTIMIZE_KIND[kind]
        if optimize_kind == "control":
            text = control_moves.apply(state.text, move)
            made = len(state.kinds)
        else:  # a structural move, on the text the reorder game plays: its reorders, if any, are dropped
            arch = () if kind in rename_moves.KINDS else (self.arch,)  # a rename needs no arch to apply
            text = _MODULES[kind].apply(state.base, move, *arch)
            made = state.base_made
        _, start = self._game(text)
        kinds = (*state.kinds[:made], optimize_kind)
        moves = (*state.moves[:made], move.description or str(move))
        return MoveState(
            text, text, phase_of(optimize_kind), None, start.cost, state.steps + 1, kinds, moves, False,
            len(kinds),
        )  # fmt: skip

    def after(self, row: int) -> MoveState:
        """The state candidate ``row`` leads to (raises one of ``MOVE_ERRORS`` where it cannot be made); this
        game's state does not change: ``restore`` it to go there."""
        return self._made(self._state, self.candidates()[row])

    def peek(self, row: int) -> float:
        """The cost candidate ``row`` would give (the current cost where it cannot be made)."""
        try:
            return self.after(row).cost
        except MOVE_ERRORS:
            return self._state.cost

    def action_mask(self) -> np.ndarray:
        mask = np.zeros(ob.C_MAX + 1, dtype=np.bool_)
        mask[: len(self.candidates())] = True
        mask[ob.STOP] = True
        return mask

    # ------------------------------------------------------------------------------------ gym API

    def observation(self) -> dict[str, np.ndarray]:
        return self._obs()

    def _obs(self) -> dict[str, np.ndarray]:
        rows = self.candidates()
        game = self._reorder_game(self._state)
        obs = game.observation()
        n = len(rows)
        obs["cand"] = np.zeros((ob.C_MAX, 2), dtype=np.int64)
        obs["cand_mask"] = np.zeros(ob.C_MAX, dtype=np.bool_)
        obs["cand_kind"] = np.zeros(ob.C_MAX, dtype=np.int64)
        obs["cand_param"] = np.zeros(ob.C_MAX, dtype=np.float32)
        if n:
            obs["cand"][:n] = [r.pos for r in rows]
            obs["cand_mask"][:n] = True
            obs["cand_kind"][:n] = [r.kind for r in rows]
            obs["cand_param"][:n] = [r.param for r in rows]
        return obs

    def _info(self) -> dict[str, Any]:
        s = self._state
        return {
            "cost": s.cost,
            "cost_original": self.cost_original,
            "moves": list(s.moves),
            "kinds": list(s.kinds),
            "speedup_pred": self.cost_original / s.cost if s.cost else 1.0,
        }

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        self._set(self._start)
        for _ in range(int((options or {}).get("scramble", self.scramble))):
            rows = self.candidates()
            if not rows:
                break
            try:
                made = self._made(self._state, rows[int(self.np_random.integers(len(rows)))])
                self._set(replace(made, steps=0))
            except MOVE_ERRORS:
                continue
        return self._obs(), self._info()

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        try:
            row = int(action)
        except (TypeError, ValueError):
            row = -1
        state = self._state
        rows = self.candidates()
        if state.done or row == ob.STOP or not 0 <= row < len(rows):
            self._set(replace(state, done=True))
            return self._obs(), 0.0, True, False, self._info()
        try:
            after = self._made(state, rows[row])
        except MOVE_ERRORS:  # a move its own check refuses on this text: the episode ends, nothing changed
            self._set(replace(state, done=True))
            return self._obs(), 0.0, True, False, self._info()
        self._set(after)
        reward = (state.cost - after.cost) / self.cost_original if self.cost_original else 0.0
        return self._obs(), float(reward), False, after.steps >= self.max_steps, self._info()


# ---------------------------------------------------------------------------------------------- rows

_MODULES = {
    **dict.fromkeys(control_moves.KINDS, control_moves),
    **dict.fromkeys(rename_moves.KINDS, rename_moves),
    **dict.fromkeys(crossblock_moves.KINDS, crossblock_moves),
    **dict.fromkeys(pipeline_moves.KINDS, pipeline_moves),
}
OPTIMIZE_KIND = {  # a row's kind -> the kind ``optimize --moves`` names
    "reorder": "reorder",
    **dict.fromkeys(control_moves.KINDS, "control"),
    **dict.fromkeys(rename_moves.KINDS, "rename"),
    **dict.fromkeys(crossblock_moves.KINDS, "cross-block"),
    **dict.fromkeys(pipeline_moves.KINDS, "pipeline"),
}


def _window_positions(game: ReorderGame, now: bool = True) -> dict[int, int]:
    """Line -> window position, for the instructions of the game's window: their lines in the current
    order (``now``), or in the text the game reorders."""
    k0 = game.k0
    line = {}
    if now:
        for b in game.region.blocks:
            start = k0.blocks[b].start
            for q, x in enumerate(game.order(b)):
                line[x] = k0.nodes[start + q].line
    return {line.get(x, k0.nodes[x].line): p for p, x in enumerate(game.snapshot().window)}


def _anchor_lines(move: Any) -> tuple[int, int]:
    """The line a move edits and the line its effect reaches."""
    if isinstance(move, rename_moves.RenameMove):
        return move.def_line, max(move.use_lines, default=move.def_line)
    if isinstance(move, pipeline_moves.PipelineMove):
        return move.load_line, move.load_line
    return move.line, move.line


def _row_of(move: Any, where: dict[int, int]) -> _Row | None:
    first, reach = _anchor_lines(move)
    i = where.get(first)
    if i is None:
        return None
    param = 0.0
    if move.kind == "stall":
        param = (_stall(move.ctrl) - _stall(move.old_ctrl)) / 15
    return _Row(ob.CAND_KINDS.index(move.kind), (i, where.get(reach, i)), param, move)


def _stall(ctrl: str) -> int:
    """The stall count of a control field as written (``B------:R-:W-:-:S04`` -> 4)."""
    return int(ctrl.rsplit(":S", 1)[1])
