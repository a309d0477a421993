"""The ``amplify-jax`` command line.

    amplify-jax epsilon   --mechanism poisson-gaussian --sigma S --q Q --steps T --delta D [--json]
    amplify-jax rdp       --mechanism poisson-gaussian --sigma S --q Q --steps T --orders 1.5,2,32 [--json]
    amplify-jax calibrate --mechanism poisson-gaussian --target-epsilon 1,3,8 --q Q --steps T --delta D [--json]
    amplify-jax bounds    [--json]
    amplify-jax evaluate  ID --PARAM VALUES ... [--json | --csv]
    amplify-jax invert    ID --solve-for PARAM (--target-epsilon X | --target-delta X) --PARAM VALUES ... [--json]
    amplify-jax sweep GRID.toml [--output DIR]
    amplify-jax demo [--output DIR]
    amplify-jax figures [--list | NAME ...] [--output DIR]
    amplify-jax explore [--port 8050] [--host 127.0.0.1] [--no-browser] [--sweep PATH ...]

Every numeric flag takes a number, a list ``1,3,8`` or a range ``start:stop:count`` (``0.5:5:1000``, linear;
``log:1e-3:1:50`` for a geometric range); several list-valued flags make a Cartesian grid (row-major in the
order of the flags), and one result is printed per grid point; a negative value may follow its flag
(``--lo -3``, ``--x -inf``).  With ``--json`` the output is one JSON object on stdout (lists even for one point),
strict JSON: a value that is not a finite number is the string "Infinity", "-Infinity" or "NaN", never a bare
NaN or Infinity.  Errors: one line on stderr, exit status 2.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import subprocess
import sys
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jax
import numpy as np

from . import __version__
from ._core.cache import enable_compilation_cache
from ._core.io import JSON_NONFINITE, atomic_write
from ._core.io import dumps_strict as _dumps
from ._core.parse import join_negative_values, parse_values
from ._core.status import status_names
from .accounting.accountants import MECHANISMS, RDP_MECHANISMS, SIGMA_LIMIT, dpsgd_calibrate_sigma, dpsgd_epsilon
from .accounting.calibrate import STATUS_NAMES
from .plotting import FIGURES_DIR_ENV, paper_panels, plot_paper_panels, plot_privacy_curve
from .sweep import BoundSweepSpec, load_spec, run_sweep

__all__ = ["main", "parse_values"]


def _registry():
    """:mod:`amplify_jax.bounds`, imported by the first command that reads the registry (not by ``--help``)."""
    from . import bounds  # lazy: ~100 ms of `amplify-jax --help`'s ~0.87 s (domains import scipy.sparse)

    return bounds


def _grid(named: dict):
    """Cartesian product of the named 1-D arrays -> dict of flat arrays (row-major in the given order)."""
    names = list(named)
    mesh = np.meshgrid(*[named[n] for n in names], indexing="ij")
    return {n: m.ravel() for n, m in zip(names, mesh)}


def _emit(args, payload: dict, columns: dict):
    if args.json:
        print(_dumps({k: np.asarray(v).tolist() for k, v in payload.items()}))
        return
    names = list(columns)
    rows = zip(*[np.asarray(columns[n]).ravel() for n in names])
    print("  ".join(f"{n:>14}" for n in names))
    for r in rows:
        print("  ".join(f"{v:>14.8g}" if isinstance(v, (float, np.floating)) else f"{v!s:>14}" for v in r))


def _numeric(args, names):
    out = {}
    for n in names:
        v = getattr(args, n, None)
        if v is not None:
            out[n] = parse_values("--" + n.replace("_", "-"), v)
    return out


def _mechanism_params(args):
    """The flags of ``--mechanism`` (its row of the one table, ``accountants.MECHANISMS``; the command line offers
    the RDP accountant's mechanisms, ``RDP_MECHANISMS``): each one it takes given (k: 2 unless told), none it does
    not take."""
    needed = MECHANISMS[args.mechanism].params
    for flag in ("sigma", "q", "scale", "eps0", "k"):
        if getattr(args, flag, None) is not None and flag not in needed:
            raise ValueError(f"Expected no --{flag} for --mechanism {args.mechanism} (it takes "
                             f"{', '.join('--' + n for n in needed)}).")
    for flag in needed:
        if getattr(args, flag, None) is None:
            if flag == "k":  # binary randomized response unless told: the one default, shown in the table
                args.k = "2"
                continue
            raise ValueError(f"Expected --{flag} for --mechanism {args.mechanism} ({MECH_HELP[flag][0]}).")
    return [f for f in needed]


def _no_method_with_pld(args):
    if args.accountant == "pld" and args.method != "balle2020":
        raise ValueError("Expected no --method with --accountant pld (an option of the RDP accountant).")


# epsilon / rdp / calibrate are aliases of evaluate / invert: their flags become a registered bound's id and
# parameters (the mechanism's row of the table), validated once by its declared domains, and answered by
# bounds.evaluate / bounds.invert; only their output keeps its own columns.


def cmd_epsilon(args):
    bounds = _registry()
    _require(args, "steps", "delta")
    grid = _grid(_numeric(args, _mechanism_params(args) + ["delta"]))
    mech = MECHANISMS[args.mechanism]
    _no_method_with_pld(args)
    if args.accountant == "pld":
        res = bounds.evaluate(mech.pld, **grid)
    else:
        res = bounds.evaluate(mech.rdp, **grid, method=args.method)
    delta = grid.pop("delta")
    if args.accountant == "pld":
        eps, low = res.epsilon, res.epsilon_lower
        _emit(args, {"epsilon": eps, "epsilon_lower": low},
              {**grid, "delta": delta, "epsilon": eps, "epsilon_lower": low})
        if np.any(np.isinf(eps)):
            print("note: some points are +inf: the grid's error terms exceed delta there (status 'error').",
                  file=sys.stderr)
        return
    eps, order = res.epsilon, res.order
    _emit(args, {"epsilon": eps, "order": order}, {**grid, "delta": delta, "epsilon": eps, "order": order})


def cmd_rdp(args):
    bounds = _registry()
    _require(args, "steps", "orders")
    params = [p for p in _mechanism_params(args) if p != "steps"]
    orders_given = parse_values("--orders", args.orders)
    grid = _grid(_numeric(args, params + ["steps"]))
    res = bounds.evaluate(MECHANISMS[args.mechanism].curve, orders=orders_given, **grid)
    orders = res.orders
    total = res.rdp.reshape(-1, orders.size)
    if args.json:
        print(_dumps({"rdp": total.tolist(), "orders": orders.tolist()}))
        return
    names = list(grid)  # every parameter that produced the row (steps last)
    cols = [np.broadcast_to(grid[n], (total.shape[0],)) for n in names]
    print("  ".join(f"{n:>12}" for n in names) + "  " + "  ".join(f"{f'rdp@{o:g}':>14}" for o in orders))
    for i in range(total.shape[0]):
        print("  ".join(f"{c[i]:>12.6g}" for c in cols) + "  " + "  ".join(f"{v:>14.8g}" for v in total[i]))


def cmd_calibrate(args):
    bounds = _registry()
    mech = MECHANISMS[args.mechanism]
    if mech.sigma_via is None:
        raise ValueError(f"Expected --mechanism poisson-gaussian or gaussian for calibrate, got {args.mechanism!r}.")
    _require(args, "target_epsilon", "steps", "delta")
    names = ["target_epsilon"] + (["q"] if "q" in mech.params else []) + ["steps", "delta"]
    if "q" not in mech.params and args.q is not None:
        raise ValueError(f"Expected no --q for calibrate --mechanism {args.mechanism} (it takes --steps and --delta).")
    if "q" in mech.params and args.q is None:
        raise ValueError(f"Expected --q for --mechanism {args.mechanism} ({MECH_HELP['q'][0]}).")
    _no_method_with_pld(args)
    grid = _grid(_numeric(args, names))
    via, fixed = mech.sigma_via
    extra = {} if args.accountant == "pld" else {"method": args.method}
    with warnings.catch_warnings():  # the cap of the search: said by the note below, in this command's words
        warnings.simplefilter("ignore", UserWarning)
        res = bounds.invert(MECHANISMS[via].pld if args.accountant == "pld" else MECHANISMS[via].rdp,
                            solve_for="sigma", rtol=args.rtol, **grid, **dict(fixed), **extra)
    sigma, status = res.sigma, res.status
    if args.json:
        print(_dumps({"sigma": sigma.tolist(), "epsilon": res.epsilon.tolist(),
                      "status": [STATUS_NAMES[int(s)] for s in status]}))
        return
    cols = {**grid, "sigma": sigma,  # every input of each row, then the answer
            "epsilon": res.epsilon, "status": np.array([STATUS_NAMES[int(s)] for s in status])}
    _emit(args, {}, cols)
    if np.any(status == 1):
        where = "the PLD's sigma range" if args.accountant == "pld" else f"sigma up to {SIGMA_LIMIT:g}"
        print(f"note: some targets cannot be met with {where} (status 'infeasible').", file=sys.stderr)


def cmd_sweep(args):
    spec = load_spec(args.grid, output=args.output, export=args.export)
    coord = {"coordinator_address": args.coordinator, "num_processes": args.num_processes,
             "process_id": args.process_id}
    given = {k: v for k, v in coord.items() if v is not None}
    if given and not args.distributed:
        raise ValueError(f"Expected --distributed with --{next(iter(given)).replace('_', '-')}.")
    if given and len(given) != 3:
        raise ValueError("Expected --coordinator, --num-processes and --process-id together (or none of them: "
                         "jax.distributed then reads the cluster's environment, e.g. SLURM).")
    if given and not 0 <= args.process_id < args.num_processes:
        raise ValueError(f"Expected 0 <= --process-id < --num-processes, got process_id={args.process_id}, "
                         f"num_processes={args.num_processes}.")
    if args.distributed:
        jax.distributed.initialize(**given)
    out = run_sweep(spec, progress=not args.quiet, distributed=args.distributed)
    if out is None:
        return
    if isinstance(spec, BoundSweepSpec):
        extra = "".join(f" and {out / ('results.' + f)}" for f in spec.formats)
        print(f"wrote {out / 'results.zarr'}{extra} ({spec.size} points; read it with xarray.open_zarr)")
    else:
        print(f"wrote {out / 'results.csv'} and {out / 'results.parquet'} ({spec.size} points)")


def cmd_demo(args):
    """Default job: eps of DP-SGD over a grid of noise levels, Rényi DP and the tight PLD accountant (CSV +
    PNG), the calibrated noise levels of both, and one panel per paper at its headline parameters
    (``plotting.paper_panels``: overview.png and overview.json)."""
    from .accounting import pld  # lazy: the PLD package is ~40 ms of `amplify-jax --help`'s ~0.87 s (importtime)

    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    q, steps, delta = 0.01, 10_000, 1e-5
    sigmas = np.geomspace(0.5, 5.0, 200)
    targets = [1.0, 3.0, 8.0]
    # Five independent jobs on two threads: XLA compiles (most of a fresh install's time) release the GIL, so
    # the RDP and PLD programs compile side by side (38.7 s -> 28.7 s wall for the two curves, same values).
    with ThreadPoolExecutor(max_workers=2) as pool:
        jobs = {
            "rdp": pool.submit(dpsgd_epsilon, sigma=sigmas, q=q, steps=steps, delta=delta),
            "pld": pool.submit(pld.dpsgd_epsilon, sigma=sigmas, q=q, steps=steps, delta=delta),
            "panels": pool.submit(paper_panels),
            "cal": pool.submit(dpsgd_calibrate_sigma, target_epsilon=targets, q=q, steps=steps, delta=delta),
            "cal_pld": pool.submit(pld.dpsgd_calibrate_sigma, target_epsilon=targets, q=q, steps=steps, delta=delta),
        }
        done = {k: f.result() for k, f in jobs.items()}
    res, tight, panels, cal, cal_pld = (done[k] for k in ("rdp", "pld", "panels", "cal", "cal_pld"))
    eps, order = np.asarray(res.epsilon), np.asarray(res.order)
    e_pld, e_low = np.asarray(tight.epsilon), np.asarray(tight.epsilon_lower)

    def write_csv(tmp):
        np.savetxt(tmp, np.column_stack([sigmas, eps, order, e_pld, e_low]), delimiter=",",
                   header="sigma,epsilon,order,epsilon_pld,epsilon_pld_lower", comments="", fmt="%.17g")

    atomic_write(out / "privacy_curve.csv", write_csv)

    plot_privacy_curve(sigmas, {"Rényi DP (optimal order)": eps, "PLD (tight, sound)": e_pld}, out / "privacy_curve.png",
                       title=f"DP-SGD, Poisson rate q={q}, {steps} steps, delta={delta}")

    plot_paper_panels(sigmas, {"Rényi DP": eps, "PLD": e_pld}, panels, out / "overview.png",
                      title=f"DP-SGD: q = {q}, {steps} steps, delta = {delta}")

    def write_panels(tmp):
        rows = {k: {"title": t, "x_label": xl, "x": x.tolist(), "curves": {c: y.tolist() for c, y in cs.items()}}
                for k, (t, xl, x, cs) in panels.items()}
        Path(tmp).write_text(_dumps(rows, indent=1))

    atomic_write(out / "overview.json", write_panels)
    print(f"privacy curve of DP-SGD (q={q}, steps={steps}, delta={delta}) over {sigmas.size} noise levels:")
    print(f"  {out / 'privacy_curve.csv'}\n  {out / 'privacy_curve.png'}")
    for t, s, e, sp, ep in zip(targets, np.asarray(cal.sigma), np.asarray(cal.epsilon), np.asarray(cal_pld.sigma),
                               np.asarray(cal_pld.epsilon)):
        print(f"calibrated noise for eps <= {t:g}: sigma = {s:.6f} (RDP, eps achieved {e:.10f}); "
              f"sigma = {sp:.6f} (PLD, eps achieved {ep:.10f}, {100 * (1 - sp / s):.1f}% less noise)")
    print(f"one panel per paper at its headline parameters: {out / 'overview.png'} ({out / 'overview.json'})")
    for t, xl, x, cs in panels.values():
        ends = "; ".join(f"{c} {y[0]:.4g} -> {y[-1]:.4g}" for c, y in cs.items())
        print(f"  {t}, {xl} {x[0]:g} -> {x[-1]:g}: {ends}")


#: Where ``amplify-jax figures`` writes without ``--output``: a new folder in the current directory (never the
#: installed package or the checkout's figures/, which the scripts write to when run directly).
FIGURES_DEFAULT_DIR = "amplify-figures"


def _figure_catalogue(bench):
    """{PNG stem: (script stem, paper, figure, run time)} from the table of the checkout's figures/README.md
    (one row per figure: paper | figure (with its PNG) | script | parameters | run time | differences)."""
    readme = bench.parent / "figures" / "README.md"
    rows = {}
    if not readme.exists():
        return rows
    for line in readme.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 5 or not line.startswith("|"):
            continue
        script = re.search(r"`benchmarks/(fig_\w+)\.py`", cells[2])
        if script is None:
            continue
        figure = cells[1].split("`")[0].strip().rstrip(",").strip()
        paper = cells[0].split(",")[0].strip()
        for png in re.findall(r"`(\w+)\.png`", cells[1]):
            rows.setdefault(png, (script.group(1), paper, figure, cells[4]))
    return rows


def cmd_figures(args):
    """Run the figure scripts of benchmarks/ by their PNG's name (or their script's), into a new folder."""
    # the checkout the package was installed from (editable), else the current directory's checkout
    roots = [Path(__file__).resolve().parent.parent / "benchmarks", Path.cwd() / "benchmarks"]
    bench = next((r for r in roots if any(r.glob("fig_*.py"))), None)
    if bench is None:
        raise ValueError("Expected figure scripts in benchmarks/ (run from a source checkout).")
    scripts = {s.stem: s for s in sorted(bench.glob("fig_*.py"))}
    catalogue = {png: row for png, row in _figure_catalogue(bench).items() if row[0] in scripts}
    if args.list:
        for png, (script, paper, figure, run_time) in sorted(catalogue.items()):
            what = f"{paper}: {figure}" if figure else paper
            print(f"{png}\t{what} (benchmarks/{script}.py; run time {run_time.replace('`', '')})")
        return
    names = args.names or sorted(catalogue)
    # a PNG's name, or (the names of amplify_jax 0.1) its script's
    chosen, unknown = [], []
    for name in names:
        script = catalogue[name][0] if name in catalogue else name if name in scripts else None
        if script is None:
            unknown.append(name)
        elif scripts[script] not in chosen:
            chosen.append(scripts[script])
    if unknown:
        raise ValueError(f"Expected figure names from --list, got {sorted(unknown)}.")

    out = Path(args.output or FIGURES_DEFAULT_DIR).resolve()
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, FIGURES_DIR_ENV: str(out)}  # the scripts write there (plotting.figure_path)
    for s in chosen:
        print(f"running {s.name} -> {out}", flush=True)
        subprocess.run([sys.executable, str(s)], check=True, env=env)


def cmd_explore(args):
    """Serve the explorer (a local web page over the bound registry) until Ctrl-C."""
    from .explore import serve  # lazy: the explorer is ~20-36 ms of `amplify-jax --help`'s ~0.87 s (importtime)

    serve(args.host, args.port, open_browser=not args.no_browser, sweeps=args.sweep or ())


# ----------------------------------------------------------------------------------------------------------
# The registry's commands: bounds, evaluate, invert (flags generated from the declared parameters)


class _OneLineParser(argparse.ArgumentParser):
    """A parser whose errors are one ValueError line (exit status 2 through main), not usage text; a flag's
    help may say ``<domain>``, filled from the registry when the help is shown (not at every start)."""

    def error(self, message):
        raise ValueError(message)

    def format_help(self):
        for action in self._actions:
            if action.help and "<domain>" in action.help:
                action.help = action.help.replace("<domain>", _domains()[action.dest])
        return super().format_help()


def _underscored(text: str) -> str:
    """A name as the registry spells it: ``sigma-cor`` and ``sigma_cor`` are the same name."""
    return text.strip().replace("-", "_")


def _bound_parser(bound, *, invert: bool):
    bounds = _registry()
    p = _OneLineParser(prog=f"amplify-jax {'invert' if invert else 'evaluate'} {bound.id}", add_help=True,
                       description=f"{bound.summary} ({bound.paper}; {bound.theorem}). Answers {bound.answer}. "
                                   "Numbers: a value, a list 1,3,8 or a range start:stop:count (log:start:stop:count "
                                   "geometric); several lists make a grid. Flags may be written with - or _.")
    for prm in bound.params:
        if invert and prm.name in bound.solvable:
            need = "required unless it is --solve-for" if prm.required else f"default {prm.default}"
        else:
            need = "required" if prm.required else f"default {prm.default}"
        kind = ("a graph spec or file" if isinstance(prm.domain, bounds.Graph) else
                "a name (- or _ alike)" if isinstance(prm.domain, bounds.Choice) else
                "a list of orders" if isinstance(prm.domain, bounds.Orders) else "a number, list or range")
        p.add_argument(prm.flag, dest=prm.name, default=None, metavar="X",
                       help=f"{prm.doc}: {prm.domain.describe()}; {kind}; {need}")
    if invert:
        fixed = "delta" if bound.answer == "epsilon" else "epsilon"
        p.add_argument("--solve-for", dest="solve_for", required=True, type=_underscored,
                       choices=list(bound.solvable), metavar="PARAM",
                       help=f"the parameter to solve for: one of {', '.join(bound.solvable)} (- or _ alike); required")
        p.add_argument("--target-epsilon", dest="target_epsilon", default=None, metavar="X",
                       help="the eps to meet, in nats (natural log), > 0; " + (
                           "required" if bound.answer == "epsilon" else f"or give --{fixed} (the eps of the pair)"))
        p.add_argument("--target-delta", dest="target_delta", default=None, metavar="X",
                       help="the delta to meet, in (0, 1); " + (
                           "required" if bound.answer == "delta" else f"or give --{fixed} (the delta of the pair)"))
        p.add_argument("--lo", default=None, type=float, metavar="X",
                       help="the low end of the search bracket, in the parameter's domain (default: its declared "
                            "search range)")
        p.add_argument("--hi", default=None, type=float, metavar="X",
                       help="the high end of the search bracket, > --lo (default: its declared search range)")
        p.add_argument("--rtol", default=1e-6, type=float, metavar="X",
                       help="relative width of the final bracket, in [1e-15, 0.5] (default 1e-6)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help=f"one JSON object on stdout, a list per key ({JSON_NONFINITE})")
    out.add_argument("--csv", action="store_true", help="CSV on stdout, one row per grid point")
    return p


def _bound_inputs(bound, ns, names):
    """Flags -> keyword arguments: numbers on a Cartesian grid (flat, row-major), others as given."""
    bounds = _registry()
    numeric, other = {}, {}
    for name in names:
        text = getattr(ns, name, None)
        if text is None:
            continue
        dom = bound.param(name).domain if name in [p.name for p in bound.params] else None
        if dom is None or dom.numeric:
            numeric[name] = parse_values("--" + name.replace("_", "-"), text)
        elif isinstance(dom, bounds.Orders):
            other[name] = parse_values("--orders", text)
        elif isinstance(dom, bounds.Choice):  # a choice may be written with - or _ (closed-form, closed_form)
            same = [c for c in dom.values if _underscored(c) == _underscored(text)]
            other[name] = same[0] if same else text
        else:
            other[name] = text
    return _grid(numeric), other


def _print_result(ns, result, columns: dict):
    status = status_names(result.status)
    if ns.json:
        payload = {}
        for k, v in columns.items():
            payload[k] = [v] if isinstance(v, str) else np.asarray(v).tolist()
        payload["status"] = status
        print(_dumps(payload))
        return
    n = len(status)
    table = {}
    for k, v in columns.items():
        if k == "orders":  # shown in the RDP columns' names
            continue
        if isinstance(v, str):
            table[k] = [v] * n
        else:
            a = np.asarray(v)
            if a.ndim == 2:  # an RDP curve: one column per order
                for j, o in enumerate(np.asarray(result.params["orders"])):
                    table[f"{k}@{o:g}"] = a[:, j]
            else:
                table[k] = np.broadcast_to(a, (n,))
    table["status"] = status
    if ns.csv:
        w = csv.writer(sys.stdout, lineterminator="\n")
        w.writerow(list(table))
        for i in range(n):
            w.writerow([repr(float(c[i])) if isinstance(c[i], (float, np.floating)) else c[i] for c in table.values()])
        return
    _emit(ns, {}, table)


def _split_id(args, command):
    bounds = _registry()
    if args.id is None:
        raise ValueError(f"Expected a bound id after '{command}' (see amplify-jax bounds), got "
                         f"{' '.join(args.rest)!r}.")

    return bounds.get(args.id), args.rest


def _required_flags(bound, ns, names):
    """A missing required parameter: the flag it is given by, in one line (before any computation)."""
    for name in names:
        prm = bound.param(name)
        if prm.required and getattr(ns, name, None) is None:
            raise ValueError(f"Expected {prm.flag} for {bound.id} ({prm.doc}: {prm.domain.describe()}).")


def _as_flags(exc: ValueError, bound) -> ValueError:
    """The Python API's message, with the parameters named by their flags (lo -> --lo, sigma_cor -> --sigma-cor)."""
    names = {p.name: p.flag for p in bound.params}
    names.update(lo="--lo", hi="--hi", rtol="--rtol", solve_for="--solve-for", target_epsilon="--target-epsilon",
                 target_delta="--target-delta")
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    words = "|".join(sorted(map(re.escape, names), key=len, reverse=True))
    # a name before "=" (its value), the subject of "Expected NAME ...", and lo / hi wherever they stand
    text = re.sub(r"(?<![\w\-'\"])(" + words + r")(?==)", lambda m: names[m.group(1)], text)
    text = re.sub(r"(?<=^Expected )(" + words + r")(?=[\s,.;:)<>])", lambda m: names[m.group(1)], text)
    return ValueError(re.sub(r"(?<![\w\-'\"])(lo|hi)(?=[\s,.;:)<>]|$)", lambda m: names[m.group(1)], text))


