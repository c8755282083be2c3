"""Feature: .cuasm assembly. Text in, cubin bytes out (or :class:`AssembleError` with diagnostics).

Steps: parse; lay out every section (labels, pcs); evaluate data directives; encode instructions
through the ``encode`` callback; update symbols, REGCOUNT and relocations; lay out the file
(recorded offsets are kept when no size changed, so unmodified round trips are byte-identical);
then disassemble the result once and check every instruction text against its source line (skipped
when every word and text was verified before in this process: :mod:`sass_lsp.cuasm.verified`).
"""

from __future__ import annotations

import codecs
import contextlib
import gc
import re
import struct
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from sass_lsp.cuasm.ctrl import CTRL_MASK, encode_ctrl
from sass_lsp.cuasm.encoding import EncodeFn, context_rules, default_encoder
from sass_lsp.cuasm.exprs import Context, ExprError, evaluate
from sass_lsp.cuasm.parser import clip, parse_cuasm
from sass_lsp.cuasm.verified import VERIFIED, VerifiedWords
from sass_lsp.elf.arch import OSABI_CUDA_V7, sm_from_flags
from sass_lsp.elf.layout import relayout
from sass_lsp.elf.model import (
    PT_VALUES,
    SECTION_TYPE_VALUES,
    SHT_NOBITS,
    SHT_NULL,
    SHT_REL,
    SHT_RELA,
    SHT_SYMTAB,
    Cubin,
    ElfHeader,
    Relocation,
    Section,
    Segment,
    Symbol,
)
from sass_lsp.elf.nvinfo import EIATTR_REGCOUNT, SVAL, parse_nvinfo, write_nvinfo
from sass_lsp.elf.reader import pack_relocations, pack_symbol, parse_symbols
from sass_lsp.elf.writer import write_cubin
from sass_lsp.isa.archs import UnsupportedArch
from sass_lsp.isa.context import Context as KernelContext
from sass_lsp.isa.context import section_contexts
from sass_lsp.isa.semantics import load_semantics
from sass_lsp.model import Diagnostic, Directive, Field, Instruction, Label, Module, SectionBlock, has_errors

R_CUDA_32 = 1
R_CUDA_64 = 2
ZERO_REGISTER = 255  # RZ: covers no register
RESERVED_REGISTERS = 2  # the registers above the highest a kernel uses, counted in its register count
_DATA_SIZES = {".byte": 1, ".short": 2, ".half": 2, ".word": 4, ".dword": 8, ".quad": 8}
_NO_BYTES = {
    ".global",
    ".weak",
    ".local",
    ".type",
    ".size",
    ".other",
    ".sectionflags",
    ".sectioninfo",
    ".sectionentsize",
    ".tkinfo",
    ".headerflags",
    ".elftype",
    ".target",
}
_ELF_TYPES = {"ET_NONE": 0, "ET_REL": 1, "ET_EXEC": 2, "ET_DYN": 3}
_TEXT_RELOCS = {"32@lo": 56, "32@hi": 57}  # R_CUDA_ABS32_LO_32 / _HI_32
_REG_RE = re.compile(r"R(?<!\wR)(\d{1,3})\b")  # \bR..., with a literal first for a fast scan
# the same on ASCII text, where the ASCII classes agree with the Unicode ones and cost a table look-up
_ASCII_REG_RE = re.compile(_REG_RE.pattern, re.ASCII)


class AssembleError(Exception):
    def __init__(self, diagnostics: list[Diagnostic], source_name: str = "<input>") -> None:
        self.diagnostics = diagnostics
        self.source_name = source_name
        errors = [d for d in diagnostics if d.severity == "error"]
        super().__init__("\n".join(d.format(source_name) for d in errors[:20]))


@dataclass
class _Sec:
    idx: int
    block: SectionBlock
    type: int
    size_field: int
    data: bytearray = field(default_factory=bytearray)
    size: int = 0  # bytes (or nobits extent) produced by the directives
    has_extent: bool = False  # directives gave a size (otherwise keep the header's for nobits)
    relocs: list[tuple[int, str, int, int]] = field(default_factory=list)  # offset, sym, type, addend
    # the block's items by kind, as layout meets them (later passes read these, not the whole items)
    instrs: list[Instruction] = field(default_factory=list)
    directives: list[Directive] = field(default_factory=list)


