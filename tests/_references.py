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


# ----------------------------------------------------------------------------------------------------------
# Soundness campaign references (benchmarks/soundness_campaign.py, tests/test_soundness.py).  Each is written
# from the theorem's statement, not from amplify_jax's code, and none calls amplify_jax.

def _log_expm1(x):
    """log(e^x - 1) for x > 0, float64, without overflow (NumPy arrays)."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return np.where(x > 30.0, x + np.log1p(-np.exp(-np.minimum(x, 700.0))), np.log(np.expm1(np.minimum(x, 30.0))))


def _log_comb(a, k):
    from scipy.special import gammaln

    return gammaln(a + 1.0) - gammaln(k + 1.0) - gammaln(a - k + 1.0)


def psg_integer_rdp(alpha, q, sigma, dps=30, cut=60.0):
    """RDP of the Poisson-subsampled Gaussian at an integer order (Mironov, Talwar, Zhang 2019, Sec. 3.3):
    A = sum_k C(a, k) (1 - q)^(a - k) q^k exp(k (k - 1) / (2 sigma^2)), written as A - 1 = sum_{k >= 2}
    C(a, k) (1 - q)^(a - k) q^k (exp(k (k - 1) / (2 sigma^2)) - 1) (positive terms).  The terms are screened
    in float64 log space (error < 1e-6 in a log-term), and those within ``cut`` of the largest are summed in
    mpmath at ``dps`` digits; the dropped ones weigh < a e^-(cut - 1) of the sum (1e-20 at a = 1e6)."""
    import mpmath as mp

    a = int(round(alpha))
    if q == 0.0:
        return 0.0
    s2 = sigma * sigma
    if q == 1.0:
        return a / (2.0 * s2)
    k = np.arange(2, a + 1, dtype=np.float64)
    terms = _log_comb(float(a), k) + k * math.log(q) + (a - k) * math.log1p(-q) + _log_expm1(k * (k - 1.0) / (2.0 * s2))
    keep = np.nonzero(terms > terms.max() - cut)[0] + 2
    with mp.workdps(dps):
        mq, ms2 = mp.mpf(q), mp.mpf(s2)
        lq, l1q = mp.log(mq), mp.log1p(-mq)
        j0 = int(keep[0])
        w = mp.exp(mp.loggamma(a + 1) - mp.loggamma(j0 + 1) - mp.loggamma(a - j0 + 1) + j0 * lq + (a - j0) * l1q)
        ratio, parts = mq / (1 - mq), []
        for j in range(j0, int(keep[-1]) + 1):  # binomial pmf by its ratio recurrence, exact to dps digits
            parts.append(w * mp.expm1(mp.mpf(j * (j - 1)) / (2 * ms2)))
            w = w * (a - j) / (j + 1) * ratio
        tot = mp.fsum(parts)
        return float(mp.log1p(tot) / (a - 1))


def psg_integer_rdp_mp(alpha, q, sigma, dps=50):
    """The same binomial sum in mpmath at ``dps`` digits (checks :func:`psg_integer_rdp`)."""
    import mpmath as mp

    with mp.workdps(dps):
        a, q, s2 = int(round(alpha)), mp.mpf(q), mp.mpf(sigma) ** 2
        tot = mp.fsum(mp.binomial(a, k) * (1 - q) ** (a - k) * q ** k * mp.exp(mp.mpf(k * (k - 1)) / (2 * s2))
                      for k in range(a + 1))
        return float(mp.log(tot) / (a - 1))


def psg_rdp_mp(alpha, q, sigma, dps=30):
    """RDP of the Poisson-subsampled Gaussian at any order alpha > 1 by mpmath quadrature of MTZ 2019's
    A - 1 = E_{z ~ N(0, sigma^2)}[(1 + u)^alpha - 1 - alpha u], u = q (exp((2z - 1) / (2 sigma^2)) - 1)
    (E[u] = 0), with break points at the maxima of the integrand's envelope -z^2/(2 sigma^2) + alpha log(1 + u)
    (roots of z = alpha s(z), s the sigmoid of (z - z0) / sigma^2, found by bisection on its monotone pieces)."""
    import mpmath as mp

    if q > 0:  # f(u) ~ alpha^2 u^2 / 2 with u ~ q / sigma: the digits (1 + u)^alpha - 1 - alpha u cancels
        dps += int(math.ceil(2 * max(0.0, math.log10(max(sigma, 1.0) / q))))
    with mp.workdps(dps):
        a, q, s = mp.mpf(alpha), mp.mpf(q), mp.mpf(sigma)
        if q == 0:
            return 0.0
        s2, half = s * s, mp.mpf(1) / 2
        if q == 1:
            return float(a / (2 * s2))
        c = 1 / (s * mp.sqrt(2 * mp.pi))

        def F(z):
            u = q * mp.expm1((z - half) / s2)
            return ((1 + u) ** a - 1 - a * u) * mp.exp(-z * z / (2 * s2)) * c

        z0 = half + s2 * mp.log((1 - q) / q)

        def phi(z):  # z - alpha s(z); its roots are the critical points of the envelope
            return z - a / (1 + mp.exp(-(z - z0) / s2))

        edges = [mp.mpf(0)]
        if a / s2 > 4:
            r = mp.sqrt(1 - 4 * s2 / a)
            edges += [z0 + s2 * mp.log(v / (1 - v)) for v in ((1 - r) / 2, (1 + r) / 2)]
        edges.append(a + 1)
        edges = sorted(e for e in edges if 0 <= e <= a + 1)
        maxima = []
        for lo, hi in zip(edges[:-1], edges[1:]):
            flo, fhi = phi(lo), phi(hi)
            if flo < 0 < fhi:  # an increasing piece of phi: a maximum of the envelope
                for _ in range(200):
                    mid = (lo + hi) / 2
                    if phi(mid) < 0:
                        lo = mid
                    else:
                        hi = mid
                    if hi - lo <= s2 * mp.mpf(10) ** (-8) * (1 + abs(lo)):
                        break
                maxima.append((lo + hi) / 2)
        low = [-mp.inf, -20 * s, -5 * s, mp.mpf(0), min(5 * s, half), min(20 * s, half), half]
        high = {half}
        for m in maxima + [z0]:
            for k in (-40, -10, -3, -1, 0, 1, 3, 10, 40):
                for w in (s, s2):
                    if m + k * w > half:
                        high.add(m + k * w)
        high = sorted(high) + [mp.inf]
        am1 = mp.quad(F, sorted(set(low))) + mp.quad(F, high)
        return float(mp.log1p(am1) / (a - 1))


def wor_gaussian_rdp(alpha, q, sigma):
    """Wang, Balle, Kasiviswanathan 2019, Thm 9, with the Gaussian base curve eps(j) = j / (2 sigma^2) and
    eps(inf) = inf (so min{2, (e^eps(inf) - 1)^j} = 2), integer alpha >= 2, float64 log space."""
    from scipy.special import logsumexp

    a = int(round(alpha))
    if q == 0.0:
        return 0.0
    s2 = sigma * sigma
    eps2 = 2.0 / (2.0 * s2)
    t2 = 2.0 * math.log(q) + _log_comb(float(a), 2.0) + min(math.log(4.0) + float(_log_expm1(eps2)), eps2 + math.log(2.0))
    j = np.arange(3, a + 1, dtype=np.float64)
    tj = j * math.log(q) + _log_comb(float(a), j) + (j - 1.0) * j / (2.0 * s2) + math.log(2.0)
    return float(np.logaddexp(0.0, logsumexp(np.concatenate([[t2], tj]))) / (a - 1.0))


def wor_gaussian_rdp_mp(alpha, q, sigma, dps=50):
    """The same Thm 9 sum in mpmath (checks :func:`wor_gaussian_rdp`)."""
    import mpmath as mp

    with mp.workdps(dps):
        a, q, s2 = int(round(alpha)), mp.mpf(q), mp.mpf(sigma) ** 2
        e2 = 1 / s2
        excess = q ** 2 * mp.binomial(a, 2) * min(4 * mp.expm1(e2), 2 * mp.exp(e2))
        excess += mp.fsum(2 * q ** j * mp.binomial(a, j) * mp.exp((j - 1) * mp.mpf(j) / (2 * s2)) for j in range(3, a + 1))
        return float(mp.log1p(excess) / (a - 1))


def balle2020_epsilon_mp(alpha, rdp, delta, dps=50):
    """Balle et al. 2020, Thm 21: eps = rdp + log((alpha - 1) / alpha) - (log delta + log alpha) / (alpha - 1),
    at least 0, in mpmath."""
    import mpmath as mp

    with mp.workdps(dps):
        a, r = mp.mpf(alpha), mp.mpf(rdp)
        e = r + mp.log((a - 1) / a) - (mp.log(mp.mpf(delta)) + mp.log(a)) / (a - 1)
        return float(max(e, 0))


def balle2020_delta_mp(alpha, rdp, eps, dps=50):
    """delta at eps from one (alpha, rdp) point: the inverse of Balle et al. 2020, Thm 21, and the total-variation
    bound sqrt(1 - e^-rdp) (Bretagnolle-Huber, KL <= D_alpha), whichever is smaller, at most 1, in mpmath."""
    import mpmath as mp

    with mp.workdps(dps):
        a, r, e = mp.mpf(alpha), mp.mpf(rdp), mp.mpf(eps)
        d = mp.exp((a - 1) * (r - e + mp.log((a - 1) / a))) / a
        return float(min(d, mp.sqrt(-mp.expm1(-r)), 1))


def laplace_rdp_mp(alpha, scale, dps=50):
    """Mironov 2017, Table II: Laplace mechanism (sensitivity 1, scale b), alpha > 1."""
    import mpmath as mp

    with mp.workdps(dps):
        a, b = mp.mpf(alpha), mp.mpf(scale)
        v = a / (2 * a - 1) * mp.exp((a - 1) / b) + (a - 1) / (2 * a - 1) * mp.exp(-a / b)
        return float(mp.log(v) / (a - 1))


def kary_rr_rdp_mp(alpha, eps0, k, dps=50):
    """k-ary randomized response at level eps0 (keep probability e^eps0 / (e^eps0 + k - 1)): D_alpha between
    two output distributions that differ on two categories, p^a r^(1-a) + r^a p^(1-a) + (k - 2) r."""
    import mpmath as mp

    with mp.workdps(dps):
        a, e0 = mp.mpf(alpha), mp.mpf(eps0)
        z = mp.exp(e0) + k - 1
        p, r = mp.exp(e0) / z, 1 / z
        v = p ** a * r ** (1 - a) + r ** a * p ** (1 - a) + (k - 2) * r
        return float(mp.log(v) / (a - 1))


def advanced_composition_mp(eps0, k, delta_prime, dps=40):
    """Dwork, Rothblum, Vadhan 2010, Thm III.3: sqrt(2 k ln(1/delta')) eps0 + k eps0 (e^eps0 - 1)."""
    import mpmath as mp

    with mp.workdps(dps):
        e, k = mp.mpf(eps0), mp.mpf(k)
        return float(mp.sqrt(2 * k * mp.log(1 / mp.mpf(delta_prime))) * e + k * e * mp.expm1(e))


def kov_delta_mp(eps, eps0, k, dps=40):
    """Kairouz, Oh, Viswanath 2015, Thm 3.3 (exact homogeneous composition of k eps0-DP mechanisms with
    delta0 = 0): delta(eps) = sum_{i: (k - 2i) eps0 > eps} C(k, i) (e^{(k-i) eps0} - e^{eps + i eps0}) /
    (1 + e^eps0)^k, by enumeration in mpmath."""
    import mpmath as mp

    with mp.workdps(dps):
        e, e0 = mp.mpf(eps), mp.mpf(eps0)
        tot = mp.fsum(mp.binomial(k, i) * (mp.exp((k - i) * e0) - mp.exp(e + i * e0))
                      for i in range(k + 1) if (k - 2 * i) * e0 > e)
        return float(tot / (1 + mp.exp(e0)) ** k)


def gaussian_composition_delta_mp(eps, mu, dps=40):
    """Exact delta(eps) of the Gaussian mechanism with mu = sensitivity / std (Balle & Wang 2018, Thm 8):
    Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu); T-fold composition of N(0, sigma^2) has mu = sqrt(T)/sigma."""
    import mpmath as mp

    with mp.workdps(dps):
        e, m = mp.mpf(eps), mp.mpf(mu)
        return float(mp.ncdf(m / 2 - e / m) - mp.exp(e) * mp.ncdf(-m / 2 - e / m))


def secrdp_eps1_mp(adjacency, sigma_unc, sigma_cor, clip, removed_sets, dps=40):
    """Decor (Allouah et al. 2024), Thm 6 proof (ERRATA.md): eps1 = 2 C^2 max over the honest sets H (the
    graph minus each set of ``removed_sets``) of max_i [Sigma_H^-1]_ii, Sigma_H = sigma_unc^2 I + sigma_cor^2
    L_H, L_H the Laplacian of the graph restricted to H (L = D - A), in mpmath."""
    import mpmath as mp

    A = np.asarray(adjacency, dtype=float)
    n = A.shape[0]
    with mp.workdps(dps):
        su2, sc2 = mp.mpf(sigma_unc) ** 2, mp.mpf(sigma_cor) ** 2
        best = mp.mpf(0)
        for rem in removed_sets:
            keep = [i for i in range(n) if i not in rem]
            m = len(keep)
            S = mp.matrix(m, m)
            for a, i in enumerate(keep):
                deg = sum(A[i, j] for j in keep)
                for b, j in enumerate(keep):
                    lap = deg if a == b else -A[i, j]
                    S[a, b] = (su2 if a == b else 0) + sc2 * lap
            inv = S ** -1
            best = max(best, max(inv[a, a] for a in range(m)))
        return float(2 * mp.mpf(clip) ** 2 * best)


def clones_delta_exact(eps, eps0, n):
    """Feldman, McMillan, Talwar 2021, Thm 3.2: the hockey-stick divergence D_{e^eps}(P || Q) of the clone pair
    P = (A + D, C - A + 1 - D), Q = (A + 1 - D, C - A + D), C ~ Bin(n - 1, e^-eps0), A ~ Bin(C, 1/2),
    D ~ Bern(e^eps0 / (1 + e^eps0)), by enumerating every outcome (C = c, first coordinate x): O(n^2)."""
    from scipy.stats import binom

    a = math.exp(eps0) / (1.0 + math.exp(eps0))
    ee = math.exp(eps)
    tot = 0.0
    N = int(n) - 1
    pc = binom.pmf(np.arange(N + 1), N, math.exp(-eps0))
    for c in range(N + 1):
        if pc[c] == 0.0:
            continue
        x = np.arange(c + 2)
        b1, b0 = binom.pmf(x - 1, c, 0.5), binom.pmf(x, c, 0.5)
        P = a * b1 + (1 - a) * b0
        Q = (1 - a) * b1 + a * b0
        tot += pc[c] * np.sum(np.maximum(P - ee * Q, 0.0))
    return float(tot)
