"""The command-line contract, through the installed console script."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import amplify_jax as aj


@pytest.fixture(scope="module")
def run():
    exe = shutil.which("amplify-jax")
    base = [exe] if exe else [sys.executable, "-m", "amplify_jax.cli"]

    def _run(*args, cwd=None, env=None):  # the run's compilation cache and XLA flags are inherited (conftest.py)
        full = None if env is None else {**os.environ, **env}
        return subprocess.run(base + list(args), capture_output=True, text=True, cwd=cwd, timeout=600, env=full)

    return _run


def test_epsilon_json_single_and_grid(run):
    out = run("epsilon", "--mechanism", "poisson-gaussian", "--sigma", "1.1", "--q", "0.01", "--steps", "1000",
              "--delta", "1e-5", "--json")
    assert out.returncode == 0, out.stderr
    payload = json.loads(out.stdout)
    assert set(payload) == {"epsilon", "order"} and len(payload["epsilon"]) == 1
    ref = aj.dpsgd_epsilon(sigma=1.1, q=0.01, steps=1000, delta=1e-5)
    assert abs(payload["epsilon"][0] - float(ref.epsilon)) < 1e-12
    out = run("epsilon", "--sigma", "0.5:5:4", "--q", "0.01,0.02", "--steps", "1000", "--delta", "1e-5", "--json")
    assert out.returncode == 0, out.stderr
    eps = json.loads(out.stdout)["epsilon"]
    assert len(eps) == 8
    # row-major over (sigma, q): eps decreases along sigma for each q
    grid = np.array(eps).reshape(4, 2)
    assert np.all(np.diff(grid, axis=0) < 0) and np.all(grid[:, 1] > grid[:, 0])


def test_epsilon_table(run):
    out = run("epsilon", "--sigma", "1,2", "--q", "0.01", "--steps", "100", "--delta", "1e-5")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert "epsilon" in lines[0] and len(lines) == 3


def test_rdp_json(run):
    out = run("rdp", "--mechanism", "poisson-gaussian", "--sigma", "1", "--q", "0.1", "--steps", "1", "--orders",
              "1.5,2,32", "--json")
    assert out.returncode == 0, out.stderr
    rdp = json.loads(out.stdout)["rdp"]
    assert len(rdp) == 1 and len(rdp[0]) == 3
    assert abs(rdp[0][0] - 0.0117346) < 1e-6  # the value dp_accounting cannot give (it returns inf)


def test_calibrate_json(run):
    out = run("calibrate", "--mechanism", "poisson-gaussian", "--target-epsilon", "1,3,8", "--q", "0.01",
              "--steps", "1000", "--delta", "1e-5", "--json")
    assert out.returncode == 0, out.stderr
    sig = json.loads(out.stdout)["sigma"]
    assert len(sig) == 3 and sig[0] > sig[1] > sig[2] > 0
    eps = aj.dpsgd_epsilon(sigma=np.array(sig), q=0.01, steps=1000, delta=1e-5).epsilon
    assert np.all(np.asarray(eps) <= np.array([1.0, 3.0, 8.0]))


@pytest.mark.parametrize(
    "args,needle",
    [
        (["epsilon", "--sigma", "-1", "--q", "0.1", "--steps", "10", "--delta", "1e-5"], "sigma"),
        (["epsilon", "--sigma", "1", "--q", "1.5", "--steps", "10", "--delta", "1e-5"], "q=1.5"),
        (["epsilon", "--sigma", "1", "--q", "0.1", "--steps", "10", "--delta", "2"], "delta=2.0"),
        (["epsilon", "--sigma", "a:b", "--q", "0.1", "--steps", "10", "--delta", "1e-5"], "--sigma"),
        (["rdp", "--sigma", "1", "--q", "0.1", "--steps", "1", "--orders", "0.5,2"], "orders=0.5"),
    ],
)
def test_errors_one_line_nonzero(run, args, needle):
    out = run(*args)
    assert out.returncode == 2
    assert out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], out.stderr


def test_demo(run, tmp_path):
    # the host path on, as for a user: the paper panels (at most 8 points a call) are answered without compiling
    out = run("demo", "--output", str(tmp_path / "demo"), env={"AMPLIFY_JAX_HOST": "auto"})
    assert out.returncode == 0, out.stderr
    csv = np.loadtxt(tmp_path / "demo" / "privacy_curve.csv", delimiter=",", skiprows=1)
    assert csv.shape == (200, 5) and np.all(np.diff(csv[:, 1]) < 0) and np.all(np.diff(csv[:, 3]) < 0)
    assert np.all(csv[:, 3] <= csv[:, 1]) and np.all(csv[:, 4] <= csv[:, 3])  # PLD below RDP; lower <= upper
    assert (tmp_path / "demo" / "privacy_curve.png").stat().st_size > 1000
    assert "sigma =" in out.stdout and "PLD" in out.stdout
    # one panel per paper, each curve the registry's answer (spot-checked at its first point, in this process)
    panels = json.loads((tmp_path / "demo" / "overview.json").read_text())
    assert set(panels) == {"shuffle", "traffic", "checkin", "network", "secrdp"}
    assert (tmp_path / "demo" / "overview.png").stat().st_size > 10_000
    for p in panels.values():
        for y in p["curves"].values():
            assert len(y) == len(p["x"]) and np.all(np.isfinite(y)) and np.all(np.asarray(y) > 0)
    sh = panels["shuffle"]
    ref = aj.bounds.evaluate("shuffle.fmt-closed-form", eps0=1.0, n=sh["x"][0], delta=1e-6).value
    np.testing.assert_allclose(sh["curves"]["closed form (Thm 3.1)"][0], np.ravel(ref)[0], rtol=1e-12)
    ck = panels["checkin"]["curves"]
    assert np.all(np.asarray(ck["upper (Thm 2)"]) < np.asarray(ck["strong composition"]))
    net = panels["network"]["curves"]
    assert net["network, complete graph (Thm 3)"][-1] < net["local DP"][-1]  # network below local at large n
    dec = panels["secrdp"]["curves"]["SecLDP (eavesdropper)"]
    assert np.all(np.diff(dec) <= 0)  # more correlated noise, more privacy


def test_epsilon_and_calibrate_with_the_pld_accountant(run):
    import json

    from amplify_jax.accounting import pld

    out = run("epsilon", "--accountant", "pld", "--sigma", "2", "--q", "0.001", "--steps", "100", "--delta", "1e-10",
              "--json")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    ref = pld.dpsgd_epsilon(sigma=2.0, q=0.001, steps=100, delta=1e-10)
    assert got["epsilon"] == [float(ref.epsilon)] and got["epsilon_lower"] == [float(ref.epsilon_lower)]
    bad = run("epsilon", "--accountant", "pld", "--method", "mironov", "--sigma", "2", "--q", "0.001", "--steps",
              "100", "--delta", "1e-10")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1


def test_sweep_command(run, tmp_path):
    grid = tmp_path / "grid.toml"
    grid.write_text('[sweep]\nquantity = "epsilon"\nchunk_size = 5\n[grid]\nsigma = "0.5:5:7"\nq = [0.01, 0.1]\n'
                    'steps = 100\ndelta = 1e-5\n')
    out = run("sweep", str(grid), "--output", str(tmp_path / "out"), "--quiet")
    assert out.returncode == 0, out.stderr
    data = np.genfromtxt(tmp_path / "out" / "results.csv", delimiter=",", names=True)
    assert data.size == 14
    bad = tmp_path / "bad.toml"
    bad.write_text('[grid]\nsigma = -1\nq = 0.1\nsteps = 1\ndelta = 1e-5\n')
    out = run("sweep", str(bad), "--output", str(tmp_path / "out2"))
    assert out.returncode == 2 and "sigma" in out.stderr


def test_figures_list_from_the_checkout(run):
    """`figures --list` names each figure by its PNG's stem, with its paper, figure, script and run time (from
    figures/README.md's table); found from the checkout (installed editable or not, run from its root)."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    r = run("figures", "--list", cwd=str(root))
    assert r.returncode == 0, r.stderr
    rows = dict(line.split("\t", 1) for line in r.stdout.strip().splitlines())
    assert {"traffic_fig7", "secrdp_fig2", "network_fig2", "checkin_fig2b"} <= set(rows)
    assert all((root / "figures" / f"{png}.png").exists() for png in rows), rows
    assert rows["traffic_fig8"].startswith("Ladjel: Fig. 8 (a)-(f) (benchmarks/fig_traffic_fig8.py; run time ")
    assert "Fig. 2 (four panels)" in rows["network_fig2"] and "fig_network_sgd_logreg.py" in rows["network_fig2"]


