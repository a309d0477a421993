"""DP-SGD accountant and calibration: published values, round trips, monotonicity (hypothesis)."""

import functools

import numpy as np
import pytest
from hypothesis import given, strategies as st

import amplify_jax as aj
from amplify_jax.accounting import calibrate as K


def test_published_epsilons():
    # Opacus (RDP, its order grid): 7.32911117143; ours optimises the order continuously, so <= and close.
    e = float(aj.dpsgd_epsilon(sigma=1.5, q=0.04, steps=2250, delta=1e-5).epsilon)
    assert e <= 7.32911117143 and e > 7.32911117143 * 0.999
    # jax_privacy: 2.27535
    e = float(aj.dpsgd_epsilon(sigma=4.0, q=1024 / 50000, steps=1e4, delta=1e-5).epsilon)
    assert e <= 2.27535 and e > 2.27535 * 0.999
    # dp_accounting / Opacus 6.71274; the tight PLD value 6.18771 is a floor no sound RDP value goes below.
    e = float(aj.dpsgd_epsilon(sigma=1.0, q=0.01, steps=1e4, delta=1e-5).epsilon)
    assert 6.18771 < e <= 6.71274


def test_calibration_round_trip_and_published():
    targets = np.array([0.941870567, 1.0, 3.0, 8.0])
    q = np.array([150 / 60000, 0.01, 0.01, 0.04])
    steps = np.array([15 * 60000 / 150, 1e4, 1e4, 2000.0])
    cal = aj.dpsgd_calibrate_sigma(target_epsilon=targets, q=q, steps=steps, delta=1e-5)
    assert np.all(np.asarray(cal.status) == K.OK)
    sig = np.asarray(cal.sigma)
    eps = np.asarray(aj.dpsgd_epsilon(sigma=sig, q=q, steps=steps, delta=1e-5).epsilon)
    assert np.all(eps <= targets)  # feasible, re-checked with the public accountant
    # the reported eps comes from the calibration's local accountant: never below the full one, and close
    assert np.all(np.asarray(cal.epsilon) >= eps * (1 - 1e-12))
    np.testing.assert_allclose(np.asarray(cal.epsilon), eps, rtol=1e-6)
    below = np.asarray(aj.dpsgd_epsilon(sigma=sig * (1 - 2e-6), q=q, steps=steps, delta=1e-5).epsilon)
    assert np.all(below > targets)  # and minimal to rtol
    # TensorFlow Privacy compute_noise_from_budget gives 1.3 for the first; Opacus get_noise_multiplier 1.3562
    # for the last (bisection to 0.01 in eps): ours is at least as small.
    assert sig[0] <= 1.3 + 1e-9 and sig[3] <= 1.3562 + 1e-9


def test_default_range_grows_to_meet_a_target_beyond_it():
    # 1e10 steps at q = 0.01: eps(sigma = 2000) = 2.17, so eps = 1 needs sigma above the default range's top
    p = dict(q=0.01, steps=1e10, delta=1e-5)
    cal = aj.dpsgd_calibrate_sigma(target_epsilon=[1.0, 8.0], **p)
    sig = np.asarray(cal.sigma)
    assert list(np.asarray(cal.status)) == [K.OK, K.OK] and sig[0] > aj.accountants.DEFAULT_SIGMA_RANGE[1] > sig[1]
    eps = np.asarray(aj.dpsgd_epsilon(sigma=sig, **p).epsilon)
    assert np.all(eps <= [1.0, 8.0]) and eps[0] > 0.99  # feasible and tight
    # a range given by the caller is kept
    kept = aj.dpsgd_calibrate_sigma(target_epsilon=1.0, **p, sigma_range=(0.05, 2e3))
    assert int(kept.status) == K.INFEASIBLE and float(kept.sigma) == 2e3


def test_small_target_beyond_the_coarse_orders_is_met():
    """Below ~0.02 (delta 1e-5) the calibration's coarse stage (orders up to 256) cannot meet a target that the
    full accountant meets at higher orders: such points were answered INFEASIBLE at sigma = 1e7 (eps 5.4e-4 there)
    until the full accountant searched the range itself.  eps(sigma) here falls below 5.4e-4 by ~1.2e5 (order
    4093), so 4e-4 stays infeasible."""
    p = dict(q=0.5, steps=1e4, delta=1e-5)
    targets = np.array([0.015, 0.01, 0.003, 4e-4])
    cal = aj.dpsgd_calibrate_sigma(target_epsilon=targets, **p)
    assert list(np.asarray(cal.status)) == [K.OK, K.OK, K.OK, K.INFEASIBLE]
    sig = np.asarray(cal.sigma)
    eps = np.asarray(aj.dpsgd_epsilon(sigma=sig, **p).epsilon)
    assert np.all(eps[:3] <= targets[:3])  # feasible, re-checked
    below = np.asarray(aj.dpsgd_epsilon(sigma=sig[:3] * (1 - 2e-6), **p).epsilon)
    assert np.all(below > targets[:3])  # minimal to rtol
    assert sig[3] == aj.accountants.SIGMA_LIMIT and eps[3] > targets[3]


