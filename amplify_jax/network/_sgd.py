"""Private SGD in network DP, Cyffers & Bellet Section 4.2 and App. F (Thm 4 Eq. 7, Lemma 1 and Remark 5), and
the baselines and calibrations of Sec. 5.2 (local DP-SGD, central DP-SGD by RDP and along Bassily et al.).

Where the authors' public scripts differ from the paper, the paper is followed (docs/errata.md#e-network-authors-code):
Lemma 1's factor 4 (the scripts use 2; :func:`network_sgd_rdp`), gradient sensitivity 2L for replace-one adjacency
(the scripts use L; :func:`local_sgd_epsilon` and the other accountants), and the central baseline "along
Bassily et al." is our derivation (the scripts use a closed form; :func:`central_sgd_bassily_epsilon`)."""

from __future__ import annotations

import numpy as np
import jax
import jax.numpy as jnp

from .._core import validate as V
from .._core.domains import check_params
from ..accounting.approx_dp import advanced_composition, analytic_gaussian_epsilon, subsampled_epsilon
from .._core.numerics import float64_jit
from ..accounting.calibrate import invert_monotone
from ..accounting.conversions import rdp_epsilon_terms
from ..accounting.rdp import without_replacement_rdp_kernel
from ._common import NetworkBound, SgdCalibration, SgdEpsilon, _b, _colluders, _up
from ._composition import _chernoff_count
from . import _params as P


#: sigma and lipschitz, each, that the DP-SGD accountants of this module take (:func:`network_sgd_rdp`,
#: :func:`network_sgd_epsilon`, :func:`local_sgd_epsilon`, :func:`central_sgd_epsilon`,
#: :func:`central_sgd_bassily_epsilon`): their squares stay finite and nonzero (sigma = lipschitz = 1e-300 is 0 / 0).
#: The ends of the Params ``_params.SGD_SIGMA`` and ``_params.SGD_LIPSCHITZ`` (the same domain).
SGD_SCALE_RANGE = (P.SGD_SIGMA.domain.lo, P.SGD_SIGMA.domain.hi)
#: sigma / lipschitz (the noise per unit Lipschitz constant) the same accountants take (``_params.SGD_NOISE_RATIO``).
#: Below ~1e-8 Lemma 1's admissible orders (1, alpha_max], alpha_max - 1 ~ (sigma / L)^2 / 2, vanish in float64
#: (network_sgd_epsilon answered +inf; the bound is finite), and at 1e-300 every accountant answered +inf; at 1e300
#: Lemma 1's coefficient underflows (+inf at sigma = 1e300).  Between 1e-6 and 1e100 every value is finite.  The
#: registry's domains (sigma in [1e-3, 1e6], lipschitz in [1e-6, 1e3]) reach 1e-6 .. 1e12.
SGD_NOISE_RANGE = (P.SGD_NOISE_RATIO.lo, P.SGD_NOISE_RATIO.hi)


def _sgd_noise(s, L):
    """The joint check of sigma and lipschitz (each already checked by its Param): sigma / lipschitz in
    :data:`SGD_NOISE_RANGE` (``_params.SGD_NOISE_RATIO``), naming both at the first offending point."""
    sb, lb = np.broadcast_arrays(s, L)
    r = sb / lb
    bad = ~P.SGD_NOISE_RATIO.contains(r)
    if np.any(bad):
        i = tuple(int(j) for j in np.argwhere(bad)[0]) if bad.ndim else ()
        raise ValueError(f"Expected sigma / lipschitz in [{SGD_NOISE_RANGE[0]:g}, {SGD_NOISE_RANGE[1]:g}] "
                         f"(network.SGD_NOISE_RANGE), got sigma={sb[i].item()!r}, lipschitz={lb[i].item()!r}.")
    return s, L


