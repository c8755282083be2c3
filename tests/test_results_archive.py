"""benchmarks/results keeps only what is cited, every citation resolves, the scripts read its archives."""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
from pathlib import Path

from paths import ROOT

RESULTS = ROOT / "benchmarks" / "results"
CITE = re.compile(r"benchmarks/results/([\w.-]+)(?::([\w.*\[\]{},-]+))?")
sys.path.insert(0, str(ROOT / "benchmarks"))
from results_archive import expand  # noqa: E402


def _texts() -> dict[str, str]:
    """Every tracked text file outside benchmarks/results, by path."""
    names = subprocess.run(
        ["git", "ls-files", "--", ".", ":!benchmarks/results", ":!vscode-client/node_modules"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    out = {}
    for name in names:
        path = ROOT / name
        if path.is_file() and path.suffix in {".md", ".py", ".json", ".sh", ".toml", ".lua", ".ts"}:
            out[name] = path.read_text(errors="replace")
    return out


def test_every_citation_resolves() -> None:
    for name, text in _texts().items():
        for m in CITE.finditer(text):
            target = RESULTS / m.group(1).rstrip(".")
            assert target.is_file(), f"{name}: {m.group(0)} does not exist"
            member = m.group(2)
            if member and not set(member) & set("*[{"):
                with tarfile.open(target, "r:xz") as tar:
                    assert member in tar.getnames(), f"{name}: {m.group(0)}: no such member"


def test_every_kept_file_is_cited() -> None:
    corpus = "\n".join(_texts().values())
    kept = [p.name for p in RESULTS.iterdir() if p.is_file()]
    assert kept
    assert [n for n in kept if n not in corpus] == []
    assert not [p for p in RESULTS.iterdir() if p.is_dir()]  # no per-call snapshot folders


def test_scripts_read_archive_members() -> None:
    archive = RESULTS / "reorder_hardware_h200.tar.xz"
    paths = expand([Path(f"{archive}:reorder_hardware_h200_run[78].log")])
    assert [p.name for p in paths] == ["reorder_hardware_h200_run7.log", "reorder_hardware_h200_run8.log"]
    assert "0/20 differ from the original" in paths[1].read_text()
    plain = ROOT / "README.md"
    assert expand([plain]) == [plain]
