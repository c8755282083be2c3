"""Compile real Triton kernels on a CUDA GPU and save, per kernel:
  NAME.cubin  the binary Triton produced (ptxas -O3 schedule)
  NAME.ptx    its PTX
  NAME.json   how it was launched: grid, block (num_warps*32), dynamic shared memory,
              every argument in order (tensor: shape/dtype/role, scalar: value), constexprs,
              and the median time of the original kernel in ms (triton.testing.do_bench).
Usage (on a machine with a GPU, torch and triton):  python3 make_triton_corpus.py OUTDIR
The .cuasm files beside the cubins in sm_90/ were written by CuAssembler's disassembler
(cuasm a.cubin) from these cubins: they are the reference for the file format."""

import json
import os
import sys

import torch
import triton
import triton.language as tl

D = "cuda"


@triton.jit
def add_kernel(x, y, z, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(z + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + row * in_stride + cols, mask=cols < n_cols, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * out_stride + cols, num / tl.sum(num, axis=0), mask=cols < n_cols)


@triton.jit
def layernorm_kernel(X, Y, W, B, stride, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < N
    x = tl.load(X + row * stride + cols, mask=m, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(m, x - mean, 0.0)
    rstd = 1 / tl.sqrt(tl.sum(xc * xc, axis=0) / N + eps)
    tl.store(
        Y + row * stride + cols, xc * rstd * tl.load(W + cols, mask=m) + tl.load(B + cols, mask=m), mask=m
    )


@triton.jit
def rmsnorm(X, Y, W, stride, N, eps, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    m = c < N
    x = tl.load(X + r * stride + c, mask=m, other=0.0).to(tl.float32)
    rs = 1 / tl.sqrt(tl.sum(x * x, 0) / N + eps)
    tl.store(Y + r * stride + c, (x * rs * tl.load(W + c, mask=m)).to(Y.dtype.element_ty), mask=m)


@triton.jit
def gelu_bias(X, B, Y, n, N, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < n
    x = tl.load(X + o, mask=m) + tl.load(B + o % N, mask=m)
    tl.store(Y + o, 0.5 * x * (1 + tl.erf(x * 0.7071067811865476)), mask=m)


@triton.jit
def transpose(X, Y, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    tl.store(Y + rn[:, None] * M + rm[None, :], tl.trans(tl.load(X + rm[:, None] * N + rn[None, :])))


@triton.jit
def matmul_kernel(
    a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    ap = a + rm[:, None] * sam + rk[None, :] * sak
    bp = b + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _k in range(0, K, BK):
        acc += tl.dot(tl.load(ap), tl.load(bp))
        ap += BK * sak
        bp += BK * sbk
    tl.store(c + rm[:, None] * scm + rn[None, :] * scn, acc.to(c.dtype.element_ty))


def record(out, name, fn, grid, args, roles, kw, fills=None):
    """Launch once, time it, and save the cubin, ptx and launch description; returns the compiled kernel.
    ``fills`` maps an argument index to its JSON ``fill`` (how the GPU worker fills that input)."""
    ck = fn[grid](*args, **kw)
    ms = triton.testing.do_bench(lambda: fn[grid](*args, **kw), return_mode="median")
    meta = describe(name, fn, grid, args, roles, kw, ck, fills)
    meta.update(median_ms=ms, n_regs=ck.n_regs, gpu=torch.cuda.get_device_name())
    write_outputs(out, name, ck, meta)
    print(f"{name:28s} {ms:8.4f} ms  {ck.n_regs:4d} regs")
    return ck


def describe(name, fn, grid, args, roles, kw, ck, fills=None):
    """The corpus JSON of compiled kernel ``ck``, launched as ``fn[grid](*args, **kw)``."""
    desc = []
    for a, role in zip(args, roles, strict=False):
        if torch.is_tensor(a):
            desc.append(
                {
                    "kind": "tensor",
                    "shape": list(a.shape),
                    "dtype": str(a.dtype).replace("torch.", ""),
                    "role": role,
                }
            )
            if fills and len(desc) - 1 in fills:
                desc[-1]["fill"] = fills[len(desc) - 1]
        else:
            desc.append({"kind": "scalar", "value": a, "type": "fp32" if isinstance(a, float) else "i32"})
    return dict(
        name=name,
        kernel=fn.__name__,
        grid=list(grid) + [1] * (3 - len(grid)),
        block=[ck.metadata.num_warps * 32, 1, 1],
        shared_bytes=ck.metadata.shared,
        constexprs=kw,
        args=desc,
        triton=triton.__version__,
        # Triton appends these two pointers; the GPU worker passes null, which is only right when both are 0.
        global_scratch_size=getattr(ck.metadata, "global_scratch_size", 0) or 0,
        profile_scratch_size=getattr(ck.metadata, "profile_scratch_size", 0) or 0,
    )


def write_outputs(out, name, ck, meta):
    """NAME.cubin, NAME.ptx and NAME.json in ``out``."""
    for k in ("cubin", "ptx"):
        v = ck.asm[k]
        with open(os.path.join(out, f"{name}.{k}"), "wb") as f:
            f.write(v if isinstance(v, bytes) else v.encode())
    with open(os.path.join(out, f"{name}.json"), "w") as f:
        json.dump(meta, f, indent=1)


def main(out):
    os.makedirs(out, exist_ok=True)

    def r(*s, dt=torch.float32):
        return torch.randn(*s, device=D, dtype=dt)

    n = 1 << 24
    x, y = r(n), r(n)
    record(
        out,
        "triton_add",
        add_kernel,
        (n // 1024,),
        (x, y, torch.empty_like(x), n),
        ("in", "in", "out", None),
        dict(BLOCK=1024),
    )
    R, C = 8192, 1024
    a = r(R, C)
    record(
        out,
        "triton_softmax",
        softmax_kernel,
        (R,),
        (torch.empty_like(a), a, C, C, C),
        ("out", "in", None, None, None),
        dict(BLOCK=1024),
    )
    record(
        out,
        "triton_layernorm",
        layernorm_kernel,
        (R,),
        (a, torch.empty_like(a), r(C), r(C), C, C, 1e-5),
        ("in", "out", "in", "in", None, None, None),
        dict(BLOCK=1024),
    )
    R, C = 8192, 4096
    xx = r(R, C)
    record(
        out,
        "rmsnorm_f32_4096",
        rmsnorm,
        (R,),
        (xx, torch.empty_like(xx), r(C), C, C, 1e-6),
        ("in", "out", "in", None, None, None),
        dict(BLOCK=4096),
    )
    xv = r(n)
    record(
        out,
        "gelu_bias",
        gelu_bias,
        (n // 1024,),
        (xv, r(4096), torch.empty_like(xv), n, 4096),
        ("in", "in", "out", None, None),
        dict(BLOCK=1024),
    )
    xt = r(8192, 8192)
    record(
        out,
        "transpose_f32",
        transpose,
        (128, 128),
        (xt, torch.empty_like(xt), 8192, 8192),
        ("in", "out", None, None),
        dict(BM=64, BN=64),
    )
    M = N = K = 4096
    for name, bm, bn, bk, st, nw in [
        ("triton_matmul", 128, 128, 64, 3, 8),
        ("mm_f16_64x64x32", 64, 64, 32, 4, 4),
    ]:
        A, B = r(M, K, dt=torch.float16), r(K, N, dt=torch.float16)
        Cm = torch.empty(M, N, device=D, dtype=torch.float16)
        record(
            out,
            name,
            matmul_kernel,
            (M // bm, N // bn),
            (A, B, Cm, M, N, K, K, 1, N, 1, N, 1),
            ("in", "in", "out") + (None,) * 9,
            dict(BM=bm, BN=bn, BK=bk, num_stages=st, num_warps=nw),
        )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "corpus_out")
