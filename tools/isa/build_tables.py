#!/usr/bin/env python3
"""Build the SASS encoder tables ``sass_lsp/isa/data/<arch>.json.gz`` from our own training kernels.

Pipeline (reproducible; needs nvcc/ptxas and nvdisasm, no GPU):
1. compile ``tools/isa/training/*.cu`` for the arch with a few flag sets (cubins cached in ``.cache/isa``);
2. ``nvdisasm -hex -c`` -> real (text, word) samples, branch labels resolved per section;
3. bit-flip probing: for up to ``--cap`` distinct words per form, flip every non-control bit, disassemble
   all variants in raw mode (``nvdisasm -b SMxx``) and keep variants whose text parses. nvdisasm rejects a
   whole file when any word is illegal but names every bad address, so bad words are replaced by NOPs
   and the batch re-run;
4. learn a GF(2)-linear model per specific and per general form (``sass_lsp/isa/gf2.py``).

Held-out cubins (``sass_lsp/corpus``, ``tests/kernels``) are never used here.

    python tools/isa/build_tables.py --arch sm_90
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import datetime
import functools
import gzip
import hashlib
import json
import operator
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from sass_lsp.isa.context import ContextRule  # noqa: E402
from sass_lsp.isa.control import CONTROL_MASK  # noqa: E402
from sass_lsp.isa.features import BIAS, FeatureError, instruction_features, is_nan_name  # noqa: E402
from sass_lsp.isa.gf2 import FormModel, learn  # noqa: E402
from sass_lsp.isa.listing import listing_contexts, parse_listing  # noqa: E402
from sass_lsp.isa.syntax import Instruction, InstructionSyntaxError, parse_instruction  # noqa: E402
from sass_lsp.nvdisasm import nvdisasm_path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import nan_payloads  # noqa: E402

TRAINING = ROOT / "tools" / "isa" / "training"
CACHE = ROOT / ".cache" / "isa"
DATA = ROOT / "sass_lsp" / "isa" / "data"
PROBE_BITS = [b for b in range(128) if not 105 <= b <= 121]
REUSE_BITS = 0xF << 122  # the operand reuse flags (the walk sets them, under a control without yield)
FLAG_SETS = [["-O3"], ["-O3", "-maxrregcount=32"], ["-O3", "-Xptxas", "-O1"], ["-O3", "-use_fast_math"]]
# arch -> (nvcc -arch values to compile, nvdisasm -b name)
ARCHES = {
    "sm_75": (["sm_75"], "SM75"),
    "sm_80": (["sm_80"], "SM80"),
    "sm_86": (["sm_86"], "SM86"),
    "sm_89": (["sm_89"], "SM89"),
    "sm_90": (["sm_90", "sm_90a"], "SM90a"),
    "sm_100a": (["sm_100a"], "SM100a"),
    "sm_120": (["sm_120"], "SM120"),
}
# URZ's field value where it is not 63: from sm_100 on the uniform register field is 8 bits, nvdisasm prints
# field value 63 as UR63 and ptxas writes URZ as 255 (the parser numbers URZ 63 on every arch)
UR_ZERO = {"sm_100a": 255, "sm_120": 255}
GLOBAL_FEATURE = re.compile(r"^(g:not|g:U|g\.r\d|reuse\.\d)$")
# kernel-level loads whose destination may be a field other instructions' text omits (sass_lsp/isa/context.py)
CONTEXT_LOAD = re.compile(r"^(U\w*(?:\.\w+)*) UR\d+, (c\[0x0\]\[0x[0-9a-f]+\])$")
CONTEXT_WIDTH = 6  # a uniform register index (URZ = 63)
CONTEXT_MIN_SAMPLES = 2  # real samples of one form that must agree on a field's place
CONTEXT_MIN_FORMS = 10  # forms a rule must explain to be kept (sm_8x: 40-odd; sm_75 had a 7-form coincidence)
_BAD_ADDR = re.compile(r"at address 0x([0-9a-fA-F]+)")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def tool_version(cmd: list[str]) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True).stdout
    except OSError:
        return "unavailable"
    return next((ln.strip() for ln in out.splitlines() if "release" in ln), out.strip()[:80])


def compile_all(arch: str, cache: Path = CACHE) -> tuple[list[Path], list[str]]:
    gpu_archs, _ = ARCHES[arch]
    jobs = []
    for src in sorted(TRAINING.glob("*.cu")):
        for gpu in gpu_archs:
            for fi, flags in enumerate(FLAG_SETS):
                out = cache / arch / f"{src.stem}.{gpu}.f{fi}.cubin"
                jobs.append((src, gpu, flags, out))
    failures: list[str] = []

    def run(job: tuple[Path, str, list[str], Path]) -> Path | None:
        src, gpu, flags, out = job
        if out.exists() and out.stat().st_mtime > src.stat().st_mtime:
            return out
        out.parent.mkdir(parents=True, exist_ok=True)
        cmd = ["nvcc", "-cubin", f"-arch={gpu}", *flags, "-o", str(out), str(src)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            failures.append(f"{src.name} {gpu} {' '.join(flags)}: {proc.stderr.strip().splitlines()[-1:]}")
            return None
        return out

    with ThreadPoolExecutor(2) as pool:
        cubins = [c for c in pool.map(run, jobs) if c is not None]
    return cubins, failures


def nvdisasm_raw(words: list[int], sm: str) -> dict[int, str]:
    """Disassemble raw words; returns pc -> text. Illegal words are replaced by NOP and the batch re-run."""
    nop = 0x7918 | (0x7E0 << 105)
    words = list(words)
    illegal: set[int] = set()
    for _ in range(20):
        with tempfile.NamedTemporaryFile(suffix=".bin") as tmp:
            tmp.write(b"".join(w.to_bytes(16, "little") for w in words))
            tmp.flush()
            proc = subprocess.run(
                [str(nvdisasm_path()), "-b", sm, "-hex", tmp.name], capture_output=True, text=True
            )
        if proc.returncode == 0:
            break
        bad = {int(a, 16) // 16 for a in _BAD_ADDR.findall(proc.stderr)}
        if not bad - illegal:
            raise RuntimeError(f"nvdisasm failed: {proc.stderr[:300]}")
        for i in bad:
            words[i] = nop
        illegal |= bad
    listing = parse_listing(proc.stdout)
    return {ins.pc: ins.text for ins in listing.instructions if ins.pc // 16 not in illegal}


def _disasm_cached(chunk: list[int], sm: str, cache: Path | None) -> dict[int, str]:
    """nvdisasm_raw, kept in ``cache`` by the batch's words (a rebuild that changes only the model stage
    reprobes nothing)."""
    if cache is None:
        return nvdisasm_raw(chunk, sm)
    digest = hashlib.sha256(b"".join(w.to_bytes(16, "little") for w in chunk) + sm.encode()).hexdigest()
    path = cache / "probe" / f"{digest[:32]}.json.gz"
    if path.is_file():
        with gzip.open(path, "rt") as fh:
            return {int(k): v for k, v in json.load(fh).items()}
    texts = nvdisasm_raw(chunk, sm)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with gzip.open(tmp, "wt") as fh:
        json.dump(texts, fh)
    tmp.replace(path)
    return texts


def probe_words(sources: list[int], sm: str, batch: int, cache: Path | None = None):
    """Yield (source word, its raw text, its pc, [(bit, variant text, variant pc)]) per source word."""
    per = 1 + len(PROBE_BITS)
    words: list[int] = []
    neutral = 0x7E0 << 105  # no scoreboards: a store with W0 (control bits all zero) is illegal
    for w in sources:
        words.append(w | neutral)
        words.extend((w ^ (1 << b)) | neutral for b in PROBE_BITS)
    step = max(per, batch - batch % per)
    batches = [(i, words[i : i + step]) for i in range(0, len(words), step)]

    def run_batch(item: tuple[int, list[int]]) -> dict[int, tuple[str, int]]:
        start, chunk = item
        return {start + pc // 16: (t, pc) for pc, t in _disasm_cached(chunk, sm, cache).items()}

    texts: dict[int, tuple[str, int]] = {}  # global word index -> (text, pc within its batch)
    with ThreadPoolExecutor(2) as pool:
        for result in pool.map(run_batch, batches):
            texts.update(result)
    for gi, w in enumerate(sources):
        head = gi * per
        if head not in texts:
            continue
        orig_text, orig_pc = texts[head]
        variants = [(b, *texts[head + 1 + bi]) for bi, b in enumerate(PROBE_BITS) if head + 1 + bi in texts]
        yield w, orig_text, orig_pc, variants


def sibling_key(key: str) -> tuple[str, str, int]:
    """(opcode, modifiers, operand count) of a specific form key ``'LEA R R UR I P|HI.X.SX32'``."""
    general, _, mods = key.partition("|")
    words = general.split(" ")
    return words[0], mods, len(words) - 1


def context_candidates(listings: list[str]) -> list[ContextRule]:
    """Every kernel-level uniform load of a constant (``ULDC.64 UR4, c[0x0][0x118]``) seen in training:
    :func:`choose_context` keeps the one whose register hidden fields of other instructions repeat."""
    seen: collections.Counter[tuple[str, str]] = collections.Counter()
    for out_text in listings:
        for li in parse_listing(out_text).instructions:
            m = CONTEXT_LOAD.match(li.text)
            if m:
                seen[(m.group(1), m.group(2))] += 1
    return [
        ContextRule(f"{op} {src}", op, src, CONTEXT_WIDTH) for (op, src), n in sorted(seen.items()) if n > 1
    ]


def context_windows(invisible: int, width: int) -> list[int]:
    """Bit offsets of the ``width``-bit windows that lie wholly in ``invisible``."""
    mask = (1 << width) - 1
    return [off for off in range(128 - width + 1) if (invisible >> off) & mask == mask]


def context_offset(samples: list[tuple[int, int]], windows: list[int], width: int) -> int | None:
    """The one offset among ``windows`` at which every ``(word, value)`` sample holds ``value``; None when
    there is no such place or more than one."""
    mask = (1 << width) - 1
    found = [off for off in windows if all((w >> off) & mask == v for w, v in samples)]
    return found[0] if len(found) == 1 else None


def choose_context(
    ctx_specific: dict[str, list[tuple[int, dict[str, int]]]],
    ctx_general: dict[str, list[tuple[int, dict[str, int]]]],
    hidden_probe: dict[str, int],
    general_hp: dict[str, int],
    rules: list[ContextRule],
) -> tuple[ContextRule | None, dict[str, int], dict[str, int], int]:
    """The candidate rule whose value sits in the invisible bits of the most real samples, with the bit
    offset of its field per specific and per general form, and the number of samples it explains."""
    tables = []  # (offsets per key, rows per key, explained counts) for specific, then general forms
    for by_key, hp in ((ctx_specific, hidden_probe), (ctx_general, general_hp)):
        windows = {}
        for key, rows in by_key.items():
            if len(rows) >= CONTEXT_MIN_SAMPLES and hp.get(key, 0):
                found = context_windows(hp[key], CONTEXT_WIDTH)
                if found:
                    windows[key] = found
        tables.append((windows, by_key))
    best: tuple[int, ContextRule | None, dict[str, int], dict[str, int]] = (0, None, {}, {})
    for rule in rules:
        located: list[dict[str, int]] = [{}, {}]
        explained = 0
        for at, (windows, by_key) in zip(located, tables, strict=True):
            for key, found in windows.items():
                samples = [(w, c[rule.name]) for w, c in by_key[key] if rule.name in c]
                if len(samples) < CONTEXT_MIN_SAMPLES:
                    continue
                off = context_offset(samples, found, rule.width)
                if off is not None:
                    at[key] = off
                    explained += len(samples) if at is located[0] else 0
        if explained > best[0]:
            best = (explained, rule, located[0], located[1])
    explained, rule, spec_at, gen_at = best
    if rule is None or len(spec_at) < CONTEXT_MIN_FORMS:
        return None, {}, {}, 0
    return dataclasses.replace(rule, name="desc"), spec_at, gen_at, explained


@dataclasses.dataclass
class Sample:
    ins: Instruction
    text: str
    word: int
    pc: int
    labels: dict[str, int]
    context: dict[str, int] = dataclasses.field(default_factory=dict)  # candidate rule name -> value


def _has_nan(text: str) -> bool:
    try:
        return any(is_nan_name(op) for op in parse_instruction(text).operands)
    except InstructionSyntaxError:
        return False


def features_for(
    sample: Sample,
    label_ops: set[tuple[str, int]],
    raw: bool,
    ur_zero: int = 63,
    nan_bits: dict[str, int] | None = None,
):
    ins = sample.ins
    labels = dict(sample.labels)
    if raw:  # raw mode prints branch targets as absolute numbers
        ops = list(ins.operands)
        for i, op in enumerate(ops):
            if (ins.opcode, i) in label_ops and op.kind == "imm" and op.value is not None:
                name = f"__abs_{op.value:x}"
                labels[name] = op.value
                ops[i] = dataclasses.replace(op, kind="label", name=name, value=None)
        ins = dataclasses.replace(ins, operands=tuple(ops))
    if nan_bits is not None:  # a NaN literal as the bits of the payload ptxas wrote (nan_payloads.py)
        return instruction_features(
            ins, pc=sample.pc, labels=labels, ur_zero=ur_zero, nan_bits=nan_bits, nan_tokens=False
        )
    return instruction_features(ins, pc=sample.pc, labels=labels, ur_zero=ur_zero)


def nan_samples(
    nan_real: list[Sample],
    label_ops: set[tuple[str, int]],
    ur_zero: int,
    real_rows: tuple[dict[str, list[tuple[tuple[str, ...], int]]], ...],
    probe_rows: tuple[dict[str, list[tuple[tuple[str, ...], int]]], ...],
    hidden_probe: dict[str, int],
) -> list[nan_payloads.Payload]:
    """Read the payload of each real word's NaN literals where its form's value bits lie (a model learned
    without NaN words), and add the word to the real samples with those bits: a token per literal would
    make two payloads contradict (FSEL's -QNAN is 0xfff00000 or 0xfff80000, a double's high half)."""
    by_specific, by_general = real_rows
    probe_specific, probe_specific_x, probe_general, probe_general_x = probe_rows
    found: list[nan_payloads.Payload] = []
    models: dict[str, FormModel] = {}

    def model(
        key: str, rows: dict[str, list[tuple[tuple[str, ...], int]]], probes: list, hp: int
    ) -> FormModel:
        if key not in models:
            models[key] = learn(rows.get(key, []), probes, hp)
        return models[key]

    for s in nan_real:
        fs = features_for(s, label_ops, raw=False, ur_zero=ur_zero)
        key, gkey = fs.specific_key, fs.general_key
        spec = model(
            key,
            by_specific,
            probe_specific.get(key, []) + probe_specific_x.get(key, []),
            hidden_probe.get(key, 0),
        )
        got = nan_payloads.payloads(s.ins, s.word, (spec,))
        # another exact form of the same operand kinds places a field this one never varied (MUFU.RSQ's
        # only real word is a NaN, and its probes that flip mantissa bits print NaNs too); the general
        # form mixes formats (MUFU.RSQ.F16), so it comes last
        siblings = sorted(
            (k for k in set(by_specific) | set(probe_specific) if k.startswith(gkey + "|") and k != key),
            key=lambda k: -len(probe_specific.get(k, [])) - len(probe_specific_x.get(k, [])),
        )
        for sib in siblings:
            if len(got) == sum(is_nan_name(op) for op in s.ins.operands):
                break
            probes = probe_specific.get(sib, []) + probe_specific_x.get(sib, [])
            sib_model = model(sib, by_specific, probes, hidden_probe.get(sib, 0))
            got = {**nan_payloads.payloads(s.ins, s.word, (sib_model,)), **got}
        if len(got) < sum(is_nan_name(op) for op in s.ins.operands):
            gen = model(gkey, by_general, probe_general.get(gkey, []) + probe_general_x.get(gkey, []), 0)
            got = {**nan_payloads.payloads(s.ins, s.word, (gen,)), **got}
        if len(got) == sum(is_nan_name(op) for op in s.ins.operands):
            found += [(key, tok, fmt, bits) for tok, (fmt, bits) in got.items()]
            fs = features_for(
                s, label_ops, raw=False, ur_zero=ur_zero, nan_bits={t: b for t, (_, b) in got.items()}
            )
        # else a literal whose field no model places: the word is learned with the literal as a token
        by_specific[fs.specific_key].append(
            (fs.bits + tuple(t for t in fs.tokens if t not in fs.mod_tokens), s.word)
        )
        by_general[fs.general_key].append((fs.bits + fs.tokens, s.word))
    return found


def model_to_json(m: FormModel) -> dict:
    out: dict = {
        "w": {f: f"{v:x}" for f, v in sorted(m.weights.items())},
        "k": sorted(m.known),
        "nr": m.n_real,
        "np": m.n_probe,
    }
    if m.hidden_mask:
        out["hm"] = f"{m.hidden_mask:x}"
        out["hv"] = f"{m.hidden_value:x}"
    if m.irregular_mask:
        out["im"] = f"{m.irregular_mask:x}"
    if m.invisible_mask:
        out["hp"] = f"{m.invisible_mask:x}"
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", required=True, choices=sorted(ARCHES))
    ap.add_argument("--cap", type=int, default=4, help="distinct words probed per specific form")
    ap.add_argument("--cap2", type=int, default=2, help="probed words per form found only by probing")
    ap.add_argument(
        "--rounds", type=int, default=2, help="probing rounds (later rounds probe probe-found forms)"
    )
    ap.add_argument("--batch", type=int, default=40000, help="words per nvdisasm raw call")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--cache", type=Path, default=CACHE, help="where compiled training cubins are kept")
    ap.add_argument(
        "--no-walk", action="store_true", help="skip the field walk (tools/isa/walk_fields.py) at the end"
    )
    args = ap.parse_args()
    t0 = time.time()
    arch = args.arch
    _, sm = ARCHES[arch]
    ur_zero = UR_ZERO.get(arch, 63)

    cubins, failures = compile_all(arch, args.cache)
    log(f"compiled {len(cubins)} cubins ({len(failures)} failed)")
    for f in failures:
        log(f"  compile failed: {f}")

    real: list[Sample] = []
    seen: set[tuple[str, int, int]] = set()
    bad_parse = 0

    def disasm(cubin: Path) -> str:
        return subprocess.run(
            [str(nvdisasm_path()), "-hex", "-c", str(cubin)], capture_output=True, text=True
        ).stdout

    with ThreadPoolExecutor(2) as pool:
        listings = list(pool.map(disasm, cubins))
    context_rules = context_candidates(listings)
    for out_text in listings:
        listing = parse_listing(out_text)
        contexts = listing_contexts(context_rules, listing)
        for li, ctx in zip(listing.instructions, contexts, strict=True):
            try:
                ins = parse_instruction(li.text)
            except InstructionSyntaxError:
                bad_parse += 1
                continue
            word = li.word & ~CONTROL_MASK
            key = (li.text, word, li.pc if "`(" in li.text else 0)
            if key in seen:
                continue
            seen.add(key)
            real.append(
                Sample(ins, li.text, word, li.pc, listing.labels.get(li.section, {}), dict(ctx or {}))
            )
    log(f"real samples: {len(real)} distinct ({bad_parse} unparsable)")

    label_ops = {(s.ins.opcode, i) for s in real for i, op in enumerate(s.ins.operands) if op.kind == "label"}
    # An operand that real words print as a label in some forms and as a number in others (UMOV UR4, a
    # label or 0x2): raw mode prints both as numbers, so there a number is a label only in variants of a
    # word that held one.
    imm_ops = {(s.ins.opcode, i) for s in real for i, op in enumerate(s.ins.operands) if op.kind == "imm"}
    label_only = label_ops - imm_ops
    label_words = {s.word & ~REUSE_BITS for s in real if any(op.kind == "label" for op in s.ins.operands)}

    # real samples -> features
    by_specific: dict[str, list[tuple[tuple[str, ...], int]]] = collections.defaultdict(list)
    by_general: dict[str, list[tuple[tuple[str, ...], int]]] = collections.defaultdict(list)
    probe_specific: dict[str, list[tuple[tuple[str, ...], int]]] = collections.defaultdict(list)
    probe_general: dict[str, list[tuple[tuple[str, ...], int]]] = collections.defaultdict(list)
    probe_specific_x: dict[str, list[tuple[tuple[str, ...], int]]] = collections.defaultdict(
        list
    )  # other forms'
    probe_general_x: dict[str, list[tuple[tuple[str, ...], int]]] = collections.defaultdict(list)
    probe_pool: dict[str, list[Sample]] = collections.defaultdict(list)
    ctx_specific: dict[str, list[tuple[int, dict[str, int]]]] = collections.defaultdict(list)
    ctx_general: dict[str, list[tuple[int, dict[str, int]]]] = collections.defaultdict(list)
    nan_real: list[Sample] = []
    for s in real:
        try:
            fs = features_for(s, label_ops, raw=False, ur_zero=ur_zero)
        except FeatureError:
            continue
        if _has_nan(s.text):
            nan_real.append(s)  # learned once its payload is read (after probing: nan_samples)
        else:
            by_specific[fs.specific_key].append(
                (fs.bits + tuple(t for t in fs.tokens if t not in fs.mod_tokens), s.word)
            )
            by_general[fs.general_key].append((fs.bits + fs.tokens, s.word))
        ctx_specific[fs.specific_key].append((s.word, s.context))
        ctx_general[fs.general_key].append((s.word, s.context))
        pool = probe_pool[fs.specific_key]
        if len(pool) < args.cap and all(p.word != s.word & ~REUSE_BITS for p in pool):
            # under the probes' control value (yield set) a word with reuse flags is illegal
            pool.append(dataclasses.replace(s, word=s.word & ~REUSE_BITS))

    # probing, in rounds: round 1 flips bits of real words; later rounds flip bits of variants whose
    # specific form is still short of ``cap`` probed words (forms that only probing revealed).
    hidden_probe: dict[str, int] = collections.defaultdict(int)
    probed: dict[str, set[int]] = collections.defaultdict(set)
    n_probe = 0
    sources = [s.word for pool in probe_pool.values() for s in pool]
    for key, pool in probe_pool.items():
        probed[key].update(s.word for s in pool)
    for round_idx in range(args.rounds):
        candidates: dict[str, list[int]] = collections.defaultdict(list)
        n_variants = len(sources) * (1 + len(PROBE_BITS))
        log(f"probe round {round_idx + 1}: {len(sources)} words -> {n_variants} variants")
        for src_word, orig_text, orig_pc, variants in probe_words(sources, sm, args.batch, args.cache / arch):
            src_labels = label_ops if src_word in label_words else label_only
            try:
                orig_fs = features_for(
                    Sample(parse_instruction(orig_text), orig_text, src_word, orig_pc, {}),
                    src_labels,
                    raw=True,
                    ur_zero=ur_zero,
                )
            except (InstructionSyntaxError, FeatureError):
                orig_fs = None
            # a NaN literal hides its payload, so an unchanged text says nothing about the bit's visibility
            orig_nan = _has_nan(orig_text)
            for bit, text, pc in variants:
                if text == orig_text:
                    if orig_fs is None:
                        break
                    if not orig_nan:
                        hidden_probe[orig_fs.specific_key] |= 1 << bit
                    continue
                try:
                    fs = features_for(
                        Sample(parse_instruction(text), text, 0, pc, {}),
                        src_labels,
                        raw=True,
                        ur_zero=ur_zero,
                    )
                except (InstructionSyntaxError, FeatureError):
                    continue
                if any(is_nan_name(op) for op in parse_instruction(text).operands):
                    continue  # a NaN's payload is not in the text: such variants contradict each other
                word = src_word ^ (1 << bit)
                # Variants of a word of the same form come first: on columns where texts are ambiguous (two
                # encodings print alike) the model keeps the earliest rows, and a word of another form
                # flipped into this one may be in the encoding ptxas does not write (IADD3's carry-out
                # predicates: P1 with PT, or PT with P1, print alike)
                same = orig_fs is not None and orig_fs.specific_key == fs.specific_key
                (probe_specific if same else probe_specific_x)[fs.specific_key].append(
                    (fs.bits + tuple(t for t in fs.tokens if t not in fs.mod_tokens), word)
                )
                same = orig_fs is not None and orig_fs.general_key == fs.general_key
                (probe_general if same else probe_general_x)[fs.general_key].append(
                    (fs.bits + fs.tokens, word)
                )
                candidates[fs.specific_key].append(word)
                if src_word in label_words:
                    label_words.add(word)
                n_probe += 1
        sources = []
        for key, words in candidates.items():
            have = probed[key]
            for w in dict.fromkeys(words):
                if len(have) >= args.cap2:
                    break
                if w not in have:
                    have.add(w)
                    sources.append(w)
        if not sources:
            break
    log(f"probe samples kept: {n_probe}")
    general_hp: dict[str, int] = collections.defaultdict(int)
    for key, hp in hidden_probe.items():
        general_hp[key.split("|", 1)[0]] |= hp
    nan_found = nan_samples(
        nan_real,
        label_ops,
        ur_zero,
        (by_specific, by_general),
        (probe_specific, probe_specific_x, probe_general, probe_general_x),
        hidden_probe,
    )
    log(f"NaN literals: {len(nan_found)} payloads read from {len(nan_real)} real words")
    rule, spec_at, gen_at, explained = choose_context(
        ctx_specific, ctx_general, hidden_probe, general_hp, context_rules
    )
    if rule is not None:
        log(
            f"context: {rule.opcode} {rule.source} fills hidden fields of {len(spec_at)} forms "
            f"({explained} samples)"
        )

    specific: dict[str, dict] = {}
    general: dict[str, dict] = {}
    n_irregular = 0
    # Bits that probing showed to be invisible (flip -> same text) are set by ptxas to some fixed choice
    # (e.g. RZ in an unused register field). Forms seen only through probing inherit junk there from the
    # probed word, so they get the per-bit-position majority of what ptxas chose in forms it did emit.
    hidden_votes = [[0, 0] for _ in range(128)]
    models: dict[str, FormModel] = {}
    for key in sorted(set(by_specific) | set(probe_specific) | set(probe_specific_x)):
        hp = hidden_probe.get(key, 0)
        m = learn(by_specific.get(key, []), probe_specific.get(key, []) + probe_specific_x.get(key, []), hp)
        models[key] = m
        real_words = [w for _, w in by_specific.get(key, [])]
        for b in range(128):
            if hp >> b & 1 and real_words:
                ones = sum(w >> b & 1 for w in real_words)
                hidden_votes[b][ones * 2 > len(real_words)] += 1
    default_hidden = sum(1 << b for b in range(128) if hidden_votes[b][1] > hidden_votes[b][0])
    siblings: dict[tuple[str, str, int], list[str]] = collections.defaultdict(list)
    for key in by_specific:
        siblings[sibling_key(key)].append(key)
    for key, m in models.items():
        hp = hidden_probe.get(key, 0)
        if not hp and not m.n_real:
            # a form found in the last probing round was never probed itself: its constant columns are the
            # probed word's, so take the invisible bits of its operand kinds (other modifiers) there
            varied = functools.reduce(operator.or_, (w for f, w in m.weights.items() if f != BIAS), 0)
            hp = general_hp.get(key.split("|", 1)[0], 0) & ~varied
        if hp and not m.n_real:
            # prefer what ptxas chose for the same opcode + operand kinds with other modifiers
            real_general = [w for _, w in by_general.get(key.split("|", 1)[0], [])]
            value = default_hidden
            if real_general:  # most common whole pattern, not a per-bit vote
                value = collections.Counter(w & hp for w in real_general).most_common(1)[0][0]
            # and, on bits invisible in both, what it chose for the same modifiers with other operand kinds
            # (an unused register field: the modifiers make it unused, e.g. LEA.HI.X.SX32's high source)
            for sib in siblings.get(sibling_key(key), []):
                both = hp & hidden_probe.get(sib, 0)
                if both:
                    sib_value = collections.Counter(w & both for _, w in by_specific[sib]).most_common(1)[0][
                        0
                    ]
                    value = (value & ~both) | sib_value
            m.hidden_mask |= hp
            m.hidden_value = (m.hidden_value & ~hp) | (value & hp)
        n_irregular += bool(m.hidden_mask)
        j = model_to_json(m)
        if hp:
            j["hp"] = f"{hp:x}"
        if key in spec_at:
            j["cx"] = {"desc": spec_at[key]}
        specific[key] = j
    global_votes: dict[str, collections.Counter[int]] = collections.defaultdict(collections.Counter)
    for key in sorted(set(by_general) | set(probe_general) | set(probe_general_x)):
        probes = probe_general.get(key, []) + probe_general_x.get(key, [])
        m = learn(by_general.get(key, []), probes, general_hp.get(key, 0))
        general[key] = model_to_json(m)
        if key in gen_at:
            general[key]["cx"] = {"desc": gen_at[key]}

        for f, v in m.weights.items():
            if GLOBAL_FEATURE.match(f) and not v & m.irregular_mask:
                global_votes[f][v] += 1
    # arch-wide fallbacks for features a form never saw (e.g. '@!P0' on a form only seen unguarded)
    global_weights = {f: f"{c.most_common(1)[0][0]:x}" for f, c in sorted(global_votes.items())}
    log(f"forms: {len(specific)} specific ({n_irregular} with majority-voted bits), {len(general)} general")

    table = {
        "format": 1,
        "arch": arch,
        "provenance": {
            "script": "tools/isa/build_tables.py",
            "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "nvcc": tool_version(["nvcc", "--version"]),
            "nvdisasm": tool_version([str(nvdisasm_path()), "--version"]),
            "training_sources": sorted(p.name for p in TRAINING.glob("*.cu")),
            "flag_sets": [" ".join(f) for f in FLAG_SETS],
            "compile_failures": failures,
            "n_real": len(real),
            "n_probe": n_probe,
            "probe_cap": args.cap,
            "probe_rounds": args.rounds,
            "model": "GF(2)-linear per form (sass_lsp/isa/gf2.py); features in sass_lsp/isa/features.py",
        },
        "ur_zero": ur_zero,
        "label_operands": sorted([op, i] for op, i in label_ops),
        # kernel-level values that fill fields the text omits; "cx" in a form gives the field's bit offset
        "context": [] if rule is None else [{**rule.to_json(), "forms": len(spec_at), "samples": explained}],
        "global": global_weights,
        "specific": specific,
        "general": general,
    }
    nan_payloads.record(table, nan_found, lambda key: key.split("|", 1)[0])
    out = args.out or DATA / f"{arch}.json.gz"
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = out.with_name(out.name + ".tmp")  # never leave a half-written table behind
    with gzip.open(tmp_out, "wt", compresslevel=9) as fh:
        json.dump(table, fh, separators=(",", ":"))
    tmp_out.replace(out)
    log(f"wrote {out} ({out.stat().st_size / 1e6:.2f} MB) in {time.time() - t0:.0f} s")
    if not args.no_walk:
        from walk_fields import walk

        log(f"field walk: tokens added {walk(arch, out)}")


if __name__ == "__main__":
    main()
