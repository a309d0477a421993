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


# ----------------------------------------------------------------------------------------------------------
# The privacy blanket (Balle, Bell, Gascon, Nissim 2019) with dummies (Ladjel, Anciaux, Bellet, Scerri, App. E)
# and the scrambler's Thm 4: (1) the theorem's own sum, Lemma 2 with the Lemma 3 bounds on E[sum L]_+ and the
# Lemma 4 / Lemma 5 bounds on L, with the corrections of docs/errata.md (#e-traffic-thm4-a: a = e^eps - 1;
# #e-traffic-thm4-b: b = L_max - L_min; #e-traffic-lemma5: L_max = (1 - sigma) T + sigma (1 - e^eps);
# #e-traffic-lemma3-bennett: the corrected Bennett form; #e-traffic-lemma4-generic: Balle et al.'s generic L
# bounds, unscaled); (2) the exact hockey-stick divergence of a shuffled randomized response (the mechanism
# itself, not a bound), which every blanket bound must be above.


def _blanket_phi_mp(beta):
    """phi(u) = (1 + u) ln(1 + u) - u at the working precision: its series sum_{j>=2} (-1)^j u^j / (j (j - 1))
    below 0.1 (the closed form cancels there), the closed form above."""
    import mpmath as mp

    if beta < mp.mpf("0.1"):
        tot, term, j = mp.mpf(0), beta * beta, 2
        while True:
            t = term / (j * (j - 1))
            tot += t if j % 2 == 0 else -t
            if abs(t) < abs(tot) * mp.mpf(10) ** (-mp.mp.dps - 5) or t == 0:
                return tot
            term *= beta
            j += 1
    return (1 + beta) * mp.log1p(beta) - beta


def laplace_blanket_second_moment_mp(eps, eps0, pair=(0.0, 1.0), dps=30):
    """E_omega[L^2] for the Laplace randomizer x + Lap(1/eps0) on inputs [0, 1] (Balle et al. 2019, Sec. 5.2),
    at the input pair (x, x'), by mpmath quadrature: omega(y) = inf_x mu_x(y) / gamma
    = (eps0 / (2 gamma)) e^(-eps0 max(|y|, |1 - y|)), gamma = e^(-eps0 / 2), L = (mu_x - e^eps mu_x') / omega."""
    import mpmath as mp

    with mp.workdps(dps):
        e0, E = mp.mpf(eps0), mp.exp(mp.mpf(eps))
        x, xp = mp.mpf(pair[0]), mp.mpf(pair[1])
        g = mp.exp(-e0 / 2)

        def f(y):
            om = e0 / (2 * g) * mp.exp(-e0 * max(abs(y), abs(1 - y)))
            mu, mup = e0 / 2 * mp.exp(-e0 * abs(y - x)), e0 / 2 * mp.exp(-e0 * abs(y - xp))
            return (mu - E * mup) ** 2 / om

        pts = sorted({mp.mpf(0), mp.mpf(1) / 2, mp.mpf(1), x, xp})
        return mp.quad(f, [-mp.inf] + pts + [mp.inf])


