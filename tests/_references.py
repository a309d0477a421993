"""Independent SciPy references shared by the shuffle, clones and traffic tests (not collected as tests)."""

import math

import numpy as np
from scipy.stats import binom


def scipy_clones_delta(eps, eps0, n, width=12):
    """D(P||Q) of the clone pair with scipy's binomial CDFs over mean +- width sd of C, the exact cut-off and its
    neighbours (for large n)."""
    p, E0, ee = math.exp(-eps0), math.exp(eps0), math.exp(eps)
    N = n - 1
    mu, sd = N * p, math.sqrt(N * p * (1 - p))
    c = np.arange(max(0, int(mu - width * sd)), min(N, int(mu + width * sd)) + 1)
    a = E0 / (1 + E0)
    t = np.ceil((c + 1) * (E0 - ee) / ((E0 - 1) * (1 + ee))) - 1
    best = np.zeros(c.shape)
    for s in (-1, 0, 1):  # the exact cut-off and its neighbours (rounding-proof maximum)
        F1, F0 = binom.cdf(t + s, c, 0.5), binom.cdf(t + s - 1, c, 0.5)
        best = np.maximum(best, a * F1 + (1 - a) * F0 - ee * ((1 - a) * F1 + a * F0))
    return float(np.sum(binom.pmf(c, N, p) * best))


def scipy_lemma2(eps, n, d, T, sigma):
    """Lemma 2 with E[(sum L)_+] over (M = N1 + N2, N2) by SciPy pmfs, every m' with weight > 1e-300."""
    ez = math.exp(eps)
    tot = 0.0
    for j in range(n):
        w = binom.pmf(j, n - 1, sigma)
        if w < 1e-300:
            continue
        k = j + d + 1
        M = np.arange(k + 1)
        wm = binom.pmf(M, k, 2.0 / T)
        e = 0.0
        for m, pm in zip(M, wm):
            if pm < 1e-300:
                continue
            n2 = np.arange(m + 1)
            v = k * sigma * (1 - ez) + (1 - sigma) * T * ((m - n2) - ez * n2)
            e += pm * np.sum(binom.pmf(n2, m, 0.5) * np.maximum(v, 0.0))
        tot += w * e / k
    return tot
