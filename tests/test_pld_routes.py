"""The PLD routes of the paper modules (issue 13 item 7): ``accountant="pld"`` where a paper's baseline composes
Gaussian steps and a PLD pair is sound for it.  Network DP: local DP-SGD (a plain Gaussian composition) and
central DP-SGD (sampling without replacement under replace-one: the C_q(G) pair of pld's "wor-gaussian", not the
Poisson pair, whose composition is checked to be what the docstring says it is there, a lower bound).  Self
check-in: distributed Gaussian, k held in a Chernoff window.

Few points, one batch each (every new shape is a compilation)."""

import warnings

import mpmath
import numpy as np
import pytest

from amplify_jax import bounds, checkin
from amplify_jax.accounting import pld
from amplify_jax import network as N

SEC52 = dict(n=2000, steps=20_000, delta=1e-6)  # Cyffers & Bellet Sec. 5.2
TU = 12  # T_u = ceil(1.2 T / n), Sec. 5.2


def _gauss_delta(mu, eps):
    """delta(eps) of the Gaussian pair of shift mu (Balle & Wang 2018, Thm 8), in 50-digit arithmetic:
    Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)."""
    with mpmath.workdps(50):
        mu, eps = mpmath.mpf(float(mu)), mpmath.mpf(float(eps))
        return float(mpmath.ncdf(-eps / mu + mu / 2) - mpmath.exp(eps) * mpmath.ncdf(-eps / mu - mu / 2))


def test_local_sgd_pld_is_between_the_exact_gaussian_and_rdp():
    """T_u releases of sensitivity 2L compose to one Gaussian of shift mu = 2L sqrt(T_u) / sigma: the PLD's
    eps is sound against the closed form (delta(eps) <= delta there), its lower value is below the exact eps
    (delta(eps_lower) >= delta), both within 1e-3, and the PLD is tighter than the RDP route."""
    sigma = np.array([3.0, 10.0, 40.0])
    lip = np.array([1.0, 1.0, 2.5])
    delta = 1e-6
    rdp = N.local_sgd_epsilon(sigma=sigma, contributions=TU, delta=delta, lipschitz=lip)
    got = N.local_sgd_epsilon(sigma=sigma, contributions=TU, delta=delta, lipschitz=lip, accountant="pld")
    assert isinstance(got, pld.PldEpsilon) and np.all(got.status == 0)
    mu = 2.0 * lip * np.sqrt(TU) / sigma
    for m, e, lo in zip(mu, got.epsilon, got.epsilon_lower):
        assert _gauss_delta(m, e) <= delta  # sound
        assert _gauss_delta(m, lo) >= delta  # eps_lower <= the exact eps
        assert e - lo <= 1e-3 * e
    assert np.all(got.epsilon < rdp.epsilon)
    # the tightening at Sec. 5.2's T_u (README: 5-8% over sigma = 2..50)
    assert np.all(got.epsilon / rdp.epsilon > 0.85)


def test_local_sgd_pld_agrees_with_the_pld_accountant():
    """The route is pld.epsilon('gaussian') at sigma / (2L sqrt(T_u)), one step (rounded down by ~1 ulp); the
    FFT composition of T_u steps at sigma / (2L) gives the same eps within its discretisation; the registry's
    accountant=pld answers the same values; a fractional T_u lies between its integer neighbours."""
    sigma, lip, delta = np.array([4.0, 12.0]), 1.5, 1e-5
    got = N.local_sgd_epsilon(sigma=sigma, contributions=TU, delta=delta, lipschitz=lip, accountant="pld")
    one = pld.epsilon("gaussian", sigma=sigma / (2.0 * lip * np.sqrt(TU)), steps=1, delta=delta)
    np.testing.assert_allclose(got.epsilon, one.epsilon, rtol=1e-12)
    composed = pld.epsilon("gaussian", sigma=sigma / (2.0 * lip), steps=TU, delta=delta)
    np.testing.assert_allclose(got.epsilon, composed.epsilon, rtol=1e-4)
    reg = bounds.evaluate("network.local-sgd", sigma=sigma, contributions=TU, delta=delta, lipschitz=lip,
                          accountant="pld")
    np.testing.assert_allclose(reg.epsilon, got.epsilon, rtol=1e-12)
    assert np.all(reg.status == 0) and np.all(reg.order == 0)
    frac = N.local_sgd_epsilon(sigma=4.0, contributions=[TU - 1, TU - 0.5, TU], delta=delta, lipschitz=lip,
                               accountant="pld").epsilon
    assert frac[0] < frac[1] < frac[2]


