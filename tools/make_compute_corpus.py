"""Compile compute-bound Triton kernels for sm_90 and save them beside the existing corpus, per kernel:
  NAME.cubin, NAME.ptx, NAME.json   written by make_triton_corpus.record (the sass_lsp/corpus/sm_90 format)

Kernels (all tensor-core code: wgmma, which the SASS shows as HGMMA / QGMMA):
  fp8_blockscale_gemm  DeepSeek-V3 style FP8 e4m3 GEMM, A scaled per row per 128-wide K block, B per 128x128
                       block; each K block's dot is scaled into the fp32 accumulator (the promotion FFMAs);
                       bf16 out
  bf16_gemm            bf16 GEMM, 128x128x64 tiles, grouped launch order, bf16 out
  flash_attn_fwd       flash-attention forward (online softmax), fp16, head dim 64, not causal

Each kernel is first launched and checked against a torch reference (max error printed); only a kernel that
passes is timed and written. One kernel failing does not stop the others; the last lines summarise each.

Usage, on a machine with an sm_90 GPU, torch and triton 3.6:
  python3 tools/make_compute_corpus.py OUTDIR            compile, check, time, write OUTDIR/NAME.*
  python3 tools/make_compute_corpus.py --compile-only OUTDIR
                                                         no GPU needed: compile for sm_90 only, write
                                                         OUTDIR/NAME.cubin/.ptx, print SASS counts
Exit status: 0 when every kernel passed, 1 otherwise.

The shipped corpus's copies (cubin, json) came from one such run on an H100 (triton 3.6.0); their .cuasm
beside them are `sass-lsp disasm NAME.cubin` (the older corpus kernels' were written by CuAssembler)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import triton
import triton.language as tl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_triton_corpus import describe, record, write_outputs  # noqa: E402  (the shipped corpus's writer)

# ---------------------------------------------------------------------------------------------------------
# Kernels


@triton.jit
def fp8_blockscale_gemm(
    A, B, C, As, Bs, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr
):
    """C[M,N] = (A[M,K] * As) @ (B[N,K] * Bs)^T; As[M, K/BLOCK_K] per row per K block,
    Bs[N/BLOCK_N, K/BLOCK_K] per block. BLOCK_N == BLOCK_K == the 128 scale block, so each program reads
    one B scale per K block."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    k_tiles = K // BLOCK_K
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = A + rm[:, None] * K + rk[None, :]
    b_ptrs = (
        B + rn[None, :] * K + rk[:, None]
    )  # [BLOCK_K, BLOCK_N] tile, K contiguous (wgmma fp8 wants K-major)
    as_ptrs = As + rm * k_tiles
    bs_ptr = Bs + pid_n * k_tiles
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _k in range(0, K, BLOCK_K):
        a_s = tl.load(as_ptrs)
        b_s = tl.load(bs_ptr)
        acc += tl.dot(tl.load(a_ptrs), tl.load(b_ptrs)) * (a_s[:, None] * b_s)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K
        as_ptrs += 1
        bs_ptr += 1
    tl.store(C + rm[:, None] * N + rn[None, :], acc.to(tl.bfloat16))