def directive_size(name: str, args: str, offset: int) -> int | None:
    """Bytes a directive adds at ``offset``; None for an unknown directive."""
    if name in _DATA_SIZES:
        return _DATA_SIZES[name] * _count_args(args)
    if name == ".zero":
        return int(args.split(",")[0], 0)
    if name == ".align":
        align = int(args.split(",")[0], 0) if args else 0
        return (-offset) % align if align > 1 else 0
    if name == ".string":
        return len(_string_bytes(args)) + 1
    if name in _NO_BYTES:
        return 0
    return None


def _count_args(args: str) -> int:
    """``len(split_args(args))``."""
    if '"' in args or "(" in args or ")" in args:
        return len(split_args(args))
    n_commas = args.count(",")
    return n_commas + 1 if n_commas or args.strip() else 0


def split_args(args: str) -> list[str]:
    """Split on commas outside parentheses and quotes."""
    if '"' not in args and "(" not in args and ")" not in args:  # data bytes: every comma splits
        out = [arg.strip() for arg in args.split(",")]
        return out if out != [""] else []
    out, depth, quote, start = [], 0, False, 0
    for idx, ch in enumerate(args):
        if ch == '"':
            quote = not quote
        elif not quote and ch == "(":
            depth += 1
        elif not quote and ch == ")":
            depth -= 1
        elif not quote and depth == 0 and ch == ",":
            out.append(args[start:idx].strip())
            start = idx + 1
    tail = args[start:].strip()
    if tail or out:
        out.append(tail)
    return out


def _string_bytes(args: str) -> bytes:
    text = args.strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        text = text[1:-1]
    return codecs.escape_decode(text.encode("latin-1", "backslashreplace"))[0]


def _section_type(block: SectionBlock) -> int:
    value = block.fields.get("type")
    if value is not None:
        if isinstance(value.value, int):
            return value.value
        if value.value in SECTION_TYPE_VALUES:
            return SECTION_TYPE_VALUES[value.value]
    text = block.type_text.strip('@"')
    if text in SECTION_TYPE_VALUES:
        return SECTION_TYPE_VALUES[text]
    return {"progbits": 1, "nobits": SHT_NOBITS}.get(text, 1)