def test_infeasible_target_is_reported_not_nan():
    cal = aj.dpsgd_calibrate_sigma(target_epsilon=[1e-6, 2.0], q=0.5, steps=1e4, delta=1e-5)
    assert list(np.asarray(cal.status)) == [K.INFEASIBLE, K.OK]
    assert np.all(np.isfinite(np.asarray(cal.sigma)))


@functools.lru_cache(maxsize=None)
def _monotone_panels():
    """The default: each point's own panel count (one compiled program for every example and every test)."""
    return None


@given(s=st.floats(0.6, 8.0), q=st.floats(1e-3, 0.2), t=st.integers(1, 10_000), d=st.floats(1e-9, 1e-3))
def test_monotone(s, q, t, d):
    """eps decreases in sigma, increases in q and in steps, and is >= 0 (one batched call per example)."""
    sig = np.array([s, s * 1.05, s, s])
    qq = np.array([q, q, min(1.0, q * 1.05), q])
    tt = np.array([t, t, t, max(t + 1, round(t * 1.05))], dtype=float)
    e = np.asarray(aj.dpsgd_epsilon(sigma=sig, q=qq, steps=tt, delta=d, n_panels=_monotone_panels()).epsilon)
    assert np.all(e >= 0)
    assert e[1] <= e[0] * (1 + 1e-12)
    assert e[2] >= e[0] * (1 - 1e-12)
    assert e[3] >= e[0] * (1 - 1e-12)


#: The pruning and order-search tests below evaluate the default grid with the default panel counts (each point
#: its own, ``_subsampled_gaussian.AUTO``): the public accountant's one program (compiled by other tests too),
#: and one program of the grid's best (optimize_order=False) shared by all of them.
_PANELS = None
_SIG8 = np.geomspace(0.4, 6.0, 8)
#: (q, steps, delta), 8 sigmas each: their totals of candidates (fractional orders evaluated exactly after the
#: pruning: 43, 73, 86, 114) take 1, 2 and 3 blocks of COMPACT_BLOCK (6) per point (48 pairs) of the pruned
#: search (checked in test_every_pruning_branch_equals_full_grid)
_PRUNING_CASES = [(0.001, 1e5, 1e-9), (0.01, 1e4, 1e-5), (0.3, 20.0, 1e-3), (0.1, 1e3, 1e-5)]


def _reference_grid(orders, sig, q, steps, delta):
    """(eps, order) on the full grid from the public RDP curve (its own, verified panel count) and conversion:
    no pruning, no static panel count."""
    curve = np.asarray(aj.rdp.poisson_subsampled_gaussian_rdp(orders, q=q, sigma=sig)) * np.asarray(steps)[..., None]
    return aj.conversions.epsilon_from_rdp(orders, curve, delta=delta)


def test_pruned_grid_equals_full_grid():
    """The certified pruning of fractional orders returns exactly the full grid's minimum and best order (the
    public accountant's program; the cases take every flat budget of the compaction)."""
    from amplify_jax.rdp import DEFAULT_ORDERS

    orders = np.sort(np.asarray(DEFAULT_ORDERS))
    for q, steps, delta in _PRUNING_CASES:
        got = aj.dpsgd_epsilon(sigma=_SIG8, q=q, steps=steps, delta=delta, optimize_order=False, n_panels=_PANELS)
        ref = _reference_grid(orders, _SIG8, q, steps, delta)
        np.testing.assert_allclose(np.asarray(got.epsilon), np.asarray(ref.epsilon), rtol=1e-9)
        np.testing.assert_array_equal(np.asarray(got.order), np.asarray(ref.order))


