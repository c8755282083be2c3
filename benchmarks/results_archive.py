"""Log paths that may name members of a ``benchmarks/results/*.tar.xz`` archive.

``benchmarks/results`` keeps each campaign's raw measurements as one archive. The analysis scripts take
``ARCHIVE.tar.xz:PATTERN`` wherever they take a log path (PATTERN an ``fnmatch`` pattern over member names,
``*`` for all): the matching members are extracted once to a temporary folder, removed at exit, and their
paths take the argument's place, in the archive's order. A plain path passes through unchanged.

    python benchmarks/walk_summary.py \
        'benchmarks/results/reorder_eval_h200.tar.xz:reorder_measurements_h200_run2[56].jsonl'
"""

from __future__ import annotations

import atexit
import fnmatch
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

_SEP = ".tar.xz:"
_extracted: dict[str, Path] = {}  # archive path -> folder its members went to


def _folder(archive: Path) -> Path:
    key = str(archive.resolve())
    if key not in _extracted:
        folder = Path(tempfile.mkdtemp(prefix="sass-lsp-results-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        with tarfile.open(archive, "r:xz") as tar:
            if hasattr(tarfile, "data_filter"):  # Python >= 3.11.4
                tar.extractall(folder, filter="data")
            else:
                tar.extractall(folder)
        _extracted[key] = folder
    return _extracted[key]


def members(archive: Path, pattern: str) -> list[Path]:
    """The extracted paths of ``archive``'s members matching ``pattern``, in the archive's order."""
    with tarfile.open(archive, "r:xz") as tar:
        names = [m.name for m in tar.getmembers() if m.isfile() and fnmatch.fnmatch(m.name, pattern)]
    folder = _folder(archive)
    return [folder / name for name in names]


def expand(paths: list[Path]) -> list[Path]:
    """``paths`` with each ``ARCHIVE.tar.xz:PATTERN`` replaced by the members it matches; exits with a
    message when an archive is missing or a pattern matches nothing."""
    out: list[Path] = []
    for path in paths:
        text = str(path)
        if _SEP not in text:
            out.append(path)
            continue
        head, pattern = text.split(_SEP, 1)
        archive = Path(head + ".tar.xz")
        if not archive.is_file():
            sys.exit(f"{archive}: no such archive")
        found = members(archive, pattern or "*")
        if not found:
            sys.exit(f"{archive}: no member matches {pattern!r}\nhint: list them with `tar tJf {archive}`")
        out.extend(found)
    return out