class _Assembler:
    def __init__(self, module: Module, encode: EncodeFn | None) -> None:
        self.module = module
        self.encode = encode
        self.diags: list[Diagnostic] = []
        self.secs: list[_Sec] = []
        self.labels: dict[str, tuple[int, int]] = {}
        self.symbols: list[Symbol] = []
        self.sym_index: dict[str, int] = {}
        self.current_text: int | None = None
        self.ctrl_bits: dict[str, int] = {}  # control text -> shifted bits (a kernel has few distinct ones)
        self.context_rules = context_rules(encode)

    def error(self, line: int, col: int, message: str, hint: str = "") -> None:
        self.diags.append(Diagnostic(line, col, message, hint))

    # -- pass 1: offsets of labels and instructions -------------------------------------------------
    def layout(self) -> None:
        for idx, block in enumerate(self.module.sections):
            sec = _Sec(idx, block, _section_type(block), block.field_int("size"))
            self.secs.append(sec)
            offset = 0
            instrs, directives = sec.instrs, sec.directives
            for item in block.items:
                if isinstance(item, Instruction):
                    offset += 16
                    instrs.append(item)
                elif isinstance(item, Label):
                    if item.name in self.labels:
                        self.error(
                            item.line,
                            item.col,
                            f"label '{clip(item.name)}' defined twice",
                            "rename one of the labels",
                        )
                    self.labels[item.name] = (idx, offset)
                else:
                    directives.append(item)
                    try:
                        size = directive_size(item.name, item.args, offset)
                    except ValueError:
                        self.error(
                            item.line,
                            item.args_col,
                            f"bad argument for {clip(item.name)}: '{clip(item.args)}'",
                            "use a decimal or 0x hexadecimal count",
                        )
                        continue
                    if size is None:
                        self.error(
                            item.line,
                            item.col,
                            f"unknown directive '{clip(item.name)}'",
                            "supported: .byte .short .word .dword .zero .align .string and the "
                            "symbol/section directives",
                        )
                        continue
                    if item.name in _DATA_SIZES or item.name in (".zero", ".string"):
                        sec.has_extent = True
                    offset += size
            sec.size = offset
            if instrs:
                sec.has_extent = True

    # -- symbols ----------------------------------------------------------------------------------
    def load_symbols(self) -> None:
        strtab = symtab = None
        for sec in self.secs:
            if sec.type == SHT_SYMTAB:
                symtab = sec
        if symtab is None:
            return
        link = symtab.block.field_int("link")
        strtab = self.secs[link] if 0 < link < len(self.secs) else None
        for sec in (strtab, symtab):
            if sec is not None:
                self.fill_data(sec)
        if strtab is None:
            return
        self.symbols = parse_symbols(bytes(symtab.data), bytes(strtab.data))
        for idx, sym in enumerate(self.symbols):
            if sym.name and sym.name not in self.sym_index:
                self.sym_index[sym.name] = idx

    def context(self, for_data: bool) -> Context:
        def label_offset(name: str) -> int | None:
            hit = self.labels.get(name)
            return None if hit is None else hit[1]

        def is_symbol(name: str) -> bool:
            return for_data and name in self.sym_index

        return Context(label_offset, self.sym_index.get, is_symbol)

    # -- pass 2: data -----------------------------------------------------------------------------
    def fill_data(self, sec: _Sec) -> None:
        if sec.data or sec.type in (SHT_NULL, SHT_REL, SHT_RELA):
            return
        ctx = self.context(for_data=True)
        out = sec.data
        nobits = sec.type == SHT_NOBITS
        labels = {name: off for name, (idx, off) in self.labels.items() if idx == sec.idx}
        self.current_text = sec.idx
        contexts = iter(self.section_contexts(sec)) if self.context_rules else None
        encode, ctrl_bits = self.encode, self.ctrl_bits
        inline = encode is not None and contexts is None
        for item in sec.block.items:
            if isinstance(item, Instruction):
                # the common case inline (a word from text alone); encode_instruction has the rest
                if inline and item.raw is None and (ctrl := ctrl_bits.get(item.ctrl)) is not None:
                    try:
                        encoded = encode(item.text, pc=len(out), labels=labels)
                    except Exception as err:  # the encoder reports unsupported instructions by raising
                        self.encode_failed(item, err)
                        encoded = 0
                    if type(encoded) is int:
                        out += ((encoded | ctrl) ^ item.hidden).to_bytes(16, "little")
                        continue
                context = next(contexts) if contexts is not None else None
                word = self.encode_instruction(item, len(out), labels, context)
                out += word.to_bytes(16, "little")
                continue
            if isinstance(item, Label):
                continue
            name = item.name
            if name in _DATA_SIZES:
                width = _DATA_SIZES[name]
                args = split_args(item.args)
                try:  # plain numbers (nearly every data line): no expressions, no relocations
                    if width == 1:  # .byte lines, the most numerous: no to_bytes per number
                        out += bytes([int(arg, 0) & 0xFF for arg in args])
                    else:
                        mask = (1 << 8 * width) - 1
                        out += b"".join((int(arg, 0) & mask).to_bytes(width, "little") for arg in args)
                    continue
                except ValueError:
                    pass
                for arg in args:
                    out += self.data_value(sec, item, arg, width, len(out), ctx).to_bytes(width, "little")
            elif name == ".zero":
                if not nobits:
                    out += bytes(int(item.args.split(",")[0], 0))
                else:
                    sec.size = sec.size  # extent already counted in layout
            elif name == ".align":
                pad = directive_size(name, item.args, len(out)) or 0
                out += bytes(pad)
            elif name == ".string":
                out += _string_bytes(item.args) + b"\0"

    def data_value(self, sec: _Sec, item: Directive, arg: str, width: int, offset: int, ctx: Context) -> int:
        try:
            fast = int(arg, 0)
        except ValueError:
            fast = None
        if fast is not None:
            return fast & ((1 << 8 * width) - 1)
        try:
            value = evaluate(arg, ctx)
        except ExprError as err:
            col = item.args_col + max(0, item.args.find(arg)) + err.col
            self.error(item.line, col, str(err), err.hint)
            return 0
        if value.reloc_sym is None:
            return value.value & ((1 << 8 * width) - 1)
        if width not in (4, 8):
            self.error(
                item.line,
                item.args_col,
                f"symbol '{value.reloc_sym}' needs a .word or .dword",
                "relocations are 32 or 64 bits wide",
            )
            return 0
        rel = self.reloc_section_for(sec.idx)
        if rel is None:
            self.error(
                item.line,
                item.args_col,
                f"no .rel/.rela section for {sec.block.name}",
                f"add a '.rela{sec.block.name}' section to hold the relocation",
            )
            return 0
        sec.relocs.append((offset, value.reloc_sym, R_CUDA_64 if width == 8 else R_CUDA_32, value.value))
        # ptxas writes the addend into the field for REL and RELA alike (checked on CUDA 13 cubins).
        return value.value & ((1 << 8 * width) - 1)

    def reloc_section_for(self, target: int) -> _Sec | None:
        found = [
            s for s in self.secs if s.type in (SHT_REL, SHT_RELA) and self.header_value(s, "info") == target
        ]
        found.sort(key=lambda s: s.type != SHT_RELA)
        return found[0] if found else None

    def section_contexts(self, sec: _Sec) -> list[KernelContext | None]:
        """Kernel context of each instruction of ``sec`` (:mod:`sass_lsp.isa.context`)."""
        texts = [ins.text for ins in sec.instrs]
        return section_contexts(self.context_rules, texts)

    def encode_instruction(
        self, ins: Instruction, pc: int, labels: Mapping[str, int], context: KernelContext | None = None
    ) -> int:
        ctrl = self.ctrl_bits.get(ins.ctrl)
        if ctrl is None:
            try:
                ctrl = encode_ctrl(ins.ctrl)
            except ValueError:  # a bad field the parser reported (instruction_diagnostics runs after it)
                ctrl = 0
            cause = _control_cause(ins.ctrl, module_arch(self.module))
            if cause is None:
                self.ctrl_bits[ins.ctrl] = ctrl
            else:  # no word holds it (nvdisasm rejects it); not memoised, so every such line is reported
                self.error(ins.line, ins.ctrl_col, cause.split(":", 1)[0], cause.split(": ", 1)[1])
        if ins.raw is not None:
            return ((ins.raw & ~CTRL_MASK) | ctrl) ^ ins.hidden
        if self.encode is None:
            self.error(
                ins.line,
                ins.text_col,
                "no encoder available for this architecture",
                "install the instruction encoder or write the word as '// raw 0x...'",
            )
            return 0
        try:
            if context is None:
                encoded = self.encode(ins.text, pc=pc, labels=labels)
            else:
                encoded = self.encode(ins.text, pc=pc, labels=labels, context=context)
        except Exception as err:  # the encoder reports unsupported instructions by raising
            self.encode_failed(ins, err)
            return 0
        if isinstance(encoded, int):
            return (encoded | ctrl) ^ ins.hidden
        word = int(encoded.word)
        for req in getattr(encoded, "relocs", ()) or ():
            self.text_reloc(ins, pc, labels, req)
        return (word | ctrl) ^ ins.hidden

    def encode_failed(self, ins: Instruction, err: Exception) -> None:
        hint = getattr(err, "hint", "") or "check the opcode, modifiers and operands"
        col = ins.text_col + int(getattr(err, "col", 0) or 0)
        message = getattr(err, "message", None) or str(err)
        self.error(ins.line, col, f"cannot encode '{clip(ins.text)}': {clip(message, 200)}", hint)

    def text_reloc(self, ins: Instruction, pc: int, labels: Mapping[str, int], req: object) -> None:
        """Relocations the encoder asks for; targets inside this section need none."""
        kind, symbol = getattr(req, "kind", ""), getattr(req, "symbol", "")
        if not symbol or symbol in labels:
            return
        if (
            kind not in _TEXT_RELOCS and symbol not in self.sym_index
        ):  # a branch to a name defined nowhere here
            where = self.labels.get(symbol)
            col = ins.text_col + max(0, ins.text.find(symbol))
            if where is None:
                self.error(
                    ins.line,
                    col,
                    f"undefined label '{clip(symbol)}'",
                    "define it as 'NAME:' in this kernel's section, or correct the name",
                )
            else:
                self.error(
                    ins.line,
                    col,
                    f"label '{clip(symbol)}' is in section {self.secs[where[0]].block.name}, not this one",
                    "a branch targets a label of its own kernel",
                )
            return
        if kind not in _TEXT_RELOCS:
            self.error(
                ins.line,
                ins.text_col,
                f"relocation '{kind}' against '{clip(symbol)}' is not supported",
                "only 32@lo(sym) and 32@hi(sym) are relocated in instructions for now",
            )
            return
        if symbol not in self.sym_index:
            self.error(ins.line, ins.text_col, f"unknown symbol '{clip(symbol)}'", "use a name from .symtab")
            return
        sec_idx = self.labels_section(labels)
        if sec_idx is None or self.reloc_section_for(sec_idx) is None:
            self.error(
                ins.line,
                ins.text_col,
                "no .rela section for this text section",
                "add a '.rela.text.<kernel>' section",
            )
            return
        # The 32-bit immediate sits in bits 32-63 of the word on sm_7x and later.
        self.secs[sec_idx].relocs.append((pc + 4, symbol, _TEXT_RELOCS[kind], int(getattr(req, "addend", 0))))

    def labels_section(self, labels: Mapping[str, int]) -> int | None:
        return self.current_text

    # -- fix-ups ----------------------------------------------------------------------------------
    def update_symbols(self) -> None:
        symtab = next((s for s in self.secs if s.type == SHT_SYMTAB), None)
        if symtab is None or not self.symbols:
            return
        ctx = self.context(for_data=False)
        changed = False
        directives = list(self.module.trailer)
        for sec in self.secs:
            directives += sec.directives
        for sym in self.symbols:
            hit = self.labels.get(sym.name)
            if hit is not None and hit[0] == sym.shndx and sym.value != hit[1]:
                sym.value = hit[1]
                changed = True
        for item in directives:
            if item.name != ".size":
                continue
            args = split_args(item.args)
            if len(args) not in (2, 3) or args[0] not in self.sym_index:
                continue
            try:
                values = [evaluate(arg, ctx).value for arg in args[1:]]
            except ExprError as err:
                self.error(item.line, item.args_col + err.col, str(err), err.hint)
                continue
            sym = self.symbols[self.sym_index[args[0]]]
            # nvdisasm's 3-argument form ".size sym, size, value" pins the value (reserved smem alias).
            new_size, new_value = values[0], values[1] if len(values) == 2 else sym.value
            if (sym.size, sym.value) != (new_size, new_value):
                sym.size, sym.value = new_size, new_value
                changed = True
        if changed:
            symtab.data = bytearray(b"".join(pack_symbol(s) for s in self.symbols))

    def update_regcount(self) -> None:
        need: dict[int, int] = {}  # symbol index -> registers the code needs
        for sec in self.secs:
            instrs = sec.instrs
            if not instrs:
                continue
            count = registers_needed(
                list(dict.fromkeys([ins.text for ins in instrs])), module_arch(self.module)
            )
            for idx, sym in enumerate(self.symbols):
                if sym.shndx == sec.idx and sym.type == 2:
                    need[idx] = count
            info = self.header_value(sec, "info")
            if info >> 24 and count > info >> 24:
                sec.block.fields["info"] = Field("info", (info & 0xFFFFFF) | min(count, 255) << 24, 0, 0)
        for sec in self.secs:
            if sec.block.name != ".nv.info":
                continue
            attrs, tail = parse_nvinfo(bytes(sec.data))
            touched = False
            for attr in attrs:
                if attr.attr == EIATTR_REGCOUNT and attr.fmt == SVAL and len(attr.payload) == 8:
                    sym_idx, count = struct.unpack("<II", attr.payload)
                    if need.get(sym_idx, 0) > count:
                        attr.payload = struct.pack("<II", sym_idx, need[sym_idx])
                        touched = True
            if touched:
                sec.data = bytearray(write_nvinfo(attrs, tail))

    def build_relocations(self) -> None:
        for sec in self.secs:
            if sec.type not in (SHT_REL, SHT_RELA):
                continue
            target = self.header_value(sec, "info")
            source = self.secs[target].relocs if 0 <= target < len(self.secs) else []
            rela = sec.type == SHT_RELA
            made = []
            for offset, sym_name, typ, addend in source:
                made.append(Relocation(offset, self.sym_index[sym_name], typ, addend if rela else None))
            recorded = [
                Relocation(r.offset, r.sym, r.type, r.addend if rela else None) for r in sec.block.relocs
            ]
            key = lambda r: (r.offset, r.sym, r.type, r.addend)  # noqa: E731
            if recorded and Counter(map(key, recorded)) == Counter(map(key, made)):
                made = recorded  # the linker's order, as written in the comments
            else:
                made.reverse()  # observed order: last reference first
            sec.data = bytearray(pack_relocations(made, rela))
            sec.size = len(sec.data)
            sec.has_extent = True

    def header_value(self, sec: _Sec, name: str) -> int:
        """A ``.__section_*`` field; where absent (hand-written files), what the directives imply."""
        block = sec.block
        if name in block.fields:
            return block.field_int(name)
        if name == "entsize":
            args = _directive_arg(block, ".sectionentsize")
            return int(args, 0) if args else (24 if sec.type in (SHT_SYMTAB, SHT_RELA) else 0)
        if name == "info":
            regs = _quoted_setting(_directive_arg(block, ".sectioninfo"), "SHI_REGISTERS")
            if sec.type in (SHT_REL, SHT_RELA):
                target = block.name.split(".rela" if sec.type == SHT_RELA else ".rel", 1)[-1]
                return next((s.idx for s in self.secs if s.block.name == target), 0)
            return (regs or 0) << 24
        if name == "flags":
            parts = (
                [p.strip().strip('"') for p in split_args(block.section_args)] if block.section_args else []
            )
            second = parts[1] if len(parts) > 1 else ""
            # raw form: .section "name", <flags number>, SHT_X; nvdisasm form: .section name,"ax",@type
            flags = (
                int(second) if second.isdigit() else sum(_SECTION_FLAG_LETTERS.get(ch, 0) for ch in second)
            )
            barriers = _quoted_setting(_directive_arg(block, ".sectionflags"), "SHF_BARRIERS")
            return flags | (barriers or 0) << 20
        if name == "link" and sec.type in (SHT_REL, SHT_RELA, 0x70000000):
            return next((s.idx for s in self.secs if s.type == SHT_SYMTAB), 0)
        return 0

    # -- ELF --------------------------------------------------------------------------------------
    def build_cubin(self) -> Cubin:
        elf = self.module.elf

        def num(name: str, default: int = 0) -> int:
            f = elf.get(name)
            if f is None:
                return default
            if isinstance(f.value, int):
                return f.value
            if name == "type":
                return _ELF_TYPES.get(str(f.value), 2)
            if name == "machine":
                return 190
            self.error(f.line, f.col, f"expected a number for .__elf_{name}", "write 0x... or decimal")
            return default

        ident = b"\x7fELF" + bytes((2, 1, 1, num("ident_osabi", 0x33), num("ident_abiversion", 7))) + bytes(7)
        header = ElfHeader(
            ident,
            num("type", 2),
            num("machine", 190),
            num("version", 1),
            num("entry"),
            num("phoff"),
            num("shoff"),
            num("flags"),
            num("ehsize", 64),
            num("phentsize", 56),
            len(self.module.segments),
            num("shentsize", 64),
            len(self.secs),
            num("shstrndx"),
        )
        sections = []
        shstrtab = self.secs[header.shstrndx] if 0 < header.shstrndx < len(self.secs) else None
        for sec in self.secs:
            block = sec.block
            data = bytes(sec.data)
            if sec.type == SHT_NOBITS or sec.type == SHT_NULL:
                size = sec.size if sec.has_extent else sec.size_field
                data = b""
            else:
                size = len(data)
            align = next((int(it.args.split(",")[0], 0) for it in sec.directives if it.name == ".align"), 0)
            name_off = block.field_int("name")
            if "name" not in block.fields and shstrtab is not None:
                pos = bytes(shstrtab.data).find(block.name.encode() + b"\0")
                name_off = max(pos, 0)
            sections.append(
                Section(
                    block.name,
                    name_off,
                    sec.type,
                    self.header_value(sec, "flags"),
                    block.field_int("addr"),
                    block.field_int("offset"),
                    size,
                    self.header_value(sec, "link"),
                    self.header_value(sec, "info"),
                    align,
                    self.header_value(sec, "entsize"),
                    data,
                )
            )
        segments = []
        for seg in self.module.segments:

            def f(name: str, seg=seg) -> int:
                v = seg.fields.get(name)
                return v.value if v is not None and isinstance(v.value, int) else 0

            segments.append(
                Segment(
                    PT_VALUES.get(seg.type_name, 1),
                    seg.flags,
                    f("offset"),
                    f("vaddr"),
                    f("paddr"),
                    f("filesz"),
                    f("memsz"),
                    f("align"),
                )
            )
        cubin = Cubin(header, sections, segments)
        changed = any(
            s.size != sec.size_field for s, sec in zip(sections, self.secs, strict=True) if s.type != SHT_NULL
        )
        if changed:
            relayout(cubin, [sec.size_field for sec in self.secs])
        return cubin


