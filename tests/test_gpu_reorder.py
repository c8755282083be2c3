"""Reorderings on the GPU: the reorder game's states (what suggestions and ``optimize`` hand out) run bit for
bit like the ptxas original. Each corpus kernel: the policy's suggestions (when the bundled checkpoint is
present) and random legal reorderings, assembled by our assembler and verified against the original cubin on
fresh random inputs in the isolated worker. Needs a GPU.
"""

from __future__ import annotations

import random

import pytest

from sass_lsp.cuasm import assemble_cuasm, write_cuasm
from sass_lsp.gpu import GpuRunner
from sass_lsp.gpu.corpus import corpus_names, has_gpu, load_kernel
from sass_lsp.policy.checkpoint import default_policy_path
from sass_lsp.schedule.search import apply_edits, random_candidates, take

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not has_gpu(), reason="no CUDA GPU"),
]
RANDOM_PER_KERNEL = 4
SEEDS = [11, 12, 13]


@pytest.fixture(scope="module")
def runner():
    with GpuRunner(timeout_s=120) as r:
        yield r


def _candidates(text: str, arch: str, kernel: str) -> list[tuple[str, str]]:
    out = [
        (c.source, c.text)
        for c in take(random_candidates(text, arch, random.Random(7), kernel=kernel), RANDOM_PER_KERNEL)
    ]
    if (default_policy_path() / "config.json").exists():
        from sass_lsp.policy.model import load_policy
        from sass_lsp.policy.suggest import suggest

        net = load_policy(default_policy_path())
        for s in suggest(text, arch, net=net, top=3, kernel=kernel):
            out.append(("policy", apply_edits(text, [(a, b, list(n)) for a, b, n in s.edits])))
    return out


@pytest.mark.parametrize("name", corpus_names())
def test_reorderings_match_the_original_bit_for_bit(name: str, runner: GpuRunner) -> None:
    cubin, spec = load_kernel(name)
    text = write_cuasm(cubin, source_name=name)
    results = []
    for source, cand in _candidates(text, "sm_90", spec.kernel):
        assert cand != text
        edit = assemble_cuasm(cand, source_name=f"{name} ({source})")
        reply = runner.verify(cubin, edit, spec, SEEDS)
        assert reply.ok, reply.error
        results.append((source, reply.result["status"]))
    print(name, results)
    assert results and all(status == "match" for _, status in results), results