def blanket_terms_mp(kind, method, eps, eps0=None, k=None, sigma=None, dps=50):
    """(gamma, A0, lam, log_cap) of the blanket's Lemma 2 sum, in mpmath at ``dps`` digits: the bound on
    g(K) = E[sum_{i<=K} L_i]_+ / K is exp(A0 - lam K) / K (Ladjel Lemma 3), capped at exp(log_cap) (-inf when
    L <= 0 a.s.: g = 0).

    Bounds on L = (mu_x(W) - e^eps mu_x'(W)) / omega(W), W ~ omega:
    kind "rr" (Ladjel's target randomizer, T = k targets, sampling sigma; kind "kary", k-ary randomized
    response, is T = k, sigma = k / (e^eps0 + k - 1), computed here): gamma = sigma, L_max = (1 - sigma) T + sigma (1 - e^eps) (Lemma 5,
    sign corrected), L_min = -(1 - sigma) T e^eps + sigma (1 - e^eps), E[L^2] = sigma (2 - sigma) (1 - e^eps)^2
    + (1 - sigma)^2 T (1 + e^2eps) (Lemma 5); cap E[L_+] = L_max_+ / T (E[sum L]_+ <= K E[L_+]).
    kind "generic" (any eps0-LDP randomizer, Balle et al. 2019 Lemma 5.3's generic bounds): gamma = e^-eps0,
    e^-eps0 - e^(eps + eps0) <= L <= e^eps0 - e^(eps - eps0), E[L^2] <= e^eps0 (1 + e^2eps) - 2 e^(eps - 3 eps0);
    cap L_max_+.  kind "laplace" (Balle et al. 2019 Sec. 5.2): gamma = e^(-eps0/2),
    gamma (1 - e^(eps + eps0)) <= L <= gamma (e^eps0 - e^eps), E[L^2] by quadrature at the pair (0, 1)
    (:func:`laplace_blanket_second_moment_mp`); cap L_max_+.
    Hoeffding: E[S_K]_+ <= b^2 / (4 a) exp(-2 K a^2 / b^2), a = -E[L] = e^eps - 1, b = L_max - L_min.
    Bennett (corrected): E[S_K]_+ <= (b_+ / ln(1 + beta)) exp(-(K c / b_+^2) phi(beta)), b_+ = L_max,
    beta = a b_+ / c."""
    import mpmath as mp

    with mp.workdps(dps):
        e = mp.mpf(eps)
        E, a = mp.exp(e), mp.expm1(e)
        if kind in ("rr", "kary"):
            T = mp.mpf(k)
            s = T / (mp.exp(mp.mpf(eps0)) + T - 1) if kind == "kary" else mp.mpf(sigma)
            gamma = s
            lmax = (1 - s) * T - s * a
            lmin = -(1 - s) * T * E - s * a
            c = s * (2 - s) * a * a + (1 - s) ** 2 * T * (1 + E * E)
            cap = lmax / T
        elif kind == "generic":
            e0 = mp.mpf(eps0)
            gamma = mp.exp(-e0)
            lmax = mp.exp(e0) - mp.exp(e - e0)
            lmin = mp.exp(-e0) - mp.exp(e + e0)
            c = mp.exp(e0) * (1 + E * E) - 2 * mp.exp(e - 3 * e0)
            cap = lmax
        else:
            e0 = mp.mpf(eps0)
            gamma = mp.exp(-e0 / 2)
            lmax = gamma * (mp.exp(e0) - E)
            lmin = gamma * (1 - E * mp.exp(e0))
            c = laplace_blanket_second_moment_mp(eps, eps0, dps=max(dps - 20, 20)) if method == "bennett" else None
            cap = lmax
        if lmax <= 0:
            return gamma, mp.mpf(0), mp.mpf(0), -mp.inf
        log_cap = mp.log(cap)
        if a == 0:
            return gamma, mp.inf, mp.mpf(0), log_cap
        if method == "hoeffding":
            b = lmax - lmin
            return gamma, 2 * mp.log(b) - mp.log(4 * a), 2 * a * a / (b * b), log_cap
        beta = a * lmax / c
        return gamma, mp.log(lmax) - mp.log(mp.log1p(beta)), c / (lmax * lmax) * _blanket_phi_mp(beta), log_cap