def test_accountant_is_validated_by_name():
    kw = dict(sigma=5.0, contributions=TU, delta=1e-6)
    with pytest.raises(ValueError, match="accountant"):
        N.local_sgd_epsilon(**kw, accountant="exact")
    with pytest.raises(ValueError, match="accountant"):
        bounds.evaluate("network.local-sgd", **kw, accountant="exact")
    with pytest.raises(ValueError, match="method"):  # an option of the RDP route
        N.local_sgd_epsilon(**kw, method="mironov", accountant="pld")
    with pytest.raises(ValueError, match="sigma.*lipschitz.*contributions"):  # below pld.SIGMA_RANGE
        N.local_sgd_epsilon(sigma=0.1, contributions=TU, delta=1e-6, accountant="pld")
    with pytest.raises(ValueError, match="grid_size"):  # an option of the PLD route
        N.local_sgd_epsilon(**kw, grid_size=1 << 12)
    # the RDP route is the default and unchanged
    a = N.local_sgd_epsilon(**kw)
    b = N.local_sgd_epsilon(**kw, accountant="rdp")
    assert float(a.epsilon) == float(b.epsilon) and float(a.order) == float(b.order)


def test_central_sgd_pld_is_between_the_poisson_lower_bound_and_rdp():
    """At Sec. 5.2's n, T, delta: the without-replacement PLD route is tighter than RDP (WBK19 Thm 9) and never
    below the Poisson pair's lower value, a lower bound of the algorithm's true eps (a linear loss realises
    that pair in every step); it is pld.epsilon("wor-gaussian") at sigma / (2L), q = 1/n, and the registry's
    accountant=pld answers the same."""
    sigma = np.array([2.0, 8.0])
    rdp = np.asarray(N.central_sgd_epsilon(sigma=sigma, **SEC52).epsilon)
    got = N.central_sgd_epsilon(sigma=sigma, **SEC52, accountant="pld")
    assert isinstance(got, pld.PldEpsilon) and np.all(got.status == 0)
    low = pld.dpsgd_epsilon(sigma=sigma / 2.0, q=1.0 / SEC52["n"], steps=SEC52["steps"], delta=SEC52["delta"])
    assert np.all(low.status == 0)
    assert np.all(low.epsilon_lower < got.epsilon) and np.all(got.epsilon < rdp)
    assert np.all(np.asarray(low.epsilon_lower) < rdp)  # the RDP route is sound against the same lower bound
    direct = pld.epsilon("wor-gaussian", sigma=sigma / 2.0, q=1.0 / SEC52["n"], steps=SEC52["steps"],
                         delta=SEC52["delta"])
    # the route rounds sigma and q outward by an ulp, which moves the PLD's grid: ~3e-8 of the answer
    np.testing.assert_allclose(got.epsilon, direct.epsilon, rtol=1e-6)
    reg = bounds.evaluate("network.central-sgd", sigma=sigma, **SEC52, lipschitz=1.0, accountant="pld")
    np.testing.assert_allclose(reg.epsilon, got.epsilon, rtol=1e-12)
    with pytest.raises(ValueError, match="accountant"):
        N.central_sgd_epsilon(sigma=2.0, **SEC52, accountant="exact")
    with pytest.raises(ValueError, match="sigma.*lipschitz"):  # sigma / (2L) below pld.SIGMA_RANGE
        N.central_sgd_epsilon(sigma=0.05, **SEC52, accountant="pld")


FIG2A = dict(n=600_000, gamma=1e-3, sigma=1.0, delta=1e-8)  # self check-in Fig. 2(a)


