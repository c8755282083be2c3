"""Launch specs: parsing, error paths, the TOML writer, and conversion of the real corpus JSONs."""

from __future__ import annotations

import json
import tomllib

import pytest

from sass_lsp.gpu.corpus import corpus_dir, corpus_names
from sass_lsp.gpu.from_json import spec_from_json
from sass_lsp.gpu.kparams import kernel_names, read_kparams
from sass_lsp.gpu.spec import (
    BufferParam,
    Fill,
    LaunchSpec,
    NullParam,
    ScalarParam,
    SpecError,
    Tolerance,
    load_spec,
    parse_spec,
    write_spec,
)

VALID = """
kernel = "add_kernel"
name = "add"
grid = [16384]
block = [128, 1, 1]
cluster = [2, 1, 1]
shared_bytes = 0
nondeterministic = true
tolerance = { atol = 1e-6, rtol = 1e-5 }

[[params]]
name = "x"
dtype = "float32"
shape = [4, 8]
fill = { kind = "normal", mean = 1.0, std = 0.5 }

[[params]]
name = "idx"
dtype = "i32"
bytes = 64
fill = { kind = "int", low = 0, high = 32 }

[[params]]
name = "y"
dtype = "bf16"
shape = [32]
role = "out"
tolerance = { ulp = 2 }

[[params]]
name = "acc"
dtype = "f16"
shape = [32]
role = "inout"
fill = "zeros"

[[params]]
kind = "scalar"
type = "i32"
value = 32

[[params]]
kind = "scalar"
type = "fp32"
value = 1e-6

[[params]]
kind = "null"
"""


def test_valid_spec_parses_into_frozen_dataclasses():
    spec = parse_spec(VALID)
    assert spec.kernel == "add_kernel" and spec.label == "add"
    assert spec.grid == (16384, 1, 1) and spec.block == (128, 1, 1) and spec.cluster == (2, 1, 1)
    assert spec.tolerance == Tolerance(atol=1e-6, rtol=1e-5)
    x, idx, y, acc, n, eps, null = spec.params
    assert x == BufferParam("x", "f32", (4, 8), "in", Fill("normal", mean=1.0, std=0.5))
    assert idx.shape == (16,) and idx.fill == Fill("int", low=0, high=32)
    assert y.role == "out" and y.dtype == "bf16" and spec.tolerance_for(y) == Tolerance(ulp=2)
    assert spec.tolerance_for(x) == spec.tolerance
    assert acc.fill.kind == "zeros"
    assert n == ScalarParam("params[4]", "i32", 32)
    assert eps == ScalarParam("params[5]", "f32", 1e-6)
    assert null == NullParam("params[6]")
    with pytest.raises(AttributeError):
        spec.kernel = "other"  # type: ignore[misc]


def test_writer_round_trips():
    spec = parse_spec(VALID)
    text = write_spec(spec)
    tomllib.loads(text)  # valid TOML for any reader
    assert parse_spec(text) == spec


def test_file_fill_resolves_against_the_spec_directory(tmp_path):
    np = pytest.importorskip("numpy")
    np.save(tmp_path / "x.npy", np.arange(8, dtype=np.float32))
    path = tmp_path / "k.launch.toml"
    path.write_text(
        'kernel = "k"\ngrid = [1]\nblock = [1]\n[[params]]\ndtype = "f32"\nshape = [8]\n'
        'fill = { kind = "file", path = "x.npy" }\n'
    )
    spec = load_spec(path)
    assert spec.params[0].fill.path == str(tmp_path / "x.npy")


H = 'kernel = "k"\ngrid = [1]\nblock = [1]\n'
P = H + "[[params]]\n"

