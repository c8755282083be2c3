#!/usr/bin/env python3
"""Walk every value of every enumerated field of every form, so a form is known because its fields are.

Bit-flip probing (``build_tables.py``) sees one bit at a time from words ptxas wrote, under a control value
with the yield flag set. That leaves two kinds of holes, both closed here by asking nvdisasm:

- an enumerated field (a special register name, an operand swizzle such as ``.H1_H1``, a modifier)
  spans several bits, and names that differ from every trained one in two bits or more are never seen;
- the ``.reuse`` flags (bits 122-125) do nothing with the yield flag set, so probing never learns which flag
  belongs to which operand; the flag is not at a fixed place either (IABS's only source, in the rb slot,
  uses bit 123; FADD's rb uses bit 124).

For each general form: one base word (the form's most trained exact-modifier model, all values zero), the
walk of every value of the bits its known tokens of one group touch (one operand's names or suffixes, the
modifiers; groups of at most ``MAX_FIELD_BITS`` bits), and each reuse bit alone, under a control value without
the yield flag. A variant that nvdisasm prints as the same operand kinds and values with exactly one
token replaced (or added) gives that token's weight: the base's token's weight XOR the word difference.
Only tokens the model did not know are added; learned weights are never changed.

    python tools/isa/walk_fields.py --arch sm_90          # updates sass_lsp/isa/data/sm_90.json.gz
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from build_tables import ARCHES, DATA, nvdisasm_raw  # noqa: E402

from sass_lsp.isa.control import CONTROL_MASK  # noqa: E402
from sass_lsp.isa.encoder import Encoder, _model  # noqa: E402
from sass_lsp.isa.features import FeatureError, FeatureSet, instruction_features, modifier_features  # noqa: E402
from sass_lsp.isa.gf2 import FormModel  # noqa: E402
from sass_lsp.isa.syntax import InstructionSyntaxError, parse_instruction  # noqa: E402

# stall 1, no yield flag, no scoreboards, no waits: nvdisasm prints .reuse only without the yield flag
WALK_CONTROL = 0x7F1 << 105
REUSE_BITS = (122, 123, 124, 125)
_REUSE_FLAGS = {1 << b for b in REUSE_BITS}
MAX_FIELD_BITS = 8
_OPERAND_TOKEN = re.compile(r"^(o\d+)[.=]")  # o2.H1_H1, o1=SR_TID.X, o3.p0.64 (not o1:neg)
_VALUE_BIT = re.compile(r"^o\d+\.(?:[rbk][0-7]|i\d+|off\d+|p\d+\.[0-7])$")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def group_of(token: str) -> str | None:
    """The field a token belongs to: one operand's names and suffixes (``o2.H1_H1``, ``o1=SR_TID.X``), the
    modifiers; None for value bits, prefix operators and reuse (walked bit by bit)."""
    if token.startswith("m:"):
        return "m"
    m = _OPERAND_TOKEN.match(token)
    if m is None or _VALUE_BIT.match(token):
        return None
    return m.group(1)


def field_groups(*models: FormModel | None) -> dict[str, int]:
    """group (``group_of``) -> the word bits its known tokens' weights touch in any of ``models`` (a
    general form and its exact-modifier forms: the general model leaves irregular columns to those)."""
    groups: dict[str, int] = collections.defaultdict(int)
    for model in models:
        for tok in model.known if model is not None else ():
            g = group_of(tok)
            if g is not None:
                groups[g] |= model.weights.get(tok, 0) & ~CONTROL_MASK
    return groups


def form_groups(enc: Encoder, table: dict) -> dict[str, dict[str, set[int]]]:
    """general key -> group -> the bits of its field_groups in the general model and in its exact-modifier
    forms together (each is walked)."""
    specifics: dict[str, list[str]] = collections.defaultdict(list)
    for sk in table["specific"]:
        specifics[sk.split("|", 1)[0]].append(sk)
    out: dict[str, dict[str, set[int]]] = {}
    for gk in table["general"]:
        found: dict[str, set[int]] = collections.defaultdict(set)
        for groups in (
            field_groups(enc._get("g", gk)),
            field_groups(*(enc._get("s", sk) for sk in specifics[gk])),
        ):
            for g, bits in groups.items():
                found[g].add(bits)
        out[gk] = found
    return out


def sibling_groups(own: dict[str, dict[str, set[int]]]) -> dict[str, dict[str, set[int]]]:
    """general key -> operand groups that other forms of its opcode, with the same operand kind at that
    place, have varied: a swizzle never seen on this form's operand sits where theirs does."""
    by_opcode: dict[str, list[tuple[list[str], dict[str, set[int]]]]] = collections.defaultdict(list)
    for gk, groups in own.items():
        tags = gk.split(" ")
        by_opcode[tags[0]].append((tags[1:], groups))
    out: dict[str, dict[str, set[int]]] = {}
    for gk in own:
        tags = gk.split(" ")
        found: dict[str, set[int]] = collections.defaultdict(set)
        for other_tags, groups in by_opcode[tags[0]]:
            for g, options in groups.items():
                i = int(g[1:]) if g[0] == "o" else -1
                if 0 <= i < len(tags) - 1 and i < len(other_tags) and other_tags[i] == tags[1 + i]:
                    found[g] |= options
        out[gk] = found
    return out


