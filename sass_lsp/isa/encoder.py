"""Feature: instruction encoder. SASS text -> 128-bit word, from per-arch tables learned from data.

Tables (``sass_lsp/isa/data/<arch>.json.gz``) are built by ``tools/isa/build_tables.py``; see
``features.py`` for the feature model and ``gf2.py`` for how weights are learned. The returned word has
the control bits (105-121) zero; ``.reuse`` flags are set. Relocated operands (``32@lo(sym)``) and
branch/call targets that are not in ``labels`` leave the field zero and produce a :class:`RelocRequest`.
"""

from __future__ import annotations

import difflib
import functools
import gzip
import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .archs import ARCHES, UnsupportedArch, table_arch
from .context import Context, ContextRule
from .control import CONTROL_MASK
from .features import (
    BIAS,
    FeatureError,
    FeatureSet,
    float_bits,
    float_format,
    float_op,
    instruction_features,
    is_nan_name,
    nan_from_f32,
    nan_token,
)
from .gf2 import FormModel
from .shape import Role, chunk_shape, head_shape, slot_roles, split_shape
from .syntax import REG_ZERO, Instruction, InstructionSyntaxError, parse_instruction

DATA_DIR = Path(__file__).resolve().parent / "data"
# arch -> table file; sm_90a shares sm_90's tables (the 'a' only enables extra instructions in ptxas)


