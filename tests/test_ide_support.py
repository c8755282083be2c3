"""Shared helpers for the ``sass_lsp.ide`` tests: fixtures with a ``$0`` cursor and text snapshots.

``check_snapshot(name, text)`` compares with ``tests/snapshots/ide/<name>``; ``UPDATE_SNAPSHOTS=1``
rewrites the files.
"""

from __future__ import annotations

import os
from pathlib import Path

from sass_lsp.ide.index import DocumentIndex, build_index

SNAPSHOTS = Path(__file__).parent / "snapshots" / "ide"

KERNEL = """\
\t.section\t.text.k,"ax",@progbits
\t.sectioninfo\t@"SHI_REGISTERS=24"
\t.align\t128
        .global         k
        .type           k,@function
        .size           k,(.L_x_3 - k)
        .other          k,@"STO_CUDA_ENTRY STV_DEFAULT"
  k:
  .text.k:
      [B------:R-:W0:-:S01]         /*0000*/                   LDC R1, c[0x0][0x28] ;
      [B------:R-:W1:-:S07]         /*0010*/                   S2R R0, SR_TID.X ;
      [B------:R-:W2:-:S01]         /*0020*/                   LDC.64 R20, c[0x0][0x210] ;
      [B------:R-:W-:-:S01]         /*0030*/                   ULDC.64 UR4, c[0x0][0x208] ;
      [B-1----:R-:W-:Y:S04]         /*0040*/                   SHF.L.U32 R0, R0, 0x2, RZ ;
      [B------:R-:W-:Y:S04]         /*0050*/                   ISETP.GE.AND P0, PT, R0, 0x200, PT ;
      [B--2---:R-:W-:-:S01]         /*0060*/                   IMAD.WIDE R20, R0.reuse, 0x4, R20 ;
      [B------:R-:W3:-:S04]         /*0070*/              @!P0 LDG.E.128 R16, desc[UR4][R20.64] ;
      [B---3--:R-:W-:-:S01]         /*0080*/                   FADD R12, R17, R16 ;
      [B------:R0:W-:-:S01]         /*0090*/              @!P0 STG.E desc[UR4][R20.64], R12 ;
  .L_x_1:
      [B0-----:R-:W-:-:S05]         /*00a0*/               @P0 EXIT ;
      [B------:R-:W-:-:S05]         /*00b0*/                   EXIT ;
  .L_x_0:
      [B------:R-:W-:Y:S00]         /*00c0*/                   BRA `(.L_x_0);
      [B------:R-:W-:Y:S00]         /*00d0*/                   NOP;
  .L_x_3:
// .headerflags: @"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
"""


def with_cursor(text: str) -> tuple[DocumentIndex, int, int]:
    """Index of ``text`` with the ``$0`` marker removed, and the marker's (line, col)."""
    offset = text.index("$0")
    clean = text[:offset] + text[offset + 2 :]
    line = text[:offset].count("\n")
    col = offset - (text.rfind("\n", 0, offset) + 1)
    return build_index(clean), line, col


def mark(needle: str, shift: int = 0, text: str = KERNEL) -> str:
    """KERNEL with ``$0`` put ``shift`` characters into the first occurrence of ``needle``."""
    pos = text.index(needle) + shift
    return text[:pos] + "$0" + text[pos:]


def check_snapshot(name: str, actual: str) -> None:
    path = SNAPSHOTS / name
    if os.environ.get("UPDATE_SNAPSHOTS") == "1" or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual)
        if os.environ.get("UPDATE_SNAPSHOTS") != "1":
            raise AssertionError(f"new snapshot {path} written; review it and re-run")
        return
    assert actual == path.read_text(), f"snapshot {name} differs (UPDATE_SNAPSHOTS=1 to rewrite)"
