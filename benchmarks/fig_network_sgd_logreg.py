"""Figure 2 of Cyffers & Bellet, "Privacy Amplification by Decentralization" (AISTATS 2022), all four panels,
on SYNTHETIC data: training objective (log scale) and test accuracy of Local, Network and Centralized DP-SGD at
eps = 10 and eps = 1, delta = 1e-6.

The paper (Sec. 5.2) trains a logistic regression (no intercept) on a binarised housing dataset (its footnote:
OpenML 823, "houses", 20640 points with 8 features) split 80/20 into train and test, the training set over
n = 2000 users with 8 points each; T = 20000 steps of SGD where the whole local dataset of one user drawn
uniformly is the mini-batch, features standardised and every point normalised to unit L2 norm (the logistic
loss is then L = 1-Lipschitz).  That data set cannot be downloaded here and none with its shape ships inside an
installed package, so a synthetic stand-in with the same shape is generated: 20000 points, 8 standard-normal
features, labels from a random linear model with 10% of them flipped, standardised, unit norm, 80/20 split,
2000 users x 8 training points.

Noise (per-step Gaussian std sigma, for a target (eps, 1e-6) over the whole run):
* Local DP-SGD and Network DP-SGD: ``amplify_jax.network.calibrate_sgd_sigma`` (local: Gaussian RDP of
  every contribution, sensitivity 2L; network: Lemma 1 + Remark 5), with a per-user budget
  T_u = ceil(1.2 T / n) = 12 as in Sec. 5.2: a user asked to contribute beyond it forwards the token without its
  gradient (network DP-SGD still adds its noise, since the others' guarantees rely on it).
* Centralized DP-SGD as the paper drew it (red, solid): the closed form of Bassily, Smith, Thakurta 2014
  that the authors' script uses, sigma = 16 L sqrt(T ln(2/delta) ln(1.25 T / (delta n))) / (n eps)
  (computed here; L = 1 as in the paper's text, where the authors' script defaults to L = 0.4).
* Centralized DP-SGD under this library's accounting of the same algorithm (dotted red: RDP of the
  subsampled Gaussian, ``setting="central"``; dashed dark red: our derivation along Bassily et al.'s route,
  ``setting="central_bassily"``): the same algorithm, proven private with less noise.
* non-private SGD (black, dotted).
The sigmas are printed; with the full parameters (L = 1): eps = 10: local 3.95, network 2.35, the paper's
central 1.74, central RDP 0.93, central (our Bassily route) 3.37; eps = 1: local 31.4, network 15.6, the paper's
central 17.4, central RDP 1.97, central (our Bassily route) 7.71.  The paper's central sigma is sound: it is
above the RDP calibration of the same algorithm at both budgets (so that algorithm is (eps, 1e-6)-DP with it),
only looser.  figures/README.md compares these with the authors' own calibration.

Step size eta tuned per method on a log grid in [1e-4, 2] (the paper's range; best final training objective,
mean over runs); 5 runs per configuration (the paper uses 20).  Curves: mean over runs, band +- one std.
Objective: the mean logistic loss over the training set.

    python benchmarks/fig_network_sgd_logreg.py  ->  figures/network_fig2.png
    python benchmarks/fig_network_sgd_logreg.py --quick --output /tmp/f2.png [--data /tmp/f2.json]
        (n = 200 users, T = 2000 steps, 3 step sizes, 2 runs: for tests; --data writes sigmas and curves as JSON)
    python benchmarks/fig_network_sgd_logreg.py --replot /tmp/f2.json   (redraw from --data, no training)

Run time (full): about 70 s wall, 38 s of CPU, on the shared 2-core machine at load ~11; --quick: about 20 s of
CPU with an empty compilation cache (compiling the four calibrations and the training loop is most of it), a
few seconds with a warm one.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np
import jax
import jax.numpy as jnp

from amplify_jax import network as N
from amplify_jax.numerics import x64_scope
from amplify_jax.plotting import figure, figure_path, save

OUT = figure_path("network_fig2.png", Path(__file__).resolve().parents[1] / "figures")
FULL = dict(n=2000, T=20_000, runs=5, etas=np.logspace(-4, np.log10(2.0), 9), every=250)
QUICK = dict(n=200, T=2000, runs=2, etas=np.array([1e-2, 1e-1, 1.0]), every=100)
PER_USER, D, DELTA, C_BUDGET = 8, 8, 1e-6, 1.2
EPSILONS = (10.0, 1.0)

# (label, sigma key, colour, line style, budgeted, noise when skipping)
METHODS = (
    ("Local DP-SGD", "local", "b", "-", True, False),
    ("Network DP-SGD", "network", "g", "-", True, True),
    ("Centralized DP-SGD (Bassily et al. closed form, as in the paper)", "central_paper", "r", "-", False, False),
    ("Centralized DP-SGD, same algorithm, RDP accounting", "central", "r", ":", False, False),
    ("Centralized DP-SGD, same algorithm, our Bassily-route accounting", "central_bassily", "darkred", "--",
     False, False),
    ("non-private SGD", "none", "k", ":", False, False),
)


def paper_central_sigma(eps, *, n, T, delta, L=1.0):
    """The closed form of Bassily et al. 2014 used for the paper's Centralized DP-SGD (the authors' script)."""
    return 16.0 * L * math.sqrt(T * math.log(2.0 / delta) * math.log(1.25 * T / (delta * n))) / (n * eps)


def sigmas_for(*, n, T):
    """{eps: per-step noise std of every method at target (eps, DELTA)}: the library's calibrations (one batched
    call per setting) and the paper's closed form."""
    tu = math.ceil(C_BUDGET * T / n)
    out = {eps: {"none": 0.0, "central_paper": paper_central_sigma(eps, n=n, T=T, delta=DELTA)} for eps in EPSILONS}
    for setting in ("local", "network", "central", "central_bassily"):
        kw = dict(contributions=tu) if setting in ("local", "network") else {}
        inv = N.calibrate_sgd_sigma(target_epsilon=np.array(EPSILONS), delta=DELTA, n=n, steps=T, setting=setting,
                                    **kw)
        assert np.all(np.asarray(inv.status) == 0), setting
        for i, eps in enumerate(EPSILONS):
            out[eps][setting] = float(np.asarray(inv.sigma)[i])
    return out