@float64_jit
def _thm4_kernel(n_users, T, eps, delta, dh, c):
    n = n_users / c
    nu, ok = _chernoff_count(T / n, -jnp.log(dh))
    l = -jnp.log(delta)
    q = jnp.maximum(2.0 * nu * _log_ratio(n_users, c) / n, 2.0 * l)
    out = jnp.sqrt(2.0 * q * l) * eps / jnp.sqrt(jnp.log(1.25 / delta))
    # App. F's order alpha = sigma sqrt(ln(1/delta)) / (L sqrt q) must satisfy alpha >= 2 and
    # sigma >= L sqrt(2 alpha (alpha - 1)), with sigma / L = sqrt(8 ln(1.25/delta)) / eps.
    s_over_l = jnp.sqrt(8.0 * jnp.log(1.25 / delta)) / eps
    alpha = s_over_l * jnp.sqrt(l / q)
    cond = (alpha >= 2.0) & (s_over_l >= jnp.sqrt(2.0 * alpha * (alpha - 1.0)))
    return NetworkBound(_up(out), _up(delta + dh), ok & cond)  # rounded up (CLOSED_FORM_MARGIN)


def sgd_theorem4_bound(*, n, steps, eps0, delta, delta_hat, colluders=1):
    """Network DP of private SGD on the complete graph, Cyffers & Bellet Thm 4 (Eq. 7), closed form.

    T = ``steps`` steps; each adds N(0, 8 L^2 ln(1.25/delta) / eps0^2) noise (eps0-LDP per step, the paper's eps,
    sensitivity 2L).  With N_u = T/n + sqrt(3 T/n ln(1/delta_hat)) and q = max(2 N_u ln n / n, 2 ln(1/delta)),
    eps' = sqrt(2 q ln(1/delta)) eps0 / sqrt(ln(1.25/delta)) and the guarantee is (eps', delta + delta_hat).
    Requires eps0 < 1 and delta < 1/2 (refused otherwise).  ``valid`` is False where App. F's order
    alpha = sigma sqrt(ln(1/delta)) / (L sqrt q) misses alpha >= 2 or Lemma 1's constraint, or where the
    Chernoff form is replaced by the general one; use :func:`network_sgd_epsilon` there (Remark 5).
    """
    nn, tt, e, d, dh = check_params((P.N, P.STEPS_T, P.EPS0_GAUSS, P.SGD_DELTA, P.DELTA_HAT), broadcast=False, n=n,
                                    steps=steps, eps0=eps0, delta=delta, delta_hat=delta_hat)
    cc = _colluders(nn, colluders)
    shape = V.broadcastable(n=nn, steps=tt, eps0=e, delta=d, delta_hat=dh, colluders=cc)
    nb, tb, eb, db, dhb, cb = _b(shape, nn, tt, e, d, dh, cc)
    return _thm4_kernel(nb, tb, eb, db, dhb, cb)


def _refuse_lemma1(s, L, alpha, alpha_name):
    """Refuse orders where Lemma 1 says nothing, sigma < L sqrt(2 alpha (alpha - 1)) (s, L and alpha broadcast
    together), naming sigma, lipschitz and the order at the first such point."""
    sb, lb, ab = np.broadcast_arrays(s, L, alpha)
    need = lb * np.sqrt(2.0 * ab * (ab - 1.0))
    bad = sb < need
    if np.any(bad):
        i = tuple(int(j) for j in np.argwhere(bad)[0]) if bad.ndim else ()
        raise ValueError(f"Expected sigma >= L sqrt(2 alpha (alpha - 1)) at every order (Lemma 1), got "
                         f"sigma={sb[i].item()!r}, lipschitz={lb[i].item()!r} at {alpha_name}={ab[i].item()!r} "
                         f"(needs sigma >= {need[i].item()!r}).")


def _log_ratio(n, c):
    """ln(n / c) as log1p((n - c) / c): n - c is exact (integers), so no half ulp of n / c is lost where n / c is
    near 1 (colluders; ln(n / c) lost up to ~2e-11 relative there)."""
    return jnp.log1p((n - c) / c)


def _lemma1_coef(sigma, n, tu, L, c=1.0):
    """Lemma 1 at n / c users (c colluders, Sec. 4.3): network RDP (alpha, k alpha) with
    k = 4 T_u L^2 ln(n/c) / (sigma^2 n/c), rounded up by ``CLOSED_FORM_MARGIN`` (1 + 8 ulps: its seven roundings
    and a log1p, and the product k alpha after)."""
    return _up(4.0 * tu * L * L * _log_ratio(n, c) / (sigma * sigma * (n / c)))


def _alpha_max(sigma, L):
    """Largest alpha with sigma >= L sqrt(2 alpha (alpha - 1)): (1 + sqrt(1 + 2 sigma^2 / L^2)) / 2, rounded down."""
    r = sigma / L
    a = 0.5 * (1.0 + jnp.sqrt(1.0 + 2.0 * r * r))
    a = a * (1.0 - 4e-16)
    return jnp.where(2.0 * a * (a - 1.0) <= r * r, a, 1.0 + (a - 1.0) * (1.0 - 1e-12))


