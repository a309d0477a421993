"""Sweeps: sharded == unsharded, resumable, atomic outputs, spec mismatch refused."""

import numpy as np
import jax
import pytest

import amplify_jax as aj
from amplify_jax import sweep as S

SPEC = {
    "sweep": {"quantity": "epsilon", "chunk_size": 6},
    "grid": {"sigma": {"start": 0.6, "stop": 4.0, "num": 9, "scale": "log"}, "q": [0.01, 0.05], "steps": 50.0,
             "delta": 1e-5},
}


def test_sharded_equals_unsharded_and_direct(tmp_path):
    assert len(jax.devices()) >= 4, "conftest forces 4 host devices"
    a = S.run_sweep(S.load_spec(SPEC, output=str(tmp_path / "a")), progress=False)
    b = S.run_sweep(S.load_spec(SPEC, output=str(tmp_path / "b")), progress=False, devices=jax.devices()[:1])
    ra = np.genfromtxt(a / "results.csv", delimiter=",", names=True)
    rb = np.genfromtxt(b / "results.csv", delimiter=",", names=True)
    # equal up to float64 round-off (XLA may fuse the partitioned program differently: 1 ulp seen)
    np.testing.assert_allclose(ra["epsilon"], rb["epsilon"], rtol=1e-13, atol=0)
    np.testing.assert_array_equal(ra["sigma"], rb["sigma"])
    direct = aj.dpsgd_epsilon(sigma=ra["sigma"], q=ra["q"], steps=ra["steps"], delta=ra["delta"])
    np.testing.assert_allclose(ra["epsilon"], np.asarray(direct.epsilon), rtol=1e-12)
    import pyarrow.parquet as pq

    t = pq.read_table(a / "results.parquet")
    assert t.num_rows == 18 and t.schema.field("epsilon").type == "double"


def test_resume_after_interruption(tmp_path):
    spec = S.load_spec(SPEC, output=str(tmp_path / "r"))
    assert S.run_sweep(spec, progress=False, max_chunks=1) is None  # "killed" after one chunk
    parts = sorted((tmp_path / "r" / "parts").iterdir())
    assert [p.name for p in parts] == ["part-00000000.npz"]
    assert not (tmp_path / "r" / "results.csv").exists()
    mtime = parts[0].stat().st_mtime_ns
    out = S.run_sweep(spec, progress=False)
    assert (out / "results.csv").exists()
    assert (tmp_path / "r" / "parts" / "part-00000000.npz").stat().st_mtime_ns == mtime  # not recomputed
    assert not list((tmp_path / "r").rglob("*.tmp"))


def test_different_spec_refused(tmp_path):
    S.run_sweep(S.load_spec(SPEC, output=str(tmp_path / "x")), progress=False, max_chunks=1)
    other = {**SPEC, "grid": {**SPEC["grid"], "steps": 51.0}}
    with pytest.raises(ValueError, match="different sweep"):
        S.run_sweep(S.load_spec(other, output=str(tmp_path / "x")), progress=False)


@pytest.mark.parametrize(
    "grid,needle",
    [({"sigma": 1.0, "q": 2.0, "steps": 1.0, "delta": 1e-5}, "q=2.0"),
     ({"sigma": 1.0, "q": 0.1, "steps": 1.0}, "missing"),
     ({"sigma": 1.0, "q": 0.1, "steps": 1.0, "delta": 1e-5, "x": 1}, "unknown"),
     ({"sigma": {"start": 1, "stop": 2}, "q": 0.1, "steps": 1.0, "delta": 1e-5}, "sigma")],
)
def test_bad_specs(grid, needle):
    with pytest.raises(ValueError, match=needle):
        S.load_spec({"grid": grid})


@pytest.mark.slow  # ~35 s of a worker: the DP-SGD calibration's compilation for the sweep's chunk shape
def test_calibrate_sweep(tmp_path):
    """Each chunk is a call of dpsgd_calibrate_sigma (tiny rates raised to Q_FLOOR as there)."""
    spec = S.load_spec({"sweep": {"quantity": "calibrate"},
                        "grid": {"target_epsilon": [1.0, 4.0], "q": [0.02, 1e-120], "steps": 100.0, "delta": 1e-5}},
                       output=str(tmp_path / "c"))
    out = S.run_sweep(spec, progress=False)
    r = np.genfromtxt(out / "results.csv", delimiter=",", names=True)
    assert np.all(r["epsilon"] <= r["target_epsilon"]) and np.all(r["status"] == 0)
    direct = aj.dpsgd_calibrate_sigma(target_epsilon=r["target_epsilon"], q=r["q"], steps=r["steps"],
                                      delta=r["delta"])
    np.testing.assert_allclose(r["sigma"], np.asarray(direct.sigma), rtol=1e-6)
    np.testing.assert_array_equal(r["status"], np.asarray(direct.status))