def test_figures_write_to_a_new_folder_never_the_checkout(run, tmp_path):
    """`figures NAME` writes the PNG to ./amplify-figures (created), `--output DIR` to DIR, never to the
    checkout's figures/; a script's stem (amplify_jax 0.1's names) still selects it.  On the cheapest script
    (Ladjel et al. Fig. 3, a few seconds)."""
    import shutil
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    default = root / "figures" / "traffic_fig3.png"
    before = default.stat().st_mtime_ns if default.exists() else None
    out = tmp_path / "new" / "dir"
    r = run("figures", "fig_traffic_fig3", "--output", str(out))
    assert r.returncode == 0, r.stderr
    png = out / "traffic_fig3.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert sorted(p.name for p in out.iterdir()) == ["traffic_fig3.png"]
    # without --output: a new folder in the current directory (the checkout's root, where a non-editable
    # install finds the scripts)
    made = root / "amplify-figures"
    assert not made.exists(), "remove the checkout's amplify-figures/ left by an earlier run"
    try:
        r = run("figures", "traffic_fig3", cwd=str(root))
        assert r.returncode == 0, r.stderr
        assert sorted(p.name for p in made.iterdir()) == ["traffic_fig3.png"]
    finally:
        shutil.rmtree(made, ignore_errors=True)
    assert (default.stat().st_mtime_ns if default.exists() else None) == before
    r = run("figures", "no_such_figure")
    assert r.returncode == 2 and "no_such_figure" in r.stderr


