"""The registry's contract, checked for every registered bound: a bound is tested by being registered.

For every bound: its declaration is well formed; the command line answers what the Python call answers; every
monotone parameter inverts (the answer at the returned value meets the target, and one step further does not);
every parameter given a value outside its domain, NaN, inf or 1e300 is refused with exit status 2 and one line
naming it.  Test points are the bounds' declared examples (cheap by contract), so each kernel compiles once.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

import amplify_jax  # noqa: F401  (registers every family's bounds)
from amplify_jax import bounds
from amplify_jax.bounds import Choice, Graph, Integer, Orders, Real
from amplify_jax.cli import main
from amplify_jax.status import Status

ALL = bounds.list()
IDS = [b.id for b in ALL]
README = Path(__file__).resolve().parent.parent / "README.md"


def _flag_value(v) -> str:
    if isinstance(v, (list, tuple, np.ndarray)):
        return ",".join(repr(float(x)) for x in np.ravel(v))
    if isinstance(v, float):
        return repr(v)
    return str(v)


def _argv(bound, params: dict) -> list:
    argv = []
    for k, v in params.items():
        argv += [bound.param(k).flag if k in [p.name for p in bound.params] else "--" + k.replace("_", "-"),
                 _flag_value(v)]
    return argv


def _run(capsys, argv):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


_EVAL = {}


def _evaluated(bound):
    """The example's evaluation, computed once per bound (and shared by the tests below)."""
    if bound.id not in _EVAL:
        _EVAL[bound.id] = bounds.evaluate(bound.id, **bound.example)
    return _EVAL[bound.id]


# ----------------------------------------------------------------------------------------------------------
# Declarations


def test_registry_has_the_fixed_ids():
    for fixed in ("dpsgd", "shuffle.clones", "checkin.distributed-gaussian", "traffic.scrambler", "secrdp.step"):
        if fixed.split(".")[0] in {b.family for b in ALL} or "." not in fixed:
            assert fixed in IDS, fixed
    assert IDS == sorted(set(IDS))


@pytest.mark.parametrize("bound", ALL, ids=IDS)
def test_declaration(bound):
    assert bound.paper and bound.theorem and bound.summary
    for p in bound.params:
        assert p.doc, (bound.id, p.name)
        if p.name in bound.solvable:
            lo, hi = p.search_range()
            assert np.all(p.domain.contains(np.array([lo, hi]))), (bound.id, p.name, lo, hi)
            if isinstance(p.domain, Real):
                assert lo > 0
    # the example is valid: binding it raises nothing
    bounds.bind(bound, dict(bound.example))


def test_readme_table_is_current():
    text = README.read_text()
    m = re.search(r"<!-- bounds-table -->\n(.*?)<!-- /bounds-table -->", text, re.S)
    assert m, "README.md lacks the generated table of bounds (markers <!-- bounds-table -->)"
    assert m.group(1) == bounds.markdown_table(), "regenerate with: python -m amplify_jax.bounds._table README.md"


# ----------------------------------------------------------------------------------------------------------
# Evaluate: the command line equals the Python call


@pytest.mark.parametrize("bound", ALL, ids=IDS)
def test_cli_evaluate_equals_python(bound, capsys):
    res = _evaluated(bound)
    code, out, err = _run(capsys, ["evaluate", bound.id, *_argv(bound, bound.example), "--json"])
    assert code == 0, err
    got = json.loads(out)
    for k, v in res.outputs.items():
        if k == "status":
            assert got["status"] == [str(Status(int(s))) for s in np.ravel(v)]
        else:
            # same values (scalars and the command line's 1-element arrays may compile to programs 1 ulp apart)
            np.testing.assert_allclose(np.asarray(got[k], dtype=float).ravel(), np.asarray(v, dtype=float).ravel(),
                                       rtol=1e-13, atol=0)
    for k in bound.example:
        assert k in got
    assert np.all(np.isfinite(res.value) | (res.value == np.inf)), "an answer is NaN"


