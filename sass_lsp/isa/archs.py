"""Which data tables serve an arch name.

The ELF header does not carry the "a" feature-set suffix (an sm_100a cubin says sm_100), and sm_90a code uses
sm_90's encodings, so a few names share one table. Every other unknown name is unsupported, never guessed.
"""

from __future__ import annotations


class UnsupportedArch(LookupError):
    """No tables for this arch: analyses and the encoder refuse it rather than borrow another arch's data."""


ARCHES = ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100a", "sm_120")
_ALIASES = {"sm_90a": "sm_90", "sm_100": "sm_100a"}


def table_arch(arch: str) -> str | None:
    """The arch whose tables describe ``arch``, or None when there are none."""
    name = _ALIASES.get(arch, arch)
    return name if name in ARCHES else None
