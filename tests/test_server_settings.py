"""Settings: the server's Settings dataclass and the VS Code client's package.json agree (names, defaults,
docs), and a captured-style initializationOptions payload is structured without warnings."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from sass_lsp.ide.settings import Settings, settings_doc, settings_from_raw

PACKAGE = Path(__file__).parent.parent / "vscode-client" / "package.json"
CLIENT_ONLY = {"pythonPath", "serverArgs", "trace.server"}


@pytest.mark.skipif(not PACKAGE.exists(), reason="no vscode-client in this checkout")
def test_settings_match_client_package_json() -> None:
    props = json.loads(PACKAGE.read_text())["contributes"]["configuration"]["properties"]
    client = {
        key.removeprefix("sass-lsp."): spec for key, spec in props.items() if key.startswith("sass-lsp.")
    }
    server = {f.name: f for f in dataclasses.fields(Settings)}
    assert set(client) - CLIENT_ONLY == set(server)
    defaults = Settings()
    for name in server:
        default = getattr(defaults, name)
        expected = client[name].get("default")
        if default is None:
            assert expected in ("", None), name  # the client sends "" for "unset"
        else:
            assert expected == default, name
    assert all(settings_doc()[name] for name in server)


def test_client_payload_structures_cleanly() -> None:
    payload = {
        "arch": "",
        "gpuDevice": 0,
        "policyModelPath": "",
        "hazardSeverities": {},
        "diagnosticsDebounceMs": 150,
        "encoderDiagnostics": True,
        "hazardDiagnostics": True,
        "inlayStallHints": False,
        "formatRenumberAddresses": True,
    }
    settings, warnings = settings_from_raw(payload)
    assert warnings == [] and settings == Settings()


def test_optimize_uniform_share_is_a_share() -> None:
    settings, warnings = settings_from_raw({"optimizeUniformShare": 0.25})
    assert warnings == [] and settings.optimizeUniformShare == 0.25
    for bad in (1.5, -0.1, True, "half"):
        settings, warnings = settings_from_raw({"optimizeUniformShare": bad})
        assert settings.optimizeUniformShare == Settings().optimizeUniformShare, bad
        assert (
            len(warnings) == 1 and "optimizeUniformShare" in warnings[0] and "between 0 and 1" in warnings[0]
        )


def test_removed_gpu_timing_setting_says_what_replaced_it() -> None:
    settings, warnings = settings_from_raw({"gpuTiming": True, "gpuDevice": 1})
    assert settings.gpuDevice == 1 and not hasattr(settings, "gpuTiming")
    assert len(warnings) == 1 and "'gpuTiming' no longer exists" in warnings[0]
    assert "launch.toml" in warnings[0]
