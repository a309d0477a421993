"""How much the PLD route tightens the Gaussian baselines of the paper modules (issue 13, item 7).

Network DP (Cyffers & Bellet, "Privacy Amplification by Decentralization", AISTATS 2022), Sec. 5.2, the
parameters behind its Fig. 2 (``benchmarks/fig_network_sgd_sigma.py``): n = 2000 users, T = 20000 steps,
delta = 1e-6, L = 1, T_u = ceil(1.2 T / n) = 12 contributions per user; the per-step noise sigma varies.

(a) Local DP-SGD (T_u Gaussian releases, sensitivity 2L): ``network.local_sgd_epsilon`` by RDP (the default)
    and with ``accountant="pld"`` (the PLD of the one Gaussian of shift 2L sqrt(T_u) / sigma they compose
    to), the exact Gaussian eps (Balle & Wang 2018) as the reference, and network DP-SGD (Lemma 1, RDP), the
    paper's comparison.
(b) eps_PLD / eps_RDP of local DP-SGD at T_u in {1, 12, 120}.
(c) Central DP-SGD (one user per step, without replacement, replace-one): ``network.central_sgd_epsilon``
    by RDP (WBK 2019 Thm 9) and with ``accountant="pld"`` (the without-replacement pair of Dong, Roth, Su
    2022 Thm 4.2), and a *lower* bound of the algorithm's true eps: the Poisson pair's PLD (lower value) at
    sigma / (2L), q = 1/n, which a linear loss realises in every step (not an accountant here).
(d) eps_PLD / eps_RDP of central DP-SGD, and lower bound / eps_RDP (the most any accountant could take off).

Self check-in (Liew, Hasegawa, Takahashi), Fig. 2(a)'s setting (``benchmarks/fig_checkin_distributed.py``):
distributed check-in with the Gaussian mechanism, n = 6e5 clients, sigma = 1, gamma = 1e-3, delta = 1e-8.

(e) eps against the number of rounds T = 1..1e6: Thm 4 by RDP (the exact sum over k, orders 2..64),
    ``checkin.distributed_gaussian_epsilon(accountant="pld")`` (k in a Chernoff window, the rounds' pair
    composed by its PLD), and the Sec. 5.1 strong-composition baseline.
(f) eps_PLD / eps_RDP, at Fig. 2(a)'s n = 6e5 (n gamma = 600) and at n = 6e4 (n gamma = 60), where the
    window's cost (rate l2 / n, noise sigma sqrt(l1) / 2) overtakes the gain between 1e3 and 1e4 rounds (+inf,
    status fallback, beyond: the Chernoff bound at delta / T no longer guarantees one participant a round).

    python benchmarks/fig_pld_tightening.py [--quick]   ->  figures/pld_tightening.png

``--quick``: 6 noise levels, T_u = 12 only, 4 round counts and the n = 6e5 check-in curve only.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import time
import warnings
from pathlib import Path

import numpy as np

import jax
import jax.numpy as jnp

from amplify_jax import checkin as C
from amplify_jax import network as N
from amplify_jax.accounting import pld
from amplify_jax.approx_dp import analytic_gaussian_epsilon
from amplify_jax.internal import x64_scope
from amplify_jax.plotting import figure, figure_path, save

OUT = figure_path("pld_tightening.png", Path(__file__).resolve().parents[1] / "figures")
n, T, delta, L = 2000, 20_000, 1e-6, 1.0  # network DP, Sec. 5.2
TU = math.ceil(1.2 * T / n)  # 12
CK_N, CK_SIGMA, CK_GAMMA, CK_DELTA = 600_000, 1.0, 1e-3, 1e-8  # self check-in, Fig. 2(a)


def _exact_local(sigma, tu):
    """The exact eps of the Gaussian of shift 2L sqrt(T_u) / sigma (Balle & Wang 2018)."""
    with x64_scope():
        mu = jnp.asarray(2.0 * L * np.sqrt(tu) / sigma)
        return np.asarray(analytic_gaussian_epsilon(mu, jnp.log(jnp.full_like(mu, delta))))


def _network(quick):
    m = 6 if quick else 24
    sig_loc = np.logspace(np.log10(1.5), np.log10(60.0), m)
    sig_cen = np.logspace(np.log10(0.6), np.log10(20.0), m)
    loc = {}
    for tu in ((TU,) if quick else (1, TU, 120)):
        rdp = np.asarray(N.local_sgd_epsilon(sigma=sig_loc, contributions=tu, delta=delta, lipschitz=L).epsilon)
        p = N.local_sgd_epsilon(sigma=sig_loc, contributions=tu, delta=delta, lipschitz=L, accountant="pld")
        assert np.all(np.asarray(p.status) == 0)
        loc[tu] = (rdp, np.asarray(p.epsilon), _exact_local(sig_loc, tu))
        assert np.all(loc[tu][1] <= rdp) and np.all(loc[tu][1] >= loc[tu][2] * (1 - 1e-9))
    net = np.asarray(N.network_sgd_epsilon(sigma=sig_loc, n=n, contributions=TU, delta=delta, lipschitz=L).epsilon)
    cen = np.asarray(N.central_sgd_epsilon(sigma=sig_cen, n=n, steps=T, delta=delta, lipschitz=L).epsilon)
    p = N.central_sgd_epsilon(sigma=sig_cen, n=n, steps=T, delta=delta, lipschitz=L, accountant="pld")
    assert np.all(np.asarray(p.status) == 0)
    low = pld.dpsgd_epsilon(sigma=sig_cen / (2.0 * L), q=1.0 / n, steps=T, delta=delta)
    assert np.all(np.asarray(low.status) == 0)
    cen_pld, cen_low = np.asarray(p.epsilon), np.asarray(low.epsilon_lower)
    assert np.all(cen_low <= cen_pld) and np.all(cen_low <= cen)
    return sig_loc, loc, net, sig_cen, cen, cen_pld, cen_low


def _calibrations():
    """sigma of local DP-SGD for eps in {1, 10} by each accountant, beside network DP-SGD's (Sec. 5.2)."""
    targets = np.array([1.0, 10.0])
    cal = {s: N.sgd_calibrate_sigma(target_epsilon=targets, delta=delta, n=n, steps=T, setting=s, contributions=TU)
           for s in ("local", "network")}
    cal_pld = pld.dpsgd_calibrate_sigma(target_epsilon=targets, q=1.0, steps=1, delta=delta)  # the one Gaussian
    assert np.all(np.asarray(cal_pld.status) == 0) and all(np.all(np.asarray(c.status) == 0) for c in cal.values())
    sig_pld = 2.0 * L * math.sqrt(TU) * np.asarray(cal_pld.sigma)
    check = N.local_sgd_epsilon(sigma=sig_pld, contributions=TU, delta=delta, lipschitz=L, accountant="pld")
    assert np.all(np.asarray(check.epsilon) <= targets)  # re-checked through the route itself
    return targets, np.asarray(cal["local"].sigma), sig_pld, np.asarray(cal["network"].sigma)