def cmd_bounds(args):
    bounds = _registry()
    rows = bounds.list()
    if args.json:
        print(_dumps([{"id": b.id, "family": b.family, "answer": b.answer, "side": b.side, "paper": b.paper,
                           "theorem": b.theorem, "summary": b.summary, "solvable": list(b.solvable),
                           "params": [{"name": p.name, "domain": p.domain.describe(), "monotone": p.monotone,
                                       "doc": p.doc, "required": p.required} for p in b.params]}
                          for b in rows]))
        return
    for b in rows:
        print(f"{b.id}  ->  {b.answer}{' (lower bound)' if b.side == 'lower' else ''}")
        print(f"    {b.summary}")
        print(f"    {b.paper}; {b.theorem}")
        print(f"    parameters: {', '.join(p.name for p in b.params)}"
              + (f"; invert for: {', '.join(b.solvable)}" if b.solvable else ""))


def cmd_evaluate(args):
    bounds = _registry()
    bound, rest = _split_id(args, "evaluate")
    ns = _bound_parser(bound, invert=False).parse_args(rest)
    _required_flags(bound, ns, [p.name for p in bound.params])
    try:
        grid, other = _bound_inputs(bound, ns, [p.name for p in bound.params])
        res = bounds.evaluate(bound.id, **grid, **other)
    except ValueError as exc:
        raise _as_flags(exc, bound) from None
    _print_result(ns, res, {**grid, **other, **_defaults(bound, res, grid, other),
                            **{k: v for k, v in res.outputs.items() if k != "status"}})


