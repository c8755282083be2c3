"""Initialize, shutdown and settings (initialization options, ``workspace/configuration``, changes)."""

from __future__ import annotations

import asyncio
import logging

from lsprotocol import types as lsp

from sass_lsp.server.features.common import Shared, refresh_views
from sass_lsp.server.state import SassLanguageServer

log = logging.getLogger("sass_lsp.server")
SECTION = lsp.ConfigurationParams(items=[lsp.ConfigurationItem(section="sass-lsp")])


def register(ls: SassLanguageServer, shared: Shared) -> None:
    @ls.feature(lsp.INITIALIZE)
    def initialize(params: lsp.InitializeParams) -> None:
        ls.apply_settings(params.initialization_options)

    @ls.feature(lsp.INITIALIZED)
    async def initialized(_params: lsp.InitializedParams) -> None:
        await asyncio.sleep(0)
        # the encoder's tables are not loaded here: the first didOpen usually follows at once, and its
        # parse diagnostics must not wait for them (the diagnostics pipeline loads them in a thread)
        try:
            await pull_settings(ls)
        except Exception:
            log.warning("workspace/configuration failed", exc_info=True)
        shared.suggestions.preload()  # the policy's path is a setting: known now

    @ls.feature(lsp.SHUTDOWN)
    def shutdown(*_args: object) -> None:
        ls.close_workers()

    @ls.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(params: lsp.DidChangeConfigurationParams) -> None:
        settings = params.settings
        shared.suggestions.reset()  # the policy path may have changed
        if isinstance(settings, dict) and "sass-lsp" in settings:
            apply_settings(ls, settings["sass-lsp"])
        else:
            await pull_settings(ls)


async def pull_settings(ls: SassLanguageServer) -> None:
    """Ask the client for the ``sass-lsp`` section (where it can answer) and apply it."""
    caps = ls.client_capabilities.workspace
    if caps is not None and caps.configuration:
        result = await ls.workspace_configuration_async(SECTION)
        if result and result[0] is not None:
            apply_settings(ls, result[0])


def apply_settings(ls: SassLanguageServer, raw: object) -> None:
    """Settings after initialization: a change that inlay hints (or code lenses) show is seen at once, not
    at the next edit: the client is asked to pull them again."""
    before = ls.settings
    ls.apply_settings(raw)
    after = ls.settings
    arch = after.arch != before.arch  # the cost lenses and the stall hints follow the arch
    if arch or after.inlayStallHints != before.inlayStallHints:
        refresh_views(ls, lenses=arch)