@pytest.mark.parametrize("bound", ALL, ids=IDS)
def test_host_path_equals_compiled(bound, monkeypatch):
    """A fresh process's first questions are answered on the host (amplify_jax._core.host: the same kernels run by
    NumPy): equal to the compiled answer for every bound, or declined (the kernel uses a part of JAX the host
    stand-ins lack, e.g. jax.random) and then answered by the compiled path."""
    from amplify_jax._core import host as _host

    res = _evaluated(bound)
    monkeypatch.setenv(_host.ENV, "always")
    monkeypatch.setattr(_host, "_spent", {})
    got = bounds.evaluate(bound.id, **bound.example)
    assert _host._spent.get(f"bounds.evaluate:{bound.id}", 0.0) < np.inf, "the host path was declined"
    for k, v in res.outputs.items():
        if k == "status":
            np.testing.assert_array_equal(got.status, v)
        else:
            # the same formulas; exp/log differ in the last bit (the C library's against XLA's), which an
            # iterative search (clones' bisection) or an FFT (the PLD; its round-off is bounded in delta on
            # either path) carries to ~2e-10 of the answer; a by-product such as the order found, to ~1e-8
            rtol = 1e-8 if k == res.answer else 1e-6
            np.testing.assert_allclose(np.asarray(got.outputs[k], dtype=float), np.asarray(v, dtype=float),
                                       rtol=rtol, atol=0, err_msg=k)


# ----------------------------------------------------------------------------------------------------------
# Invert: round trips for every monotone parameter


def _solvable_cases():
    for b in ALL:
        for name in b.solvable:
            # the scrambler's n and sampling: each value of the search plans new windows, and each window size
            # compiles the exact method's eps inversion again (~45 s and ~23 s of a worker on 2 cores): in the
            # slow set (python -m pytest -m slow tests/test_bounds.py -k scrambler); its dummies are solved here
            slow = b.id == "traffic.scrambler" and name in ("n", "sampling")
            marks = [pytest.mark.slow] if slow else []
            yield pytest.param(b, name, id=f"{b.id}:{name}", marks=marks)


def _step_beyond(bound, name, value):
    """The next value past the returned one, on the infeasible side."""
    p = bound.param(name)
    smaller_is_infeasible = p.monotone == bounds.DECREASING  # minimal x returned
    if isinstance(p.domain, Integer):
        return value - 1 if smaller_is_infeasible else value + 1
    return value * (1 - 4e-6) if smaller_is_infeasible else value * (1 + 4e-6)


@pytest.mark.parametrize("bound,name", list(_solvable_cases()))
def test_invert_round_trip(bound, name):
    ex = dict(bound.example)
    x0 = ex.pop(name, bound.param(name).default)
    target = float(np.asarray(_evaluated(bound).value).ravel()[0])
    if not (np.isfinite(target) and target > 0):
        pytest.skip(f"the example's answer {target} cannot be a target")
    tkey = "target_" + bound.answer
    inv = bounds.invert(bound.id, solve_for=name, **{tkey: target}, **ex)
    value = float(np.ravel(inv.value)[0])
    status = Status(int(np.ravel(inv.status)[0]))
    assert status in (Status.OK, Status.AT_LIMIT), (status, value)
    achieved = float(np.ravel(getattr(inv, bound.answer))[0])
    assert achieved <= target
    again = float(np.ravel(bounds.evaluate(bound.id, **ex, **{name: value}).value)[0])
    assert again <= target  # the re-check, independently
    if status is Status.OK:
        beyond = _step_beyond(bound, name, value)
        if bound.param(name).domain.contains(np.asarray(beyond)):
            worse = float(np.ravel(bounds.evaluate(bound.id, **ex, **{name: beyond}).value)[0])
            assert worse > target, (value, beyond, worse, target)
        if isinstance(bound.param(name).domain, Real):
            assert math.isclose(value, x0, rel_tol=1e-3) or again <= target