def _lemma2_windows(N, gamma, lam, A0, log_cap, d):
    """The m' ranges (inclusive) where the terms of the Lemma 2 sum are not negligible: +-(15 sd + 60) around
    the mean of M' ~ Bin(N, gamma), around the mean of its tilt by e^(-lam m') (the uncapped terms), and around
    the m' where the bound meets its cap; plus both ends.  Outside, the terms are below e^-49 of the largest
    (Bernstein's bound on the binomial tails, times at most N ~ e^21 from the 1/K factor)."""
    g = float(gamma)
    if g <= 0.0 or N == 0:
        return [(0, 0)]
    if g >= 1.0:
        return [(N, N)]
    gt = math.exp(math.log(g) - float(lam) - math.log((1 - g) + g * math.exp(-float(lam))))  # the tilted rate
    sd = math.sqrt(N * max(g * (1 - g), gt * (1 - gt))) + 1.0
    centers = [N * g, N * gt]
    if math.isfinite(float(A0)) and math.isfinite(float(log_cap)):
        def excess(K):
            return float(A0) - float(lam) * K - math.log(K) - float(log_cap)

        lo, hi = 1.0 + d, N + 1.0 + d
        if excess(lo) > 0 > excess(hi):
            for _ in range(200):
                mid = 0.5 * (lo + hi)
                lo, hi = (mid, hi) if excess(mid) > 0 else (lo, mid)
            centers.append(lo - 1.0 - d)
    half = 15.0 * sd + 60.0
    ivs = [(0, min(N, 60)), (max(0, N - 60), N)]
    ivs += [(int(max(0, math.floor(c - half))), int(min(N, math.ceil(c + half)))) for c in centers]
    ivs.sort()
    out = [list(ivs[0])]
    for a_, b_ in ivs[1:]:
        if a_ <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], b_)
        else:
            out.append([a_, b_])
    return [tuple(x) for x in out]


def _ld(x):
    """An mpmath number as a NumPy long double (rounded once; a double where long double is a double)."""
    import mpmath as mp

    if not mp.isfinite(x):
        return np.longdouble(float(x))
    return np.longdouble(mp.nstr(x, 25, min_fixed=-mp.inf, max_fixed=mp.inf))


def blanket_lemma2_sum(kind, method, eps, n, d, eps0=None, k=None, sigma=None, block=256):
    """Ladjel Lemma 2 (Balle et al. 2019 Thm 3.1 at d = 0) with the Lemma 3 bound of :func:`blanket_terms_mp`:
    delta <= min(1, sum_{m'=0}^{n-1} Bin(m'; n-1, gamma) min(exp(A0 - lam K) / K, cap)), K = m' + 1 + d.

    The parameters are computed in mpmath at 50 digits and rounded once to NumPy's long double (64-bit
    mantissa on x86); the log-terms over the windows of :func:`_lemma2_windows` in long double: log Bin(m';
    n-1, gamma) from an mpmath log-gamma anchor every ``block`` values and the exact ratios
    log((n-1-m') / (m'+1)) + log(gamma / (1-gamma)) in between (a cumulative sum), then exp, summed pairwise
    in long double and rounded once to float64.  Returns (value, relative error bound): each log-term is off by
    at most e_ld (sum over its steps of (2 + |log ratio| + |log odds|) + sum of |partial sums| + |anchor|
    + |A0| + lam K + log K + |log-term| + 5) (e_ld the long double's epsilon; a double's where long double is
    one), so the sum by the terms' weighted mean of that plus the pairwise sums' (log2(size) + 1) e_ld, plus
    1 ulp of float64 for the final rounding.  The terms left out of the windows only lower the value (< e^-49
    relative)."""
    import mpmath as mp

    gamma, A0, lam, log_cap = blanket_terms_mp(kind, method, eps, eps0=eps0, k=k, sigma=sigma)
    if log_cap == -mp.inf:
        return 0.0, 0.0
    N, d = int(n) - 1, float(d)
    g = float(gamma)
    e_ld = float(np.finfo(np.longdouble).eps)
    ivs = _lemma2_windows(N, gamma, lam, A0, log_cap, d)
    LA0, Llam, Lcap = _ld(A0), _ld(lam), _ld(log_cap)
    parts, errs = [], []
    with mp.workdps(30):
        mg = mp.mpf(gamma)
        lodds = _ld(mp.log(mg) - mp.log1p(-mg)) if 0 < g < 1 else None
        if lodds is not None:
            lgN, lmg, l1mg = mp.loggamma(N + 1), mp.log(mg), mp.log1p(-mg)
        for lo, hi in ivs:
            m = np.arange(lo, hi + 1, dtype=np.longdouble)
            if lodds is None or N == 0:
                lw, e_w = np.zeros_like(m), np.zeros(m.shape)
            else:
                with np.errstate(divide="ignore"):  # the step past m = N is never used
                    lr = np.log((N - m) / (m + 1.0))
                steps = lr + lodds  # log w(m + 1) - log w(m)
                lw = np.empty_like(m)
                e_w = np.empty(m.shape)
                for s in range(0, m.size, block):
                    j = int(m[s])
                    e = min(s + block, m.size)
                    anchor = _ld(lgN - mp.loggamma(j + 1) - mp.loggamma(N - j + 1) + j * lmg + (N - j) * l1mg)
                    part = np.concatenate([[np.longdouble(0)], np.cumsum(steps[s:e - 1])])
                    lw[s:e] = anchor + part
                    # each step: 2 roundings of the ratio, 1 of its log, the rounded log odds; each partial sum
                    # and the anchor's addition: 1 rounding of their magnitude
                    per = np.concatenate([[0.0], np.cumsum(2.0 + np.abs(lr[s:e - 1]).astype(float)
                                                           + abs(float(lodds)))])
                    e_w[s:e] = e_ld * (per + np.cumsum(np.abs(part.astype(float))) + abs(float(anchor)) + 1.0)
            K = m + np.longdouble(1.0) + np.longdouble(d)
            lk = np.log(K)
            if np.isfinite(LA0):
                lg = np.minimum(LA0 - Llam * K - lk, Lcap)
                e_g = e_ld * (abs(float(LA0)) + np.abs((Llam * K).astype(float)) + lk.astype(float) + 4.0)
            else:
                lg, e_g = np.full_like(K, Lcap), np.full(K.shape, e_ld * (abs(float(Lcap)) + 2.0))
            lt = lw + lg
            keep = lt > -745
            if np.any(keep):
                t = np.exp(lt[keep])
                parts.append(np.sum(t))  # pairwise in long double: relative error <= (log2(size) + 1) e_ld
                errs.append(np.sum(t * (e_w[keep] + e_g[keep] + e_ld * (np.abs(lt[keep].astype(float))
                                                                        + math.log2(t.size) + 2.0))))
    tot = np.sum(np.asarray(parts, dtype=np.longdouble)) if parts else np.longdouble(0)
    val = float(tot)
    # the relative error of a sum of positive terms is at most the weighted mean of the terms' own
    err = float(np.sum(np.asarray(errs, dtype=np.longdouble)) / tot) + 4 * e_ld if val > 0 else 0.0
    return min(val, 1.0), err + 2.220446049250313e-16


