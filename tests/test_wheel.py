"""The built wheel works anywhere: installed in a fresh venv outside the checkout and run from a folder
outside it, the base install (no torch, no gymnasium) runs ``demo``, ``check`` and ``serve`` and says which
extra ``suggest`` needs; with the ``[policy]`` extra ``suggest`` runs on the bundled checkpoint.

Slow (a few minutes: a venv, the base dependencies, then torch's CPU build from pip's cache or index). The
wheel is built with ``SASS_LSP_PURE=1`` (pure Python: the mypyc build is ``tests/test_native.py``'s concern),
without build isolation where this Python has setuptools.
"""

from __future__ import annotations

import concurrent.futures
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
import venv
from pathlib import Path

import pytest
from paths import ROOT, TRITON_CORPUS

pytestmark = pytest.mark.slow

KERNEL = TRITON_CORPUS / "triton_add.cuasm"
POLICY_HINT = "pip install 'sass-lsp[policy]'"


def _run(
    cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = 900, **kw
) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, **kw)


def _clean_env(tmp: Path) -> dict[str, str]:
    """This process's environment without anything that points into the checkout or its venv."""
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "SASS_LSP_POLICY", "SASS_LSP_CORPUS", "SASS_LSP_PURE", "PYTHONHOME")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["HOME"] = os.environ.get("HOME", str(tmp))  # pip's cache
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str]]:
    """(venv bin dir, wheel, environment): the wheel and its base dependencies in a fresh venv."""
    tmp = tmp_path_factory.mktemp("wheel")
    assert not tmp.resolve().is_relative_to(ROOT), "the venv must live outside the checkout"
    env = _clean_env(tmp)
    src = tmp / "src"  # the sources the sdist would hold: building never writes into the checkout
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "sass_lsp", src / "sass_lsp", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    (src / "sass_lsp" / "_native_sources.json").unlink(missing_ok=True)
    t0 = time.perf_counter()
    # without build isolation where this Python has setuptools (no download); else pip fetches it
    isolation = ["--no-build-isolation"] if importlib.util.find_spec("setuptools") else []
    built = _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation, "-w", str(tmp / "dist"), str(src)],
        tmp,
        {**env, "SASS_LSP_PURE": "1"},
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = (tmp / "dist").glob("sass_lsp-*.whl")
    venv.create(tmp / "venv", with_pip=True)
    bin_dir = tmp / "venv" / "bin"
    got = _run([str(bin_dir / "pip"), "install", "-q", str(wheel)], tmp, env)
    assert got.returncode == 0, got.stdout + got.stderr
    print(f"wheel built and installed (base) in {time.perf_counter() - t0:.0f} s")
    return bin_dir, wheel, env


def test_base_install_has_no_torch_and_runs_from_the_wheel(installed, tmp_path: Path) -> None:
    bin_dir, _, env = installed
    probe = (
        "import importlib.util, sass_lsp\n"
        "print(sass_lsp.__file__)\n"
        "print([m for m in ('torch', 'gymnasium', 'safetensors') if importlib.util.find_spec(m)])\n"
        "from importlib import resources\n"
        "from sass_lsp.policy.checkpoint import bundled_policy\n"
        "print(sorted(p.name for p in bundled_policy().iterdir()))\n"
        "print((resources.files('sass_lsp.policy') / 'train_kernels.cu').is_file())\n"
    )
    out = _run([str(bin_dir / "python"), "-c", probe], tmp_path, env)
    assert out.returncode == 0, out.stderr
    where, extras, checkpoint, train_sources = out.stdout.splitlines()
    assert Path(where).is_relative_to(bin_dir.parent) and not Path(where).resolve().is_relative_to(ROOT)
    assert extras == "[]", f"the base install pulled {extras}"
    assert checkpoint == "['config.json', 'model.safetensors', 'model_card.json']" and train_sources == "True"


