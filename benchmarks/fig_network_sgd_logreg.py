"""Illustration of Figure 2 of Cyffers & Bellet (AISTATS 2022) on SYNTHETIC data (not the paper's UCI Housing).

The paper trains a logistic regression on a binarised UCI Housing dataset split over n = 2000 users (8 points
each), T = 20000 steps of SGD where one user's whole local dataset is the mini-batch, and compares Local,
Network and Centralized DP-SGD at eps in {1, 10}, delta = 1e-6.  The UCI data cannot be downloaded here, so
this script generates a synthetic stand-in with the same shape: 13 standard-normal features, labels from a
random linear model with 10% label noise, standardised features, every point normalised to unit L2 norm (the
logistic loss is then 1-Lipschitz), 80/20 train/test split, 2000 users x 8 training points.

Noise: sigma from ``amplify_jax.network.calibrate_sgd_sigma`` for each setting (network: Lemma 1 + Remark 5;
local: Gaussian RDP over the user's contributions; central: WBK19 RDP and the Bassily-style route), with a
per-user budget T_u = ceil(1.2 T/n) = 12 as in Sec. 5.2: a user asked to contribute beyond its budget forwards
the token without its gradient (network DP-SGD still adds its noise, since the others' guarantees rely on it).
The step size is tuned per method on a grid in [1e-4, 2] (best final training objective, mean over runs);
5 runs per configuration (the paper uses 20).  Curves: test accuracy, mean +- std over runs.

Run: python benchmarks/fig_network_sgd_logreg.py  ->  figures/network_fig2_synthetic.png
"""

from __future__ import annotations

import math
import os
import time

import matplotlib

matplotlib.use("Agg")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from amplify_jax import network as N  # noqa: E402
from amplify_jax.numerics import x64_scope  # noqa: E402

n, per_user, d, T, delta = 2000, 8, 13, 20_000, 1e-6
TU = math.ceil(1.2 * T / n)
RUNS = 5
ETAS = np.logspace(-4, np.log10(2.0), 9)
EVERY = 250


def make_data(seed=0):
    rng = np.random.default_rng(seed)
    total = int(n * per_user / 0.8)
    X = rng.standard_normal((total, d))
    w_true = rng.standard_normal(d)
    y = np.sign(X @ w_true + 1e-12)
    flip = rng.random(total) < 0.1
    y[flip] *= -1
    X = (X - X.mean(0)) / X.std(0)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    ntr = n * per_user
    return X[:ntr].reshape(n, per_user, d), y[:ntr].reshape(n, per_user), X[ntr:], y[ntr:]


def loss_grad(w, X, y):
    """Gradient of the mean logistic loss ln(1 + exp(-y w.x)) over one user's points (norm <= 1)."""
    m = y * (X @ w)
    return -(X * (y * jax.nn.sigmoid(-m))[:, None]).mean(0)


