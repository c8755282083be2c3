"""The learned performance model: trains on a tiny subset in seconds, predicts finite values with positive
uncertainty, round-trips through its checkpoint, and the leave-one-kernel-out split never trains on the
kernel it scores."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

from sass_lsp.perf import dataset as ds  # noqa: E402
from sass_lsp.perf import model as pm  # noqa: E402
from sass_lsp.perf.train import Table, campaign_table, featurize, train  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tiny() -> Table:
    """40 rows of each of three kernels of the package's campaign file, featurized."""
    camp = ds.load(ds.DATA_DIR / "reorder_eval_h200.npz")
    rng = np.random.default_rng(0)
    keep = np.concatenate(
        [
            rng.choice(np.flatnonzero(camp.kernel == camp.kernels.index(k)), 40, replace=False)
            for k in ("sgemm_tiled", "triton_matmul", "stencil2d")
        ]
    )
    sub = ds.Campaign(
        **{**camp.__dict__, **_rows(camp, np.sort(keep))}  # type: ignore[arg-type]
    )
    return campaign_table(sub, featurize(sub))


def _rows(camp: ds.Campaign, idx: np.ndarray) -> dict:
    """``camp``'s per-row columns restricted to rows ``idx`` (the moved lists re-packed)."""
    cols = ("kernel", "log", "method", "gpu", "clock_sm_mhz", "speedup", "low", "high", "key", "reachable")
    out = {c: getattr(camp, c)[idx] for c in cols}
    spans = [(camp.moved_ptr[i], camp.moved_ptr[i + 1]) for i in idx]
    out["moved_slot"] = np.concatenate([camp.moved_slot[a:b] for a, b in spans])
    out["moved_node"] = np.concatenate([camp.moved_node[a:b] for a, b in spans])
    out["moved_ptr"] = np.concatenate([[0], np.cumsum([b - a for a, b in spans])])
    return out


def test_trains_in_seconds_and_predicts_finite_with_positive_uncertainty(tiny: Table, tmp_path: Path) -> None:
    model = train(tiny, epochs=3, members=2)
    mu, sd = model.predict(tiny.x)
    assert mu.shape == sd.shape == (len(tiny.y),)
    assert np.isfinite(mu).all() and (sd > 0).all() and np.isfinite(sd).all()
    speedup, low, high = model.interval(tiny.x[:5])
    assert (low < speedup).all() and (speedup < high).all()
    pm.save(model, tmp_path / "m")
    back = pm.load(tmp_path / "m")
    mu2, sd2 = back.predict(tiny.x)
    assert np.allclose(mu, mu2) and np.allclose(sd, sd2)
    assert back.cfg.meta["kernels"] == ["sgemm_tiled", "stencil2d", "triton_matmul"]


def test_a_checkpoint_of_other_features_is_refused(tiny: Table, tmp_path: Path) -> None:
    pm.save(train(tiny, epochs=1, members=1), tmp_path / "m")
    cfg = (tmp_path / "m" / pm.CONFIG).read_text().replace('"log_nodes"', '"log_nodes_v0"')
    (tmp_path / "m" / pm.CONFIG).write_text(cfg)
    with pytest.raises(ValueError, match="other features"):
        pm.load(tmp_path / "m")


def test_leave_one_kernel_out_never_trains_on_the_held_out_kernel(tiny: Table, monkeypatch) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import perf_model_eval as ev
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    seen: list[tuple[set[str], str]] = []
    real_train = ev.train

    def spy(t: Table, **kw):
        seen.append(set(t.kernel.tolist()))
        return real_train(t, epochs=1, members=1)

    monkeypatch.setattr(ev, "train", spy)
    monkeypatch.setattr(ev, "table", lambda *a, **k: tiny)
    monkeypatch.setattr(ev.ds, "load_all", lambda *a, **k: [])
    assert ev.main(["--draws", "5", "--static", "0"]) == 0
    assert seen == [
        {"stencil2d", "triton_matmul"},
        {"sgemm_tiled", "triton_matmul"},
        {"sgemm_tiled", "stencil2d"},
    ]


def test_packaged_model_ranks_texts_of_a_measured_kernel() -> None:
    """The packaged checkpoint, given schedules as .cuasm texts: finite predictions with a 90% interval
    around them; ptxas's own order predicted near 1; a text that is no reordering gets None."""
    from sass_lsp.perf.predict import Predictor

    camp = ds.load(ds.DATA_DIR / "reorder_run18_h200.npz")
    rows = [int(i) for i in np.flatnonzero(camp.reachable)[:4]]
    p = Predictor.of_text(camp.originals[0], "sm_90", camp.functions[0])
    other = camp.originals[0].replace("FFMA", "FMUL", 1)
    got = p.predict([camp.text(i) for i in rows] + [camp.originals[0], other])
    assert got[-1] is None
    for g in got[:-1]:
        assert g is not None and 0 < g.low < g.speedup < g.high and np.isfinite(g.high)
    assert abs(got[-2].speedup - 1) < 0.05  # type: ignore[union-attr]