def test_every_pruning_branch_equals_full_grid(monkeypatch):
    """The cases of test_pruned_grid_equals_full_grid take one, two and three blocks of the pruned search's loop
    (so the program checked there ran each), and a block as small as one pair per point gives the full grid's
    minimum too (many steps of the loop)."""
    import jax
    import jax.numpy as jnp

    from amplify_jax.accounting import _dpsgd_rdp as A  # the RDP accountant behind accountants' front doors
    from amplify_jax.accounting._subsampled_gaussian import AUTO
    from amplify_jax.internal import x64_scope
    from amplify_jax.rdp import DEFAULT_ORDERS, SGMCurve

    orders = np.sort(np.asarray(DEFAULT_ORDERS))
    block = A.COMPACT_BLOCK * _SIG8.size  # as _grid_best_pruned lays them out
    curve = SGMCurve(orders, AUTO)
    monkeypatch.setattr(A, "COMPACT_BLOCK", 1)  # traced below: blocks of 8 pairs, up to 15 steps
    f = jax.jit(lambda *a: (A._grid_best_pruned(curve, *a, "balle2020"), A._pruned_candidates(curve, *a)))
    taken = set()
    with x64_scope():
        for q, steps, delta in _PRUNING_CASES:
            (best, idx), n_cand = f(jnp.asarray(_SIG8), *(jnp.full(_SIG8.shape, x) for x in (q, steps, np.log(delta))))
            total = int(np.sum(np.asarray(n_cand)))
            assert total > 0  # the case exercises the exact evaluation of candidates
            taken.add(-(-total // block))  # the blocks of the default block size for this batch
            ref = _reference_grid(orders, _SIG8, q, steps, delta)
            np.testing.assert_allclose(np.asarray(best), np.asarray(ref.epsilon), rtol=1e-9)
            np.testing.assert_array_equal(orders[np.asarray(idx)], np.asarray(ref.order))
    assert taken == {1, 2, 3}, taken


def test_order_search_on_shared_mesh_equals_exact_search():
    """The ranking of the candidate orders and the continuous search on shared meshes (the public accountant),
    with the exact eps at the order found (and exact evaluations for the points whose mesh is too coarse), match
    the full grid's best order and Brent's search on exact evaluations alone (optimal_epsilon on the public
    curve), and are never above the grid's best."""
    from amplify_jax.accounting import _dpsgd_rdp as A  # the RDP accountant behind accountants' front doors
    from amplify_jax.rdp import DEFAULT_ORDERS

    orders = np.sort(np.asarray(DEFAULT_ORDERS))
    # low orders (many steps) and high orders (few steps, small q: wide brackets the mesh cannot serve)
    sig = np.array([0.7, 1.0, 2.0, 4.0, 8.0, 3.0, 6.0, 12.0, 0.9, 1.5, 5.0, 20.0, 2.5, 9.0, 1.2, 30.0])
    q = np.array([0.01, 0.02, 0.05, 0.1, 0.3, 1e-4, 1e-5, 1e-5, 0.001, 0.01, 0.2, 1e-4, 0.5, 0.001, 0.1, 1e-3])
    steps = np.array([1e4, 3e3, 1e3, 500, 100, 1, 2, 1, 1e5, 1e4, 50, 3, 10, 1, 1e3, 1])
    delta = 1e-6
    exact = A._SGMAtOrder(A._check_n_panels(_PANELS))  # the certified quadrature at any order
    # batches of 8 (the public program's slab): the meshes of points 5, 6, 7 and 13 need 21, 47, 90 and 118
    # panels (> 12: exact evaluations), so the first two batches mix them with mesh points, the last two have none
    for sel in [np.arange(8), np.arange(8, 16), np.array([0, 1, 2, 3, 4, 8, 9, 10]),
                np.array([12, 14, 15, 0, 1, 2, 3, 4])]:
        s, qq, t = sig[sel], q[sel], steps[sel]
        curve = np.asarray(aj.rdp.poisson_subsampled_gaussian_rdp(orders, q=qq, sigma=s)) * t[:, None]
        ref, ref_a = map(np.asarray, aj.conversions.optimal_epsilon(exact, delta=delta, args=(qq, s, t), orders=orders,
                                                        grid_rdp=curve, n_iter=A.REFINE_STEPS))
        grid = np.asarray(aj.dpsgd_epsilon(sigma=s, q=qq, steps=t, delta=delta, optimize_order=False,
                                           n_panels=_PANELS).epsilon)
        got, got_a = map(np.asarray, aj.dpsgd_epsilon(sigma=s, q=qq, steps=t, delta=delta, n_panels=_PANELS))
        assert np.all(got <= grid)
        np.testing.assert_allclose(got, ref, rtol=1e-10)
        np.testing.assert_allclose(got_a, ref_a, rtol=1e-5)


def test_answer_does_not_depend_on_the_batch():
    # the panel count probed only at the grid's orders missed the need between them (10 panels near alpha = 78
    # here, 7 at the grid orders 64 and 80): alone this point got 0.09129, in a batch 0.08761 (4% apart)
    p = dict(q=0.001, steps=1000, delta=1e-5)
    alone = float(aj.dpsgd_epsilon(sigma=2.3886, **p).epsilon)
    batch = np.asarray(aj.dpsgd_epsilon(sigma=np.array([2.3886, 0.5, 5.0, 20.0]), **p).epsilon)
    np.testing.assert_allclose(alone, batch[0], rtol=1e-9)
    assert alone < 0.0877


def test_grid_in_parts_with_the_grid_panel_count():
    """dpsgd_n_panels of a whole grid, passed as n_panels, makes a part of it answer as the whole call: the
    count is the one the whole call chooses, and a point's answer does not depend on its batch."""
    from amplify_jax.accountants import dpsgd_n_panels

    sig, p = np.array([0.7, 2.3886, 5.0, 20.0]), dict(q=0.001, steps=1000, delta=1e-5)
    n = dpsgd_n_panels(sigma=sig, q=p["q"])
    whole = np.asarray(aj.dpsgd_epsilon(sigma=sig, **p).epsilon)
    part = np.asarray(aj.dpsgd_epsilon(sigma=sig[1:3], n_panels=n, **p).epsilon)
    np.testing.assert_allclose(part, whole[1:3], rtol=1e-12)
    assert dpsgd_n_panels(sigma_range=(0.05, 2e3), q=0.01) >= 3


@pytest.mark.parametrize("kw,needle", [(dict(n_panels=2), "n_panels"), (dict(n_panels=7.5), "n_panels"),
                                       (dict(devices=[]), "devices"), (dict(devices=["cpu"]), "devices")])
def test_static_options_are_checked(kw, needle):
    with pytest.raises(ValueError, match=needle):
        aj.dpsgd_epsilon(sigma=1.0, q=0.01, steps=10, delta=1e-5, **kw)
    with pytest.raises(ValueError, match=needle):
        aj.dpsgd_calibrate_sigma(target_epsilon=1.0, q=0.01, steps=10, delta=1e-5, **kw)


def test_panel_count_needs_one_sigma_source():
    from amplify_jax.accountants import dpsgd_n_panels

    for kw in ({}, dict(sigma=1.0, sigma_range=(0.1, 1.0))):
        with pytest.raises(ValueError, match="exactly one of sigma"):
            dpsgd_n_panels(q=0.01, **kw)
    with pytest.raises(ValueError, match="sigma_range"):
        dpsgd_n_panels(sigma_range=(1.0, 0.1))


def test_registry_dpsgd_is_the_accountant_checked_once():
    """The registry's dpsgd bound (the command line's epsilon / calibrate) runs the accountant's computation on the
    values its domains checked (issue 29 item 2): equal to dpsgd_epsilon / dpsgd_calibrate_sigma bit for bit, a
    rate below rdp.Q_FLOOR raised as the accountant raises it, the conversion chosen by method."""
    from amplify_jax import bounds
    from amplify_jax.accounting import accountants as A

    sigma, q, steps, delta = np.array([0.8, 1.1, 3.0]), np.array([1e-14, 0.01, 0.3]), 1000, 1e-5
    for method in ("balle2020", "mironov"):
        got = bounds.evaluate("dpsgd", sigma=sigma, q=q, steps=steps, delta=delta, method=method)
        ref = A.dpsgd_epsilon(sigma=sigma, q=q, steps=steps, delta=delta, method=method)
        np.testing.assert_array_equal(got.epsilon, np.asarray(ref.epsilon))
        np.testing.assert_array_equal(got.order, np.asarray(ref.order))
    inv = bounds.invert("dpsgd", solve_for="sigma", target_epsilon=[1.0, 8.0], q=0.01, steps=steps, delta=delta)
    cal = A.dpsgd_calibrate_sigma(target_epsilon=[1.0, 8.0], q=0.01, steps=steps, delta=delta)
    np.testing.assert_array_equal(inv.sigma, np.asarray(cal.sigma))
    np.testing.assert_array_equal(inv.epsilon, np.asarray(cal.epsilon))
    assert A.__all__ == ["dpsgd_epsilon", "dpsgd_calibrate_sigma", "epsilon", "calibrate_sigma"]