def blanket_lemma2_sum_mp(kind, method, eps, n, d, eps0=None, k=None, sigma=None, dps=50):
    """The same sum term by term in mpmath at ``dps`` digits over every m' in [0, n - 1] (checks
    :func:`blanket_lemma2_sum`; O(n) mpmath operations)."""
    import mpmath as mp

    gamma, A0, lam, log_cap = blanket_terms_mp(kind, method, eps, eps0=eps0, k=k, sigma=sigma, dps=dps)
    if log_cap == -mp.inf:
        return 0.0
    N = int(n) - 1
    with mp.workdps(dps):
        cap = mp.exp(log_cap)
        w = (1 - gamma) ** N
        odds = gamma / (1 - gamma) if gamma < 1 else None
        tot = mp.mpf(0)
        for m in range(N + 1):
            if odds is None:
                wm = mp.mpf(1) if m == N else mp.mpf(0)
            else:
                wm = w
                w = w * (N - m) / (m + 1) * odds
            K = m + 1 + int(d)
            gk = cap if A0 == mp.inf else min(mp.exp(A0 - lam * K) / K, cap)
            tot += wm * gk
        return float(min(tot, 1))


def shuffled_binary_rr_delta(eps, q, n, d):
    """Exact delta(eps) of the shuffled binary randomized response (the mechanism, not a bound), over every
    pair of neighbouring data sets: user 1 holds a (reports a with probability p = 1 - q > 1/2; the flip
    probability q is passed, since 1 - p loses its digits at a large eps0) or b (reports a with probability q),
    n_a of the other n - 1 users hold a and the rest b (every n_a), and d dummies are a or b with probability
    1/2 each (the blanket of binary randomized response).  The view is the number H of a's: H = X_1 + R,
    R = Bin(n_a, p) + Bin(n - 1 - n_a, q) + Bin(d, 1/2) (np.convolve of SciPy pmfs), delta = max over n_a of
    sum_h (P(h) - e^eps P'(h))_+ (the other direction is the case n_a -> n - 1 - n_a relabelled).  Returns
    (delta, its error bound): every pmf is computed to ~1e-13 relative (SciPy pmfs and convolutions of
    non-negative terms), so the sum is off by at most 2e-12 times the mass where P >= (1 - 1e-11) e^eps P',
    plus 1e-290 for underflow."""
    from scipy.stats import binom

    ee = math.exp(eps)
    p = 1.0 - q
    best, tol = 0.0, 1e-290
    n, d = int(n), int(d)
    dummy = binom.pmf(np.arange(d + 1), d, 0.5)
    for na in range(n):
        nb = n - 1 - na
        R = np.convolve(np.convolve(binom.pmf(np.arange(na + 1), na, p), binom.pmf(np.arange(nb + 1), nb, q)),
                        dummy)
        Rm1 = np.concatenate([[0.0], R])  # R(h - 1), h = 0 .. n + d
        R0 = np.concatenate([R, [0.0]])
        P = p * Rm1 + q * R0
        Q = q * Rm1 + p * R0
        v = float(np.sum(np.maximum(P - ee * Q, 0.0)))
        if v >= best:
            best = v
            tol = 2e-12 * float(np.sum(P[P >= (1 - 1e-11) * ee * Q])) + 1e-290
    return best, tol