def test_mechanism_commands_validate_by_the_registry(run):
    """The legacy commands refuse what the registry's domains refuse (one line, exit status 2)."""
    cases = [("epsilon", "--sigma", "1e300", "--q", "0.01", "--steps", "100", "--delta", "1e-5"),
             ("epsilon", "--sigma", "1", "--q", "0.01", "--steps", "1.5", "--delta", "1e-5"),
             ("rdp", "--sigma", "1", "--q", "0.01", "--steps", "1.5", "--orders", "2,3"),
             ("calibrate", "--target-epsilon", "1", "--q", "0.01", "--steps", "1e300", "--delta", "1e-5")]
    for argv in cases:
        out = run(*argv)
        assert out.returncode == 2, (argv, out.stdout)
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and ("sigma" in lines[0] or "steps" in lines[0]), out.stderr


def test_bounds_listing_and_invert_command(run):
    out = run("bounds", "--json")
    assert out.returncode == 0, out.stderr
    listing = {b["id"]: b for b in json.loads(out.stdout)}
    assert listing["dpsgd"]["solvable"] == ["sigma", "q", "steps"]
    assert [p["name"] for p in listing["dpsgd"]["params"]] == ["sigma", "q", "steps", "delta", "accountant", "method"]
    out = run("invert", "dpsgd", "--solve-for", "steps", "--target-epsilon", "1,3", "--sigma", "1", "--q", "0.01",
              "--delta", "1e-5", "--json")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    ref = aj.bounds.invert("dpsgd", solve_for="steps", target_epsilon=[1.0, 3.0], sigma=1.0, q=0.01, delta=1e-5)
    assert got["steps"] == ref.steps.tolist() and got["status"] == ["ok", "ok"]
    assert all(e <= t for e, t in zip(got["epsilon"], [1.0, 3.0]))
    out = run("invert", "dpsgd", "--solve-for", "delta", "--target-epsilon", "1", "--sigma", "1", "--q", "0.01",
              "--steps", "10")
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1


# ----------------------------------------------------------------------------------------------------------
# strict JSON and negative values (issue 26, item 3): in this process, through cli.main


def _strict_loads(text):
    """json.loads that refuses the non-standard NaN, Infinity and -Infinity (as jq and browsers do)."""
    def refuse(const):
        raise ValueError(f"bare {const} in the JSON output")

    return json.loads(text, parse_constant=refuse)


def _main(capsys, *argv):
    from amplify_jax.cli import main

    capsys.readouterr()
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_json_writes_non_finite_values_as_strings():
    from amplify_jax.cli import _dumps

    text = _dumps({"a": np.array([1.0, np.inf, -np.inf, np.nan]), "b": np.float64(np.inf), "c": [[np.nan]],
                   "d": ("x", 2, 0.5)})
    assert _strict_loads(text) == {"a": [1.0, "Infinity", "-Infinity", "NaN"], "b": "Infinity", "c": [["NaN"]],
                                   "d": ["x", 2, 0.5]}
    assert [float(v) for v in _strict_loads(text)["a"]][1:3] == [np.inf, -np.inf]  # Python reads them back