@pytest.mark.parametrize("sweep,needle", [({"quantity": "calibrate", "sigma_range": [2.0, 1.0]}, "sigma_range"),
                                          ({"quantity": "calibrate", "rtol": -1.0}, "rtol"),
                                          ({"quantity": "epsilon", "method": "nope"}, "method")])
def test_dpsgd_sweep_options_are_checked_by_the_public_call(tmp_path, sweep, needle):
    """A DP-SGD sweep's options go through the checks of the public call (a sweep's calibration used to skip
    the sigma-range check), before anything is written: the corrected spec then runs in the same folder."""
    first = "target_epsilon" if sweep["quantity"] == "calibrate" else "sigma"
    spec = S.load_spec({"sweep": sweep, "grid": {first: 1.0, "q": 0.02, "steps": 10.0, "delta": 1e-5}},
                       output=str(tmp_path / "x"))
    with pytest.raises(ValueError, match=needle):
        S.run_sweep(spec, progress=False)
    assert not (tmp_path / "x" / "spec.json").exists()


# ----------------------------------------------------------------------------------------------------------
# Sweeps of registered bounds into Zarr stores

import json  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import xarray as xr  # noqa: E402

from amplify_jax import bounds as B  # noqa: E402
from amplify_jax.status import Status  # noqa: E402

GAUSS = {"sweep": {"bound": "gaussian", "chunk_size": 4},
         "grid": {"sigma": {"start": 0.5, "stop": 4.0, "num": 5, "scale": "log"}, "steps": [1, 10, 100],
                  "delta": [1e-5, 1e-6]}}


def _grid(ds, dims):
    """The store's coordinates shaped to broadcast (one axis each)."""
    return {d: ds[d].values.reshape([-1 if e == d else 1 for e in dims]) for d in dims}


def test_bound_sweep_equals_evaluate(tmp_path):
    spec = S.load_spec({**GAUSS, "sweep": {**GAUSS["sweep"], "format": ["csv", "parquet"]}}, output=str(tmp_path))
    assert spec.dims == ("sigma", "steps", "delta") and spec.chunks == (1, 2, 2) and spec.n_chunks == 10
    out = S.run_sweep(spec, progress=False)
    ds = xr.open_zarr(out / "results.zarr")
    assert dict(ds.sizes) == {"sigma": 5, "steps": 3, "delta": 2}
    np.testing.assert_array_equal(ds.sigma.values, np.geomspace(0.5, 4.0, 5))
    ref = B.evaluate("gaussian", **_grid(ds, ds.epsilon.dims))
    np.testing.assert_allclose(ds.epsilon.values, ref.epsilon, rtol=1e-13, atol=0)
    np.testing.assert_allclose(ds.order.values, ref.order, rtol=1e-13, atol=0)
    assert ds.status.dtype == np.int8 and np.all(ds.status.values == Status.OK)
    assert ds.status.attrs["flag_values"] == [int(s) for s in Status]
    assert ds.status.attrs["flag_meanings"].split()[:2] == ["ok", "infeasible"]
    a = ds.attrs
    assert a["bound"] == "gaussian" and a["quantity"] == "evaluate" and a["spec_hash"] == spec.digest()
    assert a["paper"] == B.get("gaussian").paper and a["parameters"]["sigma"]["dimension"] == "sigma"
    csv = np.genfromtxt(out / "results.csv", delimiter=",", names=True)
    assert len(csv) == 30 and csv.dtype.names == ("sigma", "steps", "delta", "epsilon", "order", "status")
    np.testing.assert_array_equal(csv["epsilon"], ds.epsilon.values.ravel())
    import pyarrow.parquet as pq

    assert pq.read_table(out / "results.parquet").num_rows == 30
    assert not list(tmp_path.rglob("*.tmp"))