def raw_features(text: str, ur_zero: int) -> FeatureSet | None:
    try:
        return instruction_features(parse_instruction(text), nan_tokens=False, ur_zero=ur_zero)
    except (InstructionSyntaxError, FeatureError):
        return None


class Base(NamedTuple):
    general: str
    specific: str
    word: int  # the form's word with all values zero, unguarded
    main: bool  # the general form's most trained exact-modifier model: also walks modifiers and reuse


def base_words(enc: Encoder, table: dict) -> list[Base]:
    """One base per exact-modifier form (operands' names and swizzles may depend on the modifiers: HFMA2's
    third operand takes a swizzle that HFMA2.MMA's does not)."""
    best: dict[str, tuple[int, str]] = {}
    forms = []
    for key, j in table["specific"].items():
        gk = key.split("|", 1)[0]
        if gk not in table["general"]:
            continue
        if j.get("nr", 0) > best.get(gk, (-1, ""))[0]:
            best[gk] = (j.get("nr", 0), key)
        forms.append((gk, key))
    mains = {(gk, sk) for gk, (_, sk) in best.items()}
    out = []
    for gk, sk in sorted(mains | set(forms)):
        gen, spec = enc._get("g", gk), enc._get("s", sk)
        mods, mod_bits = modifier_features(
            gk.split(" ", 1)[0], list(filter(None, sk.split("|", 1)[1].split(".")))
        )
        fs = FeatureSet(
            gk, sk, tuple(mods), ("g.r0", "g.r1", "g.r2", *mod_bits), tuple(mods)
        )  # unguarded (@PT)
        word = enc._predict(fs, gen, spec)[0] & ~CONTROL_MASK
        out.append(Base(gk, sk, word, (gk, sk) in mains))
    return out


def disassemble_all(words: list[int], sm: str, batch: int = 40000) -> dict[int, str]:
    """pc -> text over batches of raw words (illegal words left out), two nvdisasm runs at a time."""
    chunks = [(i, words[i : i + batch]) for i in range(0, len(words), batch)]
    out: dict[int, str] = {}
    with ThreadPoolExecutor(2) as pool:
        for start, texts in pool.map(lambda c: (c[0], nvdisasm_raw(c[1], sm)), chunks):
            out.update({16 * start + pc: t for pc, t in texts.items()})
    return out


