"""Bad input everywhere (issue 15, item 3): every input class against every public entry point.

Input classes (negative, zero, NaN, +-inf, 1e300, 1e-300, fractional where an integer is expected, empty arrays,
shapes that do not broadcast, strings, orders <= 1, delta >= 1 and <= 0, empty / disconnected / self-loop
graphs, a graph file that does not parse, a sweep spec with unknown keys) are crossed with

- the registry: ``bounds.evaluate(id, ...)`` for every parameter of every bound, and ``bounds.invert(id, ...)``
  for its targets, search range, rtol and every other parameter (the first solvable parameter of each bound);
- the public functions that take numbers, enumerated from the ``__all__`` of the accounting modules and the
  paper subpackages, each called at a base point built from its parameters' names, one parameter replaced;
- every command of the command line (``amplify_jax.cli.main(argv)`` in-process, ``--json``), and sweep specs.

Each case's outcome is one of

- ``refused``: a ``ValueError`` whose first line names the parameter (command line: exit status 2, one line
  on stderr naming it);
- ``answered``: a result, every value finite or its point flagged (status not ok, ``valid`` False, ...);
- ``accepted``: a result for a class that is never valid (NaN, inf, a string, a fractional integer, an empty
  array, shapes that do not broadcast, orders <= 1, delta outside (0, 1), a self-loop, a file that does not
  parse, an unknown key), or a negative value where none is valid;
- ``unnamed``: a ``ValueError`` that does not name the parameter (command line: exit 2 but several lines, or
  not naming it);
- ``traceback``: any other exception (TypeError, IndexError, ZeroDivisionError, ...);
- ``nonfinite``: NaN or inf returned at a point nothing flags;
- ``hang``: no answer within the case's time limit (the worker process is killed and restarted).

The goal is 0 accepted, 0 unnamed, 0 tracebacks, 0 nonfinite, 0 hangs.  Cases run in a worker process (one, restarted
after a hang).  Usage::

    python benchmarks/bad_input_table.py                 # the whole table (-> benchmarks/results/bad_input.json)
    python benchmarks/bad_input_table.py --only cli      # one group: registry, api, cli, spec, graph
    python benchmarks/bad_input_table.py --list          # the cases, not run
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import inspect
import io
import json
import math
import multiprocessing as mp
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "bad_input.json"

CLASSES = ("negative", "zero", "nan", "+inf", "-inf", "1e300", "1e-300", "fractional", "empty", "no-broadcast",
           "string", "orders<=1", "delta>=1", "delta<=0", "graph-empty", "graph-disconnected", "graph-self-loop",
           "graph-file-unparseable", "spec-unknown-key")
OUTCOMES = ("refused", "answered", "accepted", "unnamed", "traceback", "nonfinite", "hang")
#: classes no function may answer (a result for them is counted ``accepted``): never a valid value
MUST_REFUSE = ("nan", "+inf", "-inf", "string", "fractional", "empty", "no-broadcast", "orders<=1", "delta>=1",
               "delta<=0", "graph-self-loop", "graph-file-unparseable", "spec-unknown-key")
GOOD = ("refused", "answered")

#: scalar values of the numeric classes (fractional: base + 0.5; empty, no-broadcast, string: built per case)
SCALARS = {"negative": -1.0, "zero": 0.0, "nan": math.nan, "+inf": math.inf, "-inf": -math.inf, "1e300": 1e300,
           "1e-300": 1e-300}
TEXT = {"negative": "-1", "zero": "0", "nan": "nan", "+inf": "inf", "-inf": "-inf", "1e300": "1e300",
        "1e-300": "1e-300", "empty": "", "string": "abc"}


def is_delta(name: str) -> bool:
    return "delta" in name and name not in ("log_delta",)


def is_orders(name: str) -> bool:
    return name == "orders"


def numeric_classes(name: str, integer: bool, orders: bool = False) -> list:
    """The classes that apply to a numeric parameter."""
    out = list(SCALARS) + ["empty", "string"]
    if integer:
        out.append("fractional")
    if orders:
        out.append("orders<=1")
    if is_delta(name):
        out += ["delta>=1", "delta<=0"]
    return out


def class_value(cls: str, base, orders: bool = False):
    """The Python value of a class for a parameter whose valid value is ``base``."""
    if orders:
        return {"orders<=1": [1.0, 2.0], "empty": [], "string": "abc", "fractional": [2.5]}.get(
            cls, [SCALARS.get(cls, 2.0), 8.0])
    if cls in SCALARS:
        return SCALARS[cls]
    if cls == "fractional":
        return float(np.ravel(base)[0]) + 0.5
    if cls == "empty":
        return np.zeros(0)
    if cls == "string":
        return "abc"
    if cls == "delta>=1":
        return 1.0
    if cls == "delta<=0":
        return -1e-9
    raise KeyError(cls)


def class_text(cls: str, base, orders: bool = False) -> str:
    """The command-line text of a class."""
    if orders:
        return {"orders<=1": "1,2", "empty": "", "string": "abc", "fractional": "2.5"}.get(
            cls, f"{TEXT.get(cls, '2')},8")
    if cls in TEXT:
        return TEXT[cls]
    if cls == "fractional":
        return repr(float(np.ravel(base)[0]) + 0.5)
    if cls == "delta>=1":
        return "1"
    if cls == "delta<=0":
        return "-1e-9"
    raise KeyError(cls)


# ----------------------------------------------------------------------------------------------------------
# Outcomes


def _names(param: str) -> tuple:
    return (param, "--" + param.replace("_", "-"))


def _first_line(exc) -> str:
    s = str(exc)
    return s.splitlines()[0] if s else type(exc).__name__


def _arrays(obj, depth=0):
    """(field name, float array) pairs found in a result (tuples, named tuples, dataclasses, dicts, objects)."""
    if depth > 3 or obj is None:
        return
    if isinstance(obj, (str, bytes, bool)):
        return
    if isinstance(obj, dict):
        for k, v in obj.items():
            for name, a in _arrays(v, depth + 1):
                yield (str(k) if name == "" else name), a
        return
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            for name, a in _arrays(getattr(obj, f.name), depth + 1):
                yield (f.name if name == "" else name), a
        return
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        for k in obj._fields:
            for name, a in _arrays(getattr(obj, k), depth + 1):
                yield (k if name == "" else name), a
        return
    if isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _arrays(v, depth + 1)
        return
    if hasattr(obj, "outputs") and isinstance(getattr(obj, "outputs"), dict):  # a registry Result
        yield from _arrays(obj.outputs, depth + 1)
        return
    try:
        a = np.asarray(obj)
    except Exception:  # noqa: BLE001 - an opaque object: nothing to check
        return
    if a.dtype.kind in "fc" or a.dtype.kind in "biu":
        yield "", a


_FLAG_BAD = {"status": lambda a: a != 0, "valid": lambda a: ~a.astype(bool),
             "converged": lambda a: ~a.astype(bool), "fallback": lambda a: a.astype(bool),
             "connected": lambda a: ~a.astype(bool),
             # a true +inf marked by its result: the target randomizer's eps0 at sampling 0 (no local
             # guarantee), a simulated output seen under one input only (log-ratio +inf)
             "finite_eps0": lambda a: ~a.astype(bool), "both_seen": lambda a: ~a.astype(bool)}


def check_result(res) -> str:
    """``answered``, or ``nonfinite`` when a NaN / inf is returned and no flag of the result marks a point."""
    pairs = list(_arrays(res))
    flagged = any(np.any(_FLAG_BAD[n](a)) for n, a in pairs if n in _FLAG_BAD and a.size)
    bad = any(a.dtype.kind in "fc" and not np.all(np.isfinite(a)) for n, a in pairs if n not in _FLAG_BAD)
    return "nonfinite" if bad and not flagged else "answered"


def python_outcome(fn, param: str) -> tuple:
    """(outcome, detail) of calling ``fn()`` where ``param`` holds the bad value."""
    try:
        res = fn()
    except ValueError as exc:
        line = _first_line(exc)
        named = any(n in line for n in _names(param)) or param == "*"
        return ("refused" if named else "unnamed"), line[:300]
    except Exception as exc:  # noqa: BLE001 - what the table counts
        return "traceback", f"{type(exc).__name__}: {_first_line(exc)}"[:300]
    return check_result(res), ""


def cli_outcome(argv: list, param: str) -> tuple:
    """(outcome, detail) of ``amplify-jax ARGV`` in-process: exit 2 with one stderr line naming ``param``."""
    from amplify_jax.cli import main

    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 2
    except Exception as exc:  # noqa: BLE001
        return "traceback", f"{type(exc).__name__}: {_first_line(exc)}"[:300]
    lines = [s for s in err.getvalue().splitlines() if s.strip()]
    if code == 0:
        text = out.getvalue()
        try:
            payload = json.loads(text) if text.strip().startswith(("{", "[")) else None
        except ValueError:
            payload = None
        if payload is not None:
            status = payload.get("status") if isinstance(payload, dict) else None
            vals = [v for k, v in (payload.items() if isinstance(payload, dict) else []) if k != "status"]
            flat = np.asarray([x for v in vals for x in np.ravel(np.asarray(v, dtype=object))
                               if isinstance(x, (int, float)) and not isinstance(x, bool)], dtype=float)
            bad = flat.size and not np.all(np.isfinite(flat))
            ok = status is None or all(s == "ok" for s in status)
            return ("nonfinite" if bad and ok else "answered"), ""
        low = text.lower()
        return ("nonfinite" if ("nan" in low.split() or " inf" in low) else "answered"), ""
    if code == 2 and len(lines) == 1:
        named = param == "*" or any(n in lines[0] for n in _names(param))
        return ("refused" if named else "unnamed"), lines[0][:300]
    return "unnamed", f"exit {code}: " + " | ".join(lines)[:300]


# ----------------------------------------------------------------------------------------------------------
# The cases: (group, target, param, class, thunk)


@dataclasses.dataclass
class Case:
    group: str
    target: str
    param: str
    cls: str
    run: object = dataclasses.field(repr=False)  # () -> (outcome, detail)

    @property
    def key(self) -> str:
        return f"{self.group}:{self.target}:{self.param}:{self.cls}"


def _registry_cases():
    from amplify_jax import bounds
    from amplify_jax.bounds import Choice, Graph, Integer, Orders

    for b in bounds.list():
        ex = dict(b.example)
        numeric = [p.name for p in b.params if p.domain.numeric]
        for p in b.params:
            d = p.domain
            base = ex.get(p.name, p.default)
            if isinstance(d, Choice):
                yield Case("registry", f"evaluate {b.id}", p.name, "string",
                           _py(_evaluate(b.id, ex, p.name, "abc"), p.name))
                continue
            if isinstance(d, Graph):
                for cls, val in graph_values().items():
                    yield Case("registry", f"evaluate {b.id}", p.name, cls,
                               _py(_evaluate(b.id, ex, p.name, val), p.name))
                continue
            orders = isinstance(d, Orders)
            for cls in numeric_classes(p.name, isinstance(d, Integer), orders):
                val = class_value(cls, base, orders)
                yield Case("registry", f"evaluate {b.id}", p.name, cls, _py(_evaluate(b.id, ex, p.name, val), p.name))
            if not orders and len(numeric) > 1:
                other = next(n for n in numeric if n != p.name)
                pair = {p.name: np.full(2, ex.get(p.name, p.default)),
                        other: np.full(3, ex.get(other, b.param(other).default))}
                yield Case("registry", f"evaluate {b.id}", p.name, "no-broadcast",
                           _py(_evaluate(b.id, {**ex, **pair}), p.name, other))
        if not b.solvable:
            continue
        s = b.solvable[0]
        tname = "target_" + b.answer
        fixed = "delta" if b.answer == "epsilon" else "epsilon"
        rest = {k: v for k, v in ex.items() if k not in (s, fixed)}
        target = 1.0 if b.answer == "epsilon" else 1e-3

        def inv(over, b=b, s=s, tname=tname, fixed=fixed, rest=rest, target=target, ex=ex):
            kw = {tname: target, **({fixed: ex[fixed]} if fixed in ex else {}), **rest}
            kw.update(over)
            return bounds.invert(b.id, solve_for=s, **kw)

        tgt = f"invert {b.id} --solve-for {s}"
        for cls in numeric_classes(tname, False):
            yield Case("registry", tgt, tname, cls,
                       _py(lambda v=class_value(cls, target), inv=inv, tname=tname: inv({tname: v}), tname))
        for name in ("lo", "hi", "rtol"):
            for cls in numeric_classes(name, False):
                yield Case("registry", tgt, name, cls,
                           _py(lambda v=class_value(cls, 1.0), n=name, inv=inv: inv({n: v}), name))
        for p in b.params:
            if p.name == s or not p.domain.numeric or isinstance(p.domain, Orders):
                continue
            base = ex.get(p.name, p.default)
            for cls in numeric_classes(p.name, isinstance(p.domain, Integer)):
                yield Case("registry", tgt, p.name, cls,
                           _py(lambda v=class_value(cls, base), n=p.name, inv=inv: inv({n: v}), p.name))


def _evaluate(id_, ex, name=None, value=None):
    """A thunk: ``bounds.evaluate(id_, **ex)`` with ``name`` set to ``value``."""
    from amplify_jax import bounds

    kw = dict(ex) if name is None else {**ex, name: value}
    return lambda: bounds.evaluate(id_, **kw)


def _py(fn, param, *others):
    def run():
        outcome, detail = python_outcome(fn, param)
        if outcome == "unnamed" and any(o in detail for o in others):
            outcome = "refused"  # a shape clash named by the other parameter of the pair
        return outcome, detail

    return run


# ---- public functions: base points built from parameter names


BASE = {
    "orders": [2.0, 8.0], "sigma": 1.0, "q": 0.01, "steps": 100, "delta": 1e-5, "epsilon": 1.0, "eps": 1.0,
    "eps0": 1.0, "n": 1000, "gamma": 0.1, "target_epsilon": 1.0, "target_delta": 1e-5, "targets": 10,
    "sampling": 0.5, "dummies": 10, "sources": 100, "delta_prime": 1e-6, "delta_hat": 1e-6, "delta0": 1e-8,
    "delta_tilde": 1e-6, "delta_cycle": 1e-6, "shuffle_delta": 1e-8, "contributions": 100.0, "lipschitz": 1.0,
    "colluders": 1, "sigma_unc": 1.0, "sigma_cor": 2.0, "clip": 1.0, "batch_size": 32.0, "adversary": "eavesdropper",
    "eps1": 0.01, "scale": 2.0, "k": 2, "p": 0.5, "p_dropout": 0.0, "L": 10, "m": 10, "eps_aggregate": 1.0,
    "sigma_loc": 1.0, "rdp": [0.1, 0.5], "log_delta": -11.5, "ratio": 1.0, "log_inv_delta_prime": 13.8,
    "sensitivity": 1.0, "base_rdp": [0.1, 0.5], "alpha": 2.0, "seed": 0, "rows": 4, "cols": 4, "d": 3,
    "deltas": [1e-6, 1e-6], "setting": "network", "runs": 10, "num_walks": 2, "iterations": 2, "groups": 2,
    "noise_multiplier": 1.0, "sampling_probability": 0.01, "count": 10, "grid_size": 1024, "integer_rdp": [0.1, 0.5],
}
#: optional parameters (default None) that take numbers and are worth perturbing
OPTIONAL_NUMERIC = {"orders", "grid_size", "tail_sd", "chernoff_delta", "max_messages", "sources", "colluders",
                    "gamma_lo", "kappa", "order", "first", "sigma_range"}
INTEGER_NAMES = {"n", "steps", "k", "targets", "dummies", "sources", "colluders", "L", "m", "seed", "rows", "cols",
                 "d", "runs", "num_walks", "iterations", "groups", "count", "grid_size", "max_iter", "n_iter",
                 "samples", "max_dummies", "max_n", "max_channels", "num", "grid_points", "max_messages", "first",
                 "removed", "degree"}
#: per-function base arguments where names are not enough (positional mechanism names, graphs, callables)
OVERRIDES = {
    "epsilon": dict(mechanism="poisson-gaussian", sigma=1.0, q=0.01, steps=100),
    "calibrate_sigma": dict(mechanism="poisson-gaussian", q=0.01, steps=100),
    "pld.epsilon": dict(mechanism="gaussian", sigma=2.0, steps=10),
    "pld.delta": dict(mechanism="gaussian", sigma=2.0, steps=10),
    "walk_privacy_losses": dict(walks=None),  # filled at run time (sample_walks)
    "shuffle.blanket_delta": dict(randomizer=None),
    "shuffle.blanket_epsilon": dict(randomizer=None),
    "shuffle.blanket_properties": dict(randomizer=None),
    "network.kov_composition_epsilon": dict(eps=[0.1, 0.1]),
    "network.subsampled_cycle_epsilon": dict(n=1000, m=10, eps_aggregate=1.0),
    "traffic.plan_privacy": dict(plan=None),
    "checkin.window_size": dict(n=1000, gamma=0.1),
    "pld.dpsgd_epsilon": dict(sigma=1.0, q=0.01, steps=10, delta=1e-5, grid_size=1024),
    "pld.dpsgd_delta": dict(sigma=1.0, q=0.01, steps=10, epsilon=1.0, grid_size=1024),
    "pld.dpsgd_calibrate_sigma": dict(q=0.01, steps=10, delta=1e-5, grid_size=1024),
    "graphs.random_regular_graph": dict(d=3, n=10, seed=0),
    "graphs.erdos_renyi_graph": dict(n=10, p=0.5, seed=0),
    "secrdp.baselines": dict(n=16),
    "secrdp.algebraic_connectivity": dict(removed=0),
    "complete_graph_sum_epsilon": dict(n=10000, steps=10**6, eps0=0.5, delta_prime=1e-6, delta_hat=1e-6),
    "traffic.scrambler_pure_epsilon_exact": dict(targets=3, n=3, sampling=0.3, dummies=1),
    # the theorems' own conditions (eps0 < 1, n > 1000, eps < 1/2): a base point outside them refused every case
    "network.complete_graph_sum_bound": dict(eps0=0.5),
    "network.sgd_theorem4_bound": dict(eps0=0.5),
    "network.walk_privacy_losses": dict(walks=None, eps0=0.5),
    "network.ring_histogram_bound": dict(n=2000, steps=10, eps0=0.4, delta=1e-6, delta_prime=1e-6),
    "network.ring_histogram_gamma": dict(n=2000, L=10, target_epsilon=0.3, delta=1e-6),
    "network.sgd_calibrate_sigma": dict(setting="network", contributions=100.0),
    # Lemma 1 needs sigma >= L sqrt(2 alpha (alpha - 1)) = 10.6 at the base orders [2, 8]
    "network.network_sgd_rdp": dict(sigma=20.0),
    "secrdp.epsilon": dict(),  # not the accountants' epsilon(mechanism, ...) of the short name
    "traffic.simulate_scrambler_outputs": dict(targets=3, n=3, sampling=0.3, dummies=1, runs=10),
}
#: functions not in the table, and why
SKIP = {
    "accountants.dpsgd_n_panels": "a sizing helper of the sweeps (no bound)",
    "rdp.SGMCurve": "a class (a curve object); its methods take traced arrays",
    "internal.refine_order": "a jnp kernel for use inside other kernels (takes a callable)",
    "internal.invert_monotone_kernel": "a jnp kernel for use inside other kernels",
    "internal.invert_monotone_implicit": "a jnp kernel for use inside other kernels",
    "internal.x64_scope": "a context manager (float64 scoping)",
    "internal.float64_jit": "a decorator (float64 compilation)",
    "checkin.binomial_weighted_rdp": "takes a log-excess kernel (callable)",
    "optimal_epsilon": "takes a callable rdp_fn",
    "pld.selects": "a predicate on option names",
    "network.summarize_walk_losses": "summarises another function's output",
    "traffic.aggregate_plan": "builds a plan object (integer groups only)",
    "traffic.kmeans_plan": "builds a plan object (integer iterations only)",
    "checkin.order_at_cap": "a predicate on a conversion's output (whether the order cap binds)",
}
#: parameters that hold a list along their own axis (one entry per composed mechanism), as ``orders`` does: no
#: shape clash with the other parameters, which broadcast with the remaining axes
LIST_PARAMS = {("network.kov_composition_epsilon", "eps")}
#: counts documented as real-valued (a high-probability bound on a count): 1.5 is valid there
REAL_COUNTS = {("network.advanced_composition_epsilon", "steps")}
#: traceable jnp building blocks, documented as not validating (for use inside other kernels, under jit): their
#: rows are counted apart ("kernel"), not as public entry points
KERNELS = ("internal", "rdp.interpolate_integer_rdp")
API_MODULES = ("amplify_jax", "rdp", "conversions", "internal", "accountants", "calibrate", "shuffle", "traffic",
               "checkin", "network", "secrdp", "pld", "graphs")
#: public functions importable from their module but not in its __all__ (their front door is another function's
#: option: accountant="pld" of accountants.dpsgd_epsilon, ...): still in the table
NOT_IN_ALL = ("pld.dpsgd_epsilon", "pld.dpsgd_calibrate_sigma", "pld.epsilon",
              # the paper families' intermediate quantities and helpers, documented in their package's docstring
              # (issue 29: out of __all__, still validated at the boundary)
              "checkin.window_size", "checkin.effective_checkin_rate", "network.contribution_bound",
              "network.subsampled_cycle_epsilon", "network.kov_composition_delta", "network.ring_histogram_gamma",
              "network.ring_noise", "secrdp.diag_inverse_covariance", "secrdp.closed_form_eps1",
              "secrdp.effective_noise_multiplier", "secrdp.utility_weights", "shuffle.fmt_validity_bound",
              "shuffle.blanket_properties", "traffic.amplification_variable_bounds", "traffic.local_costs",
              "traffic.scrambler_costs")


def api_functions() -> dict:
    """``qualified name -> function`` of every public function that takes numbers (first home wins)."""
    import importlib

    out, seen = {}, set()
    for m in API_MODULES:
        mod = importlib.import_module("amplify_jax" if m == "amplify_jax" else f"amplify_jax.{m}")
        for name in mod.__all__:
            obj = getattr(mod, name)
            if inspect.ismodule(obj) or inspect.isclass(obj) or not callable(obj) or id(obj) in seen:
                continue
            seen.add(id(obj))
            q = name if m == "amplify_jax" else f"{m}.{name}"
            if q in SKIP or name in SKIP:
                continue
            out[q] = obj
    for q in NOT_IN_ALL:
        m, name = q.split(".")
        out[q] = getattr(importlib.import_module(f"amplify_jax.{m}"), name)
    return out


def _api_base(qual: str, fn) -> dict | None:
    """Keyword arguments of a valid call, from the parameter names (None where a name has no base value)."""
    from amplify_jax import shuffle, traffic

    short = qual.split(".")[-1]
    over = OVERRIDES.get(qual, OVERRIDES.get(short, {}))
    kw = {}
    for name, prm in inspect.signature(fn).parameters.items():
        if prm.kind in (prm.VAR_KEYWORD, prm.VAR_POSITIONAL):
            continue
        if name in over:
            kw[name] = over[name]
        elif prm.default is not prm.empty:
            continue
        elif name == "graph":
            from amplify_jax._core import graphs

            kw[name] = graphs.ring_graph(16)  # the secrdp functions take a graph object, not a spec string
        elif name in ("fn", "rdp_fn"):
            import jax.numpy as jnp

            kw[name] = (lambda x, c: c / jnp.sqrt(x)) if "host" not in qual else (lambda x: 3.0 / np.sqrt(x))
        elif name == "target":
            kw[name] = 1.0
        elif name in ("lo", "hi"):
            kw[name] = 1.0 if name == "lo" else 1e6
        elif name == "spec":
            kw[name] = "ring:16"
        elif name == "curves":
            kw[name] = [[0.1, 0.2], [0.3, 0.4]]
        elif name == "base":
            kw[name] = [0.1, 0.5]
        elif name == "log_q":
            kw[name] = -4.6
        elif name in BASE:
            kw[name] = BASE[name]
        else:
            return None
    for k, v in over.items():
        kw.setdefault(k, v)
    if "args" in inspect.signature(fn).parameters and short in ("invert_monotone", "invert_monotone_differentiable"):
        kw["args"] = (3.0,)
    if "randomizer" in kw and kw["randomizer"] is None:
        kw["randomizer"] = shuffle.generic_randomizer(1.0)
    if "plan" in kw and kw["plan"] is None:
        kw["plan"] = traffic.aggregate_plan()
    return kw


def _call(fn, kw: dict, mechanism=None):
    kw = dict(kw)
    if "walks" in kw and kw["walks"] is None:
        from amplify_jax import network

        kw["walks"] = network.sample_walks(0, n=kw.get("n", 1000), steps=kw.get("steps", 100), num_walks=2)
    pos = []
    sig = inspect.signature(fn).parameters
    for name, prm in sig.items():
        if prm.kind == prm.POSITIONAL_ONLY or (prm.kind == prm.POSITIONAL_OR_KEYWORD and name == "mechanism"):
            if name in kw:
                pos.append(kw.pop(name))
    return fn(*pos, **kw)


def _api_cases():
    fns = api_functions()
    for qual, fn in fns.items():
        home = f"{fn.__module__.split('.')[1]}.{fn.__name__}" if fn.__module__.count(".") else fn.__name__
        # a kernel exported at the top level too (aj.internal.without_replacement_rdp_kernel) is still a kernel
        group = "kernel" if qual.startswith(KERNELS) or home.startswith(KERNELS) else "api"
        kw = _api_base(qual, fn)
        if kw is None:
            yield Case(group, qual, "*", "no-base-point", lambda: ("unnamed", "no base point for this function"))
            continue
        sig = inspect.signature(fn).parameters
        params = []
        for name, prm in sig.items():
            if name in ("mechanism", "fn", "rdp_fn", "graph", "spec", "randomizer", "plan", "walks", "adversary",
                        "setting", "args", "key", "method", "sampling" if "secrdp" in qual else "", "bound",
                        "form", "cycle_delta", "composition", "topology", "view", "shuffle_bound", "cost",
                        "feasible", "accountant", "devices", "integer", "optimize_order", "distributed",
                        "fixed_contributions", "n_panels", "sigma_range", "curves", "deltas", "axis"):
                continue
            if prm.kind in (prm.VAR_KEYWORD, prm.VAR_POSITIONAL):
                continue
            if name in kw or (prm.default is not prm.empty and isinstance(prm.default, (int, float))
                              and not isinstance(prm.default, bool)) or name in OPTIONAL_NUMERIC:
                params.append(name)
        extra = [k for k in kw if k not in sig]  # the mechanism's own parameters (epsilon(mechanism, **params))
        params += [k for k in extra if k not in ("mechanism",)]
        for name in params:
            base = kw.get(name, sig[name].default if name in sig else None)
            if base is None and name in BASE:
                base = BASE[name]
            if base is None:
                base = 1.0
            orders = name in ("orders", "rdp", "base_rdp", "integer_rdp", "base") or (qual, name) in LIST_PARAMS
            integer = (name in INTEGER_NAMES or (isinstance(base, int) and not isinstance(base, bool))) and \
                (qual, name) not in REAL_COUNTS
            for cls in numeric_classes(name, integer, orders and name == "orders"):
                val = class_value(cls, base, orders)
                yield Case(group, qual, name, cls, _py(lambda fn=fn, kw=kw, name=name, val=val: _call(
                    fn, {**kw, name: val}), name))
            numeric = [k for k in params if k != name and not (k in ("orders", "rdp", "base_rdp", "base"))
                       and (qual, k) not in LIST_PARAMS]
            if not orders and numeric:
                other = numeric[0]
                ob = kw.get(other, BASE.get(other, 1.0))
                if ob is None:
                    continue
                pair = {name: np.full(2, np.ravel(base)[0]), other: np.full(3, np.ravel(ob)[0])}
                yield Case(group, qual, name, "no-broadcast",
                           _py(lambda fn=fn, kw=kw, pair=pair: _call(fn, {**kw, **pair}), name, other))


# ---- graphs


def graph_values() -> dict:
    """The graph classes as values a graph parameter takes (spec strings, arrays, files)."""
    d = Path(tempfile.gettempdir()) / "amplify-bad-input"
    d.mkdir(exist_ok=True)
    (d / "broken.edges").write_text("0 1\n1 2 3 4 5\nnot an edge list\n")
    (d / "broken.graphml").write_text("<graphml><graph><node id='a'/><edge source=")
    (d / "empty.edges").write_text("# no edges\n")
    two = np.zeros((6, 6))
    for i, j in ((0, 1), (1, 2), (2, 0), (3, 4), (4, 5), (5, 3)):
        two[i, j] = two[j, i] = 1.0
    loop = np.zeros((4, 4))
    for i in range(4):
        loop[i, (i + 1) % 4] = loop[(i + 1) % 4, i] = 1.0
    loop[0, 0] = 1.0
    return {"graph-empty": np.zeros((4, 4)), "graph-disconnected": two, "graph-self-loop": loop,
            "graph-file-unparseable": str(d / "broken.edges"), "string": "no-such-graph:3", "negative": "ring:-4",
            "zero": "ring:0", "empty": "", "graph-empty-file": str(d / "empty.edges")}


def _graph_cases():
    from amplify_jax._core import graphs
    from amplify_jax import secrdp

    gv = graph_values()
    gv["graph-file-unparseable-graphml"] = str(Path(gv["graph-file-unparseable"]).with_suffix(".graphml"))
    for c, val in gv.items():  # classes named apart (unique keys); the table merges them (ALIASES)
        yield Case("graph", "graphs.from_spec", "spec", c, _py(lambda val=val: graphs.from_spec(val), "spec", "graph"))
        yield Case("graph", "graphs.adjacency", "graph", c, _py(lambda val=val: graphs.adjacency(val), "graph"))
        for name, call in (("secrdp.step_rdp", lambda g: secrdp.step_rdp([2.0], g, sigma_unc=1.0, sigma_cor=2.0,
                                                                          clip=1.0, adversary="eavesdropper")),
                           ("secrdp.epsilon", lambda g: secrdp.epsilon(g, sigma_unc=1.0, sigma_cor=2.0, clip=1.0,
                                                                       steps=10, delta=1e-5, adversary="curious")),
                           ("secrdp.algebraic_connectivity", lambda g: secrdp.algebraic_connectivity(g)),
                           ("secrdp.metropolis_hastings", lambda g: secrdp.metropolis_hastings(g)),
                           ("secrdp.calibrate_sigma_cor", lambda g: secrdp.calibrate_sigma_cor(
                               g, sigma_unc=1.0, clip=1.0, target_epsilon=10.0, delta=1e-5, steps=10))):
            yield Case("graph", name, "graph", c, _py(lambda val=val, call=call: call(val), "graph"))
    # a graph-valued command-line flag
    for c, val in gv.items():
        if not isinstance(val, str):
            continue
        argv = ["evaluate", "secrdp.step", "--graph", val, "--sigma-unc", "1", "--sigma-cor", "2", "--clip", "1",
                "--steps", "10", "--delta", "1e-5", "--adversary", "curious", "--json"]
        yield Case("graph", "cli evaluate secrdp.step", "graph", c, lambda argv=argv: cli_outcome(argv, "graph"))


# ---- command line


INT_FLAGS = {"steps", "k", "n", "targets", "dummies", "colluders"}


def _flags(d: dict) -> list:
    out = []
    for k, v in d.items():
        out += ["--" + k.replace("_", "-"), str(v)]
    return out


def _cli_cases():
    from amplify_jax import bounds
    from amplify_jax.bounds import Choice, Graph, Integer, Orders

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from test_bad_input import mechanism_bases  # the valid base of each mechanism command, one home

    for cmd, mech, base in mechanism_bases():
        for name, v in base.items():
            for cls in numeric_classes(name, name in INT_FLAGS, name == "orders"):
                text = class_text(cls, float(v.split(",")[0]), name == "orders")
                argv = [cmd, "--mechanism", mech, *_flags({**base, name: text}), "--json"]
                yield Case("cli", f"{cmd} --mechanism {mech}", name, cls,
                           lambda argv=argv, name=name: cli_outcome(argv, name))
        yield Case("cli", f"{cmd} --mechanism {mech}", "mechanism", "string",
                   lambda base=base, cmd=cmd: cli_outcome([cmd, "--mechanism", "abc", *_flags(base)], "mechanism"))
    for b in bounds.list():
        ex = dict(b.example)
        for p in b.params:
            d = p.domain
            base = ex.get(p.name, p.default)
            if isinstance(d, Graph):
                continue  # the graph group
            if isinstance(d, Choice):
                classes = ["string"]
            else:
                classes = numeric_classes(p.name, isinstance(d, Integer), isinstance(d, Orders))
            for cls in classes:
                orders = isinstance(d, Orders)
                text = "abc" if isinstance(d, Choice) else class_text(cls, base if not orders else 2.0, orders)
                vals = {**{k: (",".join(map(str, v)) if isinstance(v, list) else v) for k, v in ex.items()},
                        p.name: text}
                argv = ["evaluate", b.id, *_flags(vals), "--json"]
                yield Case("cli", f"evaluate {b.id}", p.name, cls, lambda argv=argv, p=p: cli_outcome(argv, p.name))
        if b.solvable:
            s = b.solvable[0]
            tname = "target_" + b.answer
            rest = {k: v for k, v in ex.items() if k != s}
            for cls in numeric_classes(tname, False):
                argv = ["invert", b.id, "--solve-for", s, *_flags({**rest, tname: class_text(cls, 1.0)}), "--json"]
                yield Case("cli", f"invert {b.id}", tname, cls, lambda argv=argv, t=tname: cli_outcome(argv, t))
            for name in ("lo", "hi", "rtol"):
                for cls in numeric_classes(name, False):
                    argv = ["invert", b.id, "--solve-for", s,
                            *_flags({**rest, tname: "1" if b.answer == "epsilon" else "1e-3",
                                     name: class_text(cls, 1.0)}),
                            "--json"]
                    yield Case("cli", f"invert {b.id}", name, cls, lambda argv=argv, n=name: cli_outcome(argv, n))
    for argv, param, cls in (
        (["evaluate"], "*", "empty"), (["evaluate", "no.such-bound"], "id", "string"),
        (["invert", "dpsgd", "--solve-for", "bogus", "--target-epsilon", "1"], "solve-for", "string"),
        (["epsilon", "--bogus", "1"], "bogus", "string"), (["epsilon", "--mechanism"], "mechanism", "empty"),
        (["no-such-command"], "*", "string"), ([], "*", "empty"), (["figures", "no-such-figure"], "*", "string"),
        (["sweep", "/no/such/file.toml"], "GRID", "string"),
    ):
        yield Case("cli", " ".join(argv[:2]) or "(no command)", param, cls,
                   lambda argv=argv, p=param: cli_outcome(argv, p))


# ---- sweep specs


def _spec_cases():
    from amplify_jax.sweep import load_spec

    d = Path(tempfile.gettempdir()) / "amplify-bad-input"
    d.mkdir(exist_ok=True)
    dpsgd = {"sweep": {"quantity": "epsilon"}, "grid": {"sigma": [1.0, 2.0], "q": 0.01, "steps": 100, "delta": 1e-5}}
    cal = {"sweep": {"quantity": "calibrate"},
           "grid": {"target_epsilon": [1.0], "q": 0.01, "steps": 100, "delta": 1e-5}}
    bound = {"sweep": {"bound": "shuffle.clones"}, "grid": {"eps0": [1.0, 2.0], "n": 10000, "delta": 1e-6}}
    cases = [
        ("dpsgd [sweep] unknown key", dpsgd, ("sweep", "bogus_key"), 1, "bogus_key"),
        ("dpsgd [sweep] misspelt key", dpsgd, ("sweep", "chunksize"), 10, "chunksize"),
        ("calibrate [sweep] unknown key", cal, ("sweep", "sigma_rnage"), [0.1, 10.0], "sigma_rnage"),
        ("dpsgd unknown table", dpsgd, ("grids", None), {"sigma": 1.0}, "grids"),
        ("bound [sweep] unknown key", bound, ("sweep", "bogus_key"), 1, "bogus_key"),
        ("bound unknown table", bound, ("extra", None), {"x": 1}, "extra"),
        ("bound axis table unknown key", bound, ("grid", "eps0"), {"start": 1, "stop": 2, "num": 3, "sacle": "log"},
         "sacle"),
        ("dpsgd axis table unknown key", dpsgd, ("grid", "sigma"), {"start": 1, "stop": 2, "num": 3, "bogus": 1},
         "bogus"),
        ("bound grid unknown parameter", bound, ("grid", "bogus"), 1.0, "bogus"),
        ("dpsgd grid unknown parameter", dpsgd, ("grid", "bogus"), 1.0, "bogus"),
    ]
    for label, spec, (tbl, key), value, name in cases:
        s = json.loads(json.dumps(spec))
        if key is None:
            s[tbl] = value
        else:
            s.setdefault(tbl, {})[key] = value
        yield Case("spec", f"load_spec: {label}", name, "spec-unknown-key", _py(lambda s=s: load_spec(s), name))
        path = d / f"spec-{label.replace(' ', '-').replace('[', '').replace(']', '')}.toml"
        path.write_text(_toml(s))
        out = d / ("out-" + path.stem)
        yield Case("spec", f"cli sweep: {label}", name, "spec-unknown-key",
                   lambda p=str(path), name=name, out=out: _fresh(out) or cli_outcome(
                       ["sweep", p, "--output", str(out), "--quiet"], name))
    bad = d / "broken.toml"
    bad.write_text("[sweep\nbound = 'x'\n")
    yield Case("spec", "cli sweep: TOML that does not parse", "*", "spec-unknown-key",
               lambda: cli_outcome(["sweep", str(bad), "--quiet"], "*"))
    # values of the grid (numeric classes) in both kinds of spec
    for kind, spec in (("dpsgd", dpsgd), ("bound", bound)):
        for name, base in spec["grid"].items():
            integer = name in ("steps", "n")
            for cls in numeric_classes(name, integer):
                v = class_value(cls, np.ravel(base)[0])
                v = v.tolist() if isinstance(v, np.ndarray) else v
                s = json.loads(json.dumps(spec))
                s["grid"][name] = v
                yield Case("spec", f"load_spec {kind} grid", name, cls, _py(lambda s=s: load_spec(s), name))


def _fresh(path: Path):
    """Remove a previous run's output folder (a sweep that escaped validation writes one)."""
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def _toml(spec: dict) -> str:
    def val(v):
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{k} = {val(x)}" for k, x in v.items()) + " }"
        if isinstance(v, list):
            return "[" + ", ".join(val(x) for x in v) + "]"
        return repr(v)

    lines = []
    for table, body in spec.items():
        lines.append(f"[{table}]")
        for k, v in body.items():
            lines.append(f"{k} = {val(v)}")
    return "\n".join(lines) + "\n"