def cmd_invert(args):
    bounds = _registry()
    bound, rest = _split_id(args, "invert")
    ns = _bound_parser(bound, invert=True).parse_args(rest)
    names = [p.name for p in bound.params if p.name != ns.solve_for] + ["target_epsilon", "target_delta"]
    if getattr(ns, ns.solve_for, None) is not None:
        raise ValueError(f"Expected no {bound.param(ns.solve_for).flag}: it is the parameter solved for.")
    target, fixed = ("target_epsilon", "delta") if bound.answer == "epsilon" else ("target_delta", "epsilon")
    if getattr(ns, target) is None:
        raise ValueError(f"Expected --{target.replace('_', '-')} for {bound.id}, which answers {bound.answer}.")
    declared = [p.name for p in bound.params]
    if (fixed in declared and bound.param(fixed).required and getattr(ns, fixed, None) is None
            and getattr(ns, "target_" + fixed) is None):
        raise ValueError(f"Expected --{fixed} (or --target-{fixed}) for {bound.id}.")
    _required_flags(bound, ns, [n for n in names if n in declared and n != fixed])
    prm = bound.param(ns.solve_for)
    for flag, v in (("--lo", ns.lo), ("--hi", ns.hi)):
        if v is not None:
            prm.domain.check(flag, v)
    if ns.lo is not None and ns.hi is not None and not ns.lo < ns.hi:
        raise ValueError(f"Expected --lo < --hi, got --lo {ns.lo:g} --hi {ns.hi:g}.")
    try:
        grid, other = _bound_inputs(bound, ns, names)
        res = bounds.invert(bound.id, solve_for=ns.solve_for, lo=ns.lo, hi=ns.hi, rtol=ns.rtol, **grid, **other)
    except ValueError as exc:
        raise _as_flags(exc, bound) from None
    _print_result(ns, res, {**grid, **other, **_defaults(bound, res, grid, other),
                            **{k: v for k, v in res.outputs.items() if k != "status"}})