@triton.jit
def bf16_gemm(
    A,
    B,
    C,
    M,
    N,
    K,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    """C[M,N] = A[M,K] @ B[K,N], all row-major; programs walk GROUP_M tile rows at a time (L2 reuse)."""
    pid = tl.program_id(0)
    num_m = M // BLOCK_M
    num_n = N // BLOCK_N
    per_group = GROUP_M * num_n
    first_m = (pid // per_group) * GROUP_M
    group_rows = min(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % group_rows
    pid_n = (pid % per_group) // group_rows
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = A + rm[:, None] * K + rk[None, :]
    b_ptrs = B + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _k in range(0, K, BLOCK_K):
        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * N
    tl.store(C + rm[:, None] * N + rn[None, :], acc.to(tl.bfloat16))


@triton.jit
def flash_attn_fwd(
    Q,
    K,
    V,
    Out,
    sm_scale,
    stride_bh,
    stride_s,
    N_CTX,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    HEAD_DIM: tl.constexpr,
):
    """Out = softmax(Q K^T * sm_scale) V per (batch, head); Q/K/V/Out [B, H, N_CTX, HEAD_DIM] contiguous."""
    start_m = tl.program_id(0)
    base = tl.program_id(1) * stride_bh
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + base + offs_m[:, None] * stride_s + offs_d[None, :])
    m_i = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634  # exp(x) = exp2(x * log2(e))
    k_ptrs = K + base + offs_n[None, :] * stride_s + offs_d[:, None]
    v_ptrs = V + base + offs_n[:, None] * stride_s + offs_d[None, :]
    for _start_n in range(0, N_CTX, BLOCK_N):
        qk = tl.dot(q, tl.load(k_ptrs))
        m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        p = tl.math.exp2(qk * qk_scale - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(tl.float16), tl.load(v_ptrs), acc)
        m_i = m_ij
        k_ptrs += BLOCK_N * stride_s
        v_ptrs += BLOCK_N * stride_s
    acc = acc / l_i[:, None]
    tl.store(Out + base + offs_m[:, None] * stride_s + offs_d[None, :], acc.to(Out.dtype.element_ty))


# ---------------------------------------------------------------------------------------------------------
# Cases: inputs, launch, reference


@dataclass
class Case:
    name: str
    fn: Any
    grid: tuple[int, ...]
    args: tuple[Any, ...]
    roles: tuple[str | None, ...]
    kw: dict[str, int]
    out_idx: int
    """Index in ``args`` of the output tensor the reference is compared with."""
    reference: Callable[[], torch.Tensor]
    flops: float
    rel_tol: float
    """Pass when max |out - ref| <= rel_tol * max |ref|."""
    fills: dict[int, dict[str, Any]] = field(default_factory=dict)


def fp8_case(dev: str) -> Case:
    M = N = K = 2048
    blk = 128
    gen = torch.Generator(device="cpu").manual_seed(0)
    a = torch.randn(M, K, generator=gen).to(dev).to(torch.float8_e4m3fn)
    b = torch.randn(N, K, generator=gen).to(dev).to(torch.float8_e4m3fn)
    a_s = (torch.rand(M, K // blk, generator=gen) * 1.5 + 0.5).to(dev)
    b_s = (torch.rand(N // blk, K // blk, generator=gen) * 1.5 + 0.5).to(dev)
    c = torch.empty(M, N, device=dev, dtype=torch.bfloat16)

    def reference() -> torch.Tensor:
        a_f = a.float() * a_s.repeat_interleave(blk, dim=1)
        b_f = b.float() * b_s.repeat_interleave(blk, dim=0).repeat_interleave(blk, dim=1)
        return a_f @ b_f.T

    scale_fill = {"kind": "uniform", "low": 0.5, "high": 2.0}
    return Case(
        "fp8_blockscale_gemm",
        fp8_blockscale_gemm,
        (M // blk, N // blk),
        (a, b, c, a_s, b_s, M, N, K),
        ("in", "in", "out", "in", "in", None, None, None),
        dict(BLOCK_M=blk, BLOCK_N=blk, BLOCK_K=blk, num_warps=8, num_stages=3),
        2,
        reference,
        2.0 * M * N * K,
        2e-2,
        {3: scale_fill, 4: scale_fill},
    )


def bf16_case(dev: str) -> Case:
    M = N = K = 2048
    bm, bn, bk = 128, 128, 64
    gen = torch.Generator(device="cpu").manual_seed(1)
    a = torch.randn(M, K, generator=gen).to(dev).to(torch.bfloat16)
    b = torch.randn(K, N, generator=gen).to(dev).to(torch.bfloat16)
    c = torch.empty(M, N, device=dev, dtype=torch.bfloat16)
    return Case(
        "bf16_gemm",
        bf16_gemm,
        ((M // bm) * (N // bn),),
        (a, b, c, M, N, K),
        ("in", "in", "out", None, None, None),
        dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=4, num_stages=4),
        2,
        lambda: a.float() @ b.float(),
        2.0 * M * N * K,
        2e-2,
    )


def attn_case(dev: str) -> Case:
    batch, heads, seq, dim = 4, 16, 1024, 64
    bm, bn = 128, 64
    gen = torch.Generator(device="cpu").manual_seed(2)
    q, k, v = (torch.randn(batch, heads, seq, dim, generator=gen).to(dev).to(torch.float16) for _ in range(3))
    out = torch.empty_like(q)
    sm_scale = 0.125  # 1/sqrt(64)

    def reference() -> torch.Tensor:
        p = torch.softmax((q.float() @ k.float().transpose(-1, -2)) * sm_scale, dim=-1)
        return p @ v.float()

    return Case(
        "flash_attn_fwd",
        flash_attn_fwd,
        (seq // bm, batch * heads),
        (q, k, v, out, sm_scale, seq * dim, dim, seq),
        ("in", "in", "in", "out", None, None, None, None),
        dict(BLOCK_M=bm, BLOCK_N=bn, HEAD_DIM=dim, num_warps=4, num_stages=3),
        3,
        reference,
        4.0 * batch * heads * seq * seq * dim,
        2e-2,
    )


CASES: dict[str, Callable[[str], Case]] = {
    "fp8_blockscale_gemm": fp8_case,
    "bf16_gemm": bf16_case,
    "flash_attn_fwd": attn_case,
}

# ---------------------------------------------------------------------------------------------------------
# SASS inspection

SASS_OPS = ("HGMMA", "QGMMA", "IGMMA", "HMMA", "FFMA", "LDGSTS", "UTMALDG", "WARPGROUP")


def cuobjdump_path() -> str | None:
    bundled = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    return bundled if os.access(bundled, os.X_OK) else shutil.which("cuobjdump")


def sass_counts(cubin_path: str) -> str:
    """Opcode counts from ``cuobjdump -sass`` (Triton's bundled copy), or why there are none."""
    tool = cuobjdump_path()
    if tool is None:
        return "no cuobjdump (SASS not counted)"
    try:
        text = subprocess.run([tool, "-sass", cubin_path], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        return f"cuobjdump failed: {exc}"
    ops = re.findall(r"^\s+/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", text, re.M)
    counts = {op: sum(1 for o in ops if o == op) for op in SASS_OPS}
    return f"{len(ops)} instrs; " + " ".join(f"{op}={n}" for op, n in counts.items() if n)


def is_tensor_core(counts: str) -> bool:
    return any(f"{op}=" in counts for op in ("HGMMA", "QGMMA", "IGMMA"))


# ---------------------------------------------------------------------------------------------------------
# Runs


def run_case(make: Callable[[str], Case], out: str) -> tuple[bool, str]:
    """Launch, compare with the reference, then time and write (record). Returns (passed, summary)."""
    case = make("cuda")
    out_t = case.args[case.out_idx]
    case.fn[case.grid](*case.args, **case.kw)
    torch.cuda.synchronize()
    ref = case.reference()
    err = (out_t.float() - ref).abs().max().item()
    scale = ref.abs().max().item()
    rel = err / scale if scale else err
    if not rel <= case.rel_tol:  # also catches NaN
        return False, f"WRONG max|err|={err:.4g} ({rel:.3g} of max|ref|={scale:.4g}, limit {case.rel_tol})"
    ck = record(out, case.name, case.fn, case.grid, case.args, case.roles, case.kw, case.fills)
    ms = _json_field(out, case.name, "median_ms")
    counts = sass_counts(os.path.join(out, f"{case.name}.cubin"))
    scratch = (getattr(ck.metadata, "global_scratch_size", 0) or 0) + (
        getattr(ck.metadata, "profile_scratch_size", 0) or 0
    )
    notes = []
    if scratch:
        notes.append(f"NEEDS {scratch} B of scratch (worker passes null pointers)")
    if not is_tensor_core(counts):
        notes.append("no wgmma in SASS")
    if ck.n_spills:
        notes.append(f"{ck.n_spills} spilled registers")
    ok = not notes
    line = (
        f"{'ok' if ok else 'CHECK'} max|err|={err:.4g} ({rel:.3g} of max|ref|) {ms:.4f} ms "
        f"{case.flops / ms / 1e9:.1f} TFLOP/s regs={ck.n_regs} spills={ck.n_spills} "
        f"shared={ck.metadata.shared} | {counts}"
    )
    return ok, line + "".join(f" | {n}" for n in notes)


def _json_field(out: str, name: str, key: str) -> Any:
    with open(os.path.join(out, f"{name}.json")) as f:
        return json.load(f)[key]


def compile_case(make: Callable[[str], Case], out: str) -> tuple[bool, str]:
    """Compile for sm_90 without a GPU, specialising arguments the way a launch would."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    case = make("meta")
    names = case.fn.arg_names
    signature: dict[str, str] = {}
    constexprs: dict[Any, Any] = {}
    attrs: dict[tuple[int, ...], list[list[Any]]] = {}
    for idx, arg in enumerate(case.args):
        if torch.is_tensor(arg):
            signature[names[idx]] = "*" + _TRITON_DTYPES[arg.dtype]
            attrs[(idx,)] = [["tt.divisibility", 16]]
        elif isinstance(arg, float):
            signature[names[idx]] = "fp32"
        elif arg == 1:
            signature[names[idx]] = "constexpr"
            constexprs[(idx,)] = 1
        else:
            signature[names[idx]] = "i32"
            if arg % 16 == 0:
                attrs[(idx,)] = [["tt.divisibility", 16]]
    options = {k: v for k, v in case.kw.items() if k in ("num_warps", "num_stages")}
    for key, value in case.kw.items():
        if key not in options:
            signature[key] = "constexpr"
            constexprs[(names.index(key),)] = value
    src = ASTSource(case.fn, signature, constexprs, attrs)
    ck = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=options)
    meta = describe(case.name, case.fn, case.grid, case.args, case.roles, case.kw, ck, case.fills)
    write_outputs(out, case.name, ck, {**meta, "compile_only": True})  # no median_ms: never timed
    counts = sass_counts(os.path.join(out, f"{case.name}.cubin"))
    scratch = (ck.metadata.global_scratch_size or 0) + (ck.metadata.profile_scratch_size or 0)
    ok = is_tensor_core(counts) and not scratch
    return ok, f"{'ok' if ok else 'CHECK'} shared={ck.metadata.shared} scratch={scratch} | {counts}"


_TRITON_DTYPES = {
    torch.float8_e4m3fn: "fp8e4nv",
    torch.bfloat16: "bf16",
    torch.float16: "fp16",
    torch.float32: "fp32",
}


def main(argv: list[str]) -> int:
    compile_only = "--compile-only" in argv
    rest = [a for a in argv if a != "--compile-only"]
    out = rest[0] if rest else "compute_corpus_out"
    os.makedirs(out, exist_ok=True)
    print(f"triton {triton.__version__}, torch {torch.__version__}, out {out}", flush=True)
    if not compile_only:
        if not torch.cuda.is_available():
            print("error: no CUDA device; use --compile-only to compile without one", file=sys.stderr)
            return 2
        print(
            f"gpu {torch.cuda.get_device_name()} (sm_{''.join(map(str, torch.cuda.get_device_capability()))})"
        )
    results: list[tuple[str, bool, str]] = []
    for name, make in CASES.items():
        try:
            ok, line = (compile_case if compile_only else run_case)(make, out)
        except Exception as exc:  # one kernel's failure must not lose the others
            traceback.print_exc()
            ok, line = False, f"FAILED {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        results.append((name, ok, line))
        print(f"[{name}] {line}", flush=True)
    print("\nsummary:")
    for name, ok, line in results:
        print(f"  {'PASS' if ok else 'FAIL'} {name:20s} {line}")
    return 0 if all(ok for _, ok, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
