"""``python -m sass_lsp.server [--tcp HOST:PORT]``."""

import sys

from sass_lsp.server import main

sys.exit(main())
