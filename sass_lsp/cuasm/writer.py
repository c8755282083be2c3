"""Feature: cubin -> .cuasm in CuAssembler's format, exact enough to assemble back byte-identically.

One ``nvdisasm -hex`` call gives every section nvdisasm prints and each instruction's 128-bit word.
Sections nvdisasm does not print, or prints in a form that does not determine the bytes (string and
symbol tables, relocations, notes), are written as ``.byte`` dumps with explanatory comments.
Where the instruction text does not determine every bit, a ``// hidden 0x...`` trailer carries the
XOR difference between the real word and what the encoder makes of the text. A NaN literal's payload is
never in nvdisasm's text (it prints every quiet NaN as ``+QNAN``): where the payload is not the one the
encoder assumes, the literal is written as its f32 bits instead (``0f7fc00000``, PTX's and CuAssembler's
spelling), so the text alone assembles to the word.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

from sass_lsp.cuasm.assembler import directive_size
from sass_lsp.cuasm.ctrl import CTRL_MASK, decode_ctrl
from sass_lsp.cuasm.disasm import DisasmSection, Disassembly, disassemble
from sass_lsp.cuasm.encoding import EncodeFn, context_rules, default_encoder
from sass_lsp.cuasm.parser import parse_cuasm
from sass_lsp.elf.arch import cubin_arch, describe_flags
from sass_lsp.elf.model import (
    PT_NAMES,
    SECTION_TYPE_NAMES,
    SHT_NOBITS,
    SHT_NOTE,
    SHT_NULL,
    SHT_REL,
    SHT_RELA,
    SHT_STRTAB,
    SHT_SYMTAB,
    Cubin,
    Section,
    Symbol,
)
from sass_lsp.elf.reader import parse_relocations, parse_symbols, read_cubin, string_table_entries
from sass_lsp.isa.context import Context as KernelContext
from sass_lsp.isa.context import section_contexts
from sass_lsp.isa.features import is_nan_name, nan_to_f32
from sass_lsp.isa.syntax import InstructionSyntaxError, parse_instruction
from sass_lsp.model import Instruction, Label

_MAYBE = "maybe updated by assembler"
_NO_ADD = "currently no sections can be appended/removed"
_ELF_TYPE_NAMES = {0: "ET_NONE", 1: "ET_REL", 2: "ET_EXEC", 3: "ET_DYN"}
_BIND = {0: "STB_LOCAL", 1: "STB_GLOBAL", 2: "STB_WEAK"}
_STT = {0: "STT_NOTYPE", 1: "STT_OBJECT", 2: "STT_FUNC", 3: "STT_SECTION", 4: "STT_FILE"}
_VIS = {0: "STV_DEFAULT", 1: "STV_INTERNAL", 2: "STV_HIDDEN", 3: "STV_PROTECTED"}
_RAW_TYPES = (SHT_NULL, SHT_STRTAB, SHT_SYMTAB, SHT_REL, SHT_RELA, SHT_NOTE)


def hidden_bits(
    arch: str,
    text: str,
    word: int,
    pc: int,
    labels: Mapping[str, int],
    encode: EncodeFn | None = None,
    context: KernelContext | None = None,
) -> int:
    """Bits of ``word`` that ``text`` (and its kernel ``context``) do not determine:
    ``word ^ (encoded | control bits)``.

    ``encode`` defaults to the real encoder for ``arch``; it raises when the text cannot be encoded.
    """
    enc = encode or default_encoder(arch)
    if enc is None:
        raise LookupError(f"no instruction encoder for {arch}")
    if context is None:
        encoded = enc(text, pc=pc, labels=labels)
    else:
        encoded = enc(text, pc=pc, labels=labels, context=context)
    value = encoded if isinstance(encoded, int) else int(encoded.word)
    return word ^ (value | (word & CTRL_MASK))


def _nan_candidates(word: int) -> list[int]:
    """f32 NaNs whose conversion could fill an immediate field of ``word``: the 32 bits above the opcode
    half's low word (f32, f64's high half) and either 16-bit half of them (f16, bf16)."""
    out: list[int] = []
    imm = word >> 32 & 0xFFFFFFFF
    fields = [(imm, 2), (imm, 3)] + [(imm >> s & 0xFFFF, fmt) for s in (0, 16) for fmt in (0, 1)]
    for bits, fmt in fields:
        f32 = bits if fmt == 2 else nan_to_f32(bits, fmt)
        if f32 & 0x7F800000 == 0x7F800000 and f32 & 0x7FFFFF and f32 not in out:
            out.append(f32)
    return out


def spell_nan_payloads(
    arch: str,
    text: str,
    word: int,
    pc: int,
    labels: Mapping[str, int],
    encode: EncodeFn,
    context: KernelContext | None,
) -> str | None:
    """``text`` with its NaN literals written as the f32 bits that make ``word`` (:func:`hidden_bits` 0),
    or None when no such spelling exists (the hidden bits are elsewhere, or more than two NaN literals)."""
    try:
        nans = [op for op in parse_instruction(text).operands if is_nan_name(op)]
    except InstructionSyntaxError:
        return None
    if not nans or len(nans) > 2:
        return None
    for choice in itertools.product(_nan_candidates(word), repeat=len(nans)):
        spelled = text
        for op, bits in zip(reversed(nans), reversed(choice), strict=True):
            spelled = spelled[: op.col] + f"0f{bits:08x}" + spelled[op.col + len(op.text) :]
        try:
            if not hidden_bits(arch, spelled, word, pc, labels, encode, context):
                return spelled
        except Exception:  # a spelling the encoder refuses (a payload the field cannot hold)
            continue
    return None


def _banner(name: str) -> str:
    return f"// --------------------- {name:<32} --------------------------"


def _header_fields(sec: Section, type_text: str) -> list[str]:
    return [
        f"\t.__section_name         0x{sec.name_off:x} \t// offset in .shstrtab",
        f"\t.__section_type         {type_text}",
        f"\t.__section_flags        0x{sec.flags:x}",
        f"\t.__section_addr         0x{sec.addr:x}",
        f"\t.__section_offset       0x{sec.offset:x} \t// maybe updated by assembler",
        f"\t.__section_size         0x{sec.size:x} \t// maybe updated by assembler",
        f"\t.__section_link         {sec.link}",
        f"\t.__section_info         0x{sec.info:x}",
        f"\t.__section_entsize      {sec.entsize}",
        f"\t.align                {sec.addralign} \t// equivalent to set sh_addralign",
    ]


def _byte_lines(data: bytes, base: int, indent: str = "    ") -> list[str]:
    out = []
    for pos in range(0, len(data), 8):
        chunk = ", ".join(f"0x{b:02x}" for b in data[pos : pos + 8])
        out.append(f"{indent}/*{base + pos:04x}*/ .byte {chunk}")
    return out


def _symbol_comment(idx: int, sym: Symbol) -> str:
    shndx: int | str = "SHN_UNDEF" if sym.shndx == 0 else sym.shndx
    info = (
        f"Container({{'bind': '{_BIND.get(sym.bind, sym.bind)}', 'type': '{_STT.get(sym.type, sym.type)}'}})"
    )
    other = f"Container({{'local': {sym.other >> 5}, 'visibility': '{_VIS[sym.other & 3]}'}})"
    shndx_text = repr(shndx)
    return (
        f"    // Symbol[{idx}] \"{sym.name}\": Container({{'st_name': {sym.name_off}, 'st_info': {info}, "
        f"'st_other': {other}, 'st_shndx': {shndx_text}, 'st_value': {sym.value}, 'st_size': {sym.size}}})"
    )


class _Writer:
    def __init__(
        self, data: bytes, source_name: str, encode: EncodeFn | None, dis: Disassembly | None
    ) -> None:
        self.data = data
        self.cubin: Cubin = read_cubin(data)
        self.arch = cubin_arch(data)
        self.source_name = source_name
        self.encode = encode if encode is not None else default_encoder(self.arch)
        self.dis = dis if dis is not None else disassemble(data)
        strtab, symtab = self._tables()
        self.symbols = parse_symbols(symtab.data, strtab.data) if symtab and strtab else []
        self.n_hidden = 0
        self.n_raw = 0

    def _tables(self) -> tuple[Section | None, Section | None]:
        symtab = next((s for s in self.cubin.sections if s.type == SHT_SYMTAB), None)
        strtab = (
            self.cubin.sections[symtab.link] if symtab and symtab.link < len(self.cubin.sections) else None
        )
        return strtab, symtab

    def write(self) -> str:
        out = self._file_header()
        for sec in self.cubin.sections:
            out += self._section(sec)
        out += ["  //--------------------- SYMBOLS --------------------------"]
        out += ["  " + line for line in self.dis.trailer]
        out += [
            "  //-------------------------------------------------",
            "  //---------------- END of sections ----------------",
            "  //-------------------------------------------------",
            "",
            "",
        ]
        out += self._segments()
        return "\n".join(out) + "\n"

    def _file_header(self) -> list[str]:
        h = self.cubin.header
        out = [
            "// --------------------- FileHeader --------------------------",
            "\t// All file header info is kept as is (unless offset/size attributes)",
            "\t// The original header flags is not complete, thus discarded. ",
        ]
        if self.source_name:
            out.append(f"\t// Source: {self.source_name}")
        if self.encode is None:
            out.append(f"\t// No instruction encoder for {self.arch}: words are kept as '// raw' trailers")
        for line in self.dis.preamble:
            if line.strip().startswith((".headerflags", ".elftype", ".target")):
                out.append("\t// " + line)
        out += [
            "\t// ",
            "\t// ",
            f"\t.__elf_ident_osabi      {h.osabi}",
            f"\t.__elf_ident_abiversion {h.abiversion}",
            f"\t.__elf_type             {_ELF_TYPE_NAMES.get(h.type, h.type)}",
            f"\t.__elf_machine          {'EM_CUDA' if h.machine == 190 else h.machine}",
            f"\t.__elf_version          {h.version} \t\t// CUDA toolkit version ",
            f"\t.__elf_entry            {h.entry} \t\t// entry point address ",
            f"\t.__elf_phoff            0x{h.phoff:x} \t\t// program header offset, {_MAYBE}",
            f"\t.__elf_shoff            0x{h.shoff:x} \t\t// section header offset, {_MAYBE}",
            f"\t.__elf_flags            0x{h.flags:x} \t\t// {describe_flags(h.osabi, h.flags)} ",
            f"\t.__elf_ehsize           {h.ehsize} \t\t// elf header size ",
            f"\t.__elf_phentsize        {h.phentsize} \t\t// program entry size",
            f"\t.__elf_phnum            {h.phnum} \t\t// number of program entries",
            f"\t.__elf_shentsize        {h.shentsize} \t\t// section entry size",
            f"\t.__elf_shnum            {h.shnum} \t\t// number of sections, {_NO_ADD}",
            f"\t.__elf_shstrndx         {h.shstrndx} \t\t// Section name string table index ",
            "",
            "",
            "  //-------------------------------------------------",
            "  //------------ END of FileHeader ------------------",
            "  //-------------------------------------------------",
            "",
            "",
            "",
        ]
        return out

    def _section(self, sec: Section) -> list[str]:
        dsec = self.dis.sections.get(sec.name)
        if sec.type in _RAW_TYPES or dsec is None or not self._body_fits(sec, dsec):
            return self._raw_section(sec, dsec)
        type_text = SECTION_TYPE_NAMES.get(sec.type, str(sec.type))
        out = [_banner(sec.name), dsec.header_line.rstrip(), *_header_fields(sec, type_text)]
        if dsec.instrs:
            out += [*self._text_body(dsec), ""]
        else:
            out += ["  " + line for line in dsec.lines]
        return out

    def _body_fits(self, sec: Section, dsec: DisasmSection) -> bool:
        """nvdisasm's text must account for every byte, else a raw dump is safer."""
        if dsec.instrs:
            return len(dsec.instrs) * 16 == sec.size
        module, diags = parse_cuasm("\t.section x\n" + "\n".join(dsec.lines))
        if diags or not module.sections:
            return False
        offset = 0
        for item in module.sections[0].items:
            if isinstance(item, Instruction):
                return False
            if isinstance(item, Label):
                continue
            size = directive_size(item.name, item.args, offset)
            if size is None:
                return False
            offset += size
        return offset == sec.size

    def _raw_section(self, sec: Section, dsec: DisasmSection | None) -> list[str]:
        type_text = SECTION_TYPE_NAMES.get(sec.type, str(sec.type))
        name = "" if sec.type == SHT_NULL else sec.name
        out = [_banner(name)]
        if sec.type == SHT_NULL:
            out.append("\t// there will always be an empty section at index 0")
        out.append(f'\t.section  "{name}", {sec.flags}, {type_text}')
        if sec.type == SHT_STRTAB:
            out.append(f"\t// all strings in {name} section will be kept as is.")
        elif sec.type == SHT_SYMTAB:
            out += [
                "\t// all symbols in .symtab sections will be kept",
                "\t// but the symbol size may be changed accordingly",
            ]
        elif sec.type in (SHT_REL, SHT_RELA):
            out += [
                "\t// all relocation sections will be dynamically generated by assembler ",
                "\t// but most of the section header will be kept as is.",
            ]
        out += _header_fields(sec, type_text)
        if sec.type == SHT_STRTAB:
            for idx, (off, chunk) in enumerate(string_table_entries(sec.data)):
                out.append(f"    // {sec.name}[{idx}] = {chunk!r} ")
                out += _byte_lines(chunk, off)
                out.append("")
        elif sec.type == SHT_SYMTAB:
            for idx, sym in enumerate(self.symbols):
                out.append(_symbol_comment(idx, sym))
                out += _byte_lines(sec.data[idx * 24 : idx * 24 + 24], idx * 24)
                out.append("")
        elif sec.type in (SHT_REL, SHT_RELA):
            for idx, rel in enumerate(parse_relocations(sec)):
                name = self.symbols[rel.sym].name if rel.sym < len(self.symbols) else "?"
                addend = "" if rel.addend is None else f", 'r_addend': {rel.addend}"
                out.append(
                    f"    // Relocation[{idx}] : {name}, Container({{'r_offset': {rel.offset}, "
                    f"'r_info': {rel.sym << 32 | rel.type}, 'r_info_sym': {rel.sym}, "
                    f"'r_info_type': {rel.type}{addend}}})"
                )
        elif sec.type == SHT_NOBITS:
            out.append(f"  \t.zero\t\t{sec.size}")
        elif sec.type != SHT_NULL:
            if dsec is not None:
                out.append("    // nvdisasm shows this section as (kept for reading only):")
                out += [f"    // {line}" for line in dsec.lines if line.strip()]
            out += _byte_lines(sec.data, 0)
        out.append("")
        return out

    def _text_body(self, dsec: DisasmSection) -> list[str]:
        labels = self._text_labels(dsec)
        by_pc = {ins.pc: ins for ins in dsec.instrs}
        contexts = section_contexts(context_rules(self.encode), [ins.text for ins in dsec.instrs])
        ctx_by_pc = {ins.pc: ctx for ins, ctx in zip(dsec.instrs, contexts, strict=True)}
        out = []
        for line in dsec.lines:
            stripped = line.strip()
            if stripped.startswith("/*") and stripped[2:6].isalnum():
                pc = int(stripped[2 : stripped.index("*/")], 16)
                ins = by_pc[pc]
                text, trailer = self._text_and_trailer(ins, labels, ctx_by_pc[pc])
                if text != ins.text:
                    stripped = stripped.replace(ins.text, text, 1)
                out.append(f"      [{decode_ctrl(ins.word)}]         {stripped}{trailer}")
            else:
                out.append("  " + line)
        return out

    @staticmethod
    def _text_labels(dsec: DisasmSection) -> dict[str, int]:
        labels: dict[str, int] = {}
        pending: list[str] = []
        for line in dsec.lines:
            stripped = line.strip()
            if stripped.startswith("/*"):
                pc = int(stripped[2 : stripped.index("*/")], 16)
                for name in pending:
                    labels[name] = pc
                pending = []
            elif stripped.endswith(":") and not stripped.startswith(".") or stripped.endswith(":"):
                pending.append(stripped[:-1])
        end = len(dsec.instrs) * 16
        for name in pending:
            labels[name] = end
        return labels

    def _text_and_trailer(
        self,
        ins,  # noqa: ANN001
        labels: Mapping[str, int],
        context: KernelContext | None = None,
    ) -> tuple[str, str]:
        """The instruction's text (a NaN literal's payload spelled out where that makes it exact) and its
        trailer: nothing, the hidden bits, or the raw word where the encoder cannot handle the text."""
        if self.encode is None:
            self.n_raw += 1
            return ins.text, f" // raw 0x{ins.word & ~CTRL_MASK:032x}"
        try:
            hidden = hidden_bits(self.arch, ins.text, ins.word, ins.pc, labels, self.encode, context)
        except Exception:  # text the encoder cannot handle: keep the whole word
            self.n_raw += 1
            return ins.text, f" // raw 0x{ins.word & ~CTRL_MASK:032x}"
        if not hidden:
            return ins.text, ""
        spelled = spell_nan_payloads(self.arch, ins.text, ins.word, ins.pc, labels, self.encode, context)
        if spelled is not None:
            return spelled, ""
        self.n_hidden += 1
        return ins.text, f" // hidden 0x{hidden:032x}"

    def _segments(self) -> list[str]:
        out = []
        for idx, seg in enumerate(self.cubin.segments):
            name = PT_NAMES.get(seg.type, str(seg.type))
            first, last = self._segment_span(idx)
            out += [
                f"// Program segment {name}, {seg.flags} ",
                f'  .__segment  "{name}", {seg.flags} ',
                f"  .__segment_offset  0x{seg.offset:x}   \t\t// maybe updated by assembler ",
                f"  .__segment_vaddr   0x{seg.vaddr:x}   \t\t// Seems always 0? ",
                f"  .__segment_paddr   0x{seg.paddr:x}   \t\t// ??? ",
                f"  .__segment_filesz  0x{seg.filesz:x}   \t\t// file size, maybe updated by assembler ",
                f"  .__segment_memsz   0x{seg.memsz:x}   \t\t// file size + nobits sections, {_MAYBE} ",
                f"  .__segment_align     {seg.align}   \t\t//  ",
            ]
            if seg.type != 6:  # PT_PHDR: CuAssembler writes no section span
                out += [
                    f'  .__segment_startsection    "{first}"  \t\t// first section in this segment ',
                    f'  .__segment_endsection      "{last}"  \t\t// last  section in this segment ',
                ]
            out.append("")
        out += [
            "",
            "  //-------------------------------------------------",
            "  //---------------- END of segments ----------------",
            "  //-------------------------------------------------",
        ]
        return out

    def _segment_span(self, idx: int) -> tuple[str, str]:
        seg = self.cubin.segments[idx]
        h = self.cubin.header
        if seg.offset == h.phoff:
            return "@PROGRAM_HEADER", "@PROGRAM_HEADER"
        end = seg.offset + max(seg.memsz, seg.filesz)
        names = [
            s.name
            for s in self.cubin.sections
            if s.type != SHT_NULL
            and seg.offset <= s.offset
            and s.offset + (s.size if s.occupies_file else 0) <= end
            and (s.offset < end or (s.size == 0 or not s.occupies_file) and s.offset == seg.offset)
        ]
        return (names[0], names[-1]) if names else ("", "")


def write_cuasm(
    cubin_bytes: bytes,
    *,
    source_name: str = "",
    encode: EncodeFn | None = None,
    disassembly: Disassembly | None = None,
) -> str:
    """CuAssembler-format text for ``cubin_bytes`` (one nvdisasm call unless ``disassembly`` is given)."""
    return _Writer(cubin_bytes, source_name, encode, disassembly).write()


def write_cuasm_stats(
    cubin_bytes: bytes, *, source_name: str = "", encode: EncodeFn | None = None
) -> tuple[str, dict[str, int]]:
    """Like :func:`write_cuasm`, plus counts of instructions with hidden bits and raw words."""
    writer = _Writer(cubin_bytes, source_name, encode, None)
    text = writer.write()
    n_instrs = sum(len(s.instrs) for s in writer.dis.sections.values())
    return text, {"n_instrs": n_instrs, "n_hidden": writer.n_hidden, "n_raw": writer.n_raw}