def test_rdp_sweep_has_an_order_dimension(tmp_path):
    spec = S.load_spec({"sweep": {"bound": "rdp.gaussian", "chunk_size": 2},
                        "grid": {"sigma": [1.0, 2.0, 3.0], "orders": [2, 4, 8]}}, output=str(tmp_path), export="csv")
    ds = xr.open_zarr(S.run_sweep(spec, progress=False) / "results.zarr")
    assert ds.rdp.dims == ("sigma", "order") and ds.status.dims == ("sigma",)
    np.testing.assert_array_equal(ds.rdp.values, B.evaluate("rdp.gaussian", sigma=[[1.0], [2.0], [3.0]],
                                                            orders=[2, 4, 8]).rdp.reshape(3, 3))
    assert len(np.genfromtxt(tmp_path / "results.csv", delimiter=",", names=True)) == 9


def test_invert_sweep_equals_invert(tmp_path):
    spec = S.load_spec({"sweep": {"bound": "gaussian", "quantity": "invert", "solve_for": "sigma", "chunk_size": 3},
                        "grid": {"target_epsilon": [0.5, 1.0, 4.0], "steps": [1, 10], "delta": 1e-5}},
                       output=str(tmp_path))
    ds = xr.open_zarr(S.run_sweep(spec, progress=False) / "results.zarr")
    assert set(ds.data_vars) == {"sigma", "epsilon", "status"} and ds.sigma.dims == ("target_epsilon", "steps")
    g = _grid(ds, ds.sigma.dims)
    ref = B.invert("gaussian", solve_for="sigma", target_epsilon=np.broadcast_to(g["target_epsilon"], (3, 2)),
                   steps=g["steps"], delta=1e-5)
    np.testing.assert_allclose(ds.sigma.values, ref.sigma, rtol=1e-13, atol=0)
    np.testing.assert_allclose(ds.epsilon.values, ref.epsilon, rtol=1e-13, atol=0)
    np.testing.assert_array_equal(ds.status.values, ref.status)
    assert np.all(ds.epsilon.values <= ds.target_epsilon.values[:, None]) and ds.attrs["solve_for"] == "sigma"


@pytest.mark.parametrize(
    "sweep,grid,needle",
    [({}, {"sigma": [1.0, -1.0], "steps": 1, "delta": 1e-5}, "sigma="),
     ({}, {"sigma": 1.0, "steps": 1.5, "delta": 1e-5}, "steps"),
     ({}, {"sigma": 1.0, "steps": 1}, "delta"),
     ({}, {"sigma": 1.0, "steps": 1, "delta": 1e-5, "x": 1}, "x=1"),
     ({"bound": "nope"}, {"sigma": 1.0}, "id='nope'"),
     ({"quantity": "invert", "solve_for": "delta"}, {"target_epsilon": 1.0, "steps": 1, "sigma": 1.0},
      "solve_for='delta'"),
     ({"quantity": "invert", "solve_for": "sigma"}, {"target_epsilon": 1.0, "steps": 1, "sigma": 1.0, "delta": 1e-5},
      "sigma"),
     ({"quantity": "invert", "solve_for": "sigma"}, {"target_epsilon": -1.0, "steps": 1, "delta": 1e-5},
      "target_epsilon"),
     ({"quantity": "invert", "solve_for": "sigma"}, {"steps": 1, "delta": 1e-5}, "target_epsilon"),
     ({"format": ["csv"]}, {"sigma": {"start": 1, "stop": 2, "num": 2000}, "steps": {"start": 1, "stop": 2000,
                                                                                        "num": 2000}, "delta": 1e-5},
      "rows"),
     ({"format": "xlsx"}, {"sigma": 1.0, "steps": 1, "delta": 1e-5}, "format"),
     ({"chunk_size": 0}, {"sigma": 1.0, "steps": 1, "delta": 1e-5}, "chunk_size")],
)
def test_bound_sweep_validation(sweep, grid, needle):
    with pytest.raises(ValueError, match=needle) as exc:
        S.load_spec({"sweep": {"bound": "gaussian", **sweep}, "grid": grid})
    assert "\n" not in str(exc.value)


