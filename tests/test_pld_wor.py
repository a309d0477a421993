"""PLD accountant, the Gaussian under sampling without replacement (replace-one): ``pld.epsilon("wor-gaussian")``.

References, each independent of the package's kernels:
- one step: the dominating pair's hockey-stick divergence by mpmath quadrature of its densities (both copies and
  the atom), and the closed form through advanced joint convexity;
- the lemma behind the pair: every (c, u, v) configuration of a step, integrated on a fine NumPy grid, is below it;
- T steps: the pair's PLD discretised by hand on a 1e-5 / 2e-5 grid, losses rounded up (and down), composed by
  dp_accounting's ``DensePLDPmf`` (its own FFT code): an upper (and lower) bound of the true composed eps;
- the Poisson-subsampled Gaussian at the same sigma and rate (never above, equal at one step), the Gaussian's
  closed form at q = 1, and dp_accounting's RDP accountant (REPLACE_ONE), the sensitivity convention's check.

Batches are of 4 points (or 8) so that the compiled kernels (one per slab size) are shared by the tests.
"""

import functools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.optimize import brentq
from scipy.special import log_ndtr
from scipy.stats import norm

from amplify_jax.accounting import pld

mp = pytest.importorskip("mpmath")


# ----------------------------------------------------------------------------------------------------------
# References


def _x_of(t, s, q):
    """The x with log(1 - q + q e^{(2x - 1) / (2 s^2)}) = t (t > 0): the loss's inverse on copy A."""
    return s * s * np.log1p(np.expm1(t) / q) + 0.5


def _one_step_delta_mp(eps, s, q, dps=30):
    """H_{e^eps}(P* || Q*) of the pair (see ``_mechanisms.WorGaussianLoss``), by mpmath quadrature of its
    densities: copy A (M against N0 on x > 1/2), copy B (N0 against M on x > 1/2), the atom at loss 0; each
    copy integrated over the exact region where its integrand is positive (the density ratio is monotone)."""
    mp.mp.dps = dps
    s, q, a = mp.mpf(s), mp.mpf(q), mp.e ** mp.mpf(eps)
    half = mp.mpf(1) / 2
    n0 = lambda x: mp.npdf(x, 0, s)  # noqa: E731
    m = lambda x: (1 - q) * mp.npdf(x, 0, s) + q * mp.npdf(x, 1, s)  # noqa: E731
    # copy A: M - a N0 > 0 where 1 - q + q e^g > a; copy B: N0 - a M > 0 where 1 - q + q e^g < 1 / a
    xa = max(half, s * s * mp.log((a - 1 + q) / q) + half) if a - 1 + q > 0 else half  # else all of x > 1/2
    total = mp.quad(lambda x: m(x) - a * n0(x), [xa, xa + s, xa + 4 * s, xa + 16 * s, mp.inf])
    if 1 / a - 1 + q > 0:
        xb = s * s * mp.log((1 / a - 1 + q) / q) + half
        if xb > half:
            total += mp.quad(lambda x: n0(x) - a * m(x), [half, (half + xb) / 2, xb])
    c = (1 - q) * mp.erf(1 / (2 * mp.sqrt(2) * s))
    return total + c * max(1 - a, 0)


def _one_step_delta_closed(eps, s, q):
    """The same for eps >= 0 in closed form: q H_{a'}(N(1, s^2) || N(0, s^2)), a' = 1 + (e^eps - 1) / q (Balle,
    Barthe, Gaboardi 2018, Thm. 2), with the Gaussian's hockey-stick divergence (Balle & Wang 2018, Thm. 8)."""
    s, q = mp.mpf(s), mp.mpf(q)
    ap = 1 + (mp.e ** mp.mpf(eps) - 1) / q
    la = mp.log(ap)
    return q * (mp.ncdf(1 / (2 * s) - s * la) - ap * mp.ncdf(-1 / (2 * s) - s * la))


