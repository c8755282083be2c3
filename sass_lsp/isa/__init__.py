"""SASS instruction set: control codes, instruction syntax, and a data-driven per-arch encoder."""