_SECTION_FLAG_LETTERS = {"w": 0x1, "a": 0x2, "x": 0x4}


def _directive_arg(block: SectionBlock, name: str) -> str | None:
    return next((it.args for it in block.items if isinstance(it, Directive) and it.name == name), None)


def _quoted_setting(args: str | None, key: str) -> int | None:
    """``N`` from ``@"KEY=N"`` (as in ``.sectioninfo @"SHI_REGISTERS=12"``)."""
    hit = re.search(rf"{key}=(\d+)", args or "")
    return int(hit.group(1)) if hit else None


def assemble_module(module: Module, *, encode: EncodeFn | None) -> tuple[Cubin | None, list[Diagnostic]]:
    asm = _Assembler(module, encode)
    asm.layout()
    if has_errors(asm.diags):
        return None, asm.diags
    asm.load_symbols()
    for sec in asm.secs:
        asm.fill_data(sec)
    asm.update_symbols()
    asm.update_regcount()
    asm.build_relocations()
    cubin = asm.build_cubin()
    return (None if has_errors(asm.diags) else cubin), asm.diags


def registers_needed(texts: list[str], arch: str) -> int:
    """The register count a kernel of these instruction texts declares, as ptxas writes it: the highest
    register any operand covers (a 64-bit pair's high half, an HGMMA accumulator's last register), plus one,
    plus the two the hardware keeps above it (an edit that wrote one of those two faulted on an H100)."""
    try:
        sem = load_semantics(arch)
    except UnsupportedArch:
        sem = None
    if sem is not None:
        covered = (u for t in texts for ref in sem.register_refs(t) for u in ref.units if u < ZERO_REGISTER)
        top = max(covered, default=-1)
    else:  # no tables: the registers named (no opcode or modifier looks like R<n>)
        joined = "\n".join(texts)
        regs = (_ASCII_REG_RE if joined.isascii() else _REG_RE).findall(joined)
        top = max(map(int, regs), default=-1)
    return top + 1 + RESERVED_REGISTERS if top >= 0 else 0