_N_ALPHA = 96


def _best_linear_rdp_epsilon(c, log_delta, alpha_max, method):
    """min over alpha in (1, alpha_max] of the RDP->DP conversion of the linear curve c alpha.

    Evaluated on a geometric grid of alpha - 1 in (1e-6 (alpha_max - 1), alpha_max - 1] plus a golden-section
    refinement around the best grid point; every evaluated order is admissible, so the minimum is a valid bound.
    For ``method="mironov"`` the optimum is also available in closed form (alpha* = 1 + sqrt(ln(1/delta)/c),
    clipped to alpha_max) and included.
    """
    am1 = alpha_max - 1.0
    t = jnp.linspace(-14.0, 0.0, _N_ALPHA)
    alphas = 1.0 + am1[..., None] * jnp.exp(t)
    e = rdp_epsilon_terms(alphas, c[..., None] * alphas, log_delta[..., None], method)
    i = jnp.argmin(e, axis=-1)
    best = jnp.take_along_axis(e, i[..., None], -1)[..., 0]
    best_a = jnp.take_along_axis(alphas, i[..., None], -1)[..., 0]
    # golden section on log(alpha - 1) between the neighbours of the best grid point
    step = t[1] - t[0]
    lo_t = t[0] + step * jnp.maximum(i - 1, 0)
    hi_t = t[0] + step * jnp.minimum(i + 1, _N_ALPHA - 1)
    g = 0.6180339887498949

    def f(tt):
        a = 1.0 + am1 * jnp.exp(tt)
        return rdp_epsilon_terms(a, c * a, log_delta, method), a

    def body(_, s):
        a, b, be, ba = s
        x1 = b - g * (b - a)
        x2 = a + g * (b - a)
        f1, a1 = f(x1)
        f2, a2 = f(x2)
        left = f1 <= f2
        na = jnp.where(left, a, x1)
        nb = jnp.where(left, x2, b)
        fm = jnp.where(left, f1, f2)
        am = jnp.where(left, a1, a2)
        better = fm < be
        return na, nb, jnp.where(better, fm, be), jnp.where(better, am, ba)

    _, _, best, best_a = jax.lax.fori_loop(0, 40, body, (lo_t, hi_t, best, best_a))
    if method == "mironov":
        a_star = jnp.minimum(1.0 + jnp.sqrt(-log_delta / c), alpha_max)
        e_star = rdp_epsilon_terms(a_star, c * a_star, log_delta, method)
        better = e_star < best
        best = jnp.where(better, e_star, best)
        best_a = jnp.where(better, a_star, best_a)
    return best, best_a


def network_sgd_rdp(orders, *, sigma, n, contributions, lipschitz=1.0, colluders=1):
    """Lemma 1 (Cyffers & Bellet App. F): Algorithm 4 is (alpha, 4 T_u alpha L^2 ln n / (sigma^2 n))-network RDP
    for every alpha > 1 with sigma >= L sqrt(2 alpha (alpha - 1)) (weak convexity, Feldman et al. 2018 Prop. 4
    with c = 1, and amplification by iteration, their Thm 23).

    The factor is the paper's 4; the authors' script uses 2 (docs/errata.md#e-network-authors-code).

    Returns the curve at ``orders`` (trailing axis; orders up to ``rdp.MAX_ORDER``).  An order violating the
    constraint for some sigma is a ValueError naming sigma (the lemma says nothing there).  ``colluders``: Sec. 4.3,
    n -> n / c.  The domains are network/_params.py's: sigma, lipschitz in :data:`SGD_SCALE_RANGE`, sigma /
    lipschitz in :data:`SGD_NOISE_RANGE`, contributions in [0, 10**12] (0: the curve is 0).
    """
    a = P.ORDERS.domain.check("orders", orders)  # up to rdp.MAX_ORDER, the registry's orders domain
    s, nn, tu, L = check_params((P.SGD_SIGMA, P.N, P.RDP_CONTRIBUTIONS, P.SGD_LIPSCHITZ), broadcast=False,
                                sigma=sigma, n=n, contributions=contributions, lipschitz=lipschitz)
    _sgd_noise(s, L)  # sigma / lipschitz in SGD_NOISE_RANGE
    cc = _colluders(nn, colluders)
    shape = V.broadcastable(sigma=s, n=nn, contributions=tu, lipschitz=L, colluders=cc)
    _refuse_lemma1(*(np.broadcast_to(x, shape)[..., None] for x in (s, L)), a, "orders")
    return _sgd_rdp_kernel(*_b(shape, s, nn, tu, L, cc), a)