def test_bound_sweep_resume_and_mismatch(tmp_path):
    spec = S.load_spec(GAUSS, output=str(tmp_path / "r"))
    assert S.run_sweep(spec, progress=False, max_chunks=3) is None
    assert sorted(os.listdir(tmp_path / "r" / "done")) == [f"chunk-{i:08d}" for i in range(3)]
    part = xr.open_zarr(tmp_path / "r" / "results.zarr")
    assert np.isnan(part.epsilon.values).sum() == 30 - 10 and np.sum(part.status.values == -1) == 30 - 10
    other = {**GAUSS, "grid": {**GAUSS["grid"], "delta": [1e-5, 1e-7]}}
    with pytest.raises(ValueError, match="different sweep"):
        S.run_sweep(S.load_spec(other, output=str(tmp_path / "r")), progress=False)
    out = S.run_sweep(spec, progress=False)
    full = S.run_sweep(S.load_spec(GAUSS, output=str(tmp_path / "u")), progress=False)
    xr.testing.assert_identical(xr.open_zarr(out / "results.zarr").load(), xr.open_zarr(full / "results.zarr").load())


# The kill test sweeps shuffle.clones when run with -m slow (each of its chunks takes seconds); by default the
# cheap gaussian bound over 300 one-point chunks, so that a run killed a few chunks after it made progress is
# always cut short (its chunks take milliseconds).
KILL = {
    "gaussian": {"sweep": {"bound": "gaussian", "chunk_size": 1},
                 "grid": {"sigma": {"start": 0.5, "stop": 4.0, "num": 10, "scale": "log"},
                          "steps": [1, 2, 3, 5, 10, 20, 30, 50, 100, 200], "delta": [1e-5, 1e-8, 1e-10]}},
    "shuffle.clones": {"sweep": {"bound": "shuffle.clones", "chunk_size": 4},
                       "grid": {"eps0": {"start": 0.5, "stop": 4.0, "num": 6, "scale": "log"},
                                "n": [1000, 3000, 10000, 30000, 100000], "delta": [1e-6, 1e-8]}},
}


def _toml(spec: dict) -> str:
    """A spec dict as TOML (numbers, strings, lists and one level of inline tables)."""
    def value(v):
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{a} = {value(b)}" for a, b in v.items()) + " }"
        return json.dumps(v)

    return "".join(f"[{t}]\n" + "".join(f"{k} = {value(v)}\n" for k, v in e.items()) for t, e in spec.items())


@pytest.mark.parametrize("bound", ["gaussian", pytest.param("shuffle.clones", marks=pytest.mark.slow)])
def test_sigkill_at_random_moments_then_resume(tmp_path, bound):
    spec_dict = KILL[bound]
    toml = tmp_path / "grid.toml"
    toml.write_text(_toml(spec_dict))
    out, done = tmp_path / "killed", tmp_path / "killed" / "done"
    env = {**os.environ, "AMPLIFY_JAX_CACHE": str(tmp_path / "xla-cache")}
    cmd = [sys.executable, "-m", "amplify_jax.cli", "sweep", str(toml), "--output", str(out), "--quiet"]
    rng = random.Random(7)
    n_chunks = S.load_spec(spec_dict).n_chunks
    kills = 0
    for _ in range(4):
        before = len(os.listdir(done)) if done.exists() else 0
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        wait_for = before + rng.randint(1, 3)  # a random moment: a few chunks after the run made progress
        while proc.poll() is None and time.monotonic() < deadline:
            if done.exists() and len(os.listdir(done)) >= wait_for:
                break
            time.sleep(0.002)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait()
    assert kills >= 3
    assert len(os.listdir(done)) < n_chunks
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    assert "results.zarr" in res.stdout
    assert sorted(os.listdir(done)) == [f"chunk-{i:08d}" for i in range(n_chunks)]
    got = xr.open_zarr(out / "results.zarr").load()
    ref = xr.open_zarr(S.run_sweep(S.load_spec(spec_dict, output=str(tmp_path / "ref")), progress=False)
                       / "results.zarr").load()
    xr.testing.assert_identical(got, ref)
    assert np.all(got.status.values >= 0)
    assert not list(out.rglob("*.tmp"))


def test_pld_accountant_sweep(tmp_path):
    """accountant = "pld" in the [sweep] table: each chunk is a call of the PLD accountant."""
    from amplify_jax.accounting import pld

    spec = S.load_spec({"sweep": {"quantity": "epsilon", "accountant": "pld", "chunk_size": 4},
                        "grid": {"sigma": [1.0, 2.0], "q": [0.001, 0.01], "steps": 100.0, "delta": 1e-10}},
                       output=str(tmp_path / "p"))
    out = S.run_sweep(spec, progress=False)
    r = np.genfromtxt(out / "results.csv", delimiter=",", names=True)
    direct = pld.dpsgd_epsilon(sigma=r["sigma"], q=r["q"], steps=r["steps"], delta=r["delta"])
    np.testing.assert_array_equal(r["epsilon"], direct.epsilon)
    with pytest.raises(ValueError, match="accountant"):
        S.run_sweep(S.load_spec({"sweep": {"accountant": "prv"}, "grid": SPEC["grid"]},
                                output=str(tmp_path / "bad")), progress=False)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow  # ~40 s of a worker (four processes, each compiling); one-process kills: test_sigkill_at_random_...
