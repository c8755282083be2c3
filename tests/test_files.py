"""``write_atomic`` creates files as a compiler does: mode 0o666 less the umask (mkstemp's are 0o600), the
same when it replaces a file, and leaves no temporary file behind."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from sass_lsp.files import write_atomic


@pytest.fixture
def umask() -> Iterator[object]:
    saved = os.umask(0o022)
    try:
        yield os.umask
    finally:
        os.umask(saved)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize(("mask", "expected"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_write_atomic_creates_files_with_the_umask(tmp_path: Path, umask, mask: int, expected: int):
    umask(mask)
    out = tmp_path / "k.cubin"
    write_atomic(out, b"\x7fELF")
    assert out.read_bytes() == b"\x7fELF" and mode(out) == expected
    # a replaced file gets the same mode as a new one (as `nvcc -o` or `gcc -o` give it)
    out.chmod(0o600 if expected != 0o600 else 0o640)
    write_atomic(out, "text")
    assert out.read_text() == "text" and mode(out) == expected
    assert [p.name for p in tmp_path.iterdir()] == ["k.cubin"]  # no temporary file left


def test_write_atomic_failure_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path, umask):
    out = tmp_path / "k.cuasm"
    out.write_text("old")
    with pytest.raises(TypeError):
        write_atomic(out, 42)  # type: ignore[arg-type]
    (tmp_path / "dir.cuasm").mkdir()
    with pytest.raises(OSError):
        write_atomic(tmp_path / "dir.cuasm", "new")  # replacing a directory fails after the temp file is made
    assert out.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir.cuasm", "k.cuasm"]
