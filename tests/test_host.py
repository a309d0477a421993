"""The host path (amplify_jax._core.host): the package's kernels run by NumPy for a process's first small questions.

The suite runs with ``AMPLIFY_JAX_HOST=off`` (tests/conftest.py); these tests turn it on and compare the two
paths on the same inputs: the same source, so the same answers up to the last bits of exp/log.  The compiled
side reuses programs other tests compile (same shapes and static arguments).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import amplify_jax as aj
from amplify_jax._core import host as _host
from amplify_jax.accounting import accountants as A
from amplify_jax.accounting import calibrate as K

RTOL = 1e-13  # XLA's exp/log against the C library's: ~1 ulp per operation, a few hundred operations deep


@pytest.fixture
def host(monkeypatch):
    """Run with the host path on for small batches; each test starts with no time spent."""
    monkeypatch.setenv(_host.ENV, "always")
    monkeypatch.setattr(_host, "_spent", {})
    return _host


def _both(monkeypatch, fn, **kw):
    monkeypatch.setenv(_host.ENV, "off")
    compiled = fn(**kw)
    monkeypatch.setenv(_host.ENV, "always")
    spent = dict(_host._spent)
    on_host = fn(**kw)
    assert _host._spent != spent  # the second call did take the host path
    return compiled, on_host


PUBLISHED = [dict(sigma=1.5, q=0.04, steps=2250.0), dict(sigma=4.0, q=1024 / 50000, steps=1e4),
             dict(sigma=1.0, q=0.01, steps=1e4)]  # the points of test_accountants.test_published_epsilons


@pytest.mark.parametrize("p", PUBLISHED)
def test_dpsgd_epsilon_on_host_equals_compiled(host, monkeypatch, p):
    compiled, on_host = _both(monkeypatch, aj.dpsgd_epsilon, delta=1e-5, **p)
    assert isinstance(on_host, type(compiled)) and isinstance(on_host.epsilon, jax.Array)
    assert on_host.epsilon.dtype == jnp.float64 and on_host.epsilon.shape == compiled.epsilon.shape
    np.testing.assert_allclose(float(on_host.epsilon), float(compiled.epsilon), rtol=RTOL)
    np.testing.assert_allclose(float(on_host.order), float(compiled.order), rtol=1e-6)


@settings(max_examples=8)
@given(sigma=st.floats(0.3, 30.0), log_q=st.floats(-5.0, 0.0), steps=st.integers(1, 100_000),
       log_delta=st.floats(-12.0, -3.0))
def test_random_points_on_host_equal_compiled(sigma, log_q, steps, log_delta):
    # one compiled program for every example (each point takes its own panel count on both paths)
    kw = dict(sigma=sigma, q=10.0 ** log_q, steps=float(steps), delta=10.0 ** log_delta)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_host, "_spent", {})
        compiled, on_host = _both(mp, aj.dpsgd_epsilon, **kw)
    np.testing.assert_allclose(float(on_host.epsilon), float(compiled.epsilon), rtol=RTOL)


def test_calibration_on_host_equals_compiled(host, monkeypatch):
    # the batch of test_accountants.test_calibration_round_trip_and_published (same compiled program)
    kw = dict(target_epsilon=np.array([0.941870567, 1.0, 3.0, 8.0]), q=np.array([150 / 60000, 0.01, 0.01, 0.04]),
              steps=np.array([15 * 60000 / 150, 1e4, 1e4, 2000.0]), delta=1e-5)
    compiled, on_host = _both(monkeypatch, aj.dpsgd_calibrate_sigma, **kw)
    assert list(np.asarray(on_host.status)) == [K.OK] * 4
    np.testing.assert_allclose(np.asarray(on_host.sigma), np.asarray(compiled.sigma), rtol=1e-9)
    # feasible when re-checked by the compiled accountant
    monkeypatch.setenv(_host.ENV, "off")
    eps = np.asarray(aj.dpsgd_epsilon(sigma=on_host.sigma, q=kw["q"], steps=kw["steps"], delta=1e-5).epsilon)
    assert np.all(eps <= kw["target_epsilon"])


def test_auto_mode_answers_on_host_until_its_budget_is_spent(monkeypatch):
    monkeypatch.setenv(_host.ENV, "auto")
    monkeypatch.setattr(_host, "_spent", {})
    assert _host.use_host("dpsgd_epsilon", 1)
    assert not _host.use_host("dpsgd_epsilon", _host.MAX_POINTS + 1)  # a grid compiles
    monkeypatch.setattr(_host, "_spent", {"dpsgd_epsilon": _host.BUDGET_SECONDS})
    assert not _host.use_host("dpsgd_epsilon", 1)  # budget spent: compile from now on
    assert _host.use_host("dpsgd_calibrate_sigma", 1)  # per front door


def test_tracers_never_take_the_host_path(host):
    seen = []

    def f(x):
        seen.append(_host.use_host("dpsgd_epsilon", 1, x))
        return x

    jax.jit(f)(1.0)
    assert seen == [False]


@pytest.mark.parametrize("value", ["sometimes", "2"])
def test_unknown_mode_is_refused_naming_the_variable(monkeypatch, value):
    monkeypatch.setenv(_host.ENV, value)
    with pytest.raises(ValueError, match=_host.ENV):
        _host.mode()


def test_off_values(monkeypatch):
    for v in ("off", "0", "false", "none"):
        monkeypatch.setenv(_host.ENV, v)
        assert _host.mode() == "off" and not _host.use_host("x", 1)


def test_twin_leaves_the_live_package_alone(host):
    aj.dpsgd_epsilon(sigma=2.0, q=0.01, steps=100.0, delta=1e-5)
    twin = _host.twin("accounting.accountants")
    assert A.jnp is jnp and A.jax is jax  # the live module still runs on JAX
    assert twin.jnp is _host.jax_on_numpy.numpy and twin.__name__ == "amplify_jax._twin.accounting.accountants"
    assert twin.EpsilonResult is not A.EpsilonResult  # a separate module object from the same file
    assert twin.__file__ == A.__file__


def test_bad_input_is_refused_before_either_path(host):
    with pytest.raises(ValueError, match="sigma"):
        aj.dpsgd_epsilon(sigma=-1.0, q=0.01, steps=10.0, delta=1e-5)
    with pytest.raises(ValueError, match="steps"):
        aj.dpsgd_calibrate_sigma(target_epsilon=1.0, q=0.01, steps=1.5, delta=1e-5)


def test_stand_ins_follow_jax_semantics():
    jnp_h, lax_h, ops_h = _host.jax_on_numpy.numpy, _host.jax_on_numpy.lax, _host.jax_on_numpy.ops
    x = np.array([0.0, 3.0, 0.0, 5.0])
    for size in (1, 2, 4):
        np.testing.assert_array_equal(jnp_h.nonzero(x, size=size, fill_value=7)[0],
                                      np.asarray(jnp.nonzero(x, size=size, fill_value=7)[0]))
    data, seg = np.array([3.0, 1.0, 2.0, 5.0]), np.array([0, 0, 2, 2])
    np.testing.assert_array_equal(ops_h.segment_min(data, seg, num_segments=3),
                                  np.asarray(jax.ops.segment_min(data, seg, num_segments=3)))
    np.testing.assert_array_equal(ops_h.segment_max(data, seg, num_segments=3),
                                  np.asarray(jax.ops.segment_max(data, seg, num_segments=3)))
    assert lax_h.fori_loop(0, 5, lambda i, c: c + i, 0) == jax.lax.fori_loop(0, 5, lambda i, c: c + i, 0)
    assert lax_h.while_loop(lambda c: c < 10, lambda c: c * 2, 1) == 16
    assert lax_h.switch(5, [lambda: 0, lambda: 1]) == jax.lax.switch(5, [lambda: 0, lambda: 1])
    assert lax_h.cond(False, lambda: 1, lambda: 2) == 2


def test_twin_warnings_are_the_live_classes():
    from amplify_jax import checkin, secrdp

    assert _host.twin("checkin").OrderCapWarning is checkin.OrderCapWarning
    assert _host.twin("secrdp._adversaries").DisconnectedGraphWarning is secrdp._adversaries.DisconnectedGraphWarning


def test_off_context_keeps_a_thread_on_the_compiled_path(host):
    with _host.off():
        assert not _host.use_host("dpsgd_epsilon", 1)
    assert _host.use_host("dpsgd_epsilon", 1)