def test_distributed_checkin_pld_window():
    """The PLD route of distributed check-in at Fig. 2(a)'s setting: far below Thm 4's RDP at few rounds; equal
    to its own recipe re-derived here (Chernoff window per split, pld.epsilon("wor-gaussian") at rate l2 / n and
    noise sigma sqrt(l1) / 2, T (d1 + d2) spent on the window, the best split); gamma = 0 is eps 0; where the
    window cannot guarantee a participant, +inf with status fallback."""
    from amplify_jax.checkin._accounting import PLD_SPLITS

    steps = np.array([100.0, 10_000.0])
    got = checkin.distributed_gaussian_epsilon(**FIG2A, steps=steps, accountant="pld")
    assert isinstance(got, pld.PldEpsilon) and np.all(got.status == 0)
    with warnings.catch_warnings():  # Thm 4's RDP at few rounds: its best order may sit at the grid's cap
        warnings.simplefilter("ignore", checkin.OrderCapWarning)
        rdp = np.asarray(checkin.distributed_gaussian_epsilon(**FIG2A, steps=steps).epsilon)
    assert np.all(got.epsilon < 0.2 * rdp)
    mu = FIG2A["n"] * FIG2A["gamma"]
    t, f = steps[:, None], PLD_SPLITS[None, :]  # one batch of the route's shape: its compiled program
    lc = -np.log(f * FIG2A["delta"] / (2.0 * t))  # ln(1 / d1), d1 = d2
    l1 = np.floor((1.0 - np.sqrt(2.0 * lc / mu)) * mu) + 1.0
    l2 = np.ceil((1.0 + (lc + np.sqrt(lc * lc + 8.0 * lc * mu)) / (2.0 * mu)) * mu) - 1.0
    r = pld.epsilon("wor-gaussian", sigma=FIG2A["sigma"] * np.sqrt(l1) / 2.0, q=l2 / FIG2A["n"],
                    steps=np.broadcast_to(t, l1.shape), delta=(1.0 - f) * FIG2A["delta"])
    want = np.min(np.asarray(r.epsilon), axis=-1)
    np.testing.assert_allclose(got.epsilon, want, rtol=1e-6)  # rounded outward by an ulp: ~1e-8 (see above)
    edge = checkin.distributed_gaussian_epsilon(n=[1000, 100], gamma=[0.0, 0.01], sigma=1.0, steps=100,
                                                delta=1e-5, accountant="pld")
    assert edge.epsilon[0] == 0.0 and edge.status[0] == 0
    assert np.isinf(edge.epsilon[1]) and edge.status[1] == 5  # Status.FALLBACK
    reg = bounds.evaluate("checkin.distributed-gaussian", **FIG2A, steps=steps, accountant="pld")
    np.testing.assert_allclose(reg.epsilon, got.epsilon, rtol=1e-12)
    for bad, name in ((dict(orders=[2.0, 3.0]), "orders"), (dict(method="eq11"), "method"),
                      (dict(accountant="exact"), "accountant")):
        with pytest.raises(ValueError, match=name):
            checkin.distributed_gaussian_epsilon(**FIG2A, steps=100, **{"accountant": "pld", **bad})
    with pytest.raises(ValueError, match="grid_size"):
        checkin.distributed_gaussian_epsilon(**FIG2A, steps=100, grid_size=1 << 12)


def test_checkin_pld_inversion_round_trip():
    """The registry inverts the PLD route by its generic search: the sigma found meets the target, re-checked."""
    kw = dict(n=1000, gamma=0.05, steps=100, delta=1e-5, accountant="pld")
    inv = bounds.invert("checkin.distributed-gaussian", solve_for="sigma", target_epsilon=2.0, **kw)
    assert int(np.ravel(inv.status)[0]) == 0 and float(np.ravel(inv.epsilon)[0]) <= 2.0
    again = bounds.evaluate("checkin.distributed-gaussian", sigma=float(np.ravel(inv.sigma)[0]), **kw)
    assert float(np.ravel(again.epsilon)[0]) <= 2.0


@pytest.mark.parametrize("bound_id,kw", [
    ("network.local-sgd", dict(sigma=[10.0, 30.0], contributions=100.0, delta=1e-5, lipschitz=1.0)),
    ("network.central-sgd", dict(sigma=[2.0, 8.0], **SEC52, lipschitz=1.0)),
    ("checkin.distributed-gaussian", dict(**FIG2A, steps=[100, 10_000])),
])
def test_host_path_answers_the_pld_route(bound_id, kw, monkeypatch):
    """The registry's first small questions run on the host (NumPy twins): the PLD routes too, equal to the
    compiled answer up to last-bit differences, which the without-replacement pair's grid carries to ~5e-8 of
    the answer (tests/test_bounds.py allows 1e-8 for the Poisson and plain Gaussian's)."""
    from amplify_jax._core import host as _host

    compiled = bounds.evaluate(bound_id, **kw, accountant="pld")
    monkeypatch.setenv(_host.ENV, "always")
    monkeypatch.setattr(_host, "_spent", {})
    hosted = bounds.evaluate(bound_id, **kw, accountant="pld")
    spent = _host._spent.get(f"bounds.evaluate:{bound_id}")
    assert spent is not None and spent < np.inf, ("the host path was not taken or declined", _host._spent)
    np.testing.assert_allclose(hosted.epsilon, compiled.epsilon, rtol=1e-6, atol=0)
    np.testing.assert_array_equal(hosted.status, compiled.status)
