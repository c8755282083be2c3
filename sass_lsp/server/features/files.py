"""Commands on files: disassemble a cubin beside itself, assemble the document to a cubin, check it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsprotocol import types as lsp
from pygls.uris import from_fs_path

from sass_lsp.files import write_atomic
from sass_lsp.ide import commands
from sass_lsp.ide import diagnostics as diag_mod
from sass_lsp.server.features.common import (
    Progress,
    Shared,
    check_uri,
    doc_name,
    file_path,
    may_write,
    open_snapshot,
    warn,
)
from sass_lsp.server.features.documents import CMD_DISASSEMBLE
from sass_lsp.server.features.lenses import CMD_ASSEMBLE
from sass_lsp.server.state import SassLanguageServer, Snapshot

CMD_CHECK = "sass-lsp.check"


def register(ls: SassLanguageServer, _shared: Shared) -> None:
    @ls.command(CMD_DISASSEMBLE)
    async def cmd_disassemble(uri: str) -> str:
        """``K.cubin`` -> ``K.cuasm`` beside it (replacing one only if the user says Overwrite); opens it."""
        path = file_path(uri)
        if path is None:
            raise ValueError(f"Disassemble reads a .cubin file: {uri} is not a file")
        out_path = path.with_suffix(".cuasm")
        async with Progress(ls, f"Disassembling {path.name}") as cancelled:
            data = await asyncio.to_thread(path.read_bytes)
            text = await asyncio.to_thread(commands.disassemble, data, path.name)
            if cancelled.is_set():
                raise asyncio.CancelledError
        if not await may_write(ls, out_path):
            return f"{out_path.name} exists and was left as it is"
        await asyncio.to_thread(write_atomic, out_path, text)
        out_uri = from_fs_path(str(out_path)) or str(out_path)
        ls.window_show_document(lsp.ShowDocumentParams(uri=out_uri, take_focus=True))
        return out_uri

    @ls.command(CMD_CHECK)
    async def cmd_check(uri: str) -> dict:
        snap = open_snapshot(ls, uri)
        async with Progress(ls, f"Checking {Path(uri).name}"):
            diags = await asyncio.to_thread(diag_mod.all_diagnostics, snap.index, snap.arch, ls.settings)
        n_errors = sum(d.severity == "error" for d in diags)
        n_warnings = sum(d.severity == "warning" for d in diags)
        arch = snap.arch or "unknown arch"
        message = (
            f"{n_errors} error(s), {n_warnings} warning(s) in {len(snap.index.pcs)} instructions ({arch})"
        )
        return {"ok": n_errors == 0, "errors": n_errors, "warnings": n_warnings, "message": message}

    @ls.command(CMD_ASSEMBLE)
    async def cmd_assemble(uri: str) -> dict:
        uri = check_uri(uri)
        snap = open_snapshot(ls, uri)
        path = file_path(uri)
        if path is None:  # untitled: there is no folder to write into, and the server's is not the user's
            message = (
                f"{doc_name(uri)} is not saved: save it as a .cuasm file, then assemble (K.cuasm -> K.cubin)"
            )
            warn(ls, message)
            return {"ok": False, "verdict": "unsaved", "message": message}
        result = await _assemble(ls, snap, path)
        cubin = result.cubin
        if cubin is None:
            return {"ok": False, "errors": sum(1 for d in result.diagnostics if d.severity == "error")}
        out_path = path.with_suffix(".cubin")
        if not await may_write(ls, out_path):
            message = f"{out_path.name} exists and was left as it is (nothing written)"
            return {"ok": True, "written": False, "message": message}
        await asyncio.to_thread(write_atomic, out_path, cubin)
        return {"ok": True, "cubin": from_fs_path(str(out_path)), "bytes": len(cubin)}


async def _assemble(ls: SassLanguageServer, snap: Snapshot, path: Path) -> commands.AssembleResult:
    """The document assembled; its assembler diagnostics are shown on it (and a message when it does not
    assemble)."""
    async with Progress(ls, f"Assembling {path.name}") as cancelled:
        result = await asyncio.to_thread(commands.assemble, snap.doc.text, str(path))
        if cancelled.is_set():
            raise asyncio.CancelledError
    ls.extra_diags[snap.uri] = (snap.version, list(result.diagnostics))
    ls.schedule_diagnostics(snap.uri, 0.0)
    if result.cubin is None:
        n = sum(1 for d in result.diagnostics if d.severity == "error")
        warn(ls, f"{path.name}: {n} assembly error(s)", lsp.MessageType.Error)
    return result