def _checkin(quick):
    rounds = np.array([1.0, 1e2, 1e4, 1e6]) if quick else np.unique(np.round(np.logspace(0, 6, 13)))
    out = {}
    for nn in ((CK_N,) if quick else (CK_N, CK_N // 10)):
        kw = dict(n=nn, gamma=CK_GAMMA, sigma=CK_SIGMA, steps=rounds, delta=CK_DELTA)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", C.OrderCapWarning)
            rdp = np.asarray(C.distributed_gaussian_epsilon(**kw).epsilon)
        p = C.distributed_gaussian_epsilon(**kw, accountant="pld")
        sc = np.asarray(C.distributed_gaussian_strong_composition_epsilon(**kw)) if nn == CK_N else None
        out[nn] = (rdp, np.asarray(p.epsilon), sc)
    return rounds, out


def main(quick=False):
    t0, c0 = time.perf_counter(), time.process_time()
    sig_loc, loc, net, sig_cen, cen, cen_pld, cen_low = _network(quick)
    targets, s_rdp, s_pld, s_net = _calibrations()
    rounds, ck = _checkin(quick)

    from matplotlib.ticker import NullFormatter, ScalarFormatter

    fig, axes = figure(3, 2, figsize=(11.0, 12.0))
    (a, b), (c, d), (e, f) = axes
    rdp, pl, ex = loc[TU]
    a.loglog(sig_loc, rdp, "b-", lw=2, label="local DP-SGD, RDP (default)")
    a.loglog(sig_loc, pl, "m--", lw=2, label='local DP-SGD, accountant="pld"')
    a.loglog(sig_loc, ex, "k:", lw=1.2, label="exact Gaussian (Balle & Wang 2018)")
    a.loglog(sig_loc, net, "g-", lw=1.5, label="network DP-SGD (Lemma 1, RDP)")
    a.set_xlabel("per-step sigma")
    a.set_ylabel("epsilon")
    a.set_title(f"(a) network DP, Sec. 5.2: T_u = {TU}, delta = 1e-6, L = 1", fontsize=9)
    for tu, ls in zip(loc, ("-", "--", ":") if len(loc) == 3 else ("--",)):
        b.semilogx(sig_loc, loc[tu][1] / loc[tu][0], "m" + ls, label=f"T_u = {tu}")
    b.set_xlabel("per-step sigma")
    b.set_ylabel("eps_PLD / eps_RDP")
    b.set_title("(b) local DP-SGD: PLD over RDP", fontsize=9)
    c.loglog(sig_cen, cen, "r-", lw=2, label="central DP-SGD, RDP (WBK19 Thm 9, default)")
    c.loglog(sig_cen, cen_pld, "m--", lw=2, label='central DP-SGD, accountant="pld" (C_q(G) pair)')
    c.loglog(sig_cen, cen_low, "k:", lw=1.2, label="lower bound: Poisson pair's PLD (lower value)")
    c.set_xlabel("per-step sigma")
    c.set_ylabel("epsilon")
    c.set_title(f"(c) network DP, Sec. 5.2: central DP-SGD, n = {n}, T = {T}", fontsize=9)
    d.semilogx(sig_cen, cen_pld / cen, "m-", label="eps_PLD / eps_RDP")
    d.semilogx(sig_cen, cen_low / cen, "k:", label="lower bound / eps_RDP")
    d.set_ylim(0.0, 1.0)
    d.set_xlabel("per-step sigma")
    d.set_ylabel("ratio")
    d.set_title("(d) central DP-SGD: PLD over RDP", fontsize=9)
    rdp_ck, pld_ck, sc_ck = ck[CK_N]
    e.loglog(rounds, rdp_ck, "b-", lw=2, label="RDP, Thm 4 exact sum over k (default)")
    e.loglog(rounds, pld_ck, "m--", lw=2, label='accountant="pld" (k in a Chernoff window)')
    e.loglog(rounds, sc_ck, "g-.", lw=1.5, label="strong composition (Sec. 5.1 baseline)")
    e.set_xlabel("number of rounds T")
    e.set_ylabel("epsilon")
    e.set_title("(e) self check-in, Fig. 2(a): distributed Gaussian, n = 6e5, sigma = 1, gamma = 1e-3, "
                "delta = 1e-8", fontsize=8)
    for nn, ls in zip(ck, ("-", "--")):
        r = ck[nn][1] / ck[nn][0]
        f.loglog(rounds[np.isfinite(r)], r[np.isfinite(r)], "m" + ls, label=f"n = {nn:g} (n gamma = {nn * CK_GAMMA:g})")
    f.axhline(1.0, color="grey", lw=0.8)
    f.set_xlabel("number of rounds T")
    f.set_ylabel("eps_PLD / eps_RDP")
    f.set_title("(f) distributed check-in: PLD over RDP (missing: PLD +inf)", fontsize=9)
    for ax in axes.ravel():
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    for ax in (a, b, c, d):
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())
    fig.suptitle("Not a figure of the papers: the Gaussian baselines of Cyffers & Bellet 2022 (Sec. 5.2, Fig. 2) and "
                 "Liew et al. (self check-in) Fig. 2(a),\naccounted by RDP and by PLD", fontsize=10)
    fig.tight_layout()
    save(fig, OUT)

    print(f"network DP, Sec. 5.2: n={n}, T={T}, delta={delta}, L={L}, T_u={TU}")
    for tu in loc:
        r = loc[tu][1] / loc[tu][0]
        print(f"local DP-SGD, T_u={tu}: eps_PLD / eps_RDP in [{r.min():.4f}, {r.max():.4f}] over sigma = "
              f"{sig_loc[0]:g}..{sig_loc[-1]:g} (PLD / exact - 1 <= {np.max(loc[tu][1] / loc[tu][2] - 1):.1e})")
    print("  sigma  local RDP  local PLD     exact   network  local/network (RDP -> PLD)")
    for i in range(0, len(sig_loc), max(1, len(sig_loc) // 6)):
        print(f"{sig_loc[i]:7.3g}  {rdp[i]:9.4g}  {pl[i]:9.4g}  {ex[i]:8.4g}  {net[i]:8.4g}  "
              f"{rdp[i] / net[i]:.3g} -> {pl[i] / net[i]:.3g}")
    for j, t in enumerate(targets):
        print(f"sigma for eps <= {t:g}: local RDP {s_rdp[j]:.4g}, local PLD {s_pld[j]:.4g} "
              f"({100 * (1 - s_pld[j] / s_rdp[j]):.1f}% less noise), network {s_net[j]:.4g}; "
              f"local/network {s_rdp[j] / s_net[j]:.2f}x -> {s_pld[j] / s_net[j]:.2f}x")
    r, lr = cen_pld / cen, cen_low / cen
    print(f"central DP-SGD: eps_PLD / eps_RDP in [{r.min():.3f}, {r.max():.3f}], lower bound / eps_RDP in "
          f"[{lr.min():.3f}, {lr.max():.3f}] over sigma = {sig_cen[0]:g}..{sig_cen[-1]:g}")
    for i in range(0, len(sig_cen), max(1, len(sig_cen) // 6)):
        print(f"  sigma {sig_cen[i]:6.3g}: RDP {cen[i]:9.4g}, PLD {cen_pld[i]:9.4g}, lower bound {cen_low[i]:9.4g}")
    print(f"self check-in, Fig. 2(a): gamma={CK_GAMMA}, sigma={CK_SIGMA}, delta={CK_DELTA}")
    for nn in ck:
        rdp_, pld_, sc_ = ck[nn]
        print(f"  n = {nn:g}:  T, RDP, PLD, PLD/RDP" + (", strong composition" if sc_ is not None else ""))
        for i in range(0, len(rounds), max(1, len(rounds) // 6)):
            extra = f"  {sc_[i]:9.4g}" if sc_ is not None else ""
            print(f"    {rounds[i]:8.0f}  {rdp_[i]:9.4g}  {pld_[i]:9.4g}  {pld_[i] / rdp_[i]:8.3g}{extra}")
    print(f"wrote {OUT}: {time.perf_counter() - t0:.1f} s wall, {time.process_time() - c0:.1f} s CPU "
          f"({platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, jax {jax.__version__})")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer points, one check-in curve (for tests)")
    main(quick=ap.parse_args().quick)