def _gauss_eps(mu, delta):
    """eps of the Gaussian mechanism N(mu, 1) vs N(0, 1) at delta (Balle & Wang 2018, Thm. 8)."""
    def f(e):
        a, b = log_ndtr(-e / mu + mu / 2), e + log_ndtr(-e / mu - mu / 2)
        return np.exp(a) * -np.expm1(b - a) - delta

    return brentq(f, 0.0, 1e4, xtol=1e-14, rtol=1e-14)


def _pair_pmf(s, q, disc, pessimistic, zmax=12.0):
    """The pair's PLD on the grid k * disc, by SciPy's normal tails: each bin (t_{k-1}, t_k]'s P*-mass at t_k
    (pessimistic: losses rounded up, the lower tail at t_0, the upper at +inf) or at t_{k-1} (optimistic: rounded
    down, the lower tail dropped, the upper at the last point): dp_accounting's ``DensePLDPmf``."""
    from dp_accounting.pld import pld_pmf

    lmax = np.log1p(q * np.expm1((1 + 2 * zmax * s) / (2 * s * s)))  # l(1 + zmax s)
    lmin = -np.log1p(q * np.expm1((2 * zmax * s - 1) / (2 * s * s)))  # -l(zmax s)
    k0, k1 = int(np.floor(lmin / disc)), int(np.ceil(lmax / disc))
    t = np.arange(k0, k1 + 1) * disc
    neg, pos = t[t < 0], t[t >= 0]
    F = norm.sf(_x_of(-neg, s, q) / s)  # P*(L <= t), t < 0: copy B's N0 beyond x(-t)
    xp = np.where(pos > 0, _x_of(np.where(pos > 0, pos, 1.0), s, q), 0.5)
    S = (1 - q) * norm.sf(xp / s) + q * norm.sf((xp - 1) / s)  # P*(L > t), t >= 0: copy A's M beyond x(t)
    bins = np.concatenate([[F[0]], np.diff(F), [1.0 - S[0] - F[-1]], -np.diff(S)])
    assert bins.shape == t.shape and bins.min() > -1e-17
    bins = np.maximum(bins, 0.0)
    if pessimistic:
        return pld_pmf.DensePLDPmf(disc, k0, bins, S[-1], True)
    return pld_pmf.DensePLDPmf(disc, k0, np.concatenate([bins[1:], [S[-1]]]), 0.0, False)


# ----------------------------------------------------------------------------------------------------------
# The pair


def _grid_hockey(p, qd, eps, x):
    """int (p - e^eps q)_+ on a uniform grid (trapezoid), densities given on it."""
    return np.trapezoid(np.maximum(p - np.exp(eps) * qd, 0.0), x)


def test_pair_dominates_every_configuration_of_a_step():
    # the lemma of WorGaussianLoss's docstring: for every triple c, u, v with pairwise distances <= 1 (the
    # sensitivity), H((1 - q) N(c) + q N(u) || (1 - q) N(c) + q N(v)) <= the pair's, at every eps (negative too);
    # equal for eps >= 0 where c = v (the data set whose other records all equal x'), and the pair with a shared
    # centre, c = 0, u, v = +-1/2, is below it (it would under-report)
    x = np.linspace(-16.0, 17.0, 200_001)
    pts = np.linspace(-1.0, 1.0, 9)
    triples = [(0.0, u, v) for u in pts for v in pts if abs(u - v) <= 1 + 1e-12]  # c = 0: |u|, |v| <= 1
    for s, q in ((0.7, 0.05), (2.0, 0.5)):
        dens = {float(m): norm.pdf(x, m, s) for m in pts}
        phi = lambda m: dens[float(m)]  # noqa: E731
        for eps in (-1.0, -0.2, 0.0, 0.1, 0.5, 1.0, 2.0):
            star = float(_one_step_delta_mp(eps, s, q))
            worst = 0.0
            for c, u, v in triples:
                h = _grid_hockey((1 - q) * phi(c) + q * phi(u), (1 - q) * phi(c) + q * phi(v), eps, x)
                assert h <= star + 1e-9, (s, q, eps, c, u, v, h, star)
                worst = max(worst, h)
            if eps >= 0:
                assert worst >= star - 1e-9  # attained: c = v, u at distance 1
                centred = _grid_hockey((1 - q) * phi(0) + q * phi(0.5), (1 - q) * phi(0) + q * phi(-0.5), eps, x)
                assert eps == 0 or centred < star * (1 - 1e-3)
        # a triangle off the line (an equilateral one, side 1), on a 2-D grid
        g = np.linspace(-9 * s - 1, 9 * s + 1, 1201)
        X, Y = np.meshgrid(g, g, indexing="ij")
        def n2(mx, my):  # noqa: E306
            return norm.pdf(X, mx, s) * norm.pdf(Y, my, s)
        c, u, v = (0.0, 0.0), (1.0, 0.0), (0.5, np.sqrt(3) / 2)
        P = (1 - q) * n2(*c) + q * n2(*u)
        Q = (1 - q) * n2(*c) + q * n2(*v)
        for eps in (0.0, 0.5, 1.0):
            h = np.trapezoid(np.trapezoid(np.maximum(P - np.exp(eps) * Q, 0.0), g, axis=1), g)
            assert h <= float(_one_step_delta_mp(eps, s, q)) + 1e-6