def run_all(Xu, yu, Xte, yte, sigmas, budgeted, noise_when_skipping, key):
    """vmapped over (method, eta, run): returns test accuracy and train objective every EVERY steps."""
    Xall = Xu.reshape(-1, d)
    yall = yu.reshape(-1)

    def one(sigma, eta, budget_on, noise_skip, k):
        def step(carry, kt):
            w, counts = carry
            k1, k2 = jax.random.split(kt)
            u = jax.random.randint(k1, (), 0, n)
            allowed = jnp.where(budget_on, counts[u] < TU, True)
            g = loss_grad(w, Xu[u], yu[u])
            z = sigma * jax.random.normal(k2, (d,))
            upd = jnp.where(allowed, g + z, jnp.where(noise_skip, z, 0.0))
            w = w - eta * upd
            return (w, counts.at[u].add(allowed.astype(jnp.int32))), None

        def block(carry, kb):
            carry, _ = jax.lax.scan(step, carry, jax.random.split(kb, EVERY))
            w = carry[0]
            acc = jnp.mean(jnp.sign(Xte @ w) == yte)
            obj = jnp.mean(jnp.logaddexp(0.0, -yall * (Xall @ w)))
            return carry, (acc, obj)

        init = (jnp.zeros(d), jnp.zeros(n, jnp.int32))
        _, (acc, obj) = jax.lax.scan(block, init, jax.random.split(k, T // EVERY))
        return acc, obj

    M, E, R = len(sigmas), len(ETAS), RUNS
    S = jnp.asarray(sigmas)[:, None, None] * jnp.ones((M, E, R))
    Et = jnp.asarray(ETAS)[None, :, None] * jnp.ones((M, E, R))
    B = jnp.asarray(budgeted)[:, None, None] & jnp.ones((M, E, R), bool)
    NS = jnp.asarray(noise_when_skipping)[:, None, None] & jnp.ones((M, E, R), bool)
    keys = jax.random.split(key, M * E * R).reshape(M, E, R, -1)
    f = jax.jit(jax.vmap(jax.vmap(jax.vmap(one))))
    return f(S, Et, B, NS, keys)


def main():
    t0 = time.perf_counter()
    Xu, yu, Xte, yte = make_data()
    methods = ["Local DP-SGD", "Network DP-SGD", "Central DP-SGD (RDP)", "Central DP-SGD (Bassily route)",
               "non-private"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
    for ax, eps in zip(axes, (10.0, 1.0)):
        sig = {}
        for setting in ("local", "network", "central", "central_bassily"):
            kw = dict(contributions=TU) if setting in ("local", "network") else {}
            inv = N.calibrate_sgd_sigma(target_epsilon=eps, delta=delta, n=n, steps=T, setting=setting, **kw)
            assert int(inv.status) == 0
            sig[setting] = float(inv.sigma)
        sigmas = [sig["local"], sig["network"], sig["central"], sig["central_bassily"], 0.0]
        print(f"eps={eps:g}: sigma " + ", ".join(f"{m} {s:.3g}" for m, s in zip(methods, sigmas)), flush=True)
        with x64_scope():
            acc, obj = run_all(jnp.asarray(Xu), jnp.asarray(yu), jnp.asarray(Xte), jnp.asarray(yte), sigmas,
                               [True, True, False, False, False], [False, True, False, False, False],
                               jax.random.PRNGKey(int(eps)))
        acc, obj = np.asarray(acc), np.asarray(obj)  # (method, eta, run, block)
        final = np.nan_to_num(obj[..., -1].mean(-1), nan=np.inf)
        steps = EVERY * np.arange(1, T // EVERY + 1)
        for i, (m, color) in enumerate(zip(methods, ["b", "g", "r", "tab:red", "k"])):
            j = int(np.argmin(final[i]))
            a = acc[i, j]
            ls = "--" if "Bassily" in m else (":" if m == "non-private" else "-")
            ax.plot(steps, a.mean(0), color=color, ls=ls, label=f"{m} (eta={ETAS[j]:.2g})")
            ax.fill_between(steps, a.mean(0) - a.std(0), a.mean(0) + a.std(0), color=color, alpha=0.15)
            print(f"  {m}: best eta {ETAS[j]:.3g}, final test accuracy {a[:, -1].mean():.3f} +- "
                  f"{a[:, -1].std():.3f}, train objective {obj[i, j, :, -1].mean():.4f}", flush=True)
        ax.set_title(rf"SYNTHETIC data, $\varepsilon={eps:g}$, $\delta=10^{{-6}}$, n={n}, T={T}", fontsize=9)
        ax.set_xlabel("iteration")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    axes[0].set_ylabel("test accuracy")
    fig.suptitle("Fig. 2 illustration on synthetic data (not UCI Housing)", fontsize=10)
    fig.tight_layout()
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "figures", "network_fig2_synthetic.png")
    fig.savefig(out, dpi=130)
    print("wrote", os.path.normpath(out), f"({time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
