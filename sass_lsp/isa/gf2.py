"""GF(2) least-structure solver: learn ``word = XOR W[f]`` per form from (features, word) samples.

Rows are Python ints: features above bit ``WORD_BITS``, the 128-bit word below, so one XOR updates both.
Output bits that no XOR-linear map explains (the same features with different words) are *irregular*:
they are re-solved from real (ptxas-made, not bit-flipped) samples only, and where even those disagree
they are predicted by majority vote and reported as hidden.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .features import BIAS

WORD_BITS = 128
WORD_MASK = (1 << WORD_BITS) - 1


@dataclass
class FormModel:
    weights: dict[str, int]  # feature -> 128-bit contribution (only nonzero ones)
    known: set[str]  # every feature seen set in training (tokens and value bits)
    hidden_mask: int = 0  # bits predicted by majority, not by features
    hidden_value: int = 0
    irregular_mask: int = 0  # bits not linear over all samples (hidden_mask is the subset left to majority)
    invisible_mask: int = 0  # bits probing showed nvdisasm does not print for this form
    n_real: int = 0
    n_probe: int = 0
    extra: dict[str, object] = field(default_factory=dict)

    def predict(self, features: Iterable[str]) -> int:
        word = self.weights.get(BIAS, 0)
        for f in features:
            word ^= self.weights.get(f, 0)
        return (word & ~self.hidden_mask) | self.hidden_value


def _index(samples: Sequence[tuple[Sequence[str], int]]) -> list[str]:
    names: set[str] = set()
    for feats, _ in samples:
        names.update(feats)
    names.discard(BIAS)
    # bias gets the highest index so it becomes the pivot of always-present features (robust default)
    return sorted(names) + [BIAS]


def _solve(
    samples: Sequence[tuple[Sequence[str], int]], columns: int, greedy: bool = False
) -> tuple[dict[str, int], int]:
    """Return (weights restricted to ``columns``, inconsistent-bit mask). Inconsistent columns are zeroed,
    or with ``greedy`` keep the solution of the earliest samples (later contradicting rows are ignored)."""
    names = _index(samples)
    pos = {n: i for i, n in enumerate(names)}
    basis: dict[int, int] = {}
    inconsistent = 0
    seen_rows: set[int] = set()
    for feats, word in samples:
        fbits = 1 << pos[BIAS]
        for f in feats:
            fbits |= 1 << pos[f]
        row = fbits << WORD_BITS | (word & columns)
        if row in seen_rows:
            continue
        seen_rows.add(row)
        while True:
            top = (row >> WORD_BITS).bit_length() - 1
            if top < 0:
                inconsistent |= row & WORD_MASK
                break
            other = basis.get(top)
            if other is None:
                basis[top] = row
                break
            row ^= other
    weights_by_idx: dict[int, int] = {}
    for p in sorted(basis):
        row = basis[p]
        value = row & WORD_MASK
        rest = (row >> WORD_BITS) & ~(1 << p)
        while rest:
            low = rest & -rest
            value ^= weights_by_idx.get(low.bit_length() - 1, 0)
            rest ^= low
        weights_by_idx[p] = value
    drop = 0 if greedy else inconsistent
    weights = {names[i]: v & ~drop for i, v in weights_by_idx.items() if v & ~drop}
    return weights, inconsistent


def _majority(samples: Sequence[tuple[Sequence[str], int]], mask: int) -> int:
    """Most common value of the masked bits as a whole (a per-bit vote could invent a register
    number that ptxas never chose, e.g. UR12 from a mix of UR4 and UR8)."""
    counts = Counter(w & mask for _, w in samples)
    return counts.most_common(1)[0][0] if counts else 0


def learn(
    real: Sequence[tuple[Sequence[str], int]], probe: Sequence[tuple[Sequence[str], int]], invisible: int = 0
) -> FormModel:
    """``invisible``: bits that probing showed do not change the text; probes carry junk there, so those
    bits are learned from real samples only (the builder fills them in for forms without real samples).
    Irregular columns keep the solution of the earliest samples (real ptxas words come first); columns
    on which real samples disagree among themselves are predicted by majority vote (hidden)."""
    samples = list(real) + list(probe)
    weights, irregular = _solve(samples, WORD_MASK & ~invisible)
    known = {f for feats, _ in samples for f in feats}
    model = FormModel(weights, known, irregular_mask=irregular, n_real=len(real), n_probe=len(probe))
    model.invisible_mask = invisible
    if irregular:
        for f, v in _solve(samples, irregular, greedy=True)[0].items():
            model.weights[f] = model.weights.get(f, 0) | v
    if not real:
        return model
    redo = irregular | invisible
    if not redo:
        return model
    real_weights, still = _solve(real, redo)
    for f in list(model.weights):  # real samples decide invisible columns alone
        model.weights[f] &= ~invisible
    for f, v in real_weights.items():
        v &= invisible & ~still
        if v:
            model.weights[f] = model.weights.get(f, 0) | v
    if still:
        model.hidden_mask = still
        model.hidden_value = _majority(real, still)
    return model
