"""The editor-facing core: pure functions in editor terms (0-based lines, code-point columns, markdown).

Architecture Invariant: nothing here imports pygls or lsprotocol, and nothing does IO; ``sass_lsp.server``
is the only layer that knows LSP.
"""
