"""sass-lsp: read, check, edit and re-assemble NVIDIA SASS in CuAssembler's .cuasm format."""

__version__ = "0.1.0"

from sass_lsp import _native

_native.choose()  # the compiled modules, or their sources (SASS_LSP_PURE=1, or no loadable build)
