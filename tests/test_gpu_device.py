"""Real-GPU tests on the corpus kernels (``pytest -m gpu -s`` prints the CI widths). Skipped without a GPU."""

from __future__ import annotations

import struct

import pytest

from sass_lsp.elf import read_cubin
from sass_lsp.gpu.bench import format_bench, run_bench
from sass_lsp.gpu.corpus import corpus_names, has_gpu, load_kernel
from sass_lsp.gpu.runner import GpuRunner
from sass_lsp.gpu.stats import bootstrap_ratio_ci

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not has_gpu(), reason="no CUDA GPU"),
]
NAMES = corpus_names() or ["(none)"]
WAIT_MASK = 0x3F << 52  # scoreboard wait mask in the high 64-bit word of an sm_90 instruction (notes §2)


@pytest.fixture(scope="module")
def runner():
    with GpuRunner(timeout_s=300) as active:
        reply = active.hello()
        assert reply.ok, reply.error
        print(f"\n[gpu] {reply.result['device']} clocks {reply.result['clocks']}")
        yield active


@pytest.mark.parametrize("name", NAMES)
def test_every_corpus_kernel_launches_from_its_spec(runner, name):
    cubin, spec = load_kernel(name)
    reply = runner.launch(cubin, spec, seed=0)
    assert reply.ok and reply.result["status"] == "ok", (reply.error, reply.result)
    for out in reply.result["outputs"]:
        assert out["unwritten"] == 0, out
        assert out["finite"] == out["n_elems"], out


@pytest.mark.parametrize("name", NAMES)
def test_self_vs_identical_copy_matches_and_is_not_significant(runner, name):
    cubin, spec = load_kernel(name)
    copy = bytes(bytearray(cubin))  # a bit-identical copy, loaded as a second module
    # `bench` claims at 95%; over 8 kernels a calibrated 95% CI misses 1.0 somewhere in one run of three, so
    # the assertion uses 99% on the same samples. A 99% miss is timed once more: a real bias (placement, load
    # order) shows again, chance does not (both at once: 1 in 10,000 per kernel).
    for attempt in (1, 2):
        result = run_bench(cubin, copy, spec, seeds=2, rounds=30, runner=runner)
        print("\n" + format_bench(result))
        assert result.verification["status"] == "match" and result.verification["bit_identical"], (
            result.message
        )
        assert result.timing is not None
        ci = result.timing.ci
        ci99 = bootstrap_ratio_ci(
            result.timing.orig_ms, result.timing.edit_ms, blocks=result.timing.round_blocks, confidence=0.99
        )
        print(
            f"[gpu] self-vs-self {name} (attempt {attempt}): ratio {ci.ratio:.4f} 95% CI [{ci.low:.4f}, "
            f"{ci.high:.4f}] width {ci.width:.4f}; 99% CI [{ci99.low:.4f}, {ci99.high:.4f}]"
            + ("" if ci.contains_one else "  95% EXCLUDES 1")
        )
        if ci99.contains_one:
            break
    assert ci99.contains_one, (
        f"{name}: self-vs-self 99% CI [{ci99.low:.4f}, {ci99.high:.4f}] excludes 1 twice"
    )
    assert len(set(result.timing.round_blocks)) == 4  # both load orders, twice each


def clear_all_waits(cubin: bytes, kernel: str) -> bytes:
    """Every instruction of the kernel stops waiting on scoreboards: consumers race their producers."""
    text = read_cubin(cubin).section(f".text.{kernel}")
    assert text is not None
    data = bytearray(cubin)
    n_cleared = 0
    for off in range(text.offset, text.offset + text.size, 16):
        (hi,) = struct.unpack_from("<Q", data, off + 8)
        if hi & WAIT_MASK:
            struct.pack_into("<Q", data, off + 8, hi & ~WAIT_MASK)
            n_cleared += 1
    assert n_cleared > 0
    return bytes(data)


@pytest.mark.parametrize("name", ["triton_add", "triton_softmax", "triton_matmul"])
def test_corrupted_cubin_is_caught_or_crashes_cleanly(runner, name):
    if name not in corpus_names():
        pytest.skip(f"{name} not in the corpus")
    cubin, spec = load_kernel(name)
    result = run_bench(cubin, clear_all_waits(cubin, spec.kernel), spec, seeds=3, rounds=10, runner=runner)
    print(f"\n[gpu] corrupted {name}: {result.verdict}: {result.message}")
    assert not result.verified
    assert result.verdict in ("mismatch", "fault", "timeout", "crash", "launch_error"), result.message
    # Whatever happened, the runner recovers: the original still verifies against itself.
    again = runner.verify(cubin, cubin, spec, [0])
    assert again.ok and again.result["status"] == "match"
