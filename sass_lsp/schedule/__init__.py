"""Instruction reordering: dependences and control-code repair (:mod:`.deps`, :mod:`.repair`), the cost model,
the reorder game and its observation contract. Importing this package imports nothing heavy (no torch)."""
