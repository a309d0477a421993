"""Figure 2(a) of Liew, Hasegawa, Takahashi ("Self Check-in"): distributed check-in with the Gaussian mechanism.

eps (delta = 1e-8) against the number of rounds T for n = 6e5 clients, sigma = 1, check-in rate
gamma = 1e-3 (the setting of Wang et al. 2019 used in Sec. 5.1):
- RDP, Thm 4: the exact Eq. 10 sum over k at the conditional rate k/n (blue),
- RDP, Eq. 11 as printed (rate gamma, Chernoff parameter minimised over a grid; blue dotted),
- the strong-composition baseline described in Sec. 5.1 (green dashed): with probability 1 - d1 at least l1
  clients check in (noise std >= sigma/sqrt(l1) for sensitivity 2/k), with probability 1 - d2 the rate is
  <= l2/n; exact Gaussian (eps, delta), subsampling (Balle et al. 2018), Dwork-Rothblum-Vadhan composition.

The paper observes that strong composition is tighter for few rounds and that RDP wins by up to an order of
magnitude as T grows.  Orders: the integers 2..64 (Thm 9 of Wang et al. needs integers).

    python benchmarks/fig_checkin_distributed.py

Writes figures/checkin_fig2a.png.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from amplify_jax import checkin as C
from amplify_jax.plotting import figure, figure_path, save

OUT = figure_path("checkin_fig2a.png", Path(__file__).resolve().parents[1] / "figures")
N, SIGMA, GAMMA, DELTA = 600_000, 1.0, 1e-3, 1e-8


def main():
    t0 = time.perf_counter()
    rounds = np.unique(np.round(np.logspace(0, 6, 25)))
    kw = dict(n=N, gamma=GAMMA, sigma=SIGMA, steps=rounds, delta=DELTA)
    exact = np.asarray(C.distributed_gaussian_epsilon(**kw).epsilon)
    eq11 = np.asarray(C.distributed_gaussian_epsilon(method="eq11", **kw).epsilon)
    sc = np.asarray(C.distributed_gaussian_strong_composition_epsilon(**kw))
    fig, ax = figure(figsize=(5.8, 4.3))
    ax.loglog(rounds, exact, "b-", lw=2, label="RDP, Thm 4 exact sum (rate k/n)")
    ax.loglog(rounds, eq11, "b:", lw=1.5, label="RDP, Eq. 11 as printed (rate gamma)")
    ax.loglog(rounds, sc, "g--", lw=2, label="strong composition (Sec. 5.1)")
    ax.set_xlabel("number of rounds T")
    ax.set_ylabel("epsilon")
    ax.set_title("Liew et al. (self check-in) Fig. 2(a): distributed check-in, Gaussian\n"
                 "n = 6e5, sigma = 1, gamma = 1e-3, delta = 1e-8", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    save(fig, OUT)
    cross = rounds[np.argmax(exact < sc)] if np.any(exact < sc) else None
    print("T      exact      eq11       strong")
    for t, a, b, c in zip(rounds[::4], exact[::4], eq11[::4], sc[::4]):
        print(f"{t:8.0f} {a:10.4g} {b:10.4g} {c:10.4g}")
    print(f"RDP below strong composition from T = {cross}; ratio at T = 1e6: {sc[-1] / exact[-1]:.1f}")
    print(f"wrote {OUT} in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