BAD = [
    (
        P + 'dtype = "f17"\nshape = [4]',
        "params[0].dtype: unknown dtype 'f17'",
    ),
    ("grid = [1]\nblock = [1]", "kernel: missing"),
    ('kernel = "k"\nblock = [1]', "grid: missing"),
    ('kernel = "k"\ngrid = [0]\nblock = [1]', "grid[0]: must be a positive integer"),
    ('kernel = "k"\ngrid = [1]\nblock = [64, 32]', "block: 2048 threads per block"),
    (H + "tolerence = {}", "tolerence: unknown key"),
    (
        P + 'dtype = "f32"',
        "params[0]: give exactly one of shape",
    ),
    (
        P + 'dtype = "f32"\nbytes = 6',
        "params[0].bytes: 6 is not a multiple",
    ),
    (
        P + 'dtype = "f32"\nshape = [4]\nrole = "io"',
        "params[0].role: unknown role",
    ),
    (
        P + 'dtype = "i32"\nshape = [4]',
        "params[0].fill: required for i32",
    ),
    (
        P + 'dtype = "f32"\nshape = [4]\nrole = "out"\nfill = "zeros"',
        "params[0].fill: outputs are poisoned",
    ),
    (
        P + 'dtype = "i32"\nshape = [4]\nfill = "normal"',
        "params[0].fill.kind",
    ),
    (
        P + 'dtype = "f32"\nshape = [4]\nfill = { kind = "uniform", low = 2, high = 1 }',
        "params[0].fill: low must be below high",
    ),
    (
        P + 'dtype = "f32"\nshape = [4]\nfill = { kind = "file", path = "x.bin" }',
        "params[0].fill.path",
    ),
    (
        P + 'kind = "scalar"\ntype = "i8"\nvalue = 300',
        "params[0].value: 300 does not fit",
    ),
    (
        P + 'kind = "scalar"\ntype = "i32"\nvalue = 1.5',
        "params[0].value: must be an integer",
    ),
    (
        P + 'kind = "scalar"\ntype = "q8"\nvalue = 1',
        "params[0].type: unknown scalar type",
    ),
    (P + 'kind = "pointer"', "params[0].kind: unknown kind"),
    (
        P + 'dtype = "i32"\nshape = [4]\nfill = "zeros"\ntolerance = { ulp = 1 }',
        "params[0].tolerance.ulp",
    ),
    (H + "tolerance = { atol = -1 }", "tolerance.atol"),
    (
        H + "nondeterministic = true",
        "tolerance: a nondeterministic kernel needs",
    ),
    (H + "shared_bytes = -4", "shared_bytes"),
    ("kernel = ", "not valid TOML"),
]


@pytest.mark.parametrize(("text", "expected"), BAD, ids=[b[1][:40] for b in BAD])
def test_invalid_specs_name_the_field(text, expected):
    with pytest.raises(SpecError) as info:
        parse_spec(text)
    assert expected in str(info.value)


def test_load_spec_reports_missing_file(tmp_path):
    with pytest.raises(SpecError, match="cannot read"):
        load_spec(tmp_path / "nope.launch.toml")


# -- the real corpus -----------------------------------------------------------------------------------------

NAMES = corpus_names() or ["(none)"]


def test_corpus_has_the_eleven_kernels():
    """Eight from tools/make_triton_corpus.py, three from tools/make_compute_corpus.py."""
    assert len(corpus_names()) == 11


@pytest.mark.parametrize("name", NAMES)
def test_spec_from_json_matches_kparam_info(name):
    root = corpus_dir()
    cubin = (root / f"{name}.cubin").read_bytes()
    raw = json.loads((root / f"{name}.json").read_text())
    spec = spec_from_json(raw, cubin)
    kparams = read_kparams(cubin, spec.kernel)
    assert spec.kernel in kernel_names(cubin)
    assert len(spec.params) == len(kparams)
    sizes = [
        8 if not isinstance(p, ScalarParam) else (4 if p.type in ("i32", "f32") else 8) for p in spec.params
    ]
    assert sizes == [kp.size for kp in kparams]
    # Triton 3.6's two trailing scratch pointers are passed as null.
    assert all(isinstance(p, NullParam) for p in spec.params[-2:])
    # Every JSON tensor becomes a buffer with the same shape, dtype and role.
    tensors = [a for a in raw["args"] if a["kind"] == "tensor"]
    buffers = [p for p in spec.params if isinstance(p, BufferParam)]
    assert [(tuple(t["shape"]), t["role"]) for t in tensors] == [(b.shape, b.role) for b in buffers]
    assert spec.grid == tuple(raw["grid"]) and spec.block == tuple(raw["block"])
    assert spec.shared_bytes == raw["shared_bytes"]
    assert parse_spec(write_spec(spec)) == spec


def test_triton_drops_integer_arguments_equal_to_one():
    root = corpus_dir()
    cubin = (root / "triton_matmul.cubin").read_bytes()
    spec = spec_from_json((root / "triton_matmul.json").read_text(), cubin)
    assert spec.extra["specialised_away"] == [7, 9, 11]
    assert [p.value for p in spec.params if isinstance(p, ScalarParam)] == [4096] * 6


def test_spec_from_json_rejects_a_wrong_kernel_name():
    root = corpus_dir()
    cubin = (root / "triton_add.cubin").read_bytes()
    raw = json.loads((root / "triton_add.json").read_text())
    raw["kernel"] = "nope"
    with pytest.raises(SpecError, match="kernel: 'nope' is not in the cubin"):
        spec_from_json(raw, cubin)
    raw["kernel"] = "add_kernel"
    raw["args"] = raw["args"][:2]
    with pytest.raises(SpecError, match="params: cannot match"):
        spec_from_json(raw, cubin)


def test_spec_is_hashable_and_comparable():
    spec = parse_spec(VALID)
    assert hash(spec) == hash(parse_spec(VALID))
    assert isinstance(spec, LaunchSpec)