def test_json_output_of_an_infinite_value_is_strict(capsys):
    # Laplace's RDP at scale 1e-300 over 1e9 steps overflows to +inf
    code, out, err = _main(capsys, "rdp", "--mechanism", "laplace", "--scale", "1e-300", "--orders", "2,1e6",
                           "--steps", "1e9", "--json")
    assert code == 0, err
    assert "Infinity" in out and _strict_loads(out) == {"rdp": [["Infinity", "Infinity"]], "orders": [2.0, 1e6]}
    assert "Warning" not in err


@pytest.mark.parametrize("command", [["epsilon"], ["rdp"], ["calibrate"], ["bounds"],
                                     ["evaluate", "shuffle.fmt-closed-form"], ["invert", "shuffle.fmt-closed-form"]])
def test_json_help_says_how_non_finite_values_are_written(capsys, command):
    from amplify_jax.cli import main

    with pytest.raises(SystemExit) as done:
        main(command + ["--help"])
    assert done.value.code == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert '"Infinity", "-Infinity" or "NaN"' in help_text, help_text


def test_negative_values_may_follow_their_flag(capsys):
    from amplify_jax.cli import join_negative_values

    assert join_negative_values(["evaluate", "b", "--x", "-inf", "--lo", "-3", "--y", "-1e-3,2", "--z", "-3:5:10",
                                 "--json"]) == ["evaluate", "b", "--x=-inf", "--lo=-3", "--y=-1e-3,2",
                                                "--z=-3:5:10", "--json"]
    for kept in (["--json", "-h"], ["--x", "--y"], ["--x=-1", "-2"], ["--", "--x", "-inf"], ["--x", "-", "1"]):
        assert join_negative_values(kept) == kept
    # the value reaches the validation, which names it (argparse used to say "expected one argument")
    code, out, err = _main(capsys, "evaluate", "shuffle.fmt-closed-form", "--eps0", "-inf", "--n", "10", "--delta",
                           "1e-6")
    assert code == 2 and out == "" and "eps0=-inf" in err and len(err.strip().splitlines()) == 1, err
    code, out, err = _main(capsys, "evaluate", "shuffle.fmt-closed-form", "--eps0", "-1e-3,2", "--n", "10",
                           "--delta", "1e-6")
    assert code == 2 and "eps0=-0.001" in err, err
    code, out, err = _main(capsys, "invert", "shuffle.fmt-closed-form", "--solve-for", "n", "--target-epsilon",
                           "0.5", "--eps0", "1", "--delta", "1e-6", "--lo", "-inf", "--hi", "100")
    assert code == 2 and "lo=-inf" in err and "expected one argument" not in err, err


# ----------------------------------------------------------------------------------------------------------
# a command line that cannot be misused (issue 27, item 1): in this process, no kernel runs

#: every flag each mechanism command needs, as a user types them (valid values)
MECH_COMMANDS = {
    ("epsilon", "poisson-gaussian"): {"--sigma": "1.1", "--q": "0.01", "--steps": "100", "--delta": "1e-5"},
    ("epsilon", "gaussian"): {"--sigma": "2", "--steps": "10", "--delta": "1e-5"},
    ("epsilon", "laplace"): {"--scale": "2", "--steps": "10", "--delta": "1e-5"},
    ("epsilon", "randomized-response"): {"--eps0": "1", "--steps": "10", "--delta": "1e-5"},
    ("rdp", "poisson-gaussian"): {"--sigma": "1", "--q": "0.1", "--steps": "1", "--orders": "2,8"},
    ("rdp", "gaussian"): {"--sigma": "2", "--steps": "1", "--orders": "2,8"},
    ("rdp", "laplace"): {"--scale": "2", "--steps": "1", "--orders": "2,8"},
    ("rdp", "randomized-response"): {"--eps0": "1", "--steps": "1", "--orders": "2,8"},
    ("calibrate", "poisson-gaussian"): {"--target-epsilon": "1", "--q": "0.01", "--steps": "100", "--delta": "1e-5"},
    ("calibrate", "gaussian"): {"--target-epsilon": "1", "--steps": "100", "--delta": "1e-5"},
}


