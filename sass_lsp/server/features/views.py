"""Views of a document that hover, lenses and hints read, cached per document: the static issue timeline of
each kernel (per version) and the ``K.profile.json`` beside the file mapped onto it (per file mtime and
version)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from pygls.uris import to_fs_path

from sass_lsp.ide import gpu_timing
from sass_lsp.ide.profile_view import ProfileView, profile_view
from sass_lsp.ide.timeline_view import KernelTimeline, kernel_timeline
from sass_lsp.server.state import Snapshot

log = logging.getLogger("sass_lsp.server")


class Views:
    def __init__(self) -> None:
        self._timelines: dict[str, tuple[int, dict[str, KernelTimeline | None]]] = {}
        self._profiles: dict[str, tuple[tuple[float, int], ProfileView | None]] = {}

    def timeline(self, snap: Snapshot, line: int) -> KernelTimeline | None:
        """The static issue timeline of the kernel at ``line`` (cached per document version and kernel)."""
        kernel = snap.index.kernel_at(line)
        if kernel is None or not snap.arch:
            return None
        cached = self._timelines.get(snap.uri)
        if cached is None or cached[0] != snap.version:
            cached = self._timelines[snap.uri] = (snap.version, {})
        per_kernel = cached[1]
        if kernel.name not in per_kernel:
            try:
                per_kernel[kernel.name] = kernel_timeline(snap.index, line, snap.arch)
            except Exception:  # a model gap must never cost the user the rest of the hover
                log.warning("timeline failed", exc_info=True)
                per_kernel[kernel.name] = None
        return per_kernel[kernel.name]

    def profile(self, snap: Snapshot) -> ProfileView | None:
        """The ``K.profile.json`` beside the document mapped onto it (cached per file mtime and version)."""
        fs = to_fs_path(snap.uri) if snap.uri.startswith("file:") else None
        if not fs:
            return None
        path = gpu_timing.companions(Path(fs)).profile
        try:
            key = (path.stat().st_mtime, snap.version)
        except OSError:
            self._profiles.pop(snap.uri, None)
            return None
        cached = self._profiles.get(snap.uri)
        if cached is not None and cached[0] == key:
            return cached[1]
        try:
            view = profile_view(snap.index, json.loads(path.read_text()))
        except (OSError, ValueError):
            log.warning("cannot read %s", path, exc_info=True)
            view = None
        self._profiles[snap.uri] = (key, view)
        return view

    def forget(self, uri: str) -> None:
        self._timelines.pop(uri, None)
        self._profiles.pop(uri, None)
