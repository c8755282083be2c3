"""Optional build step: compile the checker's hot modules with mypyc (the metadata is in pyproject.toml).

``SASS_LSP_PURE=1`` at build time, no mypy, a C compiler that fails, or a Python other than CPython give a
pure-Python install; the package works identically either way (``sass_lsp/_native.py`` says how it picks).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext

# Keep in step with sass_lsp._native.COMPILED: all or none of them are compiled (they are one mypyc group,
# whose native classes the others use directly).
GROUP = "sass_lsp_native__mypyc"  # the group's shared library (group_name + "__mypyc"), top-level: mypyc
# derives the modules' __file__ from its directory
COMPILED = ["sass_lsp/analysis/hazards.py", "sass_lsp/analysis/program.py", "sass_lsp/isa/semantics.py"]


def _say(msg: str) -> None:
    print(f"sass-lsp build: {msg}", file=sys.stderr)


class OptionalBuildExt(build_ext):
    """build_ext that leaves a pure-Python install when compiling fails (never a partial one)."""

    def run(self) -> None:
        try:
            super().run()
            if self.extensions:
                self._record_sources()
        except Exception as exc:  # noqa: BLE001  # a missing or failing compiler: any error means pure Python
            _say(f"compiling failed ({exc}); installing pure Python")
            for ext in self.extensions:
                path = self.get_ext_fullpath(ext.name)
                if os.path.isfile(path):
                    os.remove(path)
            self.extensions = []

    def _record_sources(self) -> None:
        """What the compiled modules were built from, beside them: sass_lsp._native runs the sources
        instead when they changed since (an edit in an editable install without a rebuild)."""
        pkg = os.path.join(os.path.dirname(self.get_ext_fullpath(GROUP)), "sass_lsp")
        digests = {}
        for path in COMPILED:
            with open(path, "rb") as fh:
                digests[path.removesuffix(".py").replace("/", ".")] = hashlib.sha256(fh.read()).hexdigest()
        with open(os.path.join(pkg, "_native_sources.json"), "w") as fh:
            json.dump(digests, fh, indent=1)


def ext_modules() -> list:
    if os.environ.get("SASS_LSP_PURE", "") not in ("", "0"):
        _say("SASS_LSP_PURE set: pure Python")
        return []
    if sys.implementation.name != "cpython":
        return []
    try:
        from mypyc.build import mypycify

        return mypycify(COMPILED, group_name=GROUP.removesuffix("__mypyc"), opt_level="3")
    except BaseException as exc:  # noqa: BLE001  # no mypy, or mypy rejects the code (it exits): pure Python
        _say(f"mypyc unavailable or failed ({exc!r}); installing pure Python")
        return []


setup(ext_modules=ext_modules(), cmdclass={"build_ext": OptionalBuildExt})
