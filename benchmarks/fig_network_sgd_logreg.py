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
* Local DP-SGD and Network DP-SGD: ``amplify_jax.network.sgd_calibrate_sigma`` (local: Gaussian RDP of
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
mean over runs); 20 runs per configuration, as the paper (with 5, the run-to-run spread decided the eps = 10
comparison: network 0.762 +- 0.036 against the paper's central 0.837 +- 0.015; with 20, 0.793 +- 0.025 against
0.818 +- 0.021).  Curves: mean over runs, band +- one std.
Objective: the mean logistic loss over the training set.

    python benchmarks/fig_network_sgd_logreg.py  ->  figures/network_fig2.png
    python benchmarks/fig_network_sgd_logreg.py --quick --output /tmp/f2.png [--data /tmp/f2.json]
        (n = 200 users, T = 2000 steps, 3 step sizes, 2 runs: for tests; --data writes sigmas and curves as JSON)
    python benchmarks/fig_network_sgd_logreg.py --replot /tmp/f2.json   (redraw from --data, no training)

Third row, the reading behind the paper's plot: the authors' script (``AUTHORS``: L = 0.4, their sigmas, the noisy
update scaled to norm <= L, their fixed step sizes).  It is NOT (eps, 1e-6)-DP here: a user's mean gradient has
norm up to 1 while the noise is for sensitivity 0.4.  It lifts every accuracy (eps = 10: network 0.838, central 0.857,
local 0.705) but tells the same story as the sound rows; figures/README.md has the numbers.

Run time (full): 213 s wall at load ~15 (was about 70 s with 5 runs); --quick: about 20 s of
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
from amplify_jax.internal import x64_scope
from amplify_jax.plotting import figure, figure_path, readable_log_axes, save