@float64_jit
def _sgd_rdp_kernel(sigma, n, tu, L, c, alpha):
    """Lemma 1's curve c alpha at n / c users, one program per shape (issue 25; its eager operations were a
    small program each)."""
    return _lemma1_coef(sigma, n, tu, L, c)[..., None] * alpha


def _network_sgd_eps(sigma, n, tu, delta, L, method, colluders=1.0):
    c = _lemma1_coef(sigma, n, tu, L, colluders)
    return _best_linear_rdp_epsilon(c, jnp.log(delta), _alpha_max(sigma, L), method)


@float64_jit(static_argnames=("method",))
def _network_sgd_kernel(sigma, n, tu, delta, L, colluders, method):
    return SgdEpsilon(*_network_sgd_eps(sigma, n, tu, delta, L, method, colluders))


@float64_jit(static_argnames=("method",))
def _network_sgd_fixed_kernel(sigma, n, tu, delta, L, colluders, order, method):
    c = _lemma1_coef(sigma, n, tu, L, colluders)
    return SgdEpsilon(rdp_epsilon_terms(order, c * order, jnp.log(delta), method), order)


def network_sgd_epsilon(*, sigma, n, contributions, delta, lipschitz=1.0, order=None, colluders=1,
                        method="balle2020"):
    """Network-DP epsilon of Algorithm 4 from Lemma 1, with the order optimised in the admissible interval
    (Cyffers & Bellet Remark 5): alpha in (1, alpha_max], alpha_max = (1 + sqrt(1 + 2 sigma^2/L^2)) / 2.

    ``contributions`` is T_u, the (high-probability or enforced, Sec. 5.2's c T / n) maximal number of
    contributions of a user.  The RDP -> DP conversion is ``amplify_jax.conversions.rdp_epsilon_terms``
    (``method="balle2020"``, Balle et al. 2020, or ``"mironov"``, Mironov 2017 Prop. 3 as in the paper).
    ``order`` fixes alpha instead (ValueError naming sigma if Lemma 1's constraint fails).
    Returns :class:`SgdEpsilon` (epsilon, order).  This is Lemma 1 alone: for small sigma the admissible
    interval is short and the result can exceed :func:`local_sgd_epsilon` (local DP implies network DP, so
    the smaller of the two is also a valid network-DP guarantee).  The domains are network/_params.py's:
    sigma, lipschitz in :data:`SGD_SCALE_RANGE`, sigma / lipschitz in :data:`SGD_NOISE_RANGE`, contributions in
    (0, 10**12], order in (1, 10**6].
    """
    P.METHOD.domain.check("method", method)
    s, nn, tu, d, L = check_params((P.SGD_SIGMA, P.N, P.CONTRIBUTIONS, P.DELTA, P.SGD_LIPSCHITZ), broadcast=False,
                                   sigma=sigma, n=n, contributions=contributions, delta=delta, lipschitz=lipschitz)
    _sgd_noise(s, L)  # sigma / lipschitz in SGD_NOISE_RANGE
    cc = _colluders(nn, colluders)
    if order is not None:
        (o,) = check_params((P.ORDER,), broadcast=False, order=order)
        shape = V.broadcastable(sigma=s, n=nn, contributions=tu, delta=d, lipschitz=L, colluders=cc, order=o)
        _refuse_lemma1(s, L, o, "order")
        sb, nb, tb, db, lb, cb, ob = _b(shape, s, nn, tu, d, L, cc, o)
        return _network_sgd_fixed_kernel(sb, nb, tb, db, lb, cb, ob, method)
    shape = V.broadcastable(sigma=s, n=nn, contributions=tu, delta=d, lipschitz=L, colluders=cc)
    sb, nb, tb, db, lb, cb = _b(shape, s, nn, tu, d, L, cc)
    return _network_sgd_kernel(sb, nb, tb, db, lb, cb, method)