def test_one_step_against_quadrature():
    sigma = np.array([1.0, 2.0, 0.8, 5.0])
    q = np.array([0.01, 0.1, 0.3, 0.5])
    delta = np.array([1e-5, 1e-6, 1e-5, 1e-8])
    r = pld.epsilon("wor-gaussian", sigma=sigma, q=q, steps=1, delta=delta)
    assert np.all(r.status == 0)
    for i, (s, qq, d) in enumerate(zip(sigma, q, delta)):
        # the root of the closed form, checked on the pair's own densities (two independent routes agree)
        exact = brentq(lambda e: float(_one_step_delta_closed(e, s, qq)) - d, 0.0, 60.0, xtol=1e-14, rtol=1e-14)
        assert abs(float(_one_step_delta_mp(exact, s, qq)) / d - 1) < 1e-9
        assert r.epsilon_lower[i] <= exact <= r.epsilon[i], (i, exact)
        assert r.epsilon[i] <= exact * (1 + 1e-3)
    # and the delta side at the exact eps of the first two points
    e0 = [brentq(lambda e: float(_one_step_delta_closed(e, s, qq)) - d, 0.0, 60.0, xtol=1e-14, rtol=1e-14)
          for s, qq, d in zip(sigma[:2], q[:2], delta[:2])]
    dd = pld.delta("wor-gaussian", sigma=sigma[:2], q=q[:2], steps=1, epsilon=e0)
    assert np.all(dd.delta_lower <= delta[:2] * (1 + 1e-9)) and np.all(dd.delta >= delta[:2] * (1 - 1e-9))


def test_composed_against_a_finer_independent_grid():
    # the pair's PLD rounded up / down on a grid 33-66x finer than ours (2^14 points), composed by dp_accounting's
    # code: [lo_ref, up_ref] holds the true eps of the composed pair; ours is never below lo_ref (soundness), our
    # lower value never above up_ref, and ours within 1e-3 of up_ref
    pytest.importorskip("dp_accounting")
    cases = [(2.0, 0.1, 10, 1e-6, 1e-5), (1.0, 0.01, 100, 1e-5, 2e-5)]
    r = pld.epsilon("wor-gaussian", sigma=[c[0] for c in cases], q=[c[1] for c in cases],
                    steps=[c[2] for c in cases], delta=[c[3] for c in cases])
    for i, (s, q, t, d, disc) in enumerate(cases):
        up = _pair_pmf(s, q, disc, True).self_compose(t).get_epsilon_for_delta(d)
        lo = _pair_pmf(s, q, disc, False).self_compose(t).get_epsilon_for_delta(d)
        assert lo <= up <= lo + t * disc * (1 + 1e-6)
        assert r.epsilon[i] >= lo and r.epsilon_lower[i] <= up, (i, lo, up, r.epsilon[i], r.epsilon_lower[i])
        assert r.epsilon[i] <= up * (1 + 1e-3)


