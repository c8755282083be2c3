// Pure: the architecture of a .cuasm file, read from its text (no vscode import; unit-tested with node --test).
// The server is the authority (it may send `sass-lsp/status`); this is only what the status bar shows first.

export interface ArchGuess {
  arch: string; // "sm_90", "sm_90a", ...
  source: ".target" | ".__elf_flags";
}

const TARGET = /^\s*\.target\s+(sm_\d{2,3}[af]?)\b/m;
const FLAGS = /^\s*\.__elf_flags\s+(0x[0-9a-fA-F]+|\d+)[^\n]*/m;
const FLAGS_COMMENT = /\bSM_?(\d{2,3}[AF]?)\s*\(/i;
const ABI_VERSION = /^\s*\.__elf_ident_abiversion\s+(\d+)/m;

/** Only the file header is scanned (the first `maxChars` characters), so this is cheap on big files. */
export function archFromText(text: string, maxChars = 64 * 1024): ArchGuess | undefined {
  const head = text.length > maxChars ? text.slice(0, maxChars) : text;
  const target = TARGET.exec(head);
  if (target) return { arch: target[1], source: ".target" };
  const flags = FLAGS.exec(head);
  if (!flags) return undefined;
  const comment = FLAGS_COMMENT.exec(flags[0]);
  if (comment) return { arch: `sm_${comment[1].toLowerCase()}`, source: ".__elf_flags" };
  const abi = ABI_VERSION.exec(head);
  const sm = smFromElfFlags(Number(flags[1]), abi ? Number(abi[1]) : undefined);
  return sm === undefined ? undefined : { arch: `sm_${sm}`, source: ".__elf_flags" };
}

/**
 * e_flags of a cubin: before CUDA 13 (ELF ABI version 7) the low byte is the SM (0x5a0d5a -> 90);
 * CUDA 13 (ABI version 8) moved it to bits 8-15 (0x6005a04 -> 90). Without the ABI version, a low
 * byte below 20 (not a real SM) means the new layout.
 */
export function smFromElfFlags(flags: number, abiVersion?: number): number | undefined {
  if (!Number.isFinite(flags) || flags < 0) return undefined;
  const low = flags & 0xff;
  const newLayout = abiVersion !== undefined ? abiVersion >= 8 : low < 20;
  const sm = newLayout ? (flags >>> 8) & 0xff : low;
  return sm >= 20 ? sm : undefined;
}