def _defaults(bound, res, grid, other) -> dict:
    """The parameters not typed, at the values that produced the result (a default, or the fixed one of the
    pair given as a target), so that each row shows every parameter behind it."""
    out = {}
    for name, v in res.params.items():
        if name in grid or name in other or name not in [p.name for p in bound.params]:
            continue
        if isinstance(v, str) or (isinstance(v, np.ndarray) and v.dtype.kind == "f" and v.ndim == 0):
            out[name] = v if isinstance(v, str) else v.reshape(1)
    return out


def _domains() -> dict:
    """Each mechanism flag's domain as the registry declares it: the first of the mechanisms' bounds (in the table's
    order) that takes it; the orders of their curves; the targets of an inversion."""
    bounds = _registry()
    out = {}
    for name in RDP_MECHANISMS:
        for prm in bounds.get(MECHANISMS[name].rdp).params:
            out.setdefault(prm.name, prm.domain.describe())
    out.update(orders=bounds.get(MECHANISMS[RDP_MECHANISMS[0]].curve).param("orders").domain.describe(),
               target_epsilon=bounds.TARGET_DOMAINS["target_epsilon"].describe())
    return out


#: flag -> (what it is, its unit): the help of the mechanism commands and their "missing" messages
MECH_HELP = {
    "sigma": ("the noise multiplier", "unitless: Gaussian noise std / L2 sensitivity"),
    "q": ("the Poisson sampling rate", "a probability per step"),
    "steps": ("the number of steps (compositions)", "a count"),
    "scale": ("the Laplace scale", "unitless: scale b / L1 sensitivity"),
    "eps0": ("the local eps of one randomized response", "nats"),
    "k": ("the number of categories of randomized response", "a count"),
    "delta": ("the delta of the (eps, delta)-DP answer", "a probability"),
    "target_epsilon": ("the eps to meet", "nats, natural log"),
    "orders": ("the Rényi orders alpha", "unitless"),
}
VALUES = "a number, a list 1,3,8 or a range start:stop:count (log:start:stop:count geometric)"