# ----------------------------------------------------------------------------------------------------------
# The registry's own behaviour (before the bad-input cases: pytest-xdist hands each worker a contiguous half of
# the suite, and the bad-input cases, which compile nothing, are where it splits; the DP-SGD programs these
# tests compile are then compiled once, by the worker that runs test_accountants.py first, not also by the other
# one at the same time)


def test_unknown_and_missing_parameters():
    with pytest.raises(ValueError, match="bogus"):
        bounds.evaluate("dpsgd", sigma=1.0, q=0.01, steps=10, delta=1e-5, bogus=1)
    with pytest.raises(ValueError, match="delta"):
        bounds.evaluate("dpsgd", sigma=1.0, q=0.01, steps=10)
    with pytest.raises(ValueError, match="id"):
        bounds.get("no.such-bound")
    with pytest.raises(ValueError, match="solve_for"):
        bounds.invert("dpsgd", solve_for="delta", target_epsilon=1.0, sigma=1.0, q=0.01, steps=10)
    with pytest.raises(ValueError, match="target_epsilon"):
        bounds.invert("dpsgd", solve_for="sigma", q=0.01, steps=10, delta=1e-5)


def test_broadcast_and_shapes():
    r = bounds.evaluate("dpsgd", sigma=np.array([[1.0], [2.0]]), q=[0.01, 0.02, 0.05], steps=100, delta=1e-5)
    assert r.epsilon.shape == (2, 3) and r.status.shape == (2, 3) and r.order.shape == (2, 3)
    # decreasing in sigma, increasing in q
    assert np.all(np.diff(r.epsilon, axis=0) < 0) and np.all(np.diff(r.epsilon, axis=1) > 0)
    c = bounds.evaluate("rdp.gaussian", orders=[2.0, 4.0], sigma=[1.0, 2.0, 4.0])
    np.testing.assert_allclose(c.rdp, np.array([2.0, 4.0])[None, :] / (2 * np.array([1.0, 2.0, 4.0])[:, None] ** 2))


def test_invert_matches_the_family_calibration():
    inv = bounds.invert("dpsgd", solve_for="sigma", target_epsilon=[1.0, 3.0], q=0.01, steps=1000,
                        target_delta=1e-5)
    cal = amplify_jax.dpsgd_calibrate_sigma(target_epsilon=[1.0, 3.0], q=0.01, steps=1000, delta=1e-5)
    np.testing.assert_array_equal(inv.sigma, np.asarray(cal.sigma))
    assert np.all(inv.epsilon <= [1.0, 3.0])


def test_nan_from_a_kernel_is_flagged_not_returned():
    from amplify_jax.bounds import DECREASING, Bound, Param
    from amplify_jax.bounds._api import _Batch, _outputs

    b = Bound(id="test.nan", paper="p", theorem="t", summary="s", answer="epsilon", kernel=lambda **k: {},
              example={"x": 1.0, "delta": 0.1},
              params=(Param("x", Real(0.0, 1.0, lo_open=True), "x", DECREASING), Param("delta", Real(0, 1), "d")))
    raw = np.array([1.0, np.nan] + [2.0] * 6)  # a padded batch of 8 for a grid of 2 points
    out = _outputs(b, {"epsilon": raw}, _Batch((2,)), None)
    assert out["epsilon"].tolist() == [1.0, np.inf]
    assert out["status"].tolist() == [Status.OK, Status.ERROR]


def test_host_inversion_equals_compiled_inversion():
    from amplify_jax.calibrate import invert_monotone, invert_monotone_host

    t = np.array([0.37, 1.1, 2.3, 1e-9, 1e9])
    for integer in (False, True):
        a = invert_monotone(_power, t, args=(3.0,), lo=1.0, hi=1e6, integer=integer)
        b = invert_monotone_host(lambda x: 3.0 / np.sqrt(x), t, lo=1.0, hi=1e6, integer=integer)
        np.testing.assert_array_equal(np.asarray(a.value), np.asarray(b.value))
        np.testing.assert_array_equal(np.asarray(a.status), np.asarray(b.status))
        np.testing.assert_allclose(np.asarray(a.achieved), np.asarray(b.achieved), rtol=1e-14)  # NumPy vs XLA sqrt