GROUPS = {"registry": _registry_cases, "api": _api_cases, "cli": _cli_cases, "spec": _spec_cases,
          "graph": _graph_cases}


def all_cases(only=None) -> list:
    out = []
    for g, make in GROUPS.items():
        if only and g not in only and not (g == "api" and "kernel" in only):
            continue
        out.extend(c for c in make() if not only or c.group in only)
    return out


# ----------------------------------------------------------------------------------------------------------
# Running: a worker process, restarted after a hang


def _worker(conn, only):
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    jax.config.update("jax_enable_x64", True)
    cases = all_cases(only)
    conn.send(len(cases))
    while True:
        i = conn.recv()
        if i is None:
            return
        t = time.perf_counter()
        try:
            outcome, detail = cases[i].run()
        except BaseException as exc:  # noqa: BLE001 - never let a case kill the worker silently
            outcome, detail = "traceback", f"{type(exc).__name__}: {_first_line(exc)}"[:300]
        conn.send((outcome, detail, time.perf_counter() - t))


class Runner:
    def __init__(self, only, timeout):
        self.only, self.timeout = only, timeout
        self.ctx = mp.get_context("spawn")
        self.proc = None

    def start(self):
        self.parent, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=_worker, args=(child, self.only), daemon=True)
        self.proc.start()
        if not self.parent.poll(600):
            raise RuntimeError("the worker did not start")
        return self.parent.recv()

    def run(self, i):
        if self.proc is None or not self.proc.is_alive():
            self.start()
        self.parent.send(i)
        if self.parent.poll(self.timeout):
            try:
                return self.parent.recv()
            except EOFError:
                self.proc = None
                return "traceback", "the worker process died", math.nan
        self.proc.kill()
        self.proc.join()
        self.proc = None
        return "hang", f"no answer within {self.timeout:g} s", self.timeout

    def close(self):
        if self.proc is not None and self.proc.is_alive():
            self.parent.send(None)
            self.proc.join(10)