def _local_sgd_eps(sigma, tu, delta, L, method):
    c = _up(2.0 * tu * L * L / (sigma * sigma))  # T_u alpha (2L)^2 / (2 sigma^2), rounded up
    amax = 2.0 + 8.0 * jnp.sqrt(-jnp.log(delta) / c) + 8.0
    return _best_linear_rdp_epsilon(c, jnp.log(delta), amax, method)


@float64_jit(static_argnames=("method",))
def _local_sgd_kernel(sigma, tu, delta, L, method):
    return SgdEpsilon(*_local_sgd_eps(sigma, tu, delta, L, method))


def local_sgd_epsilon(*, sigma, contributions, delta, lipschitz=1.0, method="balle2020", accountant="rdp",
                      grid_size=None):
    """Local-DP epsilon of Algorithm 4 (Cyffers & Bellet Sec. 5.2 "Local DP-SGD").

    Every one of u's ``contributions`` is a Gaussian gradient release with sensitivity 2L (Bassily et al. 2014;
    the paper's, where the authors' script uses L: docs/errata.md#e-network-authors-code).
    ``accountant="rdp"`` (default): RDP T_u alpha (2L)^2 / (2 sigma^2) (Mironov 2017), converted with the order
    optimised over alpha > 1 (``method``); returns :class:`SgdEpsilon` (epsilon, order).

    ``accountant="pld"``: the privacy-loss distribution of the same releases (:func:`amplify_jax.pld.epsilon`,
    connect-the-dots, Doroshenko et al. 2022), tight to its grid.  Sound here because the setting is a plain
    Gaussian composition: under replace-one neighbours each release (adaptive or not) is dominated by the pair
    (N(0, sigma^2), N(2L, sigma^2)), and T_u of them by (N(0, I), N(mu 1, I)) with mu = 2L / sigma, which a
    rotation maps to one Gaussian pair of shift mu sqrt(T_u) (Dong, Roth, Su 2022, Cor. 3.3).  So the PLD is
    taken of one Gaussian at noise multiplier sigma / (2L sqrt(T_u)): no FFT composition error, and T_u may be
    fractional, as on the RDP route.  Returns :class:`amplify_jax.pld.PldEpsilon` (epsilon, the sound value;
    epsilon_lower, a lower bound of the exact eps, which a linear loss attains; status).  ``method`` does not
    apply (a ValueError if given).  sigma / (2L sqrt(T_u)) must be at least ``amplify_jax.pld.SIGMA_RANGE``'s
    lower end (a ValueError naming sigma, lipschitz and contributions otherwise; the RDP route takes it); above
    its top it is lowered to the top (a larger, still valid eps).  ``grid_size``: the PLD's (a power of two,
    or None, the default: ``pld``'s automatic grid; a ValueError with "rdp").
    The domains are network/_params.py's: sigma, lipschitz in :data:`SGD_SCALE_RANGE`, sigma / lipschitz in
    :data:`SGD_NOISE_RANGE`, contributions in (0, 10**12].
    """
    from ..accounting import pld  # lazy: the PLD takes ~0.1 s to import; network loads it on first use

    use_pld = pld.selects(accountant, grid_size, method=method)
    P.METHOD.domain.check("method", method)
    s, tu, d, L = check_params((P.SGD_SIGMA, P.CONTRIBUTIONS, P.DELTA, P.SGD_LIPSCHITZ), broadcast=False,
                               sigma=sigma, contributions=contributions, delta=delta, lipschitz=lipschitz)
    _sgd_noise(s, L)  # sigma / lipschitz in SGD_NOISE_RANGE
    shape = V.broadcastable(sigma=s, contributions=tu, delta=d, lipschitz=L)
    if use_pld:
        sb, tb, db, lb = (np.broadcast_to(np.asarray(x, dtype=np.float64), shape) for x in (s, tu, d, L))
        return pld.epsilon("gaussian", sigma=_local_pld_sigma(sb, tb, lb), steps=1, delta=db, grid_size=grid_size)
    return _local_sgd_kernel(*_b(shape, s, tu, d, L), method)