def test_two_processes_through_jax_distributed_kill_one_then_resume(tmp_path):
    """One sweep as two processes (jax.distributed, coordinator on 127.0.0.1), each taking its share of the
    chunks; one process SIGKILLed mid-sweep; the sweep resumed by two new processes equals a one-process run."""
    # 600 one-point chunks: enough that host 1 is still sweeping when 5 of its chunks are seen, even when the
    # test process is starved for CPU (with 300, a loaded machine once saw host 1 finish first)
    spec_dict = {"sweep": {"bound": "gaussian", "chunk_size": 1},
                 "grid": {**KILL["gaussian"]["grid"], "delta": [1e-5, 1e-6, 1e-8, 1e-9, 1e-10, 1e-12]}}
    toml = tmp_path / "grid.toml"
    toml.write_text(_toml(spec_dict))
    out, done = tmp_path / "two", tmp_path / "two" / "done"
    env = {**os.environ, "AMPLIFY_JAX_CACHE": str(tmp_path / "xla-cache")}
    n_chunks = S.load_spec(spec_dict).n_chunks

    def start(port):
        return [subprocess.Popen([sys.executable, "-m", "amplify_jax.cli", "sweep", str(toml), "--output", str(out),
                                  "--quiet", "--distributed", "--coordinator", f"127.0.0.1:{port}",
                                  "--num-processes", "2", "--process-id", str(h)], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for h in (0, 1)]

    def markers_by_host():
        ids = [int(m[-8:]) for m in os.listdir(done) if m.startswith("chunk-")] if done.exists() else []
        return sum(i % 2 == 0 for i in ids), sum(i % 2 for i in ids)

    def both_mid_sweep():
        even, odd = markers_by_host()
        return odd >= 5 and even >= 1

    procs = start(_free_port())
    deadline = time.monotonic() + 180
    # wait for both hosts to have written chunks: under load host 0 (the coordinator) may start later than host 1
    # (a CI run once saw host 1 write 5 chunks before host 0 wrote any)
    while procs[1].poll() is None and not both_mid_sweep() and time.monotonic() < deadline:
        time.sleep(0.002)
    assert procs[1].poll() is None, procs[1].communicate()[1][-2000:]
    procs[1].send_signal(signal.SIGKILL)  # host 1 dies mid-sweep; the job (host 0) is then stopped too
    procs[1].wait()
    time.sleep(0.5)
    procs[0].send_signal(signal.SIGKILL)
    procs[0].wait()
    markers = [m for m in os.listdir(done) if m.startswith("chunk-")]
    assert 5 <= len(markers) < n_chunks
    assert any(int(m[-8:]) % 2 == 0 for m in markers)  # host 0 had written its own share meanwhile

    procs = start(_free_port())
    res = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [r[1][-2000:] for r in res]
    assert "results.zarr" in res[0][0] and "results.zarr" not in res[1][0]  # host 0 reports it, once all are done
    assert sorted(os.listdir(done)) == [f"chunk-{i:08d}" for i in range(n_chunks)]
    got = xr.open_zarr(out / "results.zarr").load()
    ref = xr.open_zarr(S.run_sweep(S.load_spec(spec_dict, output=str(tmp_path / "one")), progress=False)
                       / "results.zarr").load()
    xr.testing.assert_identical(got, ref)
    assert not list(out.rglob("*.tmp"))


@pytest.mark.parametrize("argv, needle", [
    (["--coordinator", "127.0.0.1:1234"], "Expected --distributed with --coordinator"),
    (["--distributed", "--coordinator", "127.0.0.1:1234"], "together"),
    (["--distributed", "--coordinator", "127.0.0.1:1", "--num-processes", "2", "--process-id", "2"], "process_id=2"),
])
def test_distributed_flags_are_checked(tmp_path, capsys, argv, needle):
    from amplify_jax.cli import main

    toml = tmp_path / "grid.toml"
    toml.write_text(_toml(KILL["gaussian"]))
    assert main(["sweep", str(toml), "--output", str(tmp_path / "o"), "--quiet", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0], err