def _refused_row(key: str) -> dict:
    """The row of a case an earlier run refused (its JSON keeps failures and answers only)."""
    g, rest = key.split(":", 1)
    target, param, cls = rest.rsplit(":", 2)
    return {"group": g, "target": target, "param": param, "class": cls, "outcome": "refused", "detail": "",
            "seconds": 0.0}


#: parameters whose negative values are valid: logs, and the target of the generic inversions (any value of the
#: caller's function)
SIGNED = ("log_", "target")


def classify(outcome: str, cls: str, param: str) -> str:
    """``answered`` becomes ``accepted`` for a class no function may answer."""
    never = cls in MUST_REFUSE or (cls == "negative" and not param.startswith(SIGNED))
    return "accepted" if outcome == "answered" and never else outcome


ALIASES = {"graph-empty-file": "graph-empty", "graph-file-unparseable-graphml": "graph-file-unparseable"}


def table(rows: list) -> dict:
    counts = {}
    for r in rows:
        c = counts.setdefault(ALIASES.get(r["class"], r["class"]), {"cases": 0, **{o: 0 for o in OUTCOMES}})
        c["cases"] += 1
        c[r["outcome"]] += 1
    order = [c for c in CLASSES if c in counts] + sorted(set(counts) - set(CLASSES))
    total = {"cases": 0, **{o: 0 for o in OUTCOMES}}
    for c in counts.values():
        for k in total:
            total[k] += c[k]
    return {**{c: counts[c] for c in order}, "total": total}


