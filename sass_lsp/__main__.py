"""``python -m sass_lsp``: the language server over stdio, as ``sass-lsp serve``; with arguments, the CLI."""

import sys

from sass_lsp.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["serve"]))