def shuffled_kary_rr_delta(eps, eps0, k, n, d):
    """A lower bound on the delta(eps) of the shuffled k-ary randomized response (k >= 3, keep probability
    p = e^eps0 / (e^eps0 + k - 1), r = 1 / (e^eps0 + k - 1) each other value): the exact divergence of the counts
    (H_a, H_b) of two values (post-processing of the view) between user 1 holding a and holding b, the other
    n - 1 users holding a third value c, and d dummies uniform over the k values.  The messages of the others
    and the dummies land in {a, b} with probability 2r (resp. 2/k), then on a or b with probability 1/2:
    with S = H_a + H_b, M ~ Bin(n - 1, 2r) + Bin(d, 2/k) and B(j; m) the Bin(m, 1/2) pmf,
    P(s, j) = (1 - p - r) M(s) B(j; s) + p M(s - 1) B(j - 1; s - 1) + r M(s - 1) B(j; s - 1) (P' swaps p and r).
    Returns (delta, error bound) as :func:`shuffled_binary_rr_delta`."""
    from scipy.stats import binom

    ez = math.exp(eps0)
    p, r, o = ez / (ez + k - 1), 1.0 / (ez + k - 1), (k - 2) / (ez + k - 1)  # o = 1 - p - r
    n, d = int(n), int(d)
    M = np.convolve(binom.pmf(np.arange(n), n - 1, 2 * r), binom.pmf(np.arange(d + 1), d, 2.0 / k))
    S = M.size  # s = 0 .. n - 1 + d for the others; + 1 for user 1
    s = np.arange(S + 1, dtype=np.float64)[:, None]
    j = np.arange(S + 1, dtype=np.float64)[None, :]
    Ms = np.concatenate([M, [0.0]])[:, None]
    Ms1 = np.concatenate([[0.0], M])[:, None]
    with np.errstate(invalid="ignore"):
        B0 = binom.pmf(j, s, 0.5)
        Bm = np.nan_to_num(binom.pmf(j, s - 1, 0.5))  # row s = 0 (no message of user 1 among S = 0): 0
        Bmm = np.nan_to_num(binom.pmf(j - 1, s - 1, 0.5))
    P = o * Ms * B0 + p * Ms1 * Bmm + r * Ms1 * Bm
    Q = o * Ms * B0 + r * Ms1 * Bmm + p * Ms1 * Bm
    ee = math.exp(eps)
    v = float(np.sum(np.maximum(P - ee * Q, 0.0)))
    return v, 2e-12 * float(np.sum(P[P >= (1 - 1e-11) * ee * Q])) + 1e-290