class EncodeError(ValueError):
    """Cannot encode; ``col`` is a 0-based offset into the instruction text, ``hint`` names near forms."""

    def __init__(self, message: str, col: int = 0, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.col = col
        self.hint = hint

    def __str__(self) -> str:
        return self.message + (f" (hint: {self.hint})" if self.hint else "")


@dataclass(frozen=True)
class RelocRequest:
    kind: str  # '32@lo', '32@hi', 'call', 'branch', ...
    symbol: str
    addend: int = 0
    operand_idx: int = 0


@dataclass(frozen=True)
class Encoded:
    word: int  # 128-bit; control bits zero
    relocs: list[RelocRequest] = field(default_factory=list)
    form: str = ""  # the table key that produced the word
    hidden_mask: int = 0  # bits predicted by majority vote (nvdisasm does not show them)
    unseen_bits: tuple[str, ...] = ()  # value bits never varied in training: their effect is a guess


@functools.cache
def _load_table(name: str) -> dict:
    path = DATA_DIR / f"{name}.json.gz"
    if not path.is_file():
        raise UnsupportedArch(f"no encoder table for {name} (run tools/isa/build_tables.py --arch {name})")
    with gzip.open(path, "rt") as fh:
        return json.load(fh)


def _model(j: dict) -> FormModel:
    return FormModel(
        weights={f: int(v, 16) for f, v in j["w"].items()},
        known=set(j["k"]),
        hidden_mask=int(j.get("hm", "0"), 16),
        hidden_value=int(j.get("hv", "0"), 16),
        irregular_mask=int(j.get("im", "0"), 16),
        invisible_mask=int(j.get("hp", "0"), 16),
        n_real=j.get("nr", 0),
        n_probe=j.get("np", 0),
        extra={"cx": j["cx"]} if "cx" in j else {},
    )


def _is_value_bit(name: str) -> bool:
    return name[-1].isdigit() and ("." in name) and not name.startswith("m:") and "=" not in name


class Encoder:
    def __init__(self, arch: str, table: dict) -> None:
        self.arch = arch
        self.table = table
        self.provenance: dict = table.get("provenance", {})
        self._specific: dict[str, dict] = table["specific"]
        self._general: dict[str, dict] = table["general"]
        self._cache: dict[str, FormModel] = {}
        self.label_operands = {(op, i) for op, i in table.get("label_operands", [])}
        self._global: dict[str, int] = {f: int(v, 16) for f, v in table.get("global", {}).items()}
        self._plans: dict[tuple[str, ...], _Plan | None] = {}  # shape -> compiled plan (None: full path)
        self._fields: dict[tuple[str, str, str, int], _Field] = {}
        self._alike: dict[tuple, _Field] = {}  # _Field.signature -> the one field of that signature
        self._words: dict[str, int] = {}  # text -> word, for texts without branch targets or relocations
        self._operands: dict[str, tuple] = {}  # operand text -> its split (shape.split_shape)
        self._heads: dict[str, tuple[str, list[str]]] = {}  # text before the first space -> head_shape
        self._chunks: dict[str, tuple[str, list[str]]] = {}  # text between ", " -> chunk_shape
        self._by_chunks: dict[tuple[str, ...], _Plan] = {}  # _chunk_key -> the shape's compiled plan
        self.context_rules = tuple(ContextRule.from_json(j) for j in table.get("context", []))
        self._widths = {rule.name: rule.width for rule in self.context_rules}
        self.ur_zero: int = table.get("ur_zero", REG_ZERO["UR"])  # URZ's field value (255 from sm_100 on)

    @classmethod
    @functools.cache
    def for_arch(cls, arch: str) -> Encoder:
        name = table_arch(arch)
        if name is None:
            raise UnsupportedArch(f"unsupported arch {arch!r}; known: {', '.join(ARCHES)}")
        return cls(arch, _load_table(name))

    @classmethod
    def uncached(cls, arch: str) -> Encoder:
        """A new encoder with nothing memoised yet (benchmarks time cold runs); the table stays loaded."""
        name = table_arch(arch)
        if name is None:
            raise UnsupportedArch(f"unsupported arch {arch!r}; known: {', '.join(ARCHES)}")
        return cls(arch, _load_table(name))

    # ---- completion support -------------------------------------------------------------------
    @functools.cached_property
    def _opcode_index(self) -> dict[str, set[str]]:
        index: dict[str, set[str]] = {}
        for key in self._specific:
            general, _, mods = key.partition("|")
            opcode = general.split(" ", 1)[0]
            index.setdefault(opcode, set()).update(m for m in mods.split(".") if m)
        return index

    def known_opcodes(self) -> list[str]:
        return sorted(self._opcode_index)

    def known_modifiers(self, opcode: str) -> list[str]:
        return sorted(self._opcode_index.get(opcode, ()))

    def known_forms(self, opcode: str) -> list[str]:
        return sorted(k for k in self._specific if k.split(" ", 1)[0].split("|", 1)[0] == opcode)

    # ---- encoding ------------------------------------------------------------------------------
    def _get(self, kind: str, key: str) -> FormModel | None:
        cache_key = kind + key
        model = self._cache.get(cache_key)
        if model is None:
            src = (self._specific if kind == "s" else self._general).get(key)
            if src is None:
                return None
            model = self._cache[cache_key] = _with_reuse(_model(src), key)
        return model

    def encode(
        self,
        text: str,
        *,
        pc: int = 0,
        labels: Mapping[str, int] | None = None,
        context: Context | None = None,
    ) -> Encoded:
        """``context``: kernel-level values (:mod:`.context`) for fields the text does not show; without
        it such fields keep the value ptxas chose most often, and are reported in ``hidden_mask``."""
        parts = split_shape(text, self._operands)
        key = tuple(parts[::2])
        plan = self._plans.get(key, _NOT_YET)
        if plan is _NOT_YET:
            return self._encode_first(key, text, parts, pc, labels, context)
        if plan is not None:
            try:
                return plan.encode(parts[1::2], pc, labels, context)
            except (ValueError, OverflowError, struct.error):
                pass  # a value the compiled plan cannot convert: the full path gives the exact error
        return self._encode_full(text, pc, labels, context)[0]

    def encode_word(
        self,
        text: str,
        *,
        pc: int = 0,
        labels: Mapping[str, int] | None = None,
        context: Context | None = None,
    ) -> int | Encoded:
        """:meth:`encode`, but only the word where no relocation is asked for (what the writer and the
        assembler read: their callback may return either)."""
        word = self._words.get(text)
        if word is not None:
            return word
        # the shape's key and slots from memoised pieces: the text is cut at its first space and at ", "
        # (kernels repeat those pieces far more than whole texts); equal keys make one shape, and the
        # pieces' slots, in order, are split_shape(text)[1::2]. Inline: this runs once per distinct text.
        head, sep, rest = text.partition(" ")
        entry = self._heads.get(head) or self._head(head)
        key = [entry[0]]
        slots = list(entry[1])
        if sep:
            chunks = self._chunks
            for chunk in rest.split(", "):
                found = chunks.get(chunk) or self._chunk(chunk)
                key.append(found[0])
                slots += found[1]
        plan = self._by_chunks.get(tuple(key))
        if plan is None:
            plan = self._plans.get(tuple(split_shape(text, self._operands)[::2]))
            if plan is None or plan.relocs:
                return self.encode(text, pc=pc, labels=labels, context=context)
            if len(self._by_chunks) >= _MAX_MEMO:
                self._by_chunks.clear()
            self._by_chunks[tuple(key)] = plan
        try:
            if plan.has_label:
                word, _, branch = plan.evaluate(slots, pc, labels, context)
                if branch is not None:
                    return self.encode(text, pc=pc, labels=labels, context=context)
                return word
            word = plan.base
            for idx, memo, step in plan.lookups:  # _Plan.evaluate without branch targets, inline
                part = memo.get(slots[idx])
                word ^= plan.convert(step, slots[idx]) if part is None else part
        except (ValueError, OverflowError, struct.error):
            return self.encode(text, pc=pc, labels=labels, context=context)
        if plan.context_fields:
            return apply_context(word, 0, plan.context_fields, context)[0] if context else word
        if len(self._words) >= _MAX_MEMO:  # the word depends on the text alone
            self._words.clear()
        self._words[text] = word
        return word

    def _head(self, head: str) -> tuple[str, list[str]]:
        """:func:`head_shape` of the text before the first space, memoised."""
        if len(self._heads) >= _MAX_MEMO:
            self._heads.clear()
        entry = self._heads[head] = head_shape(head)
        return entry

    def _chunk(self, chunk: str) -> tuple[str, list[str]]:
        """:func:`chunk_shape` of a text between ", ", memoised."""
        if len(self._chunks) >= _MAX_MEMO:
            self._chunks.clear()
        found = self._chunks[chunk] = chunk_shape(chunk)
        return found

    def _encode_full(
        self, text: str, pc: int, labels: Mapping[str, int] | None, context: Context | None = None
    ) -> tuple[Encoded, Instruction, FeatureSet, _Models]:
        """Parse, extract features and predict: the reference path (compiled plans are checked against it);
        also the parse, the features and the (general, specific) models, for compiling the shape."""
        labels = dict(labels or {})
        try:
            ins = parse_instruction(text)
        except InstructionSyntaxError as exc:
            raise EncodeError(exc.message, exc.col, exc.hint) from None
        relocs: list[RelocRequest] = []
        for i, op in enumerate(ins.operands):
            if op.kind == "reloc" and op.reloc is not None:
                relocs.append(RelocRequest(op.reloc.kind, op.reloc.symbol, op.reloc.addend, i))
            elif op.kind == "label" and op.name not in labels:
                # unresolved target: leave a zero displacement and ask the linker/loader to patch it
                kind = "call" if ins.opcode == "CALL" else "branch"
                relocs.append(RelocRequest(kind, op.name or "", 0, i))
                labels[op.name or ""] = pc + 16
        try:
            fs = instruction_features(ins, pc=pc, labels=labels, nan_tokens=False, ur_zero=self.ur_zero)
            nan_bits = self._nan_bits(ins, fs)
            if nan_bits:
                fs = instruction_features(
                    ins, pc=pc, labels=labels, nan_tokens=False, ur_zero=self.ur_zero, nan_bits=nan_bits
                )
        except FeatureError as exc:
            raise EncodeError(exc.message, exc.col, exc.hint) from None
        models = self._select(ins, fs)
        word, form, hidden, unseen = self._predict(fs, *models)
        word, hidden = apply_context(word, hidden, self._context_fields(*models), context)
        return Encoded(word & ~CONTROL_MASK, relocs, form, hidden, unseen), ins, fs, models

    def _encode_first(
        self,
        key: tuple[str, ...],
        text: str,
        parts: list[str],
        pc: int,
        labels: Mapping[str, int] | None,
        context: Context | None,
    ) -> Encoded:
        """First text of a shape: the full path's answer; its compiled plan is kept if it agrees."""
        if len(self._plans) >= _MAX_MEMO:  # a long editing session types many shapes: start over
            self._plans.clear()
        try:
            result, ins, fs, (gen, spec) = self._encode_full(text, pc, labels, context)
        except EncodeError:
            self._plans[key] = None
            raise
        plan = self._compile(ins, fs, parts, gen, spec)
        try:
            if plan is not None and plan.encode(parts[1::2], pc, labels, context) != result:
                plan = None
        except (ValueError, OverflowError, struct.error):
            plan = None
        self._plans[key] = plan
        return result

    def _nan_bits(self, ins: Instruction, fs: FeatureSet) -> dict[str, int]:
        """Field bits of each NaN literal of ``ins`` (its payload is not in the text): what ptxas wrote most
        often there in training (``nan`` of the exact form, else of the general form), else its most common
        payload for that literal over the arch (``tools/isa/nan_payloads.py``), else IEEE's default."""
        out: dict[str, int] = {}
        fmt = float_format(float_op(ins))
        for i, op in enumerate(ins.operands):
            if not is_nan_name(op):
                continue
            tok = nan_token(i, op)
            for j in (self._specific.get(fs.specific_key), self._general.get(fs.general_key)):
                if j is not None and tok in j.get("nan", {}):
                    out[tok] = int(j["nan"][tok], 16)
                    break
            else:
                arch = self.table.get("nan", {}).get(tok.split("=", 1)[1])
                value = None if arch is None else nan_from_f32(int(arch, 16), fmt)
                if value is not None:
                    out[tok] = value
        return out

    def _compile(
        self,
        ins: Instruction,
        fs: FeatureSet,
        parts: list[str],
        gen: FormModel | None,
        spec: FormModel | None,
    ) -> _Plan | None:
        if any(op.fbits is not None for op in ins.operands):
            return None  # f32 bits written out (0f7fc00000): its slot is not a number the plan converts
        found = slot_roles(parts, ins, self.ur_zero)
        if found is None:
            return None
        guard, roles = found
        non_mod = tuple(t for t in fs.tokens if t not in fs.mod_tokens)
        if spec is None:
            assert gen is not None
            linear = _Linear(self, gen, None, 0)
            form, hidden, tokens = fs.general_key, gen.hidden_mask, fs.tokens
        else:
            irr = 0 if gen is None else _specific_columns(gen, spec)
            linear = _Linear(self, gen, spec, irr)
            form, hidden, tokens = (
                fs.specific_key,
                spec.hidden_mask,
                fs.tokens if gen is not None else non_mod,
            )
        # a guard written as literal text (or none at all: @PT) adds constant value bits
        guard_bits = () if guard is None else tuple(f"g.r{k}" for k in range(3) if guard >> k & 1)
        # float immediates written as names (+INF, -QNAN) hold no slot: their bits are the shape's
        named = {
            f"o{i}." for i, op in enumerate(ins.operands) if op.kind == "fimm" and isinstance(op.fvalue, str)
        }
        guard_bits += tuple(b for b in fs.bits if b[: b.index(".") + 1] in named or b.startswith("s."))
        g_base = linear.gen_word(guard_bits + fs.tokens)
        s_base = linear.spec_word(guard_bits + non_mod)
        const_unseen = tuple(f for f in guard_bits if linear.unseen(f))
        token_unseen = tuple(f for f in tokens if linear.unseen(f))
        fields = [self._field(linear, fs, gen, spec, role) for role in roles]
        relocs = [
            (i, RelocRequest(op.reloc.kind, op.reloc.symbol, op.reloc.addend, i))
            for i, op in enumerate(ins.operands)
            if op.kind == "reloc" and op.reloc is not None
        ]
        return _Plan(
            base=linear.combine(g_base, s_base) & ~CONTROL_MASK,
            roles=roles,
            fields=fields,
            opcode=ins.opcode,
            float_opcode=float_op(ins),
            form=form,
            hidden=hidden,
            const_unseen=const_unseen,
            token_unseen=token_unseen,
            relocs=relocs,
            context_fields=self._context_fields(gen, spec),
        )

    def _context_fields(
        self, gen: FormModel | None, spec: FormModel | None
    ) -> tuple[tuple[str, int, int], ...]:
        """(rule name, bit offset, mask) of each context field: where the specific form's table puts it,
        else where its general form's does, if those bits are invisible in the specific form too."""
        if not self._widths:
            return ()
        located = spec.extra.get("cx") if spec is not None else None
        if not located and gen is not None:
            located = gen.extra.get("cx")
            invisible = spec.invisible_mask if spec is not None else gen.invisible_mask
        else:
            invisible = -1
        fields = []
        for name, offset in (located or {}).items():
            mask = ((1 << self._widths.get(name, 0)) - 1) << offset
            if mask and mask & invisible == mask:
                fields.append((name, offset, mask))
        return tuple(fields)

    def _field(
        self, linear: _Linear, fs: FeatureSet, gen: FormModel | None, spec: FormModel | None, role: Role
    ) -> _Field:
        """Per-bit contributions of one value field, shared by every shape of the same forms."""
        key = (fs.general_key if gen is not None else "", fs.specific_key if spec is not None else "")
        cache_key = (*key, role.prefix, role.width)
        field_ = self._fields.get(cache_key)
        if field_ is None:
            field_ = _Field(linear, role.prefix, role.width)
            if role.width <= _SHARED_WIDTH:  # the register fields of many forms sit on the same bits
                field_ = self._alike.setdefault(field_.signature(), field_)
            self._fields[cache_key] = field_
        return field_

    def _feats(self, model: FormModel, feats: tuple[str, ...]) -> tuple[int, tuple[str, ...]]:
        return _xor_feats(model, feats, self._global)

    def _predict(
        self, fs: FeatureSet, gen: FormModel | None, spec: FormModel | None
    ) -> tuple[int, str, int, tuple[str, ...]]:
        """General model for bits it explains linearly; the exact-modifier model for the rest (the models
        that :meth:`_select` chose)."""
        non_mod = tuple(t for t in fs.tokens if t not in fs.mod_tokens)
        if spec is None:
            assert gen is not None
            word, unseen = self._feats(gen, fs.bits + fs.tokens)
            word = (word & ~gen.hidden_mask) | gen.hidden_value
            return word, fs.general_key, gen.hidden_mask, unseen
        s_word, s_unseen = self._feats(spec, fs.bits + non_mod)
        s_word = (s_word & ~spec.hidden_mask) | spec.hidden_value
        if gen is None:
            return s_word, fs.specific_key, spec.hidden_mask, s_unseen
        g_word, g_unseen = self._feats(gen, fs.bits + fs.tokens)
        # the general model is trusted only on columns it explains linearly from visible data
        irr = _specific_columns(gen, spec)
        word = (g_word & ~irr) | (s_word & irr)
        word = (word & ~spec.hidden_mask) | spec.hidden_value
        return word, fs.specific_key, spec.hidden_mask, g_unseen

    def _select(self, ins: Instruction, fs: FeatureSet) -> tuple[FormModel | None, FormModel | None]:
        """(general, specific) models that serve ``fs``; at least one. Tokens decide, never value bits."""
        non_mod = tuple(t for t in fs.tokens if t not in fs.mod_tokens)
        spec = self._get("s", fs.specific_key)
        if spec is not None and not all(t in spec.known or t in self._global for t in non_mod):
            spec = None
        gen = self._get("g", fs.general_key)
        if gen is not None:
            unknown = [t for t in fs.tokens if t not in gen.known and t not in self._global]
            if unknown:
                if spec is None:
                    raise self._unknown_tokens(ins, fs, unknown, gen)
                gen = None
        if gen is None and spec is None:
            raise self._unknown_form(ins, fs)
        return gen, spec

    def _unknown_tokens(
        self, ins: Instruction, fs: FeatureSet, unknown: list[str], gen: FormModel
    ) -> EncodeError:
        tok = unknown[0]
        if tok.startswith("m:"):
            mod = tok[2:].split("#", 1)[0]
            near = difflib.get_close_matches(mod, self.known_modifiers(ins.opcode), n=4, cutoff=0.4)
            col = ins.opcode_col + ins.text[ins.opcode_col :].find("." + mod) + 1
            hint = f"known {ins.opcode} modifiers: {', '.join(near or self.known_modifiers(ins.opcode)[:12])}"
            return EncodeError(f"unknown modifier .{mod} for {ins.opcode} with these operands", col, hint)
        slot = int(tok[1:].split(".", 1)[0].split(":", 1)[0].split("=", 1)[0]) if tok[0] == "o" else 0
        col = ins.operands[slot].col if tok[0] == "o" and slot < len(ins.operands) else ins.opcode_col
        options = sorted(
            t
            for t in gen.known
            if t.startswith(tok.split(".", 1)[0].split(":", 1)[0].split("=", 1)[0]) and not _is_value_bit(t)
        )
        return EncodeError(
            f"operand form {tok!r} not known for {fs.general_key}", col, "known: " + ", ".join(options[:12])
        )

    def _unknown_form(self, ins: Instruction, fs: FeatureSet) -> EncodeError:
        if ins.opcode not in self._opcode_index:
            near = difflib.get_close_matches(ins.opcode, self.known_opcodes(), n=5, cutoff=0.5)
            return EncodeError(
                f"unknown opcode {ins.opcode} for {self.arch}",
                ins.opcode_col,
                "did you mean: " + ", ".join(near) if near else "",
            )
        forms = sorted({k.split("|", 1)[0] for k in self.known_forms(ins.opcode)})
        near = difflib.get_close_matches(fs.general_key, forms, n=4, cutoff=0.3) or forms[:4]
        return EncodeError(
            f"operand kinds '{fs.general_key}' not known for {ins.opcode}",
            ins.operands[0].col if ins.operands else ins.opcode_col,
            "known forms: " + "; ".join(near),
        )


# register operand slot (its field's lowest bit) -> its reuse flag bit, on every arch since Volta
_REUSE_BIT = {24: 122, 32: 123, 64: 124}


def _with_reuse(model: FormModel, key: str) -> FormModel:
    """``model`` with a weight for ``.reuse`` on each register source it never saw reused: the flag of the
    operand slot its register field sits in (ra, rb, rc). The flag is not at a fixed source ordinal (IABS's
    one source is rb), and a wrong one lands in another field of the word (nvdisasm rejects it)."""
    tags = key.partition("|")[0].split(" ")[1:]
    ordinal = 0  # as instruction_features numbers reuse tokens
    for i, tag in enumerate(tags):
        name = f"reuse.{ordinal}"
        if i > 0 and tag == "R" and name not in model.known:
            field_ = model.weights.get(f"o{i}.r0", 0) & ~CONTROL_MASK
            bit = _REUSE_BIT.get((field_ & -field_).bit_length() - 1) if f"o{i}.r0" in model.known else None
            if bit is not None:
                model.weights[name] = 1 << bit
                model.known.add(name)
        if i > 0 and tag not in ("P", "UP"):
            ordinal += 1
    return model


def _xor_feats(
    model: FormModel, feats: tuple[str, ...], global_weights: dict[str, int]
) -> tuple[int, tuple[str, ...]]:
    """XOR of weights; features unknown to the form fall back to arch-wide weights (guard, reuse)."""
    word = model.weights.get(BIAS, 0)
    unseen = []
    for f in feats:
        if f in model.known:
            word ^= model.weights.get(f, 0)
        elif f in global_weights:
            word ^= global_weights[f]
        elif _is_value_bit(f):
            unseen.append(f)
    return word, tuple(unseen)


def _specific_columns(gen: FormModel, spec: FormModel) -> int:
    """Columns the specific model decides: those the general one does not explain linearly from visible
    data. For a form seen only through probing, columns that only the general model knows to be invisible
    stay the general model's: its real samples fill them, where the probes' source words left junk."""
    columns = gen.irregular_mask | gen.invisible_mask | spec.invisible_mask
    if not spec.n_real:
        columns &= ~(gen.invisible_mask & ~spec.invisible_mask & ~gen.irregular_mask & ~gen.hidden_mask)
    return columns


class _Linear:
    """The prediction of one (general, specific) model pair as an affine map over features: the word is
    ``combine(XOR of gen weights, XOR of spec weights)``, and ``combine`` is linear up to the hidden value,
    so each feature has one contribution to the final word."""

    def __init__(self, enc: Encoder, gen: FormModel | None, spec: FormModel | None, irregular: int) -> None:
        # the arch-wide weights, not the encoder: the encoder holds this through its plans, and a cycle
        # would leave a finished (uncached) encoder to the collector instead of freeing it at once
        self.glob = enc._global
        self.gen, self.spec, self.irregular = gen, spec, irregular
        self.hidden_mask = (spec or gen).hidden_mask  # type: ignore[union-attr]
        self.hidden_value = (spec or gen).hidden_value  # type: ignore[union-attr]

    def _weight(self, model: FormModel | None, f: str) -> int:
        if model is None:
            return 0
        return model.weights.get(f, 0) if f in model.known else self.glob.get(f, 0)

    def gen_word(self, feats: tuple[str, ...]) -> int:
        return 0 if self.gen is None else _xor_feats(self.gen, feats, self.glob)[0]

    def spec_word(self, feats: tuple[str, ...]) -> int:
        return 0 if self.spec is None else _xor_feats(self.spec, feats, self.glob)[0]

    def linear(self, g_word: int, s_word: int) -> int:
        if self.spec is None:
            return g_word & ~self.hidden_mask
        if self.gen is None:
            return s_word & ~self.hidden_mask
        irr = self.irregular
        return ((g_word & ~irr) | (s_word & irr)) & ~self.hidden_mask

    def combine(self, g_word: int, s_word: int) -> int:
        return self.linear(g_word, s_word) | self.hidden_value

    def contribution(self, f: str) -> int:
        return self.linear(self._weight(self.gen, f), self._weight(self.spec, f))

    def unseen(self, f: str) -> bool:
        """Reported as never varied in training (by the general model when it takes part, as _predict)."""
        model = self.gen if self.gen is not None else self.spec
        assert model is not None
        return f not in model.known and f not in self.glob and _is_value_bit(f)


class _Field:
    """One value field's contribution to the word, per 4-bit nibble of the value: a nibble's 16 values are
    tabulated from its four bit contributions when a value first uses it (the word is linear in the bits)."""

    __slots__ = ("linear", "mask", "prefix", "slot_words", "tables", "unseen_mask")

    def __init__(self, linear: _Linear, prefix: str, width: int) -> None:
        self.linear, self.prefix = linear, prefix
        self.tables: list[list[int] | None] = [None] * ((width + 3) // 4)
        self.mask = (1 << width) - 1
        self.unseen_mask = 0  # over the nibbles tabulated so far
        # per slot conversion and its argument: slot text -> contribution
        self.slot_words: dict[tuple[int, int], dict[str, int]] = {}

    def signature(self) -> tuple:
        """What decides every value's contribution and unseen bits (tabulating all nibbles): fields of
        different forms with equal signatures can be one, sharing their tables and slot memos."""
        tables = tuple(tuple(self._table(nibble)) for nibble in range(len(self.tables)))
        return self.prefix, self.mask, self.unseen_mask, tables

    def _table(self, nibble: int) -> list[int]:
        table = [0]
        for k in range(4 * nibble, min(4 * nibble + 4, self.mask.bit_length())):
            name = f"{self.prefix}{k}"
            contribution = self.linear.contribution(name) & ~CONTROL_MASK
            table += [word ^ contribution for word in table]
            if self.linear.unseen(name):
                self.unseen_mask |= 1 << k
        table += [0] * (16 - len(table))  # a narrow field's value never reaches these
        self.tables[nibble] = table
        return table

    def word(self, value: int) -> int:
        """The contribution of ``value`` (already masked to the field); also completes ``unseen_mask``
        for the nibbles of ``value``."""
        word, nibble = 0, 0
        while value:
            if value & 0xF:
                word ^= (self.tables[nibble] or self._table(nibble))[value & 0xF]
            value >>= 4
            nibble += 1
        return word

    def unseen(self, value: int) -> list[str]:
        value &= self.unseen_mask
        return [f"{self.prefix}{k}" for k in range(value.bit_length()) if value >> k & 1]


# slot conversions of a plan step
_REG, _HEX, _NEG_HEX, _FLOAT, _NEG_FLOAT, _LABEL = range(6)


class _Plan:
    """One shape compiled: the word of its literal text, plus one field per slot."""

    def __init__(
        self,
        base: int,
        roles: list[Role],
        fields: list[_Field],
        opcode: str,
        float_opcode: str,
        form: str,
        hidden: int,
        const_unseen: tuple[str, ...],
        token_unseen: tuple[str, ...],
        relocs: list[tuple[int, RelocRequest]],
        context_fields: tuple[tuple[str, int, int], ...] = (),
    ) -> None:
        self.base, self.opcode, self.form, self.hidden = base, opcode, form, hidden
        self.float_opcode = float_opcode  # what float_bits needs: the opcode, and whether it is bf16
        self.context_fields = context_fields
        self.const_unseen, self.token_unseen = const_unseen, token_unseen
        self.relocs = relocs  # (operand index, request) of relocated immediates
        self.has_label = any(role.kind == "label" for role in roles)
        # (slot index, slot text -> contribution, conversion, arg, value mask, field)
        self.steps: list[_Step] = []
        for idx, (role, field_) in enumerate(zip(roles, fields, strict=True)):
            if role.kind in ("reg", "guard"):
                conv, arg = _REG, role.zero
            elif role.kind == "hex":
                conv, arg = (_NEG_HEX if role.negative else _HEX), 0
            elif role.kind == "float":
                conv, arg = (_NEG_FLOAT if role.negative else _FLOAT), 0
            else:
                conv, arg = _LABEL, role.operand_idx
            memo = _NO_MEMO if conv == _LABEL else field_.slot_words.setdefault((conv, arg), {})
            self.steps.append((idx, memo, conv, arg, field_.mask, field_))
        self.lookups = [(step[0], step[1], step) for step in self.steps]  # what encode_word reads first

    def evaluate(
        self, slots: list[str], pc: int, labels: Mapping[str, int] | None, context: Context | None = None
    ) -> tuple[int, list[str] | None, list[tuple[int, RelocRequest]] | None]:
        """(word, unseen value bits or None, requests for unresolved targets or None) for the slot texts
        ``slots`` (``split_shape(text)[1::2]``)."""
        word = self.base
        unseen: list[str] | None = None
        branch: list[tuple[int, RelocRequest]] | None = None
        for step in self.steps:
            slot_idx, memo, conv, arg, mask, field_ = step
            slot = slots[slot_idx]
            part = memo.get(slot)
            if part is not None:  # this slot text was seen in this field before (register numbers, offsets)
                word ^= part
                continue
            if conv != _LABEL:
                value = _slot_value(self.float_opcode, conv, arg, slot) & mask
                part = field_.word(value) if value else 0
                if value & field_.unseen_mask:  # complete for the bytes of value: word() read their bits
                    unseen = (unseen or []) + field_.unseen(value)
                elif len(memo) < _MAX_MEMO:
                    memo[slot] = part
                word ^= part
                continue
            target = labels.get(slot) if labels is not None else None
            if target is None:  # unresolved: zero displacement and a request to patch it
                branch = branch or []
                if all(r.symbol != slot for _, r in branch):
                    kind = "call" if self.opcode == "CALL" else "branch"
                    branch.append((arg, RelocRequest(kind, slot, 0, arg)))
                continue
            value = (target - (pc + 16)) & mask
            word ^= field_.word(value) if value else 0
            if value & field_.unseen_mask:
                unseen = (unseen or []) + field_.unseen(value)
        if context and self.context_fields:
            word = apply_context(word, 0, self.context_fields, context)[0]
        return word, unseen, branch

    def convert(self, step: _Step, slot: str) -> int:
        """The contribution of ``slot`` (not a branch target) to ``step``'s field, memoised there where it
        reads no unseen bit (as :meth:`evaluate` does)."""
        _, memo, conv, arg, mask, field_ = step
        value = _slot_value(self.float_opcode, conv, arg, slot) & mask
        part = field_.word(value) if value else 0
        if not value & field_.unseen_mask and len(memo) < _MAX_MEMO:
            memo[slot] = part
        return part

    def encode(
        self, slots: list[str], pc: int, labels: Mapping[str, int] | None, context: Context | None = None
    ) -> Encoded:
        word, unseen, branch = self.evaluate(slots, pc, labels, context)
        if branch is None:
            relocs = [r for _, r in self.relocs]
        else:
            relocs = [r for _, r in sorted(self.relocs + branch, key=lambda item: item[0])]
        if unseen is None:
            all_unseen = self.const_unseen + self.token_unseen
        else:
            all_unseen = self.const_unseen + tuple(unseen) + self.token_unseen
        hidden = self.hidden
        if context and self.context_fields:
            hidden = apply_context(0, hidden, self.context_fields, context)[1]
        return Encoded(word, relocs, self.form, hidden, all_unseen)


def _slot_value(opcode: str, conv: int, arg: int, slot: str) -> int:
    """The value a slot text holds under conversion ``conv`` (not a branch target), before masking."""
    if conv == _REG:
        return int(slot) if slot.isdigit() else arg
    if conv == _HEX:
        return int(slot, 16)
    if conv == _NEG_HEX:
        return -int(slot, 16)
    return float_bits(opcode, float("-" + slot if conv == _NEG_FLOAT else slot))


def apply_context(
    word: int, hidden: int, fields: tuple[tuple[str, int, int], ...], context: Context | None
) -> tuple[int, int]:
    """``word`` with each context field that ``context`` has a value for written in; those bits leave
    ``hidden``."""
    if not context:
        return word, hidden
    for name, offset, mask in fields:
        value = context.get(name)
        if value is not None:
            word = (word & ~mask) | ((value << offset) & mask)
            hidden &= ~mask
    return word, hidden


_Models = tuple[FormModel | None, FormModel | None]  # (general, specific), as _select chooses
# a plan step: (slot index, slot text -> contribution, conversion, arg, value mask, field)
_Step = tuple[int, dict[str, int], int, int, int, "_Field"]
_NOT_YET = object()  # marks a shape not compiled yet
_SHARED_WIDTH = 8  # fields this narrow are shared by signature (wide ones, immediates, rarely repeat values)
_MAX_MEMO = 1 << 18  # texts (slot texts per field) remembered before a memo starts over (stops growing)
_NO_MEMO: dict[str, int] = {}  # branch targets: never filled (they depend on pc and labels)


def encode(
    arch: str,
    text: str,
    *,
    pc: int = 0,
    labels: Mapping[str, int] | None = None,
    context: Context | None = None,
) -> Encoded:
    return Encoder.for_arch(arch).encode(text, pc=pc, labels=labels, context=context)


__all__ = ["BIAS", "EncodeError", "Encoded", "Encoder", "RelocRequest", "UnsupportedArch", "encode"]