def _add_numeric(p, *names, need=None):
    for n in names:
        what, unit = MECH_HELP[n]
        where = need(n) if need else "required, no default"
        p.add_argument("--" + n.replace("_", "-"), dest=n, default=None, metavar="X",
                       help=f"{what} ({unit}): <domain>; {VALUES}; {where}")


def _require(args, *names):
    """The flags a command cannot answer without (no default: a forgotten --steps must not count one step),
    checked after parsing so that an unknown flag is named first; one line naming the first one missing."""
    for n in names:
        if getattr(args, n, None) is None:
            what, unit = MECH_HELP[n]
            raise ValueError(f"Expected --{n.replace('_', '-')} for {args.command}: {what} ({unit}); it has no "
                             f"default (amplify-jax {args.command} --help).")


def _dashed(text: str) -> str:
    """A mechanism's name, written with - or _: ``poisson_gaussian`` is ``poisson-gaussian``."""
    return text.strip().replace("_", "-")


def build_parser():
    p = _OneLineParser(prog="amplify-jax", description="Differential-privacy amplification bounds, in JAX. "
                       "Every flag may be written with - or _; a negative value may follow its flag (--lo -3).")
    p.add_argument("--version", action="version", version=f"amplify-jax {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    def takes(n):
        mechs = [m for m in RDP_MECHANISMS if n in MECHANISMS[m].params]
        if n == "k":
            return "--mechanism randomized-response only; default 2 (binary)"
        return f"required with --mechanism {' or '.join(mechs)}; no default"

    def mech(sp, *, calibrate=False):
        sp.add_argument("--mechanism", default="poisson-gaussian", type=_dashed, choices=sorted(RDP_MECHANISMS),
                        help="the mechanism composed over --steps: poisson-gaussian (DP-SGD: Gaussian noise on a "
                             "Poisson sample), gaussian, laplace, randomized-response (default poisson-gaussian)")
        if calibrate:
            _add_numeric(sp, "q", need=lambda n: "required with --mechanism poisson-gaussian; no default")
        else:
            _add_numeric(sp, "sigma", "q", "scale", "eps0", "k", need=takes)
        _add_numeric(sp, "steps")
        sp.add_argument("--method", default="balle2020", type=_dashed, choices=["balle2020", "mironov"],
                        help="the RDP-to-(eps, delta) conversion: balle2020 (Balle et al. 2020, Thm 21; tighter; "
                             "the default) or mironov (Mironov 2017, Prop. 3)")
        sp.add_argument("--json", action="store_true", help=f"one JSON object on stdout ({JSON_NONFINITE})")

    def accountant(sp):
        sp.add_argument("--accountant", default="rdp", choices=["rdp", "pld"],
                        help="rdp: Rényi DP at the optimal order (default); pld: the tight privacy-loss "
                             "distribution (prints epsilon and its lower bound epsilon_lower)")

    e = sub.add_parser("epsilon", help="eps at delta with the optimal order",
                       description="eps of a mechanism composed over --steps, at --delta; one row per grid point.")
    mech(e)
    accountant(e)
    _add_numeric(e, "delta")
    e.set_defaults(func=cmd_epsilon)

    r = sub.add_parser("rdp", help="the RDP curve at given orders",
                       description="The Rényi-DP curve of a mechanism composed over --steps, at --orders.")
    mech(r)
    _add_numeric(r, "orders")
    r.set_defaults(func=cmd_rdp)

    c = sub.add_parser("calibrate", help="minimal sigma for target eps",
                       description="The smallest noise multiplier sigma whose eps at --delta over --steps is at "
                                   "most --target-epsilon (the feasible end of the search, re-checked).")
    mech(c, calibrate=True)
    accountant(c)
    _add_numeric(c, "target_epsilon", "delta")
    c.add_argument("--rtol", type=float, default=1e-6, metavar="X",
                   help="relative width of the final bracket in sigma, in [1e-15, 0.5] (default 1e-6)")
    c.set_defaults(func=cmd_calibrate)

    b = sub.add_parser("bounds", help="list every registered bound (id, paper, theorem, parameters)")
    b.add_argument("--json", action="store_true", help=f"one JSON list on stdout ({JSON_NONFINITE})")
    b.set_defaults(func=cmd_bounds)

    ev = sub.add_parser("evaluate", help="evaluate a registered bound: evaluate ID --PARAM VALUES ... [--json|--csv]",
                        description="Evaluate the registered bound ID (amplify-jax bounds lists them) at the "
                                    "values of its flags; amplify-jax evaluate ID --help lists ID's flags, with "
                                    "their domains and defaults.")
    ev.add_argument("id", nargs="?", metavar="ID", help="a registered bound (amplify-jax bounds)")
    ev.add_argument("rest", nargs=argparse.REMAINDER, metavar="--PARAM VALUES",
                    help="the bound's parameters (amplify-jax evaluate ID --help), --json or --csv")
    ev.set_defaults(func=cmd_evaluate)

    iv = sub.add_parser("invert", help="solve a bound for a parameter: invert ID --solve-for P --target-epsilon X ...",
                        description="Solve the registered bound ID for one monotone parameter (--solve-for) at a "
                                    "target eps or delta; amplify-jax invert ID --help lists ID's flags.")
    iv.add_argument("id", nargs="?", metavar="ID", help="a registered bound (amplify-jax bounds)")
    iv.add_argument("rest", nargs=argparse.REMAINDER, metavar="--PARAM VALUES",
                    help="--solve-for PARAM, --target-epsilon or --target-delta, the other parameters, --lo, --hi")
    iv.set_defaults(func=cmd_invert)

    s = sub.add_parser("sweep", help="evaluate a grid from a TOML file (resumable)")
    s.add_argument("grid")
    s.add_argument("--output", default=None)
    s.add_argument("--quiet", action="store_true")
    s.add_argument("--distributed", action="store_true",
                   help="several processes (hosts) share the sweep: host h takes chunks i %% hosts == h; calls "
                        "jax.distributed.initialize() first (output on a file system all hosts share)")
    s.add_argument("--coordinator", default=None, metavar="HOST:PORT",
                   help="with --distributed: the coordinator's address (process 0's host); without it, "
                        "jax.distributed reads the cluster's environment (SLURM, TPU pods, ...)")
    s.add_argument("--num-processes", type=int, default=None, help="with --coordinator: number of processes")
    s.add_argument("--process-id", type=int, default=None, help="with --coordinator: this process's index")
    s.add_argument("--export", default=None, help="bound sweeps: also write csv and/or parquet (comma-separated)")
    s.set_defaults(func=cmd_sweep)

    d = sub.add_parser("demo", help="privacy curve (CSV + PNG) and calibrated noise on a default grid")
    d.add_argument("--output", default="amplify-demo")
    d.set_defaults(func=cmd_demo)

    f = sub.add_parser("figures", help="regenerate the papers' figures (scripts in benchmarks/)")
    f.add_argument("names", nargs="*")
    f.add_argument("--list", action="store_true")
    f.add_argument("--output", default=None, metavar="DIR",
                   help=f"write the figures to DIR (created if missing; default: ./{FIGURES_DEFAULT_DIR})")
    f.set_defaults(func=cmd_figures)

    x = sub.add_parser("explore", help="the explorer: every registered bound, live, in a browser (local web page)")
    x.add_argument("--port", type=int, default=8050, help="port to serve on (default 8050; 0: any free port)")
    x.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    x.add_argument("--no-browser", action="store_true", help="do not open a browser on the page")
    x.add_argument("--sweep", action="append", default=None, metavar="PATH",
                   help="a bound sweep's output folder (or its results.zarr) to slice in the page; repeatable. "
                        "The page reads no other path")
    x.set_defaults(func=cmd_explore)
    return p


def main(argv=None) -> int:
    parser = build_parser()
    argv = join_negative_values(list(sys.argv[1:] if argv is None else argv))
    try:
        args = parser.parse_args(argv)  # a usage error is one ValueError line too (_OneLineParser)
        enable_compilation_cache(min_compile_time_secs=0.2)
        args.func(args)
    except ValueError as exc:
        msg = str(exc).splitlines()[0] if str(exc) else exc.__class__.__name__
        print(f"amplify-jax: error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("amplify-jax: interrupted (completed sweep parts are kept; rerun to resume)", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
