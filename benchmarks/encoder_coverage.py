#!/usr/bin/env python3
"""Held-out encoder coverage: share of instructions whose full 128-bit word we reproduce exactly.

Sources (never used to build tables): ``sass_lsp/corpus/<arch>/*.cubin``, ``.cache/corpus/<arch>/*.cubin``
(compiled from tests/kernels by another helper) and ``tools/isa/heldout/*.cu`` compiled into
``.cache/isa/heldout/<arch>/``. For each instruction: encode its text (pc, section labels and kernel
context from the listing: ``sass_lsp/isa/context.py``), OR in the control bits of the original word,
compare. A mismatch confined to bits the table marks hidden (predicted by majority vote) is counted
separately. The text is nvdisasm's, with no hidden-bit comments: what a CuAssembler-written file holds.
nvdisasm prints every quiet NaN as ``+QNAN``; ``spelled`` counts the misses that the text sass-lsp writes
(such a literal as its f32 bits, ``0f7fc00000``: ``sass_lsp/cuasm/writer.py``) encodes exactly.

Each held-out source is compiled with every flag set of ``FLAG_SETS``; sm_90 and sm_90a are measured
apart (they share the sm_90 tables). ``--arch all`` gives one summary line per arch, then every miss
by form.

    python benchmarks/encoder_coverage.py --arch sm_90
    python benchmarks/encoder_coverage.py --arch all --forms
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sass_lsp.cuasm.writer import spell_nan_payloads  # noqa: E402
from sass_lsp.isa.control import CONTROL_MASK  # noqa: E402
from sass_lsp.isa.encoder import EncodeError, Encoder  # noqa: E402
from sass_lsp.isa.listing import listing_contexts, parse_listing  # noqa: E402
from sass_lsp.nvdisasm import nvdisasm_path  # noqa: E402

HELDOUT_SRC = ROOT / "tools" / "isa" / "heldout"
TRITON_CORPUS = ROOT / "sass_lsp" / "corpus"
ALL_ARCHES = ["sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100a", "sm_120"]
FLAG_SETS = [["-O3"], ["-O3", "-use_fast_math"], ["-O3", "-maxrregcount=32"]]


def _compile(src: Path, gpu: str, flags: list[str], out: Path) -> Path | None:
    if out.exists() and out.stat().st_mtime >= src.stat().st_mtime:
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        ["nvcc", "-cubin", *flags, f"-arch={gpu}", "-o", str(out), str(src)], capture_output=True, text=True
    )
    if proc.returncode != 0:
        print(f"warning: {src.name} {' '.join(flags)} failed for {gpu}: {proc.stderr.strip()[-200:]}")
        return None
    return out


def heldout_cubins(arch: str) -> list[Path]:
    """The corpus cubins of ``arch`` and every held-out source compiled for it with every flag set."""
    cubins: list[Path] = []
    cubins += sorted((TRITON_CORPUS / arch).glob("*.cubin"))
    cubins += sorted((ROOT / ".cache" / "corpus" / arch).glob("*.cubin"))
    out_dir = ROOT / ".cache" / "isa" / "heldout" / arch
    jobs = [
        (src, arch, flags, out_dir / f"{src.stem}.f{fi}.cubin")
        for src in sorted(HELDOUT_SRC.glob("*.cu"))
        for fi, flags in enumerate(FLAG_SETS)
    ]
    with ThreadPoolExecutor(2) as pool:
        cubins += [c for c in pool.map(lambda job: _compile(*job), jobs) if c is not None]
    return cubins


def measure(
    arch: str, show: int = 0, grep: str = ""
) -> tuple[collections.Counter, collections.Counter, list, list]:
    """(counts, misses by form, example lines, per-file lines) for one arch."""
    enc = Encoder.for_arch(arch)
    counts: collections.Counter[str] = collections.Counter()
    fail_forms: collections.Counter[str] = collections.Counter()
    examples: list[str] = []
    per_file: list[str] = []
    seen_code: set[bytes] = set()
    for cubin in heldout_cubins(arch):
        proc = subprocess.run(
            [str(nvdisasm_path()), "-hex", "-c", str(cubin)], capture_output=True, text=True
        )
        listing = parse_listing(proc.stdout)
        code_hash = hashlib.sha256(repr([(i.text, i.word) for i in listing.instructions]).encode()).digest()
        if code_hash in seen_code:  # flag sets often give identical code
            per_file.append(f"  {cubin.name}: same code as an earlier cubin, skipped")
            continue
        seen_code.add(code_hash)
        counts["cubins"] += 1
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
                if len(examples) < show and grep in li.text:
                    examples.append(f"{cubin.name} {li.pc:#06x} {li.text}  -> {exc}")
                continue
            word = res.word | (li.word & CONTROL_MASK)
            diff = word ^ li.word
            if not diff:
                counts["exact"] += 1
                ok += 1
                continue
            if spell_nan_payloads(arch, li.text, li.word, li.pc, labels, enc.encode_word, context):
                counts["spelled"] += 1
            if not diff & ~res.hidden_mask:
                counts["hidden_only"] += 1
                fail_forms[f"hidden: {res.form}"] += 1
                if len(examples) < show and grep in li.text:
                    bits = [b for b in range(128) if diff >> b & 1]
                    examples.append(
                        f"{cubin.name} {li.pc:#06x} {li.text}  hidden bits={bits} form={res.form}"
                        f" word={li.word:#034x} ours={word:#034x}"
                    )
            else:
                counts["wrong"] += 1
                fail_forms[f"wrong: {res.form}"] += 1
                if len(examples) < show and grep in li.text:
                    bits = [b for b in range(128) if diff >> b & 1]
                    examples.append(
                        f"{cubin.name} {li.pc:#06x} {li.text}  diff bits={bits} form={res.form}"
                        f" word={li.word:#034x} ours={word:#034x}"
                    )
        per_file.append(f"  {cubin.name}: {ok}/{len(listing.instructions)}")
    return counts, fail_forms, examples, per_file


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", default="sm_90", help=f"one of {', '.join(ALL_ARCHES)}, or 'all'")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--show", type=int, default=0, help="print this many failing instructions")
    ap.add_argument("--grep", default="", help="only show failures whose text contains this")
    ap.add_argument("--forms", action="store_true", help="list every missed form, not only the top ones")
    ap.add_argument("--files", action="store_true", help="print the per-cubin figures")
    args = ap.parse_args()
    t0 = time.time()
    arches = ALL_ARCHES if args.arch == "all" else [args.arch]
    summary = []
    for arch in arches:
        counts, fail_forms, examples, per_file = measure(arch, args.show, args.grep)
        total = max(counts["total"], 1)
        print(
            f"arch {arch}: {counts['total']} held-out instructions, "
            f"{counts['cubins']} cubins with distinct code"
        )
        for name in ("exact", "hidden_only", "wrong", "error"):
            print(f"  {name + ':':12s} {counts[name]} ({100 * counts[name] / total:.2f}%)")
        written = counts["exact"] + counts["spelled"]
        print(f"  as written:  {written} ({100 * written / total:.2f}%) exact from the text sass-lsp writes")
        if args.files:
            print("\n".join(per_file))
        if fail_forms:
            forms = fail_forms.most_common(None if args.forms else args.top)
            print(f"  missed forms ({len(fail_forms)}):")
            for form, n in forms:
                print(f"  {n:6d}  {form}")
        for ex in examples:
            print("  ex:", ex)
        summary.append(
            f"  {arch:8s} {counts['exact']:6d}/{counts['total']:<6d} {100 * counts['exact'] / total:7.3f}%"
            f"   as sass-lsp writes it {100 * written / total:7.3f}%"
        )
    if len(arches) > 1:
        print("exact text-only encodings per arch:")
        print("\n".join(summary))
    print(f"time {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
