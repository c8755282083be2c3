"""The contract between the reorder game and the policy: what one observation holds, as fixed-shape arrays.

The game (:mod:`sass_lsp.schedule.game`) fills it from a kernel window; the policy (:mod:`sass_lsp.policy`)
reads it. Both import these constants and nothing else from each other, so either side can change freely
as long as this file holds.

One observation is a dict of numpy arrays (a ``gymnasium.spaces.Dict``):

``tok``  int64  [W_MAX, len(TOKEN_VOCAB)]  categorical columns, 0 = padding, see TOKEN_COLUMNS
``num``  float32 [W_MAX, N_NUM]            numeric columns, see NUM_COLUMNS (0 on padding)
``adj``  uint8  [W_MAX, W_MAX]             ``adj[i, j]`` = EDGE_* bits of "j must stay after i" (window
                                            positions; i < j in the current order)
``cand`` int64  [C_MAX, 2]                 candidate moves: (window position of the instruction,
                                            window position it moves to); 0 on padding
``cand_mask`` bool [C_MAX]                 which candidate rows are real, legal moves
``n``    int64  [1]                        number of real tokens (the window length)

Action: an integer in ``[0, C_MAX]``: a candidate row, or ``STOP`` (= C_MAX) to end the episode.
Moving the instruction at position i to position j shifts the ones in between by one, as a text edit would.

The move game (:mod:`sass_lsp.schedule.move_game`) adds two arrays, for its moves of every kind:

``cand_kind``  int64 [C_MAX]    each row's move kind, an index of CAND_KINDS (0 = a reorder, and padding)
``cand_param`` float32 [C_MAX]  a stall move's change in cycles / 15; 0 for the other kinds
"""

from __future__ import annotations

W_MAX = 512  # instructions in a window (the hot loop, or the hottest straight-line stretch)
C_MAX = 2048  # candidate moves per state
STOP = C_MAX  # the action that ends an episode

# Categorical token columns and their vocabulary sizes (index 0 = padding, 1 = unknown).
TOKEN_COLUMNS = (
    "opcode",  # 2 + position in the arch's sorted opcode list, hashed into the vocabulary if larger
    "pipe",  # semantics pipe class (alu, fma, mem, var, gmma, ...)
    "queue",  # variable-latency queue (lsu, mio, ...) or none
    "write_sb",  # 1 = none, 2 + scoreboard index
    "read_sb",  # 1 = none, 2 + scoreboard index
    "stall",  # 1 + stall cycles (0..15)
    "mem",  # 1 none, 2 global load, 3 global store, 4 shared load, 5 shared store, 6 other memory,
    #          7 async copy / TMA, 8 tensor core (HMMA/HGMMA), 9 barrier or fence
    "movable",  # 1 fixed in place, 2 movable
)
TOKEN_VOCAB = (512, 32, 16, 8, 8, 17, 10, 3)

# Numeric columns (roughly unit scale).
NUM_COLUMNS = (
    "wait_sb0",
    "wait_sb1",
    "wait_sb2",
    "wait_sb3",
    "wait_sb4",
    "wait_sb5",  # wait mask bits
    "yield",
    "variable_latency",
    "n_dst_regs_div8",
    "n_src_regs_div8",
    "position_frac",  # window position / window length
    "issue_cycle_div1000",  # predicted issue cycle (static timeline) / 1000
    "waited_cycles_div100",  # cycles it waits beyond the previous stall / 100
    "assumed_latency_div100",  # own result latency / 100
    "n_preds_div8",  # in-window instructions it must stay after / 8
    "n_succs_div8",  # in-window instructions that must stay after it / 8
)
N_NUM = len(NUM_COLUMNS)

# Move kinds of the move game's rows: the reorder game's move, then each kind of the control-code, rename,
# cross-block and pipeline moves (their modules' KINDS, in that order).
CAND_KINDS = (
    "reorder",
    "yield_on",
    "yield_off",
    "reuse_clear",
    "reuse_set",
    "stall",
    "scoreboard",
    "yield_interleave",
    "false_dep",
    "bank",
    "hoist",
    "sink",
    "load",
)

# Dependence edge kinds (bits of ``adj``).
EDGE_RAW = 1  # register / predicate / uniform register read after write
EDGE_WAR = 2
EDGE_WAW = 4
EDGE_MEMORY = 8  # memory ordering (store vs load/store of a space that may alias)
EDGE_ORDER = 16  # barriers, fences, scoreboard waits and anything else that pins the order
