"""benchmarks/fig_network_sgd_logreg.py (Cyffers & Bellet Fig. 2, four panels) runs end to end with --quick, and
the noise it trains with is the library's calibration (network, local, central) and the paper's closed form for
Centralized DP-SGD (Bassily et al. 2014, as in the authors' script)."""

import importlib.util
import json
import math
from pathlib import Path

import numpy as np

from amplify_jax import network as N

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("fig_network_sgd_logreg",
                                                  ROOT / "benchmarks" / "fig_network_sgd_logreg.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_fig2_quick_four_panels_with_the_library_sigmas(tmp_path):
    mod = _script()
    png, data = tmp_path / "f2.png", tmp_path / "f2.json"
    mod.main(["--quick", "--output", str(png), "--data", str(data)])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    res = json.loads(data.read_text())
    n, T, delta = mod.QUICK["n"], mod.QUICK["T"], 1e-6
    blocks = T // mod.QUICK["every"]
    for eps in (10.0, 1.0):
        r = res[str(eps)]
        # the paper's Centralized DP-SGD: 16 L sqrt(T ln(2/delta) ln(1.25 T/(delta n))) / (n eps), L = 1
        ref = 16.0 * math.sqrt(T * math.log(2 / delta) * math.log(1.25 * T / (delta * n))) / (n * eps)
        assert r["sigma"]["central_paper"] == ref
        for key in ("local", "network", "central", "central_bassily", "central_paper", "none"):
            cv = r["curves"][key]
            for k in ("acc_mean", "acc_std", "obj_mean", "obj_std"):  # both panels of the column
                assert len(cv[k]) == blocks and np.all(np.isfinite(cv[k]))
            assert np.all(np.asarray(cv["obj_mean"]) > 0)
        assert r["curves"]["none"]["acc_mean"][-1] > 0.75  # non-private SGD learns the synthetic task
    # the network and central (RDP) sigmas are the library's calibrations (same batched call: compiled once)
    tu = math.ceil(1.2 * T / n)
    for setting, kw in (("network", dict(contributions=tu)), ("central", {})):
        inv = N.calibrate_sgd_sigma(target_epsilon=np.array([10.0, 1.0]), delta=delta, n=n, steps=T,
                                    setting=setting, **kw)
        np.testing.assert_array_equal([res["10.0"]["sigma"][setting], res["1.0"]["sigma"][setting]],
                                      np.asarray(inv.sigma))
        assert np.all(np.asarray(inv.epsilon) <= [10.0, 1.0])