def _pld_noise(ratio, formula, **named):
    """The PLD's noise multiplier ``ratio`` (NumPy float64, one shape with the ``named`` inputs), rounded down:
    above ``pld.SIGMA_RANGE`` it is lowered to the range's top (less noise: a larger, still valid eps); below it,
    a ValueError naming ``formula`` and every named input at the first offending point."""
    # lazy: the PLD takes ~0.1 s to import; network loads it on first use
    from ..accounting.pld import ROUND_DOWN, SIGMA_RANGE as PLD_SIGMA_RANGE

    r = np.minimum(ratio * ROUND_DOWN, PLD_SIGMA_RANGE[1])
    bad = ~(r >= PLD_SIGMA_RANGE[0])
    if np.any(bad):
        i = tuple(int(j) for j in np.argwhere(bad)[0]) if bad.ndim else ()
        got = ", ".join(f"{k}={np.broadcast_to(v, r.shape)[i].item()!r}" for k, v in named.items())
        raise ValueError(f"Expected {formula} >= {PLD_SIGMA_RANGE[0]:g} (pld.SIGMA_RANGE) with accountant='pld', "
                         f"got {got} ({formula} = {r[i].item()!r} after rounding down); accountant='rdp' takes it.")
    return r


def _local_pld_sigma(sigma, tu, L):
    """sigma / (2L sqrt(T_u)), the noise multiplier of the one Gaussian that T_u releases compose to."""
    return _pld_noise(sigma / (2.0 * L * np.sqrt(tu)), "sigma / (2 lipschitz sqrt(contributions))", sigma=sigma,
                      lipschitz=L, contributions=tu)


_CENTRAL_MAX_ORDER = 128


def _central_sgd_eps(sigma, n, T, delta, L):
    j = jnp.arange(2, _CENTRAL_MAX_ORDER + 1, dtype=jnp.float64)
    # the Gaussian's RDP, the rate 1/n and the T-fold curve rounded up (CLOSED_FORM_MARGIN; 1/n to the next float)
    base = _up(j * (2.0 * L[..., None]) ** 2 / (2.0 * sigma[..., None] ** 2))
    curve = without_replacement_rdp_kernel(base, jnp.nextafter(1.0 / n, jnp.inf))
    e = rdp_epsilon_terms(j, _up(T[..., None] * curve), jnp.log(delta)[..., None], "balle2020")
    i = jnp.argmin(e, axis=-1)
    return jnp.take_along_axis(e, i[..., None], -1)[..., 0], j[i]


@float64_jit
def _central_sgd_kernel(sigma, n, T, delta, L):
    return SgdEpsilon(*_central_sgd_eps(sigma, n, T, delta, L))


def _central_inputs(sigma, n, steps, delta, lipschitz):
    """Validated, broadcast inputs of the central DP-SGD baselines, through network/_params.py's Params (sigma,
    lipschitz in :data:`SGD_SCALE_RANGE`, sigma / lipschitz in :data:`SGD_NOISE_RANGE`, steps in 1..10**12)."""
    s, nn, tt, d, L = check_params((P.SGD_SIGMA, P.N, P.CENTRAL_STEPS, P.DELTA, P.SGD_LIPSCHITZ), broadcast=False,
                                   sigma=sigma, n=n, steps=steps, delta=delta, lipschitz=lipschitz)
    _sgd_noise(s, L)
    shape = V.broadcastable(sigma=s, n=nn, steps=tt, delta=d, lipschitz=L)
    return _b(shape, s, nn, tt, d, L)


