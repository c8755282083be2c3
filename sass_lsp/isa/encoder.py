"""Feature: instruction encoder. SASS text -> 128-bit word, from per-arch tables learned from data.

Tables (``sass_lsp/isa/data/<arch>.json.gz``) are built by ``tools/isa/build_tables.py``; see
``features.py`` for the feature model and ``gf2.py`` for how weights are learned. The returned word has
the control bits (105-121) zero; ``.reuse`` flags are set. Relocated operands (``32@lo(sym)``) and
branch/call targets that are not in ``labels`` leave the field zero and produce a :class:`RelocRequest`.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import gzip
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .archs import ARCHES, UnsupportedArch, table_arch
from .control import CONTROL_MASK
from .features import BIAS, FeatureError, FeatureSet, instruction_features
from .gf2 import FormModel
from .syntax import Instruction, InstructionSyntaxError, parse_instruction

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

    @classmethod
    @functools.cache
    def for_arch(cls, arch: str) -> Encoder:
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
            model = self._cache[cache_key] = _model(src)
        return model

    def encode(self, text: str, *, pc: int = 0, labels: Mapping[str, int] | None = None) -> Encoded:
        labels = dict(labels or {})
        try:
            ins = parse_instruction(text)
        except InstructionSyntaxError as exc:
            raise EncodeError(exc.message, exc.col, exc.hint) from None
        relocs: list[RelocRequest] = []
        ops = list(ins.operands)
        for i, op in enumerate(ops):
            if op.kind == "reloc" and op.reloc is not None:
                relocs.append(RelocRequest(op.reloc.kind, op.reloc.symbol, op.reloc.addend, i))
            elif op.kind == "label" and op.name not in labels:
                # unresolved target: leave a zero displacement and ask the linker/loader to patch it
                kind = "call" if ins.opcode == "CALL" else "branch"
                relocs.append(RelocRequest(kind, op.name or "", 0, i))
                labels[op.name or ""] = pc + 16
        try:
            fs = instruction_features(dataclasses.replace(ins, operands=tuple(ops)), pc=pc, labels=labels)
        except FeatureError as exc:
            raise EncodeError(exc.message, exc.col, exc.hint) from None
        word, form, hidden, unseen = self._predict(ins, fs)
        return Encoded(word & ~CONTROL_MASK, relocs, form, hidden, unseen)

    def _feats(self, model: FormModel, feats: tuple[str, ...]) -> tuple[int, tuple[str, ...]]:
        """XOR of weights; features unknown to the form fall back to arch-wide weights (guard, reuse)."""
        word = model.weights.get(BIAS, 0)
        unseen = []
        for f in feats:
            if f in model.known:
                word ^= model.weights.get(f, 0)
            elif f in self._global:
                word ^= self._global[f]
            elif _is_value_bit(f):
                unseen.append(f)
        return word, tuple(unseen)

    def _predict(self, ins: Instruction, fs: FeatureSet) -> tuple[int, str, int, tuple[str, ...]]:
        """General model for bits it explains linearly; the exact-modifier model for the rest."""
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
        irr = gen.irregular_mask | gen.invisible_mask | spec.invisible_mask
        word = (g_word & ~irr) | (s_word & irr)
        word = (word & ~spec.hidden_mask) | spec.hidden_value
        return word, fs.specific_key, spec.hidden_mask, g_unseen

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


def encode(arch: str, text: str, *, pc: int = 0, labels: Mapping[str, int] | None = None) -> Encoded:
    return Encoder.for_arch(arch).encode(text, pc=pc, labels=labels)


__all__ = ["BIAS", "EncodeError", "Encoded", "Encoder", "RelocRequest", "UnsupportedArch", "encode"]