def _flag_text(v):
    return ",".join(str(x) for x in v) if isinstance(v, (list, tuple)) else str(v)


def _required_cases():
    from amplify_jax import bounds

    for (cmd, mech), flags in MECH_COMMANDS.items():
        for flag in flags:
            rest = [w for k, v in flags.items() if k != flag for w in (k, v)]
            yield pytest.param([cmd, "--mechanism", mech, *rest], flag, id=f"{cmd}-{mech}-no{flag}")
    for b in bounds.list():
        flags = {b.param(k).flag: _flag_text(v) for k, v in b.example.items()}
        for flag in [f for f in flags if next(p for p in b.params if p.flag == f).required]:
            rest = [w for k, v in flags.items() if k != flag for w in (k, v)]
            yield pytest.param(["evaluate", b.id, *rest], flag, id=f"evaluate-{b.id}-no{flag}")
        if not b.solvable:
            continue
        solve = b.solvable[0]
        target = "--target-epsilon" if b.answer == "epsilon" else "--target-delta"
        inv = {"--solve-for": solve, target: "1" if b.answer == "epsilon" else "1e-6",
               **{k: v for k, v in flags.items() if k != b.param(solve).flag}}
        for flag in [f for f in inv if not f.startswith("--") or f in ("--solve-for", target)
                     or next(p for p in b.params if p.flag == f).required]:
            rest = [w for k, v in inv.items() if k != flag for w in (k, v)]
            yield pytest.param(["invert", b.id, *rest], flag, id=f"invert-{b.id}-no{flag}")
    yield pytest.param(["sweep"], "grid", id="sweep-nogrid")
    yield pytest.param(["evaluate"], "bound id", id="evaluate-noid")
    yield pytest.param(["invert"], "bound id", id="invert-noid")


@pytest.mark.parametrize("argv, flag", list(_required_cases()))
def test_every_required_flag_removed_is_one_line_naming_it(argv, flag, capsys):
    """Each command with one required flag left out: exit 2, one line on stderr naming that flag, nothing on
    stdout, no traceback (epsilon without --delta ended in KeyError; calibrate without a target said nan; a
    missing --steps silently counted one step)."""
    from amplify_jax.cli import main

    capsys.readouterr()
    code = main(argv)
    out = capsys.readouterr()
    lines = out.err.strip().splitlines()
    assert code == 2 and out.out == "" and len(lines) == 1, (argv, code, out.err)
    assert flag in lines[0] and "Traceback" not in out.err, (argv, lines)


def test_no_default_for_steps_delta_or_target(capsys):
    from amplify_jax.cli import main

    for argv, flag in ((["calibrate", "--target-epsilon", "1", "--q", "0.01", "--delta", "1e-5"], "--steps"),
                       (["epsilon", "--sigma", "1", "--q", "0.01", "--delta", "1e-5"], "--steps"),
                       (["epsilon", "--sigma", "1", "--q", "0.01", "--steps", "10000"], "--delta"),
                       (["calibrate", "--q", "0.01", "--steps", "100", "--delta", "1e-5"], "--target-epsilon"),
                       (["rdp", "--sigma", "1", "--q", "0.1", "--orders", "2"], "--steps")):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert flag in err and "nan" not in err and "KeyError" not in err, err


@pytest.mark.parametrize("argv", [["evaluate", "--help"], ["invert", "--help"], ["epsilon", "--help"],
                                  ["rdp", "--help"], ["calibrate", "--help"], ["evaluate", "dpsgd", "--help"],
                                  ["invert", "secrdp.step", "-h"], ["--version"], ["--help"]])
def test_help_on_every_command_and_version(argv, capsys):
    from amplify_jax import __version__
    from amplify_jax.cli import main

    with pytest.raises(SystemExit) as done:
        main(argv)
    out = capsys.readouterr()
    assert done.value.code == 0 and out.err == "", out.err
    if argv == ["--version"]:
        assert out.out.strip() == f"amplify-jax {__version__}"


