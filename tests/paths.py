"""Where the test material lives: the shared Triton corpus beside the checkout and the generated corpus."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# CI lays shared/ beside the clone; SASS_LSP_SHARED points elsewhere when needed.
SHARED = Path(os.environ.get("SASS_LSP_SHARED", ROOT.parent / "shared"))
SHARED_CORPUS = SHARED / "corpus" / "sm_90"
GENERATED_CORPUS = ROOT / ".cache" / "corpus"
