"""sass-lsp: read, check, edit and re-assemble NVIDIA SASS in CuAssembler's .cuasm format."""

__version__ = "0.1.0"