def test_base_demo_check_and_serve(installed, tmp_path: Path) -> None:
    bin_dir, _, env = installed
    sass_lsp = str(bin_dir / "sass-lsp")
    demo = _run([sass_lsp, "demo", "--out", str(tmp_path / "demo")], tmp_path, env, timeout=300)
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "round trip is byte-identical" in demo.stdout
    assert POLICY_HINT in demo.stdout  # step 5 says which extra gives suggestions
    assert "Traceback" not in demo.stdout + demo.stderr

    kernel = tmp_path / KERNEL.name
    shutil.copy(KERNEL, kernel)
    check = _run([sass_lsp, "check", kernel.name], tmp_path, env, timeout=300)
    assert check.returncode == 0, check.stdout + check.stderr

    assert _initialize(sass_lsp, tmp_path, env)["capabilities"]["hoverProvider"]


def test_base_suggest_names_the_policy_extra(installed, tmp_path: Path) -> None:
    bin_dir, _, env = installed
    kernel = tmp_path / KERNEL.name
    shutil.copy(KERNEL, kernel)
    out = _run([str(bin_dir / "sass-lsp"), "suggest", kernel.name], tmp_path, env, timeout=300)
    assert out.returncode == 2, out.stdout + out.stderr
    assert POLICY_HINT in out.stderr and "Traceback" not in out.stderr
    assert out.stdout == ""


def test_policy_extra_suggests_with_the_bundled_checkpoint(installed, tmp_path: Path) -> None:
    """Runs last (pytest keeps file order): it installs the extra into the module's venv."""
    bin_dir, wheel, env = installed
    t0 = time.perf_counter()
    pip = str(bin_dir / "pip")
    got = _run([pip, "install", "-q", "torch==2.13.0"], tmp_path, env)  # the CPU build first
    assert got.returncode == 0, got.stdout + got.stderr
    got = _run([pip, "install", "-q", f"{wheel}[policy]"], tmp_path, env)
    assert got.returncode == 0, got.stdout + got.stderr
    print(f"[policy] installed in {time.perf_counter() - t0:.0f} s")
    kernel = tmp_path / KERNEL.name
    shutil.copy(KERNEL, kernel)
    for rank in ("cost", "model"):  # the cost model's suggestions; the packaged performance model's ranking
        out = _run(
            [str(bin_dir / "sass-lsp"), "suggest", kernel.name, "--format", "json", "--rank", rank],
            tmp_path,
            env,
            timeout=600,
        )
        assert out.returncode == 0, out.stdout + out.stderr
        found = json.loads(out.stdout)
        if rank == "cost":
            assert found and all(s["kernel"] == "add_kernel" and s["edits"] for s in found), found
            assert all(s["cost_after"] < s["cost_before"] and s["predicted_gain"] > 0 for s in found)
        else:  # triton_add: nothing predicted faster (the model loaded from the wheel's package data)
            assert found == [], found


def _initialize(command: str, cwd: Path, env: dict[str, str]) -> dict:
    """``sass-lsp serve``'s answer to an LSP ``initialize`` over stdio, then a clean shutdown."""

    def frame(msg: dict) -> bytes:
        body = json.dumps(msg).encode()
        return f"Content-Length: {len(body)}\r\n\r\n".encode() + body

    proc = subprocess.Popen(
        [command, "serve"],
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        params = {"processId": os.getpid(), "rootUri": cwd.as_uri(), "capabilities": {}}
        proc.stdin.write(frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}))
        proc.stdin.flush()
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            pending = pool.submit(_read_message, proc.stdout)
            try:
                reply = pending.result(timeout=120)
            except concurrent.futures.TimeoutError:
                proc.kill()  # unblocks the reader
                raise AssertionError("no answer to initialize in 120 s") from None
        assert reply.get("id") == 1 and "result" in reply, reply
        proc.stdin.write(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        proc.stdin.write(frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
        proc.stdin.write(frame({"jsonrpc": "2.0", "method": "exit"}))
        proc.stdin.flush()
        assert proc.wait(timeout=60) == 0, proc.stderr.read() if proc.stderr else ""
        return reply["result"]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _read_message(stream) -> dict:  # noqa: ANN001 (a binary pipe)
    """One Content-Length framed JSON-RPC message (skipping notifications the server sends first)."""
    while True:
        length = None
        while (line := stream.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        assert length is not None, "the server closed stdout"
        msg = json.loads(stream.read(length))
        if "id" in msg:
            return msg
