"""The incremental index agrees with a fresh one on where the file's arch comes from (issue #39)."""

from __future__ import annotations

import pytest
from lsp_stdio import CORPUS

from sass_lsp.ide.index import build_index, update_index

ADD = (CORPUS / "triton_add.cuasm").read_text().split("\n")
# only the headerflags comment names the arch: no .__elf_flags line, no .target
HEADERFLAGS_ONLY = [line for line in ADD if ".__elf_flags" not in line]
AT = next(i for i, line in enumerate(HEADERFLAGS_ONLY) if "headerflags" in line)


@pytest.mark.parametrize(
    ("new_line", "arch"),
    [
        (HEADERFLAGS_ONLY[AT].replace("SM90", "SM89"), "sm_89"),
        (HEADERFLAGS_ONLY[AT].replace("headerflags", "flags"), None),  # the comment no longer says
        ("\t// a comment", None),
    ],
)
def test_editing_the_headerflags_comment_changes_the_arch(new_line: str, arch: str | None) -> None:
    index = build_index(HEADERFLAGS_ONLY)
    assert index.file_arch == "sm_90"
    lines = list(HEADERFLAGS_ONLY)
    lines[AT] = new_line
    edited = update_index(index, AT, 1, [new_line])
    assert edited.file_arch == build_index(lines).file_arch == arch
    back = update_index(edited, AT, 1, [HEADERFLAGS_ONLY[AT]])
    assert back.file_arch == "sm_90"


def test_a_comment_that_becomes_headerflags_sets_the_arch() -> None:
    lines = list(HEADERFLAGS_ONLY)
    lines[AT] = "\t// header"
    index = build_index(lines)
    assert index.file_arch is None
    edited = update_index(index, AT, 1, [HEADERFLAGS_ONLY[AT]])
    assert edited.file_arch == "sm_90"


def test_other_comment_edits_keep_the_structure() -> None:
    index = build_index(HEADERFLAGS_ONLY)
    other = next(i for i, line in enumerate(HEADERFLAGS_ONLY) if line.strip() == "//")
    edited = update_index(index, other, 1, ["\t// edited"])
    assert edited.pcs is index.pcs and edited.file_arch == "sm_90"
