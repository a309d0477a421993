"""The figure scripts of Ladjel et al. Figs. 8 and 9 (benchmarks/fig_traffic_fig8.py, fig_traffic_fig9.py) run end
to end with --quick, and the privacy they plot is the library's: Thm 1 (plan_privacy) over Thm 4
(scrambler_epsilon) at the script's cluster parameters.

The scripts and the direct evaluation run in subprocesses that share the run's JAX compilation cache
(conftest.py): the --quick grids of both scripts are chosen to need one compiled kernel, so only the first run
compiles it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from amplify_jax import traffic as tr

ROOT = Path(__file__).resolve().parents[1]

# scrambler_epsilon on the batch of a figure's --data JSON, in the script's order (same shapes: a cache hit)
_DIRECT = """
import json, sys
import numpy as np
from amplify_jax import traffic as tr
cvs = json.load(open(sys.argv[1]))
cat = lambda k: np.concatenate([np.asarray(cv[k], float) for cv in cvs])
dl = np.concatenate([np.full(len(cv["x"]), cv["delta_i"]) for cv in cvs])
r = tr.scrambler_epsilon(dl, targets=20, n=cat("n_cluster"), sampling=cat("sampling"), dummies=cat("dummies"),
                         method="exact")
print(json.dumps(np.asarray(r.epsilon).tolist()))
"""


# two figure scripts end to end (~25 s of CPU): in the slow set, to keep the default suite under 15 minutes on 2
# cores (python -m pytest -m slow tests/test_figures_traffic.py); the plans' numbers are tested in test_traffic*.py
@pytest.mark.slow
def test_fig8_fig9_quick_run_and_plot_the_library_numbers(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}

    def run(*args):
        out = subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True, env=env, cwd=ROOT,
                             timeout=300)
        assert out.returncode == 0, out.stderr[-3000:]
        return out.stdout

    for fig in (8, 9):
        png, data = tmp_path / f"fig{fig}.png", tmp_path / f"fig{fig}.json"
        run(ROOT / "benchmarks" / f"fig_traffic_fig{fig}.py", "--quick", "--output", png, "--data", data)
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000

    cvs = json.loads((tmp_path / "fig9.json").read_text())
    direct = np.asarray(json.loads(run("-c", _DIRECT, tmp_path / "fig9.json")))
    # Fig. 9, G = 2 grouping sets, sigma = 0.1, d = 100 (the middle of the --quick d grid)
    i = next(k for k, cv in enumerate(cvs) if cv["G"] == 2 and cv["sampling"][0] == 0.1)
    cv, j = cvs[i], 1
    assert cv["dummies"][j] == 100
    eps_i = direct[i * len(cv["x"]) + j]
    plan = tr.plan_privacy(tr.aggregate_plan(2), epsilon=eps_i, delta=1e-4 / 2)
    assert 0 < eps_i < 10
    np.testing.assert_allclose(cv["eps"][j], float(plan.epsilon), rtol=1e-12)
    assert np.max(cv["delta"]) <= 1e-4 * (1 + 1e-12)  # the plan's delta: G delta_i, rounded up by a few ulps
    # the x axis: messages added over G = 2 grouping sets, S = 10k tuples each (scrambler_costs)
    c = tr.scrambler_costs(sources=10_000, targets=20, n=20, sampling=0.1, dummies=100)
    np.testing.assert_allclose(cv["x"][j], 2 * float(c.extra_messages) / 1e3, rtol=1e-12)
    assert cv["n_cluster"][j] == float(c.sources // c.scramblers)
