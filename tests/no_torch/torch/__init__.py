# Put first on PYTHONPATH, this stands in for an environment without PyTorch (tests/test_server_no_torch.py).
raise ImportError("No module named 'torch' (tests/no_torch stands in for a Python without PyTorch)")
