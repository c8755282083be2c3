#!/usr/bin/env python3
"""Held-out encoder coverage: share of instructions whose full 128-bit word we reproduce exactly.

Sources (never used to build tables): ``sass_lsp/corpus/<arch>/*.cubin``, ``.cache/corpus/<arch>/*.cubin``
(compiled from tests/kernels by another helper) and ``tools/isa/heldout/*.cu`` compiled into
``.cache/isa/heldout/<arch>/``. For each instruction: encode its text (pc, section labels and kernel
context from the listing: ``sass_lsp/isa/context.py``), OR in the control bits of the original word,
compare. A mismatch confined to bits the table marks hidden (predicted by majority vote) is counted
separately.

    python benchmarks/encoder_coverage.py --arch sm_90
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sass_lsp.isa.control import CONTROL_MASK  # noqa: E402
from sass_lsp.isa.encoder import EncodeError, Encoder  # noqa: E402
from sass_lsp.isa.listing import listing_contexts, parse_listing  # noqa: E402
from sass_lsp.nvdisasm import nvdisasm_path  # noqa: E402

HELDOUT_SRC = ROOT / "tools" / "isa" / "heldout"
TRITON_CORPUS = ROOT / "sass_lsp" / "corpus"
NVCC_ARCH = {"sm_90": "sm_90a"}


def heldout_cubins(arch: str) -> list[Path]:
    cubins: list[Path] = []
    for sub in [arch] + ([f"{arch}a"] if arch == "sm_90" else []):  # sm_90a shares sm_90's tables
        cubins += sorted((TRITON_CORPUS / sub).glob("*.cubin"))
        cubins += sorted((ROOT / ".cache" / "corpus" / sub).glob("*.cubin"))
    out_dir = ROOT / ".cache" / "isa" / "heldout" / arch
    for src in sorted(HELDOUT_SRC.glob("*.cu")):
        out = out_dir / f"{src.stem}.cubin"
        if not out.exists() or out.stat().st_mtime < src.stat().st_mtime:
            out_dir.mkdir(parents=True, exist_ok=True)
            gpu = NVCC_ARCH.get(arch, arch)
            proc = subprocess.run(
                ["nvcc", "-cubin", "-O3", f"-arch={gpu}", "-o", str(out), str(src)],
                capture_output=True,
                text=True,
            )
            if proc.returncode != 0:
                print(f"warning: {src.name} failed for {gpu}: {proc.stderr.strip()[-200:]}")
                continue
        cubins.append(out)
    return cubins


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--show", type=int, default=0, help="print this many failing instructions")
    ap.add_argument("--grep", default="", help="only show failures whose text contains this")
    args = ap.parse_args()
    t0 = time.time()
    enc = Encoder.for_arch(args.arch)
    counts = collections.Counter()
    fail_forms: collections.Counter[str] = collections.Counter()
    examples: list[str] = []
    per_file: list[str] = []
    seen_code: set[bytes] = set()
    for cubin in heldout_cubins(args.arch):
        proc = subprocess.run(
            [str(nvdisasm_path()), "-hex", "-c", str(cubin)], capture_output=True, text=True
        )
        listing = parse_listing(proc.stdout)
        code_hash = hashlib.sha256(repr([(i.text, i.word) for i in listing.instructions]).encode()).digest()
        if code_hash in seen_code:  # sm_90 and sm_90a builds of one source often have identical code
            per_file.append(f"  {cubin.name}: same code as an earlier cubin, skipped")
            continue
        seen_code.add(code_hash)
        ok = 0
        contexts = listing_contexts(enc.context_rules, listing)
        for li, context in zip(listing.instructions, contexts, strict=True):
            counts["total"] += 1
            try:
                labels = listing.labels.get(li.section, {})
                res = enc.encode(li.text, pc=li.pc, labels=labels, context=context)
            except EncodeError as exc:
                counts["error"] += 1
                fail_forms[f"error: {exc.message}"] += 1
                if len(examples) < args.show:
                    examples.append(f"{cubin.name} {li.pc:#06x} {li.text}  -> {exc}")
                continue
            word = res.word | (li.word & CONTROL_MASK)
            diff = word ^ li.word
            if not diff:
                counts["exact"] += 1
                ok += 1
            elif not diff & ~res.hidden_mask:
                counts["hidden_only"] += 1
                fail_forms[f"hidden: {res.form}"] += 1
            else:
                counts["wrong"] += 1
                fail_forms[f"wrong: {res.form}"] += 1
                if len(examples) < args.show and args.grep in li.text:
                    bits = [b for b in range(128) if diff >> b & 1]
                    examples.append(f"{cubin.name} {li.pc:#06x} {li.text}  diff bits={bits} form={res.form}")
        per_file.append(f"  {cubin.name}: {ok}/{len(listing.instructions)}")
    total = max(counts["total"], 1)
    n_files = len(seen_code)
    print(f"arch {args.arch}: {counts['total']} held-out instructions, {n_files} cubins with distinct code")
    print(f"  exact:       {counts['exact']} ({100 * counts['exact'] / total:.2f}%)")
    print(f"  hidden-only: {counts['hidden_only']} ({100 * counts['hidden_only'] / total:.2f}%)")
    print(f"  wrong:       {counts['wrong']} ({100 * counts['wrong'] / total:.2f}%)")
    print(f"  error:       {counts['error']} ({100 * counts['error'] / total:.2f}%)")
    print("\n".join(per_file))
    if fail_forms:
        print(f"top failing forms (of {len(fail_forms)}):")
        for form, n in fail_forms.most_common(args.top):
            print(f"  {n:6d}  {form}")
    for ex in examples:
        print("  ex:", ex)
    print(f"time {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
