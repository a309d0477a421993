"""Figure 3 (a, b) of Ladjel, Anciaux, Bellet, Scerri, "Mitigating Leakage from Data Dependent Communications
in Decentralized Computing using Differential Privacy": pure eps of local sampling + flooding (Thm 2,
``amplify_jax.traffic.local_epsilon``; T convention: a sampled message goes to a target drawn among all T).

(a) A_sigma (sampling only, d = 0): eps against the sampling rate sigma in (0, 1], one curve per number of
    targets T in {2, 5, 10, 20, 50, 100} (the extraction does not list the paper's T values).
(b) A_sigma^d with T = 20: eps against the number of dummies d in {0, ..., 19} (d = 19 = T - 1 is a
    broadcast, eps = 0), one curve per sigma in {0.1, 0.3, 0.5, 0.7, 0.9}.
The dotted line is ln 3, the "reasonable" eps the paper quotes from Dwork.

    python benchmarks/fig_traffic_fig3.py  ->  figures/traffic_fig3.png   (a few seconds)
"""

from __future__ import annotations

import math
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from amplify_jax import traffic as tr  # noqa: E402
from amplify_jax.plotting import figure_path  # noqa: E402

OUT = str(figure_path("traffic_fig3.png", os.path.join(os.path.dirname(__file__), "..", "figures")))


def main():
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.8))
    sig = np.linspace(0.01, 1.0, 200)
    for T in (2, 5, 10, 20, 50, 100):
        e = np.asarray(tr.local_epsilon(targets=T, sampling=sig, dummies=0).epsilon)
        a.plot(sig, e, label=f"T = {T}")
    a.axhline(math.log(3), ls=":", c="k", lw=1, label="ln 3")
    a.set_xlabel("sampling rate sigma")
    a.set_ylabel("epsilon (pure)")
    a.set_title("(a) A_sigma: sampling only (Thm 2, d = 0)", fontsize=9)
    a.set_ylim(0, 8)
    a.legend(fontsize=7)
    d = np.arange(0, 20)
    for s in (0.1, 0.3, 0.5, 0.7, 0.9):
        e = np.asarray(tr.local_epsilon(targets=20, sampling=s, dummies=d).epsilon)
        b.plot(d, e, marker="o", ms=3, label=f"sigma = {s}")
    b.axhline(math.log(3), ls=":", c="k", lw=1)
    b.set_xlabel("number of dummies d per source")
    b.set_ylabel("epsilon (pure)")
    b.set_title("(b) A_sigma^d, T = 20 (Thm 2; d = 19 is a broadcast)", fontsize=9)
    b.legend(fontsize=7)
    for ax in (a, b):
        ax.grid(alpha=0.3)
    fig.suptitle("Ladjel et al. Fig. 3 rerun: pure eps of local sampling and flooding (Thm 2)", fontsize=10)
    fig.tight_layout()
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    fig.savefig(OUT, dpi=130)
    print("wrote", os.path.abspath(OUT))


if __name__ == "__main__":
    main()