def test_never_below_poisson_equal_at_one_step_and_the_gaussian_at_q1():
    # Poisson (add/remove) at the same sigma and rate: its remove pair is a configuration of every step of the
    # same data set (c = v), so the true eps of sampling without replacement is never below it; at one step the
    # two pairs' deltas are equal for eps >= 0 (WorGaussianLoss), so the eps agree up to the grids
    sigma = np.array([1.0, 1.0, 2.0, 0.8])
    q = np.array([0.01, 0.01, 0.1, 0.05])
    steps = np.array([1, 100, 10, 30])
    delta = np.array([1e-5, 1e-5, 1e-6, 1e-5])
    w = pld.epsilon("wor-gaussian", sigma=sigma, q=q, steps=steps, delta=delta)
    p = pld.epsilon("poisson-gaussian", sigma=sigma, q=q, steps=steps, delta=delta)
    assert np.all(w.epsilon >= p.epsilon_lower)
    assert abs(w.epsilon[0] / p.epsilon[0] - 1) < 1e-3
    # q = 1: the Gaussian mechanism N(sensitivity, sigma^2) vs N(0, sigma^2), composed: mu = sqrt(T) sens / sigma
    sens = np.array([1.0, 2.0, 2.0, 1.0])
    sg = np.array([2.0, 2.0, 5.0, 0.8])
    steps = np.array([1, 10, 100, 3])
    g = pld.epsilon("wor-gaussian", sigma=sg, q=1.0, steps=steps, delta=1e-5, sensitivity=sens)
    exact = np.array([_gauss_eps(np.sqrt(t) * d / s, 1e-5) for s, t, d in zip(sg, steps, sens)])
    assert np.all(g.epsilon_lower <= exact) and np.all(exact <= g.epsilon)
    np.testing.assert_allclose(g.epsilon, exact, rtol=2e-3)
    # the sensitivity is sigma's unit: (sigma, sensitivity) and (sigma / sensitivity, 1) are the same point
    same = pld.epsilon("wor-gaussian", sigma=sg / sens, q=1.0, steps=steps, delta=1e-5)
    np.testing.assert_allclose(g.epsilon, same.epsilon, rtol=1e-12)


def test_sensitivity_convention_is_dp_accountings():
    # dp_accounting's RDP accountant (REPLACE_ONE; Wang-Balle-Kasiviswanathan) takes the noise multiplier over
    # the replace-one sensitivity, as "wor-gaussian" does: at one step the pair is attained (c = v), so our lower
    # value is below any sound bound of the mechanism, theirs included; with sensitivity 2 it is not (a factor 2
    # in the convention would show)
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting import privacy_accountant
    from dp_accounting.rdp import rdp_privacy_accountant

    n = np.array([1000, 1000, 10000, 60000])
    m = np.array([10, 100, 500, 256])
    sigma = np.array([1.0, 2.0, 0.8, 1.5])
    delta = np.array([1e-5, 1e-6, 1e-5, 1e-5])
    ref = []
    for nn, mm, s, d in zip(n, m, sigma, delta):
        acc = rdp_privacy_accountant.RdpAccountant(
            neighboring_relation=privacy_accountant.NeighboringRelation.REPLACE_ONE)
        acc.compose(dpa.SampledWithoutReplacementDpEvent(int(nn), int(mm), dpa.GaussianDpEvent(float(s))))
        ref.append(acc.get_epsilon(float(d)))
    ref = np.array(ref)
    ours = pld.epsilon("wor-gaussian", sigma=sigma, q=m / n, steps=1, delta=delta)
    assert np.all(ours.epsilon_lower <= ref)
    doubled = pld.epsilon("wor-gaussian", sigma=sigma, q=m / n, steps=1, delta=delta, sensitivity=2.0)
    assert np.any(doubled.epsilon_lower > ref)


@settings(max_examples=6, deadline=None)
@given(s=st.floats(0.6, 10.0), q=st.floats(1e-3, 0.5), t=st.integers(1, 2000))
def test_monotone_in_sigma_and_epsilon(s, q, t):
    eps = np.array([0.1, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0])
    d = pld.delta("wor-gaussian", sigma=s, q=q, steps=t, epsilon=eps)
    assert np.all(np.diff(d.delta) <= 1e-12) and np.all(d.delta_lower <= d.delta)
    d2 = pld.delta("wor-gaussian", sigma=s * 1.1, q=q, steps=t, epsilon=eps)
    assert np.all(d2.delta <= d.delta * (1 + 1e-6) + 1e-12)