def central_sgd_epsilon(*, sigma, n, steps, delta, lipschitz=1.0, accountant="rdp", grid_size=None):
    """Central DP-SGD baseline (Bassily, Smith, Thakurta 2014; Cyffers & Bellet Sec. 5.2 "Centralized DP-SGD").

    A trusted curator runs T = ``steps`` steps; each samples one user
    uniformly (sampling without replacement of size 1, q = 1/n) and adds N(0, sigma^2) to the gradient
    (sensitivity 2L under replace-one).  ``accountant="rdp"`` (default): RDP of the subsampled Gaussian by Wang,
    Balle, Kasiviswanathan 2019 Thm 9 (``amplify_jax.rdp``) at integer orders 2..128, composed over T steps and
    converted (Balle et al. 2020); returns :class:`SgdEpsilon` (epsilon, order).  This replaces Bassily et al.'s
    amplification + advanced composition by the tighter RDP accountant for the same algorithm.

    ``accountant="pld"``: the privacy-loss distribution of the without-replacement Gaussian under replace-one
    neighbours, ``pld.epsilon("wor-gaussian", sigma=sigma / (2L), q=1/n, steps=T, delta=delta)``: one
    symmetric pair whose trade-off function is C_q(G_{2L/sigma}) (Dong, Roth, Su 2022, "Gaussian differential
    privacy", Thm 4.2, sampling without replacement; the pair and its proof of dominance at every order:
    ``amplify_jax.accounting.pld._mechanisms.WorGaussianLoss``), composed T times (Zhu, Dong, Wang 2022).  Returns
    :class:`amplify_jax.pld.PldEpsilon` (epsilon, the sound value; epsilon_lower, a lower bound of that pair's
    eps, which tells the grid's cost; status).  sigma / (2L) must be at least ``pld.SIGMA_RANGE``'s lower end (a
    ValueError naming sigma and lipschitz; the RDP route takes it), and is lowered to its top above it.
    ``grid_size``: the PLD's (a power of two, or None: ``pld``'s automatic grid; larger is tighter and slower:
    at n = 2000, T = 20000, sigma = 2, 2^16 points move eps from 0.4922 to 0.4873 and epsilon_lower from 0.346
    to 0.451; a ValueError with "rdp").

    Not the Poisson-subsampled Gaussian's PLD (``pld.dpsgd_epsilon`` at sigma / (2L), q = 1/n): that accountant
    composes the add/remove pairs, and neither of them dominates this step at every order of the hockey-stick
    (below order 1 the step's divergence is the reversed pair's), so it is not an upper bound here (a single
    step's worst-case pair need not give the composition's, and without-replacement and Poisson guarantees can
    differ widely: Lebeda, Regehr, Kamath, Steinke 2024).  It is a *lower* bound instead: with the linear loss
    <theta, x>, every other user's x = -L e and u's x = +L e in one data set, -L e in the other, the T released
    noisy gradients are exactly the Poisson remove pair composed T times (in one order of the two data sets;
    the add pair in the other), so its ``epsilon_lower`` never exceeds this algorithm's true eps, and both
    routes stay above it (tests/test_pld_routes.py; benchmarks/fig_pld_tightening.py draws the three).
    """
    from ..accounting import pld  # lazy: the PLD takes ~0.1 s to import; network loads it on first use

    use_pld = pld.selects(accountant, grid_size)
    sb, nb, tb, db, lb = _central_inputs(sigma, n, steps, delta, lipschitz)
    if use_pld:
        s, L, nn = np.asarray(sb), np.asarray(lb), np.asarray(nb)
        noise = _pld_noise(s / (2.0 * L), "sigma / (2 lipschitz)", sigma=s, lipschitz=L)
        q = np.minimum(np.nextafter(1.0 / nn, np.inf), 1.0)  # 1/n rounded up: a larger rate, a larger eps
        return pld.epsilon("wor-gaussian", sigma=noise, q=q, steps=np.asarray(tb), delta=np.asarray(db),
                         grid_size=grid_size)
    return _central_sgd_kernel(sb, nb, tb, db, lb)


def _bassily(sigma, n, T, delta, L):
    """Central DP-SGD by amplification + advanced composition (the route of Bassily et al. 2014)."""
    d1 = n * delta / (2.0 * T)  # T * delta1 / n = delta / 2
    e1 = analytic_gaussian_epsilon(2.0 * L / sigma, jnp.log(d1))
    e2 = subsampled_epsilon(e1, 1.0 / n)  # one user sampled out of n (Balle, Barthe, Gaboardi 2018)
    eps = advanced_composition(e2, T, -jnp.log(0.5 * delta))
    valid = (d1 < 1.0) & jnp.isfinite(eps)  # e2 (e^e2 - 1) leaves float64 from e2 ~ 705 (sigma / L below ~0.07)
    return jnp.where(valid, eps, jnp.inf), valid


@float64_jit
def _bassily_kernel(sigma, n, T, delta, L):
    eps, valid = _bassily(sigma, n, T, delta, L)
    return NetworkBound(eps, delta, valid)