def walk(arch: str, path: Path) -> dict[str, int]:
    with gzip.open(path, "rt") as fh:
        table = json.load(fh)
    enc = Encoder(arch, table)
    sm = ARCHES[arch][1]
    bases = base_words(enc, table)
    base_text = disassemble_all([b.word | WALK_CONTROL for b in bases], sm)
    own = form_groups(enc, table)
    borrowed = sibling_groups(own)
    jobs: list[tuple[int, int]] = []  # (base index, variant word)
    base_fs: dict[int, FeatureSet] = {}
    for i, base in enumerate(bases):
        text = base_text.get(16 * i)
        fs = raw_features(text, enc.ur_zero) if text else None
        if fs is None or fs.specific_key != base.specific:
            continue
        try:
            if enc.encode(text).word != base.word:  # the base must be one the tables already encode exactly
                continue
        except ValueError:
            continue
        base_fs[i] = fs
        gen = enc._get("g", base.general)
        assert gen is not None
        groups = {g: set(options) for g, options in own[base.general].items()}
        for g, options in borrowed.get(base.general, {}).items():
            if g not in groups:  # a field this form never varied: where its siblings hold it
                groups[g] = options
        word = base.word
        variants = {word ^ (1 << b) for b in REUSE_BITS} if base.main else set()
        for g, options in groups.items():
            if g == "m" and not base.main:
                continue
            for bits in options:
                positions = [b for b in range(128) if bits >> b & 1]
                if not positions or len(positions) > MAX_FIELD_BITS:
                    continue
                for value in range(1 << len(positions)):
                    delta = sum(1 << p for k, p in enumerate(positions) if value >> k & 1)
                    variants.add((word & ~bits) | delta)
        jobs += [(i, v) for v in sorted(variants) if v != word]
    log(f"{arch}: {len(base_fs)} of {len(bases)} forms walked, {len(jobs)} variants")
    texts = disassemble_all([w | WALK_CONTROL for _, w in jobs], sm)
    added: collections.Counter[str] = collections.Counter()
    by_general: dict[str, list[str]] = collections.defaultdict(list)
    for sk in table["specific"]:
        by_general[sk.split("|", 1)[0]].append(sk)
    unprinted: dict[str, int] = collections.defaultdict(int)  # general form -> reuse bits nvdisasm ignores
    for n, (i, variant) in enumerate(jobs):
        text = texts.get(16 * n)
        fs = raw_features(text, enc.ur_zero) if text else None
        base, bfs = bases[i], base_fs[i]
        if fs is None or fs.general_key != base.general or fs.bits != bfs.bits:
            continue
        new = [t for t in fs.tokens if t not in bfs.tokens]
        gone = [t for t in bfs.tokens if t not in fs.tokens]
        delta = variant ^ base.word
        if not new and not gone and delta in _REUSE_FLAGS:
            unprinted[base.general] |= delta
        if len(new) != 1:
            continue
        if _learn(table["general"][base.general], new[0], gone, delta):
            added["general"] += 1
            added[new[0].split("=", 1)[0].split(".", 1)[0] if new[0][0] == "o" else new[0].split(":")[0]] += 1
        if new[0].startswith("m:"):
            continue  # a new modifier combination is a new specific form: the general model serves it
        # the main base speaks for every exact-modifier form of its general form; the others for their own
        for sk in by_general[base.general] if base.main else [base.specific]:
            if _learn(table["specific"][sk], new[0], gone, delta):
                added["specific"] += 1
    # A reuse bit that prints nothing (texture instructions on sm_8x) is not in the text: where ptxas set it
    # (real words varied) or only the probed words' junk decided it, it is a hidden bit, set to 0
    for gk, bits in unprinted.items():
        for j in [table["general"][gk]] + [table["specific"][sk] for sk in by_general[gk]]:
            hm = int(j.get("hm", "0"), 16)
            used = 0  # flags this model's reuse tokens own (its exact modifiers make the operand a register)
            for t, w in j["w"].items():
                used |= int(w, 16) if t.startswith("reuse.") else 0
            new_bits = bits & ~hm & ~used
            if new_bits:
                j["hm"] = f"{hm | new_bits:x}"
                j["hv"] = f"{int(j.get('hv', '0'), 16) & ~new_bits:x}"
                added["unprinted_reuse"] += 1
    table["provenance"]["field_walk"] = {
        "script": "tools/isa/walk_fields.py",
        "forms_walked": len(base_fs),
        "bases": len(bases),
        "variants": len(jobs),
        "tokens_added": dict(added),
    }
    tmp = path.with_name(path.name + ".tmp")
    with gzip.open(tmp, "wt", compresslevel=9) as fh:
        json.dump(table, fh, separators=(",", ":"))
    tmp.replace(path)
    return dict(added)


def _learn(j: dict, token: str, gone: list[str], delta: int) -> bool:
    """Add ``token`` to a model's JSON with weight ``delta`` XOR the weights of the tokens it replaced;
    False when the model knows it already or does not know a replaced token. A reuse flag is the one
    exception: nvdisasm showed it alone, so it replaces a learned weight that differs (a few real words
    whose operands were always reused together leave the flags' split between the tokens undetermined)."""
    if token.startswith("reuse.") and not gone and token in j["k"] and not delta & ~(0xF << 122):
        if int(j["w"].get(token, "0"), 16) == delta:
            return False
        j["w"][token] = f"{delta:x}"
        return True
    if token in j["k"] or any(g not in j["k"] for g in gone):
        return False
    model = _model(j)
    weight = delta
    for g in gone:
        weight ^= model.weights.get(g, 0)
    if weight:
        j["w"][token] = f"{weight:x}"
    j["k"] = sorted([*j["k"], token])
    return True


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", required=True, choices=sorted(ARCHES))
    ap.add_argument("--table", type=Path, default=None, help="default: sass_lsp/isa/data/<arch>.json.gz")
    args = ap.parse_args()
    t0 = time.time()
    added = walk(args.arch, args.table or DATA / f"{args.arch}.json.gz")
    log(f"{args.arch}: tokens added {added} in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