# ----------------------------------------------------------------------------------------------------------
# The accountant and the front doors


def test_accountant_takes_dp_accountings_event():
    dpa = pytest.importorskip("dp_accounting")
    ev = dpa.SelfComposedDpEvent(dpa.SampledWithoutReplacementDpEvent(1000, 10, dpa.GaussianDpEvent(1.0)), 100)
    # read as the Gaussian at sigma 1 on a fraction 10 / 1000, 100 times; our own vocabulary reads the same
    def read(e):
        return [(k, float(a), float(q), float(c)) for k, a, q, c in pld.Accountant().compose(e)._items]

    assert read(ev) == [("wor-gaussian", 1.0, 0.01, 100.0)]
    assert read(pld.SelfComposed(pld.SampledWithoutReplacement(1000, 10, pld.Gaussian(1.0)), 100)) == read(ev)
    # an unsampled Gaussian release composes with it (its pair is the same under every relation); a batch of 0
    # records is a no-op
    acc = pld.Accountant().compose(ev).compose(dpa.GaussianDpEvent(20.0)).compose(
        dpa.SampledWithoutReplacementDpEvent(1000, 0, dpa.GaussianDpEvent(1.0)))
    assert [k for k, _, _, _ in acc._items] == ["wor-gaussian", "gaussian"]
    alone = pld.epsilon("wor-gaussian", sigma=[1.0, 1.0], q=0.01, steps=100, delta=1e-5).epsilon
    both = acc.epsilon(1e-5)
    assert both.status[0] == 0 and both.epsilon[0] > alone[0] and both.epsilon_lower[0] <= both.epsilon[0]
    assert acc.get_epsilon(1e-5) == float(both.epsilon[0])


@pytest.mark.parametrize("event, name", [
    (lambda d: d.SampledWithoutReplacementDpEvent(0, 0, d.GaussianDpEvent(1.0)), "source_dataset_size"),
    (lambda d: d.SampledWithoutReplacementDpEvent(100, 101, d.GaussianDpEvent(1.0)), "sample_size"),
    (lambda d: d.SampledWithoutReplacementDpEvent(100, 2.5, d.GaussianDpEvent(1.0)), "sample_size"),
    (lambda d: d.SampledWithoutReplacementDpEvent(100, 10, d.LaplaceDpEvent(1.0)), "LaplaceDpEvent"),
    (lambda d: d.SampledWithoutReplacementDpEvent(100, 10, d.GaussianDpEvent(0.001)), "sigma"),
    (lambda d: d.PoissonSampledDpEvent(0.1, d.SampledWithoutReplacementDpEvent(100, 10, d.GaussianDpEvent(1.0))),
     "Nested"),
    (lambda d: d.ComposedDpEvent([d.SampledWithoutReplacementDpEvent(100, 10, d.GaussianDpEvent(1.0)),
                                  d.PoissonSampledDpEvent(0.1, d.GaussianDpEvent(1.0))]), "relation"),
])
def test_accountant_bad_events_name_the_problem(event, name):
    dpa = pytest.importorskip("dp_accounting")
    with pytest.raises(ValueError, match=name):
        pld.Accountant().compose(event(dpa))


def test_accountant_refuses_poisson_after_wor():
    acc = pld.Accountant().compose(pld.SampledWithoutReplacement(100, 10, pld.Gaussian(1.0)))
    with pytest.raises(ValueError, match="relation"):
        acc.compose(pld.PoissonSampled(0.1, pld.Gaussian(1.0)))
    assert len(acc._items) == 1  # the refused event was not added


