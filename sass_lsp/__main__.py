"""``python -m sass_lsp`` runs the CLI (``serve`` once the language server lands)."""

import sys

from sass_lsp.cli import main

sys.exit(main())
