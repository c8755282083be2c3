"""A tiny Triton program for ``sass-lsp capture`` (and its GPU test): two kernels, three launches.

    sass-lsp capture --out /tmp/cap --snapshot -- python benchmarks/capture_demo.py

``add_kernel`` runs twice (only its first launch is recorded); ``axpy_kernel`` gets a float scalar and a
stride equal to 1, which Triton compiles in as a constant, so the spec must drop it. Exits non-zero if a
result is wrong.
"""

from __future__ import annotations

import sys

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@triton.jit
def axpy_kernel(x_ptr, out_ptr, alpha, n_elements, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs * stride, mask=mask)
    tl.store(out_ptr + offs, alpha * x + 1.0, mask=mask)


def main() -> int:
    n = 98_432  # not a multiple of BLOCK: the mask matters
    block = 1024
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(n, device="cuda", generator=gen)
    y = torch.randn(n, device="cuda", generator=gen)
    out = torch.zeros_like(x)
    grid = (triton.cdiv(n, block),)
    add_kernel[grid](x, y, out, n, BLOCK=block)
    add_kernel[grid](out, y, out, n, BLOCK=block)  # same kernel again: counted, not recorded
    scaled = torch.empty_like(x)
    axpy_kernel[grid](x, scaled, 2.5, n, 1, BLOCK=block)
    torch.cuda.synchronize()
    ok = torch.allclose(out, x + 2 * y, atol=1e-5) and torch.allclose(scaled, 2.5 * x + 1.0, atol=1e-5)
    print("capture_demo:", "ok" if ok else "WRONG RESULT")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