def instruction_diagnostics(module: Module, *, encode: EncodeFn | None) -> list[Diagnostic]:
    """What assembling ``module`` would report about its sections' contents (unknown instructions or
    directives, undefined labels, bad data), without building a cubin or running nvdisasm: the check
    command's view of what ``asm`` rejects. ``module`` holds no parse errors."""
    asm = _Assembler(module, encode)
    asm.layout()
    if has_errors(asm.diags):
        return asm.diags
    asm.load_symbols()
    for sec in asm.secs:
        if sec.instrs:
            asm.fill_data(sec)
    return asm.diags


def verify_instructions(
    module: Module, data: bytes, *, memo: VerifiedWords | None = None
) -> list[Diagnostic]:
    """Disassemble ``data`` once and compare every instruction with its source text; skipped when ``memo``
    holds every instruction's word and text from an earlier verification without errors."""
    from sass_lsp.cuasm.disasm import disassemble, normalise_text, texts_equivalent
    from sass_lsp.nvdisasm import NvdisasmError

    keys = memo.keys(module, data, module_arch(module)) if memo is not None else None
    if keys is not None and memo is not None and memo.known(keys):
        return []
    try:
        dis = disassemble(data)
    except NvdisasmError as err:
        return [_nvdisasm_failure(module, str(err))]
    diags: list[Diagnostic] = []
    for block in module.sections:
        instrs = block.instructions
        if not instrs:
            continue
        got = dis.sections.get(block.name)
        got_instrs = got.instrs if got else []
        if len(got_instrs) != len(instrs):
            diags.append(
                Diagnostic(
                    block.line,
                    1,
                    f"{block.name}: nvdisasm shows {len(got_instrs)} instructions, source has {len(instrs)}",
                    "report this as a bug",
                )
            )
            continue
        for ins, dis_ins in zip(instrs, got_instrs, strict=True):
            if not texts_equivalent(ins.text, dis_ins.text):
                diags.append(
                    Diagnostic(
                        ins.line,
                        ins.text_col,
                        f"assembled word disassembles as '{clip(normalise_text(dis_ins.text))}', "
                        f"source says '{clip(normalise_text(ins.text))}'",
                        "the encoding does not match the text: check operands/modifiers or the hidden bits",
                    )
                )
    if keys is not None and memo is not None and not diags:
        memo.add(keys)
    return diags


