# Put first on PYTHONPATH with tests/no_torch/torch: a Python with the base install only (no [policy] extra).
raise ImportError(
    "No module named 'safetensors' (tests/no_torch stands in for a Python without the [policy] extra)"
)
