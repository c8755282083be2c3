"""Which build of the compiled modules runs: mypyc's or their Python sources.

``setup.py`` compiles :data:`COMPILED` with mypyc when it can (one group: their native classes are shared,
so they are used all together or not at all). Importing ``sass_lsp`` calls :func:`choose`: with
``SASS_LSP_PURE`` set (not ``0``), when one of their ``.py`` files changed since the build (setup.py keeps
their digests in ``_native_sources.json``), or when the compiled group cannot be loaded (another Python, a
missing library), an import hook loads those modules from their ``.py`` files instead. Without a compiled
build nothing is done: the ``.py`` files are all there is.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

try:  # mypyc reads its class options off this decorator; at run time it is a no-op
    from mypy_extensions import mypyc_attr
except ImportError:  # not installed (it is a build requirement only)

    def mypyc_attr(*_args: object, **_kwargs: object) -> Callable[[type], type]:  # type: ignore[misc]
        return lambda cls: cls


COMPILED = ("sass_lsp.analysis.hazards", "sass_lsp.analysis.program", "sass_lsp.isa.semantics")
GROUP = "sass_lsp_native__mypyc"  # mypyc's shared library of the group, top-level (setup.py's group_name)

pure = True  # after choose(): whether COMPILED run from their sources


class _Sources(importlib.abc.MetaPathFinder):
    """Finds the modules of :data:`COMPILED` as their ``.py`` files, ahead of the extension modules."""

    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if name not in COMPILED:
            return None
        leaf = name.rpartition(".")[2] + ".py"
        for entry in path or ():
            src = os.path.join(entry, leaf)
            if os.path.isfile(src):
                return importlib.util.spec_from_file_location(name, src)
        return None


def compiled_present() -> bool:
    """Whether this install has the compiled group (whether or not it is used)."""
    return importlib.util.find_spec(GROUP) is not None


def _edited() -> bool:
    """Whether a compiled module's ``.py`` differs from what it was built from (setup.py records that)."""
    try:
        built = json.loads((Path(__file__).parent / "_native_sources.json").read_text())
    except OSError:
        return False  # built without the record: trust it
    root = Path(__file__).parent.parent
    for name in COMPILED:
        src = root.joinpath(*name.split(".")).with_suffix(".py")
        try:
            if hashlib.sha256(src.read_bytes()).hexdigest() != built.get(name):
                return True
        except OSError:
            return True
    return False


def choose() -> None:
    global pure
    if not compiled_present():
        return
    if os.environ.get("SASS_LSP_PURE", "") not in ("", "0"):
        why = None
    elif _edited():
        why = "sass_lsp: a compiled module's source changed since the build; running the Python sources"
        why += " (rebuild with `pip install -e .`, or set SASS_LSP_PURE=1)"
    else:
        try:
            importlib.import_module(GROUP)
        except ImportError as exc:
            why = f"sass_lsp: the compiled modules do not load here ({exc}); running the Python sources"
        else:
            pure = False
            return
    if why:
        warnings.warn(why, RuntimeWarning, stacklevel=2)
    if not any(isinstance(f, _Sources) for f in sys.meta_path):
        sys.meta_path.insert(0, _Sources())
