#!/usr/bin/env python3
"""Which NaN payload ptxas writes for a NaN literal, learned from the training kernels' real words.

nvdisasm prints every NaN as ``+QNAN``/``-QNAN``/``+SNAN``: the payload is not in the text, and ptxas writes
the source's constant (CUDA's NaN constant 0x7fffffff, a float conversion's 0x7fc00000, a double's high
half). For each real word with a NaN literal, the payload is read from the word at the places the form's
model gives the literal's value bits. Recorded in the table:

- per form (specific and general), ``nan``: literal token (``o2=+QNAN``) -> the most common payload there;
- ``nan``: literal (``+QNAN``) -> the most common payload over all forms, as f32 bits (a payload moves
  between formats as a conversion moves it: sign and the mantissa's top bits), for forms never trained on
  that literal; ``provenance.nan_payloads`` keeps the counts.

``build_tables.py`` calls :func:`payload_rows` (its models are learned on the payloads, not on a token that
would make two payloads contradict) and :func:`record`; alone, this script records them in an existing table:

    python tools/isa/nan_payloads.py --arch sm_90 --cache /tmp/isa   # compiles training/*.cu there
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import subprocess
import sys
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from sass_lsp.isa.features import (  # noqa: E402
    FORMAT_WIDTH,
    float_format,
    float_op,
    is_nan_name,
    nan_to_f32,
    nan_token,
)
from sass_lsp.isa.gf2 import FormModel  # noqa: E402
from sass_lsp.isa.syntax import Instruction  # noqa: E402

# (form key, literal token, format, payload in the format's bits)
Payload = tuple[str, str, int, int]


def field_positions(model: FormModel, op_idx: int, width: int) -> list[int] | None:
    """Word bit of each value bit of operand ``op_idx``'s immediate (``o2.i0``...), when each is one bit."""
    out = []
    for k in range(width):
        w = model.weights.get(f"o{op_idx}.i{k}", 0)
        if w.bit_count() != 1:
            return None
        out.append(w.bit_length() - 1)
    return out


def payloads(ins: Instruction, word: int, models: Iterable[FormModel | None]) -> dict[str, tuple[int, int]]:
    """literal token -> (format, payload) of each NaN literal of ``ins``, read where the first of ``models``
    that places the operand's value bits puts them; literals no model places are left out."""
    fmt = float_format(float_op(ins))
    out = {}
    for i, op in enumerate(ins.operands):
        if not is_nan_name(op):
            continue
        for model in models:
            pos = None if model is None else field_positions(model, i, FORMAT_WIDTH[fmt])
            if pos is not None:
                out[nan_token(i, op)] = (fmt, sum((word >> p & 1) << k for k, p in enumerate(pos)))
                break
    return out


def record(table: dict, found: Iterable[Payload], general_of: Callable[[str], str]) -> dict:
    """Write the most common payload per form and literal, and per literal over the arch, into ``table``;
    returns the counts (for the provenance)."""
    per_form: dict[str, dict[str, collections.Counter[int]]] = collections.defaultdict(
        lambda: collections.defaultdict(collections.Counter)
    )
    arch: dict[str, collections.Counter[int]] = collections.defaultdict(collections.Counter)
    for key, token, fmt, bits in found:
        per_form[key][token][bits] += 1
        per_form[general_of(key)][token][bits] += 1
        arch[token.split("=", 1)[1]][nan_to_f32(bits, fmt)] += 1
    for kind in ("specific", "general"):
        for key, j in table[kind].items():
            j.pop("nan", None)
            if key in per_form:
                j["nan"] = {t: f"{c.most_common(1)[0][0]:x}" for t, c in sorted(per_form[key].items())}
    table["nan"] = {lit: f"{c.most_common(1)[0][0]:x}" for lit, c in sorted(arch.items())}
    counts = {lit: {f"{v:x}": n for v, n in c.most_common()} for lit, c in sorted(arch.items())}
    table["provenance"]["nan_payloads"] = {
        "script": "tools/isa/nan_payloads.py",
        "samples": sum(sum(c.values()) for c in arch.values()),
        "f32_payloads": counts,
    }
    return counts


def main() -> None:
    from build_tables import DATA, compile_all

    from sass_lsp.isa.control import CONTROL_MASK
    from sass_lsp.isa.encoder import Encoder
    from sass_lsp.isa.features import instruction_features
    from sass_lsp.isa.listing import parse_listing
    from sass_lsp.isa.syntax import InstructionSyntaxError, parse_instruction
    from sass_lsp.nvdisasm import nvdisasm_path

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", required=True)
    ap.add_argument("--table", type=Path, default=None, help="default: sass_lsp/isa/data/<arch>.json.gz")
    ap.add_argument("--cache", type=Path, required=True, help="where compiled training cubins are kept")
    args = ap.parse_args()
    path = args.table or DATA / f"{args.arch}.json.gz"
    with gzip.open(path, "rt") as fh:
        table = json.load(fh)
    enc = Encoder(args.arch, table)
    cubins, _ = compile_all(args.arch, args.cache)

    def disasm(cubin: Path) -> str:
        return subprocess.run(
            [str(nvdisasm_path()), "-hex", "-c", str(cubin)], capture_output=True, text=True
        ).stdout

    found: list[Payload] = []
    seen: set[tuple[str, int]] = set()
    with ThreadPoolExecutor(2) as pool:
        for out in pool.map(disasm, cubins):
            for li in parse_listing(out).instructions:
                if "NAN" not in li.text or (li.text, li.word) in seen:
                    continue
                seen.add((li.text, li.word))
                try:
                    ins = parse_instruction(li.text)
                    fs = instruction_features(ins, nan_tokens=False, ur_zero=enc.ur_zero)
                except (InstructionSyntaxError, ValueError):
                    continue
                models = (enc._get("s", fs.specific_key), enc._get("g", fs.general_key))
                for token, (fmt, bits) in payloads(ins, li.word & ~CONTROL_MASK, models).items():
                    found.append((fs.specific_key, token, fmt, bits))
    counts = record(table, found, lambda key: key.split("|", 1)[0])
    tmp = path.with_name(path.name + ".tmp")
    with gzip.open(tmp, "wt", compresslevel=9) as fh:
        json.dump(table, fh, separators=(",", ":"))
    tmp.replace(path)
    print(f"{args.arch}: NaN payloads (f32 bits: count) {counts}")


if __name__ == "__main__":
    main()