def test_mechanism_flags_describe_unit_domain_and_default(capsys):
    """Every flag of epsilon / rdp / calibrate has a help line with its unit, its domain (the registry's) and
    whether it has a default."""
    from amplify_jax.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices
    for cmd in ("epsilon", "rdp", "calibrate"):
        assert "<domain>" not in sub[cmd].format_help()  # the registry's domains, filled when help is shown
        for action in sub[cmd]._actions:
            if not action.option_strings or action.dest == "help":
                continue
            text = action.help or ""
            assert len(text) > 20, (cmd, action.option_strings)
            if action.dest in ("sigma", "q", "steps", "scale", "eps0", "k", "delta", "target_epsilon", "orders"):
                assert "(" in text and ":" in text, (cmd, action.dest, text)  # (unit): domain
                assert "default" in text, (cmd, action.dest, text)  # "no default" or "default 2"
    steps = next(a for a in sub["epsilon"]._actions if a.dest == "steps")
    assert "integers 1..1e+09" in steps.help and "required, no default" in steps.help


def test_names_with_dash_or_underscore(capsys):
    from amplify_jax.cli import join_negative_values, main

    assert join_negative_values(["--target_epsilon", "1", "--sigma_cor=-2", "--x_y", "-1"]) == \
        ["--target-epsilon", "1", "--sigma-cor=-2", "--x-y=-1"]
    base = ["invert", "secrdp.step", "--target-epsilon", "1", "--graph", "ring:8", "--sigma_unc", "1", "--clip",
            "1", "--steps", "10", "--delta", "1e-5", "--adversary", "eavesdropper", "--lo", "5", "--hi", "1"]
    for spelled in ("sigma-cor", "sigma_cor"):  # both reach the range check (no "invalid choice")
        assert main(base + ["--solve-for", spelled]) == 2
        err = capsys.readouterr().err
        assert "Expected --lo < --hi, got --lo 5 --hi 1." in err, err
    assert main(["epsilon", "--mechanism", "poisson_gaussian", "--sigma", "1", "--steps", "10", "--delta",
                 "1e-5"]) == 2
    assert "Expected --q for --mechanism poisson-gaussian" in capsys.readouterr().err


def test_range_errors_name_the_flags(capsys):
    from amplify_jax.cli import main

    base = ["invert", "shuffle.fmt-closed-form", "--solve-for", "n", "--target-epsilon", "0.5", "--eps0", "1",
            "--delta", "1e-6"]
    for extra, needle in ((["--lo", "5", "--hi", "1"], "Expected --lo < --hi, got --lo 5 --hi 1."),
                          (["--lo", "-inf"], "--lo=-inf"), (["--hi", "0.5"], "--hi=0.5"),
                          (["--lo", "0"], "--lo=0")):
        assert main(base + extra) == 2
        err = capsys.readouterr().err
        assert needle in err and "sigma_range" not in err, err
    assert main(["invert", "dpsgd", "--accountant", "pld", "--solve-for", "sigma", "--target-epsilon", "1", "--q",
                 "0.01", "--steps", "10", "--delta", "1e-5", "--lo", "0.01", "--hi", "100"]) == 2
    err = capsys.readouterr().err
    assert "--lo=0.01" in err and "sigma_range" not in err, err


def test_outputs_follow_the_umask(tmp_path):
    import os

    from amplify_jax._core.io import atomic_write, umask
    from amplify_jax.plotting import figure, save

    old = os.umask(0o027)
    try:
        assert umask() == 0o027
        atomic_write(tmp_path / "a.csv", lambda t: open(t, "w").write("x\n"))
        fig, _ = figure()
        save(fig, tmp_path / "a.png")
        os.umask(0o002)
        atomic_write(tmp_path / "b.csv", lambda t: open(t, "w").write("x\n"))
    finally:
        os.umask(old)
    assert (tmp_path / "a.csv").stat().st_mode & 0o777 == 0o640  # group reads, as the umask says (was 0600)
    assert (tmp_path / "a.png").stat().st_mode & 0o777 == 0o640
    assert (tmp_path / "b.csv").stat().st_mode & 0o777 == 0o664


# ----------------------------------------------------------------------------------------------------------
# one mechanism table (issue 29, item 2): epsilon / rdp / calibrate are aliases of evaluate / invert


