"""README stays true: its launch-spec example parses, and .ci/run runs README's test command."""

from __future__ import annotations

import re

from paths import ROOT

from sass_lsp.gpu.spec import BufferParam, NullParam, ScalarParam, parse_spec

README = (ROOT / "README.md").read_text()


def test_launch_spec_example_parses() -> None:
    example = re.search(r"```toml\n(.*?)```", README, re.S)
    assert example is not None
    spec = parse_spec(example.group(1))
    assert spec.kernel == "add_kernel"
    assert [type(p) for p in spec.params] == [BufferParam, ScalarParam, NullParam]


def test_ci_runs_the_readme_test_command() -> None:
    blocks = re.findall(r"```sh\n(.*?)\n```", README, re.S)
    assert len(blocks) >= 2 and "sass-lsp demo" in blocks[0]
    assert blocks[1] in (ROOT / ".ci" / "run").read_text()