def _nvdisasm_failure(module: Module, message: str) -> Diagnostic:
    """Point nvdisasm's rejection ("... at address 0x...") at the source line of that instruction."""
    detail = next((ln for ln in message.splitlines() if "error" in ln), message).strip()
    hit = re.search(r"at address 0x([0-9a-fA-F]+)", detail)
    blocks = [b for b in module.sections if b.instructions]
    if hit:
        pc = int(hit.group(1), 16)
        for block in blocks:
            if pc // 16 < len(block.instructions):
                ins = block.instructions[pc // 16]
                where = "" if len(blocks) == 1 else f" (in one of {len(blocks)} text sections; first shown)"
                return Diagnostic(
                    ins.line,
                    ins.text_col,
                    f"nvdisasm rejects the word for '{clip(ins.text)}'{where}: {clip(detail, 200)}",
                    _control_cause(ins.ctrl, module_arch(module))
                    or "the encoding is invalid: check the instruction or its hidden bits",
                )
    line = blocks[0].line if blocks else 1
    return Diagnostic(line, 1, f"nvdisasm rejects the assembled cubin: {detail}", "report this as a bug")


def _control_cause(ctrl: str, arch: str) -> str | None:
    """The control field's known-unencodable setting (sass_lsp.isa.control.control_problem), if any."""
    from sass_lsp.isa.control import ControlCodeError, control_problem, parse_control

    try:
        return control_problem(parse_control(ctrl), arch)
    except ControlCodeError:
        return None


def module_arch(module: Module) -> str:
    """``'sm_90'`` etc. from the ``.__elf_ident_osabi`` / ``.__elf_flags`` header fields."""
    osabi, flags = module.elf.get("ident_osabi"), module.elf.get("flags")
    osabi_value = osabi.value if osabi is not None and isinstance(osabi.value, int) else OSABI_CUDA_V7
    flags_value = flags.value if flags is not None and isinstance(flags.value, int) else 0
    return f"sm_{sm_from_flags(osabi_value, flags_value)}"


@contextlib.contextmanager
def _no_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector: assembly allocates ~10 objects per instruction and frees none of
    them as cycles, yet the collector's generation-0 passes cost ~10% of a 50k-instruction assembly (and
    one pass when it resumes, if the module were still alive then)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def assemble_cuasm(
    text: str, *, source_name: str = "<input>", encode: EncodeFn | None = None, verify: bool = True
) -> bytes:
    """Assemble .cuasm text with ``encode`` (default: the real encoder for the file's arch).

    ``verify=False`` skips the nvdisasm check (benchmarks only).
    """
    with _no_gc():  # the module and the cubin are freed (by their reference counts) before it resumes
        return _assemble(text, source_name, encode, verify)


def _assemble(text: str, source_name: str, encode: EncodeFn | None, verify: bool) -> bytes:
    module, diags = parse_cuasm(text)
    if has_errors(diags):
        raise AssembleError(diags, source_name)
    if not any(block.name.startswith(".text") and block.instructions for block in module.sections):
        line = module.sections[0].line if module.sections else 1
        no_kernel = Diagnostic(
            line,
            1,
            "no kernel: no .text section with instructions, nothing to assemble",
            "start from a complete .cuasm: `sass-lsp disasm K.cubin -o K.cuasm`",
        )
        raise AssembleError([no_kernel], source_name)
    cubin, more = assemble_module(module, encode=encode or default_encoder(module_arch(module)))
    diags += more
    if cubin is None or has_errors(diags):
        raise AssembleError(diags, source_name)
    data = write_cubin(cubin)
    if verify:
        diags += verify_instructions(module, data, memo=VERIFIED)
        if has_errors(diags):
            raise AssembleError(diags, source_name)
    return data


__all__ = [
    "AssembleError",
    "assemble_cuasm",
    "assemble_module",
    "directive_size",
    "instruction_diagnostics",
    "module_arch",
    "verify_instructions",
]
