"""Host-side data logic: fills, poison, bitwise/tolerant comparison, dtypes, and the bootstrap CI."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sass_lsp.gpu.data import InputCache, compare_buffer, count_poison, make_input, poisoned
from sass_lsp.gpu.dtypes import DTYPES, from_float32, lookup_dtype, to_float32, ulp_distance
from sass_lsp.gpu.spec import BufferParam, Fill, Tolerance
from sass_lsp.gpu.stats import bootstrap_ratio_ci, summarize

NORMAL = Fill("normal")


def buf(dtype="f32", shape=(16,), role="out", fill=NORMAL):
    return BufferParam("y", dtype, shape, role, fill)


# -- fills ---------------------------------------------------------------------------------------------------


def test_fills_are_seeded_and_independent_per_parameter():
    param = buf(role="in")
    a = make_input(param, seed=3, param_idx=0)
    assert np.array_equal(a, make_input(param, seed=3, param_idx=0))
    assert not np.array_equal(a, make_input(param, seed=4, param_idx=0))
    assert not np.array_equal(a, make_input(param, seed=3, param_idx=1))
    assert a.dtype == np.float32 and a.shape == (16,)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_every_dtype_fills_with_its_storage_width(dtype):
    fill = Fill("normal") if DTYPES[dtype].is_float else Fill("int", low=0, high=2)
    data = make_input(buf(dtype, (8, 4), "in", fill), 0, 0)
    assert data.nbytes == 32 * DTYPES[dtype].size


def test_int_uniform_constant_and_file_fills(tmp_path):
    ints = make_input(buf("i32", (1000,), "in", Fill("int", low=-3, high=5)), 0, 0)
    assert ints.min() >= -3 and ints.max() <= 4
    uni = make_input(buf("f32", (1000,), "in", Fill("uniform", low=2.0, high=3.0)), 0, 0)
    assert uni.min() >= 2.0 and uni.max() < 3.0
    const = make_input(buf("bf16", (4,), "in", Fill("constant", value=1.5)), 0, 0)
    assert np.all(to_float32(DTYPES["bf16"], const) == 1.5)
    np.savez(tmp_path / "d.npz", w=np.arange(6, dtype=np.float64).reshape(2, 3))
    from_file = make_input(buf("f16", (6,), "in", Fill("file", path=str(tmp_path / "d.npz"))), 0, 0)
    assert from_file.tolist() == [0, 1, 2, 3, 4, 5]


def test_poison_is_all_ones_and_nan():
    param = buf("f32", (4,))
    data = poisoned(param)
    assert data.view(np.uint32).tolist() == [0xFFFFFFFF] * 4
    assert np.isnan(data).all()
    assert count_poison(param, data) == 4


# -- comparison ----------------------------------------------------------------------------------------------


def test_identical_buffers_match_bit_for_bit():
    param = buf()
    ref = make_input(param, 0, 0)
    cmp = compare_buffer(param, 2, ref, ref.copy(), None)
    assert cmp.mismatch is None and cmp.bit_identical


def test_nan_poison_in_both_is_equal_but_unwritten_element_is_caught():
    param = buf("f32", (2, 4))
    ref = make_input(param, 0, 0)
    ref[5] = np.float32("nan")  # same poison in both: equal bits, not a difference
    got = ref.copy()
    assert compare_buffer(param, 0, ref, got, None).mismatch is None
    got[6] = poisoned(param)[6]  # the edit skipped an element the original wrote
    mismatch = compare_buffer(param, 0, ref, got, None, seed=7).mismatch
    assert mismatch is not None
    assert (mismatch.first_idx, mismatch.first_pos, mismatch.n_diff, mismatch.seed) == (6, (1, 2), 1, 7)
    assert mismatch.got == "nan" and mismatch.got_bits == "0xffffffff"
    assert "params[0] y: differs from the original" in mismatch.describe()


def test_signed_zero_is_a_bitwise_difference():
    param = buf("f32", (1,))
    mismatch = compare_buffer(
        param, 0, np.array([0.0], np.float32), np.array([-0.0], np.float32), None
    ).mismatch
    assert (
        mismatch is not None and mismatch.expected_bits == "0x00000000" and mismatch.got_bits == "0x80000000"
    )


def test_tolerance_accepts_small_differences_only():
    param = buf("f32", (3,))
    ref = np.array([1.0, 100.0, -2.0], np.float32)
    got = ref + np.array([1e-6, 1e-3, 0], np.float32)
    cmp = compare_buffer(param, 0, ref, got, Tolerance(atol=1e-5, rtol=1e-5))
    assert cmp.mismatch is None and not cmp.bit_identical and cmp.max_abs_diff > 0
    cmp = compare_buffer(param, 0, ref, got, Tolerance(atol=1e-5))
    assert cmp.mismatch is not None and cmp.mismatch.first_idx == 1


def test_tolerance_never_accepts_nan_for_a_number():
    param = buf("f32", (2,))
    ref = np.array([1.0, 2.0], np.float32)
    got = np.array([1.0, np.nan], np.float32)
    assert compare_buffer(param, 0, ref, got, Tolerance(atol=1e9, rtol=1e9, ulp=10**6)).mismatch is not None


def test_ulp_tolerance_for_bf16():
    dtype = DTYPES["bf16"]
    param = buf("bf16", (2,))
    ref = from_float32(dtype, np.array([1.0, -3.0], np.float32))
    got = ref.copy()
    got[1] += 2  # two bf16 ULPs away
    assert ulp_distance(dtype, ref, got).tolist() == [0, 2]
    assert compare_buffer(param, 0, ref, got, Tolerance(ulp=2)).mismatch is None
    assert compare_buffer(param, 0, ref, got, Tolerance(ulp=1)).mismatch is not None


def test_ulp_distance_across_zero():
    dtype = DTYPES["f32"]
    pos = np.array([1], np.uint32).view(np.float32)  # smallest positive subnormal
    neg = np.array([0x80000001], np.uint32).view(np.float32)
    assert ulp_distance(dtype, pos, neg).tolist() == [2]
    zero, negzero = np.array([0.0], np.float32), np.array([-0.0], np.float32)
    assert ulp_distance(dtype, zero, negzero).tolist() == [0]


def test_stray_write_into_an_input_is_reported_as_such():
    param = BufferParam("x", "f16", (4, 4), "in", Fill("normal"))
    original = make_input(param, 0, 0)
    after = original.copy()
    after[9] = np.float16(0)
    mismatch = compare_buffer(param, 0, original, after, None, kind="stray_write").mismatch
    assert mismatch is not None and mismatch.kind == "stray_write" and mismatch.first_pos == (2, 1)
    assert "input was overwritten" in mismatch.describe()


def test_integer_buffers_compare_exactly_and_with_atol():
    param = buf("i32", (3,))
    ref = np.array([1, 2, 3], np.int32)
    got = np.array([1, 2, 4], np.int32)
    assert compare_buffer(param, 0, ref, got, None).mismatch.got == "4"
    assert compare_buffer(param, 0, ref, got, Tolerance(atol=1)).mismatch is None


# -- dtypes --------------------------------------------------------------------------------------------------


def test_dtype_aliases():
    assert lookup_dtype("float32").name == "f32"
    assert lookup_dtype("fp32").name == "f32"
    assert lookup_dtype("bfloat16").name == "bf16"
    assert lookup_dtype("float8_e4m3fn").name == "fp8e4m3"
    assert lookup_dtype("f17") is None


def test_bf16_and_fp8_round_trip_exact_values():
    values = np.array([0.0, 1.0, -2.5, 0.15625, 448.0], np.float32)
    for name in ("bf16", "fp8e4m3"):
        dtype = DTYPES[name]
        assert to_float32(dtype, from_float32(dtype, values)).tolist() == values.tolist()
    e5m2 = DTYPES["fp8e5m2"]
    assert to_float32(e5m2, from_float32(e5m2, np.array([57344.0, -1.0], np.float32))).tolist() == [
        57344.0,
        -1.0,
    ]


# -- statistics ----------------------------------------------------------------------------------------------


def test_summary_median_and_iqr():
    summ = summarize([1.0, 2.0, 3.0, 4.0, 100.0])
    assert summ.median == 3.0 and summ.q1 == 2.0 and summ.q3 == 4.0 and summ.iqr == 2.0 and summ.n == 5


def test_bootstrap_ci_finds_a_real_speedup_and_contains_one_without_it():
    rng = np.random.default_rng(0)
    base = 1.0 + 0.004 * rng.standard_normal(40)
    noise = 0.004 * rng.standard_normal(40)
    faster = bootstrap_ratio_ci(base, base / 1.02 + noise)
    assert faster.low > 1.0 and 1.01 < faster.ratio < 1.03
    same = bootstrap_ratio_ci(base, 1.0 + 0.004 * rng.standard_normal(40))
    assert same.contains_one and same.width < 0.01


def test_bootstrap_ci_is_reproducible_and_narrows_with_more_rounds():
    rng = np.random.default_rng(1)
    a, b = 1 + 0.01 * rng.standard_normal(200), 1 + 0.01 * rng.standard_normal(200)
    first, again = bootstrap_ratio_ci(a[:20], b[:20]), bootstrap_ratio_ci(a[:20], b[:20])
    assert (first.low, first.high) == (again.low, again.high)
    assert bootstrap_ratio_ci(a, b).width < first.width


def test_bootstrap_keeps_rounds_paired():
    # A drift shared by both sides within a round cancels in the pairing: the CI stays tight.
    drift = np.linspace(1.0, 1.5, 40)
    ci = bootstrap_ratio_ci(drift * 1.0, drift / 1.01)
    assert ci.low > 1.0


def test_bootstrap_blocks_resample_within_each_block():
    # Block 1 is 10% slower for both sides: resampling within blocks keeps one block's share fixed, so the
    # interval stays as tight as the within-block noise.
    rng = np.random.default_rng(3)
    level = np.repeat([1.0, 1.1], 20)
    a = level * (1 + 0.002 * rng.standard_normal(40))
    b = level * (1 + 0.002 * rng.standard_normal(40))
    blocked = bootstrap_ratio_ci(a, b, blocks=np.repeat([0, 1], 20))
    assert blocked.contains_one and blocked.width < 0.01
    with pytest.raises(ValueError):
        bootstrap_ratio_ci(a, b, blocks=[0, 1])


def test_bootstrap_is_tight_under_a_falling_clock():
    # The H200 matmul case: the SM clock fell 1980 -> 1425 MHz while timing an identical copy. Round ratios
    # cancel the drift that both sides share; the two sides' medians alone spread over a few percent.
    rng = np.random.default_rng(5)
    clock = np.repeat(np.linspace(1.0, 1980 / 1425, 10), 4) * (1 + 0.02 * rng.standard_normal(40))
    a = clock * (1 + 0.002 * rng.standard_normal(40))
    b = clock * (1 + 0.002 * rng.standard_normal(40))
    ci = bootstrap_ratio_ci(a, b, blocks=np.repeat([0, 1, 2, 3], 10))
    assert ci.contains_one and ci.width < 0.004, ci
    # the ratio of the two sides' medians, resampled the same way, is several times wider
    idx = np.random.default_rng(0).integers(0, 40, size=(2000, 40))
    of_medians = np.median(a[idx], axis=1) / np.median(b[idx], axis=1)
    assert np.subtract(*np.quantile(of_medians, [0.975, 0.025])) > 3 * ci.width


def test_bootstrap_rejects_unpaired_input():
    with pytest.raises(ValueError):
        bootstrap_ratio_ci([1.0, 2.0], [1.0])


# -- argument packing and layering ---------------------------------------------------------------------------


def test_pack_args_lays_out_pointers_scalars_and_nulls():
    import struct

    from sass_lsp.gpu.device import pack_params
    from sass_lsp.gpu.session import pack_args, spec_param_sizes
    from sass_lsp.gpu.spec import parse_spec

    spec = parse_spec(
        'kernel = "k"\ngrid = [1]\nblock = [1]\n'
        '[[params]]\ndtype = "f32"\nshape = [4]\n'
        '[[params]]\nkind = "scalar"\ntype = "i32"\nvalue = -2\n'
        '[[params]]\nkind = "scalar"\ntype = "bf16"\nvalue = 1.5\n'
        '[[params]]\nkind = "scalar"\ntype = "f64"\nvalue = 0.25\n'
        '[[params]]\nkind = "null"\n'
    )
    args = pack_args(spec, {0: 0x7F00_0000_1000})
    assert args == [
        struct.pack("<Q", 0x7F00_0000_1000),
        struct.pack("<i", -2),
        struct.pack("<H", 0x3FC0),
        struct.pack("<d", 0.25),
        bytes(8),
    ]
    assert spec_param_sizes(spec) == [8, 4, 2, 8, 8]
    storage, argv = pack_params(args)
    for ptr, arg in zip(argv.tolist(), args, strict=True):
        offset = ptr - storage.ctypes.data
        assert offset % 16 == 0 and storage[offset : offset + len(arg)].tobytes() == arg


def test_importing_the_package_loads_no_cuda_driver():
    import subprocess
    import sys

    code = "import sys, sass_lsp.gpu; sys.exit(any(m.startswith(('cuda', 'torch')) for m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_input_cache_gives_make_input_s_bytes_read_only_and_evicts_the_oldest(tmp_path):
    a, b = buf(role="in"), buf(shape=(8,), role="in")
    cache = InputCache(max_bytes=a.nbytes + b.nbytes)
    x = cache.input(a, 3, 0)
    assert np.array_equal(x, make_input(a, 3, 0)) and not x.flags.writeable
    assert cache.input(a, 3, 0) is x and cache.hits == 1
    cache.input(b, 3, 1)
    cache.input(a, 4, 0)  # over the limit: (a, 3) is the least recently used
    assert cache.nbytes <= cache.max_bytes and cache.input(a, 3, 0) is not x and cache.hits == 1
    # a file fill is read afresh: the file may change between runs
    path = tmp_path / "x.npy"
    np.save(path, np.arange(16, dtype=np.float32))
    from_file = buf(role="in", fill=Fill("file", path=str(path)))
    cache.input(from_file, 0, 0)
    np.save(path, np.ones(16, dtype=np.float32))
    assert np.array_equal(cache.input(from_file, 0, 0), np.ones(16, dtype=np.float32))


@settings(max_examples=200, deadline=None)
@given(
    dtype=st.sampled_from(["f32", "f16", "u8", "i32"]),
    n=st.integers(1, 67),
    flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 255)), max_size=3),
    seed=st.integers(0, 2**16),
)
def test_identical_bytes_and_only_those_compare_bit_identical(dtype, n, flips, seed):
    """The byte-level fast path (eight bytes at a time where the size allows) says "identical" exactly
    when every byte is, whatever the size: a flipped byte anywhere, NaN payloads and -0.0 included."""
    param = BufferParam("y", dtype, (n,), "out", NORMAL)
    raw = np.random.default_rng(seed).integers(0, 256, n * DTYPES[dtype].size, dtype=np.uint8)
    got = raw.copy()
    for pos, xor in flips:
        got[pos % got.size] ^= xor
    storage = DTYPES[dtype].storage
    cmp = compare_buffer(param, 0, raw.view(storage), got.view(storage), None)
    assert cmp.bit_identical == (raw.tobytes() == got.tobytes())
    assert (cmp.mismatch is None) == cmp.bit_identical