def central_sgd_bassily_epsilon(*, sigma, n, steps, delta, lipschitz=1.0):
    """Central DP-SGD accounted as in Bassily, Smith, Thakurta 2014 (the paper's "Centralized DP-SGD").

    T = ``steps``.

    Per step the noisy gradient (sensitivity 2L) is (e1, delta1)-DP with e1 the exact (analytic) Gaussian
    epsilon (Balle & Wang 2018; the classical sqrt(2 ln(1.25/delta1)) form would need e1 < 1); sampling one
    user out of n amplifies it to e2 = ln(1 + (e^e1 - 1)/n), delta1 / n; advanced composition over T steps with
    delta' = delta/2 and delta1 = n delta / (2T) gives (sqrt(2T ln(2/delta)) e2 + T e2 (e^e2 - 1), delta).
    This is our own derivation along Bassily et al.'s route (their Thm 2.1 fixes T = n^2; the authors' script
    uses the closed form 16 L sqrt(T ln(2/delta) ln(1.25 T/(delta n))) / (n eps)).  ``valid`` is False (and
    epsilon inf) where delta1 = n delta / (2T) >= 1, and where the bound leaves float64 (the composition's
    T e2 (e^e2 - 1) overflows from e2 ~ 705, i.e. sigma / L below about 0.07).
    Much looser than :func:`central_sgd_epsilon` (RDP); kept to reproduce the paper's comparison.
    """
    return _bassily_kernel(*_central_inputs(sigma, n, steps, delta, lipschitz))


def _central_bassily_for_sigma(sigma, n, T, delta, L):
    return _bassily(sigma, n, T, delta, L)[0]


def _net_eps_for_sigma(sigma, n, tu, delta, L):
    return _network_sgd_eps(sigma, n, tu, delta, L, "balle2020")[0]


def _local_eps_for_sigma(sigma, n, tu, delta, L):
    return _local_sgd_eps(sigma, tu, delta, L, "balle2020")[0]


def _central_eps_for_sigma(sigma, n, T, delta, L):
    return _central_sgd_eps(sigma, n, T, delta, L)[0]


def sgd_calibrate_sigma(*, target_epsilon, delta, n, steps, setting, contributions=None, lipschitz=1.0,
                        rtol=1e-6) -> SgdCalibration:
    """Minimal per-step noise std sigma meeting (target_epsilon, delta) for network, local or central DP-SGD
    (Sec. 5.2).

    ``setting``: ``"network"`` (Lemma 1 + Remark 5, :func:`network_sgd_epsilon`), ``"local"``
    (:func:`local_sgd_epsilon`), ``"central"`` (:func:`central_sgd_epsilon`, RDP) or ``"central_bassily"``
    (:func:`central_sgd_bassily_epsilon`, the paper's baseline).  ``contributions`` (T_u) is
    required for network and local (Sec. 5.2 enforces T_u = c T / n); central uses ``steps`` (T).  Batched
    through :func:`amplify_jax.calibrate.invert_monotone` (bisection on log sigma, feasible endpoint re-checked):
    returns :class:`SgdCalibration` ``(sigma, status, epsilon)`` with epsilon = eps(sigma) <= target_epsilon
    when status is ok.  sigma is searched over the registry's sigma domain [1e-3, 1e6] (``_params.SIGMA``); the
    other domains are network/_params.py's (lipschitz the accountants', in :data:`SGD_SCALE_RANGE`).
    """
    V.one_of("setting", setting, ("network", "local", "central", "central_bassily"))
    # steps too, where unused
    e, d, nn, tt, L = check_params((P.TARGET_EPSILON, P.DELTA, P.N, P.CENTRAL_STEPS, P.SGD_LIPSCHITZ),
                                   broadcast=False, target_epsilon=target_epsilon, delta=delta, n=n, steps=steps,
                                   lipschitz=lipschitz)
    if setting in ("central", "central_bassily"):
        fn = _central_eps_for_sigma if setting == "central" else _central_bassily_for_sigma
        args = (nn, tt, d, L)
    else:
        if contributions is None:
            raise ValueError(f"Expected contributions (T_u) for setting={setting!r}, got contributions=None.")
        (tu,) = check_params((P.CONTRIBUTIONS,), broadcast=False, contributions=contributions)
        V.broadcastable(target_epsilon=e, delta=d, n=nn, steps=tt, lipschitz=L, contributions=tu)
        fn = _net_eps_for_sigma if setting == "network" else _local_eps_for_sigma
        args = (nn, tu, d, L)
    inv = invert_monotone(fn, e, args=args, lo=P.SIGMA.domain.lo, hi=P.SIGMA.domain.hi, feasible="above", rtol=rtol)
    return SgdCalibration(inv.value, inv.status, inv.achieved)