def test_the_mechanism_table_names_registered_bounds_taking_its_parameters():
    """Each row's bounds are registered and take the row's parameters; the PLD, the RDP accountant and the command
    line read the same table (one object), and the command line offers the RDP accountant's rows."""
    from amplify_jax import bounds
    from amplify_jax.accounting import accountants, pld
    from amplify_jax.cli import build_parser

    assert pld.MECHANISMS is accountants.MECHANISMS
    assert set(accountants.RDP_MECHANISMS) == {"poisson-gaussian", "gaussian", "laplace", "randomized-response"}
    for name, row in accountants.MECHANISMS.items():
        for bound_id, fixed in ((row.pld, {"delta"}), (row.rdp, {"delta", "method"}), (row.curve, {"orders"})):
            if bound_id is None:
                assert name not in accountants.RDP_MECHANISMS, name
                continue
            declared = {p.name for p in bounds.get(bound_id).params}
            assert set(row.params) <= declared and declared - set(row.params) <= fixed | {"accountant", "steps"}, (
                name, bound_id, declared)
        if row.sigma_via is not None:
            via, fixed = row.sigma_via
            for bound_id in (accountants.MECHANISMS[via].rdp, accountants.MECHANISMS[via].pld):
                assert "sigma" in bounds.get(bound_id).solvable
                assert set(row.params) | set(dict(fixed)) | {"sigma"} <= {p.name for p in bounds.get(bound_id).params}
    sub = next(a for a in build_parser()._actions if a.dest == "command").choices
    mech = next(a for a in sub["epsilon"]._actions if a.dest == "mechanism")
    assert sorted(mech.choices) == sorted(accountants.RDP_MECHANISMS)


@pytest.fixture
def spy(monkeypatch):
    """Record the registry calls the command line makes (bounds.evaluate / bounds.invert) and their results."""
    from amplify_jax import bounds

    calls = []
    for name in ("evaluate", "invert"):
        real = getattr(bounds, name)

        def wrapped(bound_id, /, _real=real, _name=name, **kw):
            res = _real(bound_id, **kw)
            calls.append((_name, bound_id, kw, res))
            return res

        monkeypatch.setattr(bounds, name, wrapped)
    return calls


@pytest.mark.parametrize("argv, call, bound_id, params", [
    (["epsilon", "--mechanism", "gaussian", "--sigma", "2,4", "--steps", "10", "--delta", "1e-5", "--method",
      "mironov"], "evaluate", "gaussian", {"sigma": [2.0, 4.0], "steps": [10.0, 10.0], "delta": [1e-5, 1e-5],
                                           "method": "mironov"}),
    (["epsilon", "--mechanism", "laplace", "--scale", "2", "--steps", "10", "--delta", "1e-5", "--accountant",
      "pld"], "evaluate", "pld.laplace", {"scale": [2.0], "steps": [10.0], "delta": [1e-5]}),
    (["epsilon", "--mechanism", "randomized-response", "--eps0", "1", "--steps", "10", "--delta", "1e-5"],
     "evaluate", "randomized-response", {"eps0": [1.0], "k": [2.0], "steps": [10.0], "delta": [1e-5],
                                         "method": "balle2020"}),
    (["rdp", "--mechanism", "laplace", "--scale", "2", "--steps", "1,3", "--orders", "2,8"], "evaluate",
     "rdp.laplace", {"orders": [2.0, 8.0], "scale": [2.0, 2.0], "steps": [1.0, 3.0]}),
    (["calibrate", "--mechanism", "gaussian", "--target-epsilon", "8", "--steps", "10", "--delta", "1e-5",
      "--rtol", "1e-3"], "invert", "dpsgd", {"solve_for": "sigma", "target_epsilon": [8.0], "q": 1.0, "steps": [10.0],
                                              "delta": [1e-5], "rtol": 1e-3, "method": "balle2020"}),
])
def test_mechanism_commands_are_aliases_of_evaluate_and_invert(argv, call, bound_id, params, spy, capsys):
    """One registry call per command, with the mechanism's bound and parameters, and its answer printed as is."""
    from amplify_jax.cli import main

    capsys.readouterr()
    assert main(argv + ["--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert [(c[0], c[1]) for c in spy] == [(call, bound_id)]
    kw, res = spy[0][2], spy[0][3]
    assert {k: np.asarray(v).tolist() for k, v in kw.items()} == params
    if argv[0] == "rdp":
        assert got["rdp"] == res.rdp.tolist() and got["orders"] == res.orders.tolist()
    elif argv[0] == "calibrate":
        assert got["sigma"] == res.sigma.tolist() and got["epsilon"] == res.epsilon.tolist()
    else:
        assert got["epsilon"] == res.epsilon.tolist()
