"""The check-in family's short float64 computations round to the safe side: the strong-composition baseline of
shuffled check-in never below the same computation in mpmath (50 digits: the same delta splits, Chernoff windows,
FMT closed form, subsampling and strong composition), and the Thm 3 lower bound on the RDP never above its
mpmath value.  Scalars only: one compiled program per kernel, shared by every example."""

import mpmath
import numpy as np
from hypothesis import example, given, settings, strategies as st

from amplify_jax import checkin
from amplify_jax.checkin import _baselines as B
from amplify_jax.checkin._weighted import CHERNOFF_GRID

DPS = 50
mpf = mpmath.mpf


def _fmt_mp(e0, n, d):
    """FMT 2021 Thm 3.1 closed form (as ``accounting.approx_dp.fmt_closed_form``), eps0 outside its condition."""
    l4 = mpmath.log(4 / d)
    if l4 <= 0 or mpmath.log(n / (16 * l4)) < e0:
        return e0
    a, c = 8 * mpmath.sqrt(mpmath.exp(e0) * l4 / n), 8 * mpmath.exp(e0) / n
    f = -mpmath.expm1(-e0) / (1 + mpmath.exp(-e0 - mpmath.log1p(a + c)))
    return min(mpmath.log1p(f * (a + c)), e0)


def _strong_composition_mp(n, gamma, eps0, steps, delta):
    """min over the delta splits of sqrt(2 T ln(1/delta')) e_r + T e_r (e^e_r - 1), e_r = ln(1 + q (e^e_s - 1)),
    e_s the FMT closed form at l1 users and delta_m / q, with the exact shares and Chernoff windows."""
    n, g, e0, T, delta = map(mpf, (n, gamma, eps0, steps, delta))
    mu, best = n * g, mpmath.inf
    for f1 in B._SPLIT_F1:
        for f2 in B._SPLIT_F2:
            f1m, f2m = mpf(f1), mpf(f2)
            rnd = (1 - f1m) * delta / T
            d12, dm = f2m / 2 * rnd, (1 - f2m) * rnd
            L = mpmath.log(1 / d12)
            D1 = mpmath.sqrt(2 * L / mu)
            l1 = mpmath.floor((1 - D1) * mu) + 1 if D1 < 1 else mpf(0)
            l2 = mpmath.ceil((1 + (L + mpmath.sqrt(L * L + 8 * L * mu)) / (2 * mu)) * mu) - 1
            q = min(l2 / n, mpf(1))
            es = _fmt_mp(e0, l1, dm / q) if l1 >= 1 else e0
            er = mpmath.log1p(q * mpmath.expm1(es))
            best = min(best, mpmath.sqrt(2 * T * mpmath.log(1 / (f1m * delta))) * er + T * er * mpmath.expm1(er))
    return best


@settings(max_examples=120, deadline=None)
@given(n=st.integers(10, 10**12), gamma=st.floats(1e-4, 0.999), eps0=st.floats(1e-3, 10.0),
       steps=st.integers(1, 10**6), delta=st.floats(1e-15, 0.5))
# two points below mpmath before the fix (by 2.0e-14 and 2.5e-15 relative; delta_m / q near 4 in the first)
@example(n=47982109150, gamma=0.0004468978451165793, eps0=0.053587050969988795, steps=4, delta=0.009557340424212534)
@example(n=5040497804, gamma=0.06641851124309882, eps0=0.546028311646066, steps=1, delta=0.5)
def test_shuffled_strong_composition_never_below_mpmath(n, gamma, eps0, steps, delta):
    got = float(B.shuffled_checkin_strong_composition_epsilon(n=n, gamma=gamma, eps0=eps0, steps=steps, delta=delta))
    with mpmath.workdps(DPS):
        ref = _strong_composition_mp(n, gamma, eps0, steps, delta)
        assert got >= ref and got <= ref * (1 + 1e-11)


ORDERS = np.array([2.0, 3.0, 8.0, 32.0, 256.0])


@settings(max_examples=50, deadline=None)  # 5 orders x 49 Chernoff parameters in mpmath each
@given(n=st.integers(1, 10**15), gamma=st.floats(1e-6, 1.0), eps0=st.floats(1e-4, 700.0))
def test_shuffled_lower_rdp_never_above_mpmath(n, gamma, eps0):
    """Thm 3 (Eq. 8) maximised over the Chernoff grid, then the running maximum over the orders: a lower bound,
    so at or below its exact value, and within its stated 1e-11 rounding down."""
    got = np.asarray(checkin.shuffled_checkin_lower_rdp(ORDERS, n=n, gamma=gamma, eps0=eps0), dtype=np.float64)
    with mpmath.workdps(DPS):
        g, e0, mu = mpf(gamma), mpf(eps0), mpf(n) * mpf(gamma)
        run = -mpmath.inf
        for lam, o in zip(ORDERS, got):
            lam = mpf(lam)
            run = max([run] + [mpmath.log1p(-mpmath.expm1(-mpf(D) ** 2 * mu / (2 + mpf(D))) * lam * (lam - 1) / 2
                                            * g ** 2 * mpmath.expm1(e0) ** 2 / ((1 + mpf(D)) * mu * mpmath.exp(e0)))
                               / (lam - 1) for D in CHERNOFF_GRID])
            assert o <= run and o >= run * (1 - 2e-11)