def _power(x, c):
    import jax.numpy as jnp

    return c / jnp.sqrt(x)


# ----------------------------------------------------------------------------------------------------------
# Bad input: one code path, derived from the domains


def _bad_values(p):
    d = p.domain
    if isinstance(d, Real):
        yield repr(d.lo if d.lo_open else d.lo - max(1.0, abs(d.lo)))
        yield repr(d.hi if d.hi_open else d.hi * 2 + 1)
        yield from ("nan", "inf", "1e300")
    elif isinstance(d, Integer):
        yield from (str(d.lo - 1), "1.5" if d.lo <= 1 else f"{d.lo + 0.5}", "nan", "inf", "1e300")
    elif isinstance(d, Orders):
        yield from ("1", "0.5", "nan", "1e300")
    elif isinstance(d, Choice):
        yield "no-such-choice"
    elif isinstance(d, Graph):
        yield from ("no-such-graph:3", "ring:-4")


def _bad_cases():
    for b in ALL:
        for p in b.params:
            for v in _bad_values(p):
                yield pytest.param(b, p.name, v, id=f"{b.id}:{p.name}={v}")


@pytest.mark.parametrize("bound,name,value", list(_bad_cases()))
def test_bad_input_is_one_line_exit_2(bound, name, value, capsys):
    params = dict(bound.example)
    params[name] = value
    code, out, err = _run(capsys, ["evaluate", bound.id, *_argv(bound, params)])
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and bound.param(name).flag in lines[0], err  # the flag as typed (--sigma-cor)
    with pytest.raises(ValueError, match=name):
        bounds.evaluate(bound.id, **{**bound.example, name: value if isinstance(
            bound.param(name).domain, (Choice, Graph)) else float(value)})


# ----------------------------------------------------------------------------------------------------------
# issue 26, item 4: the message of a bad solve_for, and lo > hi refused by every bound (no kernel runs)


def _target(b):
    return {"target_epsilon": 1.0} if b.answer == "epsilon" else {"target_delta": 1e-6}


@pytest.mark.parametrize("b", [b for b in bounds.list() if b.solvable], ids=lambda b: b.id)
def test_bad_solve_for_names_the_solvable_parameters(b):
    params = dict(b.example)
    with pytest.raises(ValueError) as err:
        bounds.invert(b.id, solve_for="zzz", **_target(b), **params)
    assert f"Expected solve_for in {list(b.solvable)}" in str(err.value) and "solve_for='zzz'" in str(err.value)
    assert list(b.solvable)  # "in []" was bounds.list() shadowing the builtin


@pytest.mark.parametrize("b", [b for b in bounds.list() if b.solvable], ids=lambda b: b.id)
def test_lo_above_hi_is_refused_by_every_bound(b):
    name = b.solvable[0]
    lo, hi = b.param(name).search_range()
    params = {k: v for k, v in b.example.items() if k != name}
    for bad_lo, bad_hi in ((hi, lo), (lo, lo)):
        with pytest.raises(ValueError, match=r"Expected lo < hi, got lo=") as err:
            bounds.invert(b.id, solve_for=name, **_target(b), lo=bad_lo, hi=bad_hi, **params)
        assert "np.float64" not in str(err.value)


def test_secrdp_closed_form_refuses_lo_above_hi():
    with pytest.raises(ValueError, match=r"Expected lo < hi, got lo=5.0, hi=1.0."):
        bounds.invert("secrdp.closed-form", solve_for="eps1", target_epsilon=1.0, steps=10, delta=1e-6, lo=5, hi=1)
    with pytest.raises(ValueError, match=r"lo=5.0, hi=1.0"):  # one bad element of a grid of ranges
        bounds.invert("secrdp.closed-form", solve_for="eps1", target_epsilon=1.0, steps=10, delta=1e-6,
                      lo=[0.1, 5.0], hi=1.0)