@pytest.mark.parametrize("kw, name", [
    (dict(sigma=0.01, q=0.1, steps=10, delta=1e-5), "sigma"),
    (dict(sigma=float("nan"), q=0.1, steps=10, delta=1e-5), "sigma"),
    (dict(sigma=1.0, q=1.5, steps=10, delta=1e-5), "q"),
    (dict(sigma=1.0, q=0.1, steps=1.5, delta=1e-5), "steps"),
    (dict(sigma=1.0, q=0.1, steps=10, delta=0.0), "delta"),
    (dict(sigma=1.0, q=0.1, steps=10, delta=1e-5, sensitivity=0.0), "sensitivity"),
    (dict(sigma=1.0, q=0.1, steps=10, delta=1e-5, sensitivity=float("inf")), "sensitivity"),
    (dict(sigma=0.08, q=0.1, steps=10, delta=1e-5, sensitivity=2.0), "sigma / sensitivity"),
    (dict(sigma=[1.0, 2.0], q=0.1, steps=10, delta=1e-5, sensitivity=[1.0, 2.0, 3.0]), "sensitivity"),
    (dict(sigma=1.0, steps=10, delta=1e-5), "q"),
    (dict(sigma=1.0, q=0.1, steps=10, delta=1e-5, scale=2.0), "scale"),
])
def test_bad_input_names_the_parameter(kw, name):
    with pytest.raises(ValueError, match=name):
        pld.epsilon("wor-gaussian", **kw)


def test_registry_bound():
    from amplify_jax import bounds

    r = bounds.evaluate("pld.wor-gaussian", sigma=[2.0, 4.0], q=0.01, steps=100, delta=1e-5, sensitivity=2.0)
    d = pld.epsilon("wor-gaussian", sigma=[2.0, 4.0], q=0.01, steps=100, delta=1e-5, sensitivity=2.0)
    np.testing.assert_array_equal(r.epsilon, d.epsilon)
    np.testing.assert_array_equal(r.outputs["epsilon_lower"], d.epsilon_lower)
    with pytest.raises(ValueError, match="sensitivity"):
        bounds.evaluate("pld.wor-gaussian", sigma=2.0, q=0.01, steps=100, delta=1e-5, sensitivity=0.0)


# ----------------------------------------------------------------------------------------------------------
# The RDP bound of the same mechanism (rdp.wor-subsampled-gaussian): its compiled programs (issue 25)


def test_wor_rdp_compiles_one_program_per_size_and_keeps_its_values():
    """Issue 25: the WBK Thm 9 curve of the Gaussian compiles its kernel only, one program per batch size and top
    order (it compiled 23 small programs of eager jnp operations at one point, 11 at a new size): new q, sigma
    and orders of the same top compile nothing; its values are, bit for bit, those of the two public steps it
    combines (``without_replacement_rdp`` at the integer orders, then ``interpolate_integer_rdp``)."""
    from _compiles import compilations

    from amplify_jax import bounds
    from amplify_jax.accounting import rdp

    ev = functools.partial(bounds.evaluate, "rdp.wor-subsampled-gaussian")
    for n in (1, 3):  # a top order of 29 that no other test asks for: each call a new program (23 and 11 on da60679)
        with compilations() as got:
            ev(orders=[2.0, 8.0, 29.0], q=np.linspace(0.01, 0.05, n), sigma=1.0)
        assert len(got) <= 1, (n, got)
    with compilations() as got:
        r = ev(orders=[3.0, 16.0, 29.0], q=[[0.1], [0.3]], sigma=[0.7, 1.5, 4.0])  # 6 points: the same chunk size
    assert len(got) == 0, got
    assert r.rdp.shape == (2, 3, 3) and np.all(np.diff(r.rdp, axis=-1) > 0)

    a = np.array([1.5, 2.0, 2.5, 7.3, 32.0])
    for q, s in ((np.array([[0.0], [1e-4], [0.05], [1.0]]), np.array([0.6, 1.0, 20.0])), (0.02, 1.3)):
        shape = np.broadcast_shapes(np.shape(q), np.shape(s))
        base = np.arange(2, 33, dtype=np.float64) * np.broadcast_to(1.0 / s, shape)[..., None] ** 2 / 2.0
        two_steps = rdp.interpolate_integer_rdp(a, rdp.without_replacement_rdp(base, q=np.broadcast_to(q, shape)))
        got = rdp.subsampled_gaussian_wor_rdp(a, q=q, sigma=s)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(two_steps))