def markdown(counts: dict) -> str:
    head = ("| input class | cases | ValueError naming the parameter | answered (finite or flagged) | accepted "
            "(never valid) | unnamed / multi-line error | tracebacks | NaN/inf returned | hangs |")
    lines = [head, "|" + "---|" * 9]
    for cls, c in counts.items():
        lines.append(f"| {cls} | {c['cases']} | {c['refused']} | {c['answered']} | {c['accepted']} | {c['unnamed']} "
                     f"| {c['traceback']} | {c['nonfinite']} | {c['hang']} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=None, help="comma-separated groups: " + ",".join(GROUPS) + ",kernel")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per case before it counts as a hang")
    ap.add_argument("--retry", type=float, default=5.0,
                    help="re-run each hang once in a fresh worker with this many times the time limit (0: never)")
    ap.add_argument("--rerun", default=None, metavar="JSON",
                    help="re-run only the failures recorded in an earlier run's JSON (same --only); the others keep "
                         "their outcome")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--progress", type=int, default=0, help="print a progress line every N cases")
    ap.add_argument("--output", default=str(RESULTS))
    args = ap.parse_args(argv)
    only = tuple(args.only.split(",")) if args.only else None
    if args.list:
        for c in all_cases(only):
            print(c.key)
        return 0
    runner = Runner(only, args.timeout)
    keys = [c.key for c in all_cases(only)]
    n = runner.start()
    assert n == len(keys), (n, len(keys))
    rows, t0 = [], time.perf_counter()
    todo = range(len(keys))
    if args.rerun:  # only the failures of an earlier run; its other rows are kept as they were
        prev = json.loads(Path(args.rerun).read_text())
        bad = {f"{r['group']}:{r['target']}:{r['param']}:{r['class']}" for r in prev["failures"]}
        todo = [i for i, k in enumerate(keys) if k in bad]
        kept = {f"{r['group']}:{r['target']}:{r['param']}:{r['class']}": r for r in prev.get("answered", [])}
        rows = [kept.get(k) or _refused_row(k) for k in keys if k not in bad]
    for i in todo:
        key = keys[i]
        outcome, detail, secs = runner.run(i)
        g, rest = key.split(":", 1)
        target, param, cls = rest.rsplit(":", 2)
        outcome = classify(outcome, cls, param)
        rows.append({"group": g, "target": target, "param": param, "class": cls, "outcome": outcome,
                     "detail": detail, "seconds": round(secs, 3)})
        if outcome not in GOOD:
            print(f"{outcome:>9}  {key}  {detail}", flush=True)
        if args.progress and (len(rows)) % args.progress == 0:
            print(f"-- {i + 1}/{len(keys)} cases, {time.perf_counter() - t0:.0f} s", flush=True)
    runner.close()
    index = {k: i for i, k in enumerate(keys)}
    hangs = [j for j, r in enumerate(rows) if r["outcome"] == "hang"]
    if hangs and args.retry:  # a compilation on a loaded machine is no hang: again, alone, with more time
        runner = Runner(only, args.timeout * args.retry)
        runner.start()
        for j in hangs:
            r = rows[j]
            key = f"{r['group']}:{r['target']}:{r['param']}:{r['class']}"
            outcome, detail, secs = runner.run(index[key])
            r.update(outcome=classify(outcome, r["class"], r["param"]), detail=detail, seconds=round(secs, 3),
                     retried=True)
            print(f"retried  {key}: {r['outcome']} {detail}", flush=True)
        runner.close()
    counts = table([r for r in rows if r["group"] != "kernel"])  # the kernels' rows: by_group only
    groups = dict.fromkeys(r["group"] for r in rows)
    by_group = {g: table([r for r in rows if r["group"] == g])["total"] for g in groups}
    print(markdown(counts))
    print("by group:", json.dumps(by_group))
    print(f"{len(rows)} cases in {time.perf_counter() - t0:.0f} s")
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps({
        "command": "python benchmarks/bad_input_table.py" + (f" --only {args.only}" if args.only else ""),
        "counts": counts, "by_group": by_group, "seconds": round(time.perf_counter() - t0, 1),
        "failures": [r for r in rows if r["outcome"] not in GOOD],
        "answered": [r for r in rows if r["outcome"] == "answered"]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