OUT = figure_path("network_fig2.png", Path(__file__).resolve().parents[1] / "figures")
FULL = dict(n=2000, T=20_000, runs=20, etas=np.logspace(-4, np.log10(2.0), 9), every=250)
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
        inv = N.sgd_calibrate_sigma(target_epsilon=np.array(EPSILONS), delta=DELTA, n=n, steps=T, setting=setting,
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


def run_all(Xu, yu, Xte, yte, sigmas, budgeted, noise_when_skipping, key, *, n, T, runs, etas, every,
            clip_noisy=None):
    """vmapped over (method, eta, run): test accuracy and training objective every ``every`` steps.

    ``clip_noisy``: None (DP-SGD: the update is the gradient, of norm <= L = 1, plus the noise) or a norm c: the
    noisy update g + z is then scaled to norm <= c before the step, as the authors' ``fig2/private.py`` does
    (post-processing of the released g + z, so no privacy is lost; it caps every step at eta c)."""
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
            if clip_noisy is not None:
                upd = upd * jnp.minimum(1.0, clip_noisy / jnp.maximum(jnp.linalg.norm(upd), 1e-30))
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


#: The reading behind the paper's Fig. 2: the defaults of the authors' fig2/main.py and fig2/findSigma.py
#: (github.com/totilas/privacy-amplification-by-decentralization, read and run, not copied): L = 0.4; the noise of
#: their calibrations at L = 0.4 (findSigma.loc: classical Gaussian mechanism, sensitivity L, advanced composition
#: over K = ceil(1.2 T / n) contributions at delta / K; findSigma.net: Lemma 1 with factor 2 and sensitivity L, and a
#: split with the "spotted" contributions; findSigma.dpsgd: Bassily et al.'s closed form), printed by their script;
#: the update g + z scaled to norm <= L AFTER the noise (fig2/private.py), the gradient itself not clipped; their
#: fixed step sizes (best_gamma: local 0.0673, central and network 0.0342).  NOT (eps, 1e-6)-DP: a user's mean
#: gradient has norm up to 1 here (unit-norm points), while the noise is for sensitivity 0.4 (and L, not 2L).
AUTHORS = dict(L=0.4, etas=(0.03416667, 0.06733333),
               eta_index={"local": 1, "network": 0, "central_paper": 0, "none": 0},
               sigma={10.0: {"local": 5.87106, "network": 1.22702, "central_paper": 0.696821, "none": 0.0},
                      1.0: {"local": 46.8687, "network": 10.9834, "central_paper": 6.96821, "none": 0.0}})


def authors_local_sigma(eps, *, n, T, delta, L, conf=1.2):
    """Local DP-SGD's sigma by the authors' route (independent transcription of its formulas, used by the test): K =
    ceil(conf T / n) contributions, each (e0, delta / K)-DP by the classical Gaussian mechanism (Dwork & Roth 2014,
    Thm A.1: sigma = sqrt(2 ln(1.25 K / delta)) L / e0), composed by advanced composition (Dwork, Rothblum, Vadhan
    2010: sqrt(2 K ln(K / delta)) e0 + K e0 (e^e0 - 1) = eps, solved for e0)."""
    from scipy.optimize import brentq

    K = math.ceil(conf * T / n)
    dk = delta / K
    e0 = brentq(lambda e: math.sqrt(2 * K * math.log(1 / dk)) * e + K * e * math.expm1(e) - eps, 1e-12,
                eps / math.sqrt(K), xtol=1e-15)
    return math.sqrt(2 * math.log(1.25 / dk)) * L / e0


def compute(cfg):
    """{eps: {"sigma": {...}, "curves": {key: {eta, acc_mean, acc_std, obj_mean, obj_std}}, "curves_authors":
    local, network, the paper's central and non-private SGD under the authors' reading (AUTHORS)}}."""
    n, T = cfg["n"], cfg["T"]
    Xu, yu, Xte, yte = make_data(n)
    out = {}
    all_sig = sigmas_for(n=n, T=T)
    for eps in EPSILONS:
        sig = all_sig[eps]
        out[eps] = dict(sigma=sig)
        for rule in ("dpsgd", "authors"):
            if rule == "dpsgd":
                sigmas, etas, clip_noisy = [sig[m[1]] for m in METHODS], cfg["etas"], None
            else:  # the authors' sigmas, for n = 2000, T = 20000 (--quick uses them as they are: plumbing only)
                sigmas = [AUTHORS["sigma"][eps].get(m[1], 0.0) for m in METHODS]
                etas, clip_noisy = np.asarray(AUTHORS["etas"]), AUTHORS["L"]
            with x64_scope():
                acc, obj = run_all(jnp.asarray(Xu), jnp.asarray(yu), jnp.asarray(Xte), jnp.asarray(yte), sigmas,
                                   [m[4] for m in METHODS], [m[5] for m in METHODS], jax.random.PRNGKey(int(eps)),
                                   n=n, T=T, runs=cfg["runs"], etas=etas, every=cfg["every"],
                                   clip_noisy=clip_noisy)
            acc, obj = np.asarray(acc), np.asarray(obj)  # (method, eta, run, block)
            final = np.nan_to_num(obj[..., -1].mean(-1), nan=np.inf)
            curves = {}
            for i, m in enumerate(METHODS):
                if rule == "authors" and m[1] not in AUTHORS["eta_index"]:
                    continue
                j = int(np.argmin(final[i])) if rule == "dpsgd" else AUTHORS["eta_index"][m[1]]
                curves[m[1]] = dict(eta=float(etas[j]), sigma=float(sigmas[i]), acc_mean=acc[i, j].mean(0).tolist(),
                                    acc_std=acc[i, j].std(0).tolist(), obj_mean=obj[i, j].mean(0).tolist(),
                                    obj_std=obj[i, j].std(0).tolist())
            out[eps]["curves" if rule == "dpsgd" else "curves_authors"] = curves
    return out


def plot(res, cfg, path, quick):
    steps = cfg["every"] * np.arange(1, cfg["T"] // cfg["every"] + 1)
    rows = (("curves", "obj_mean", "obj_std"), ("curves", "acc_mean", "acc_std"),
            ("curves_authors", "acc_mean", "acc_std"))
    rows = tuple(r for r in rows if all(r[0] in res[e] for e in EPSILONS))  # older JSON: no authors' rows
    fig, axes = figure(len(rows), 2, figsize=(14, 4.25 * len(rows)), sharex=True, squeeze=False)
    for col, eps in enumerate(EPSILONS):
        sig = res[eps]["sigma"]
        for label, key, color, ls, _, _ in METHODS:
            for row, (which, mean, std) in enumerate(rows):
                if key not in res[eps][which]:
                    continue
                cv = res[eps][which][key]
                ax = axes[row, col]
                mu, sd = np.asarray(cv[mean]), np.asarray(cv[std])
                lab = f"{label}: sigma {cv.get('sigma', sig[key]):.3g}, eta {cv['eta']:.2g}" if key != "none" else \
                    f"{label}: eta {cv['eta']:.2g}"
                ax.plot(steps, mu, color=color, ls=ls, label=lab if row == 1 else None)
                lo = np.maximum(mu - sd, 1e-3) if row == 0 else mu - sd
                ax.fill_between(steps, lo, mu + sd, color=color, alpha=0.12)
        axes[0, col].set_yscale("log")
        readable_log_axes(axes[0, col])
        axes[0, col].set_title(rf"$\varepsilon = {eps:g}$, $\delta = 10^{{-6}}$, n = {cfg['n']}, T = {cfg['T']}"
                               f"{' (QUICK)' if quick else ''}", fontsize=9)
        if len(rows) == 3:
            fin = {k: res[eps]["curves_authors"][k]["acc_mean"][-1] for k in ("network", "central_paper")}
            loc = res[eps]["curves_authors"]["local"]["acc_mean"][-1]
            axes[2, col].set_title(f"the authors' script: L = 0.4, their sigmas and step sizes, noisy update"
                                   f"\nscaled to norm <= L; NOT (eps, 1e-6)-DP. Final: network {fin['network']:.3f}, "
                                   f"paper's central {fin['central_paper']:.3f}, local {loc:.3f}", fontsize=8)
        axes[-1, col].set_xlabel("iteration")
        for row in range(len(rows)):
            axes[row, col].grid(True, which="both", alpha=0.3)
    axes[0, 0].set_ylabel("training objective (log scale)")
    axes[1, 0].set_ylabel("test accuracy (DP-SGD update)")
    if len(rows) == 3:
        axes[2, 0].set_ylabel("test accuracy (authors' script)")
    for col, eps in enumerate(EPSILONS):  # one legend per column, below the figure (sigmas differ by column)
        axes[-1, col].legend(*axes[1, col].get_legend_handles_labels(), fontsize=7, loc="upper center",
                             bbox_to_anchor=(0.5, -0.14), ncol=1, title=rf"$\varepsilon = {eps:g}$ (eta: DP-SGD rows)",
                             title_fontsize=8)
    fig.suptitle("Cyffers & Bellet Fig. 2 on SYNTHETIC data (stand-in for OpenML 823 'houses': 8 features, "
                 f"{cfg['n']} users x 8 points); mean +- std over {cfg['runs']} runs.\nRows 1-2: DP-SGD with our sound "
                 "noise; over 20 runs (the paper's count) network nearly matches the paper's central baseline at both "
                 "eps (5 runs had shown a gap at eps = 10).\nRow 3: the authors' script, not private at the stated "
                 "eps (noise for sensitivity 0.4): higher accuracies, the same picture (figures/README.md)",
                 fontsize=10)
    fig.tight_layout()
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
        sig = res[eps]["sigma"]
        print(f"eps = {eps:g}: sigma " + ", ".join(f"{k} {v:.4g}" for k, v in sig.items()))
        for which in ("curves", "curves_authors"):
            if which not in res[eps]:
                continue
            print("  DP-SGD update:" if which == "curves" else
                  "  the authors' script (L = 0.4, their sigmas and step sizes, noisy update scaled to norm <= L; "
                  "NOT (eps, 1e-6)-DP):")
            for label, key, *_ in METHODS:
                if key not in res[eps][which]:
                    continue
                cv = res[eps][which][key]
                print(f"    {label}: sigma {cv.get('sigma', sig[key]):.4g}, eta {cv['eta']:.3g}, final test accuracy "
                      f"{cv['acc_mean'][-1]:.3f} +- "
                      f"{cv['acc_std'][-1]:.3f}, training objective {cv['obj_mean'][-1]:.4f}", flush=True)
    plot(res, cfg, args.output, args.quick)
    if args.data:
        Path(args.data).write_text(json.dumps({str(e): r for e, r in res.items()}))
    print(f"wrote {args.output} ({time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