def make_data(n, seed=0):
    rng = np.random.default_rng(seed)
    total = int(round(n * PER_USER / 0.8))
    X = rng.standard_normal((total, D))
    w_true = rng.standard_normal(D)
    y = np.sign(X @ w_true + 1e-12)
    flip = rng.random(total) < 0.1
    y[flip] *= -1
    X = (X - X.mean(0)) / X.std(0)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    ntr = n * PER_USER
    return X[:ntr].reshape(n, PER_USER, D), y[:ntr].reshape(n, PER_USER), X[ntr:], y[ntr:]


def loss_grad(w, X, y):
    """Gradient of the mean logistic loss ln(1 + exp(-y w.x)) over one user's points (norm <= 1)."""
    m = y * (X @ w)
    return -(X * (y * jax.nn.sigmoid(-m))[:, None]).mean(0)


def run_all(Xu, yu, Xte, yte, sigmas, budgeted, noise_when_skipping, key, *, n, T, runs, etas, every):
    """vmapped over (method, eta, run): test accuracy and training objective every ``every`` steps."""
    Xall = Xu.reshape(-1, D)
    yall = yu.reshape(-1)
    tu = math.ceil(C_BUDGET * T / n)

    def one(sigma, eta, budget_on, noise_skip, k):
        def step(carry, kt):
            w, counts = carry
            k1, k2 = jax.random.split(kt)
            u = jax.random.randint(k1, (), 0, n)
            allowed = jnp.where(budget_on, counts[u] < tu, True)
            g = loss_grad(w, Xu[u], yu[u])
            z = sigma * jax.random.normal(k2, (D,))
            upd = jnp.where(allowed, g + z, jnp.where(noise_skip, z, 0.0))
            w = w - eta * upd
            return (w, counts.at[u].add(allowed.astype(jnp.int32))), None

        def block(carry, kb):
            carry, _ = jax.lax.scan(step, carry, jax.random.split(kb, every))
            w = carry[0]
            acc = jnp.mean(jnp.sign(Xte @ w) == yte)
            obj = jnp.mean(jnp.logaddexp(0.0, -yall * (Xall @ w)))
            return carry, (acc, obj)

        init = (jnp.zeros(D), jnp.zeros(n, jnp.int32))
        _, (acc, obj) = jax.lax.scan(block, init, jax.random.split(k, T // every))
        return acc, obj

    M, E, R = len(sigmas), len(etas), runs
    S = jnp.asarray(sigmas)[:, None, None] * jnp.ones((M, E, R))
    Et = jnp.asarray(etas)[None, :, None] * jnp.ones((M, E, R))
    B = jnp.asarray(budgeted)[:, None, None] & jnp.ones((M, E, R), bool)
    NS = jnp.asarray(noise_when_skipping)[:, None, None] & jnp.ones((M, E, R), bool)
    keys = jax.random.split(key, M * E * R)
    f = jax.jit(jax.vmap(one))  # one flat batch (method x eta x run): compiles faster than three nested vmaps
    acc, obj = f(S.ravel(), Et.ravel(), B.ravel(), NS.ravel(), keys)
    return acc.reshape(M, E, R, -1), obj.reshape(M, E, R, -1)


def compute(cfg):
    """{eps: {"sigma": {...}, "curves": {key: {eta, acc_mean, acc_std, obj_mean, obj_std}}}} for both budgets."""
    n, T = cfg["n"], cfg["T"]
    Xu, yu, Xte, yte = make_data(n)
    out = {}
    all_sig = sigmas_for(n=n, T=T)
    for eps in EPSILONS:
        sig = all_sig[eps]
        sigmas = [sig[m[1]] for m in METHODS]
        with x64_scope():
            acc, obj = run_all(jnp.asarray(Xu), jnp.asarray(yu), jnp.asarray(Xte), jnp.asarray(yte), sigmas,
                               [m[4] for m in METHODS], [m[5] for m in METHODS], jax.random.PRNGKey(int(eps)),
                               n=n, T=T, runs=cfg["runs"], etas=cfg["etas"], every=cfg["every"])
        acc, obj = np.asarray(acc), np.asarray(obj)  # (method, eta, run, block)
        final = np.nan_to_num(obj[..., -1].mean(-1), nan=np.inf)
        curves = {}
        for i, m in enumerate(METHODS):
            j = int(np.argmin(final[i]))
            curves[m[1]] = dict(eta=float(cfg["etas"][j]), acc_mean=acc[i, j].mean(0).tolist(),
                                acc_std=acc[i, j].std(0).tolist(), obj_mean=obj[i, j].mean(0).tolist(),
                                obj_std=obj[i, j].std(0).tolist())
        out[eps] = dict(sigma=sig, curves=curves)
    return out


def plot(res, cfg, path, quick):
    steps = cfg["every"] * np.arange(1, cfg["T"] // cfg["every"] + 1)
    fig, axes = figure(2, 2, figsize=(12, 8.5), sharex=True)
    for col, eps in enumerate(EPSILONS):
        sig, curves = res[eps]["sigma"], res[eps]["curves"]
        for label, key, color, ls, _, _ in METHODS:
            cv = curves[key]
            for row, (mean, std) in enumerate((("obj_mean", "obj_std"), ("acc_mean", "acc_std"))):
                ax = axes[row, col]
                mu, sd = np.asarray(cv[mean]), np.asarray(cv[std])
                lab = f"{label}: sigma {sig[key]:.3g}, eta {cv['eta']:.2g}" if key != "none" else \
                    f"{label}: eta {cv['eta']:.2g}"
                ax.plot(steps, mu, color=color, ls=ls, label=lab)
                lo = np.maximum(mu - sd, 1e-3) if row == 0 else mu - sd
                ax.fill_between(steps, lo, mu + sd, color=color, alpha=0.12)
        axes[0, col].set_yscale("log")
        axes[0, col].set_title(rf"$\varepsilon = {eps:g}$, $\delta = 10^{{-6}}$, n = {cfg['n']}, T = {cfg['T']}"
                               f"{' (QUICK)' if quick else ''}", fontsize=9)
        axes[1, col].set_xlabel("iteration")
        for row in range(2):
            axes[row, col].grid(True, which="both", alpha=0.3)
    axes[0, 0].set_ylabel("training objective (log scale)")
    axes[1, 0].set_ylabel("test accuracy")
    for col, eps in enumerate(EPSILONS):  # one legend per column, below the figure (sigmas differ by column)
        axes[1, col].legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=1,
                            title=rf"$\varepsilon = {eps:g}$", title_fontsize=8)
    fig.suptitle("Cyffers & Bellet Fig. 2 on SYNTHETIC data (stand-in for OpenML 823 'houses': 8 features, "
                 f"{cfg['n']} users x 8 points); mean +- std over {cfg['runs']} runs", fontsize=10)
    save(fig, path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="n = 200, T = 2000, 3 step sizes, 2 runs (tests)")
    ap.add_argument("--output", default=OUT,
                    help="PNG to write (default figures/network_fig2.png, or in $AMPLIFY_JAX_FIGURES_DIR when set)")
    ap.add_argument("--data", default=None, help="also write the sigmas and curves as JSON to this path")
    ap.add_argument("--replot", default=None, help="draw from a JSON written by --data (no training)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    cfg = QUICK if args.quick else FULL
    if args.replot:
        res = {float(e): r for e, r in json.loads(Path(args.replot).read_text()).items()}
    else:
        res = compute(cfg)
    for eps in EPSILONS:
        sig, curves = res[eps]["sigma"], res[eps]["curves"]
        print(f"eps = {eps:g}: sigma " + ", ".join(f"{k} {v:.4g}" for k, v in sig.items()))
        for label, key, *_ in METHODS:
            cv = curves[key]
            print(f"  {label}: eta {cv['eta']:.3g}, final test accuracy {cv['acc_mean'][-1]:.3f} +- "
                  f"{cv['acc_std'][-1]:.3f}, training objective {cv['obj_mean'][-1]:.4f}", flush=True)
    plot(res, cfg, args.output, args.quick)
    if args.data:
        Path(args.data).write_text(json.dumps({str(e): r for e, r in res.items()}))
    print(f"wrote {args.output} ({time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
