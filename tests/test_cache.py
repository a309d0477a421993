"""The persistent compilation cache that importing amplify_jax turns on (amplify_jax/_core/cache.py): on at
$AMPLIFY_JAX_CACHE with file locking, a second process loads what the first compiled, the opt-out, and a
directory the user set first is kept.  Each case runs in a fresh process (JAX's cache is process-global)."""

import json
import os
import subprocess
import sys

_PROBE = """
import json, sys
import jax
hits = []
jax.monitoring.register_event_listener(lambda name, **kw: hits.append(name))
if len(sys.argv) > 1:
    jax.config.update("jax_compilation_cache_dir", sys.argv[1])
import amplify_jax as aj
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)  # cache even this small program
aj.rdp.gaussian_rdp([2.0, 3.0], sigma=1.5)
print(json.dumps({"dir": jax.config.jax_compilation_cache_dir, "max": jax.config.jax_compilation_cache_max_size,
                  "hits": hits.count("/jax/compilation_cache/cache_hits")}))
"""


def _probe(cache, *argv):
    env = {**os.environ, "AMPLIFY_JAX_CACHE": str(cache)}
    out = subprocess.run([sys.executable, "-c", _PROBE, *map(str, argv)], capture_output=True, text=True, env=env,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_on_locked_and_loaded_by_the_next_process(tmp_path):
    from amplify_jax._core import cache as _cache

    first = _probe(tmp_path / "c")
    assert first["dir"] == str(tmp_path / "c" / "xla") and first["max"] == _cache.MAX_BYTES  # limited: locked
    assert any(p.name.endswith("-cache") for p in (tmp_path / "c" / "xla").iterdir())
    second = _probe(tmp_path / "c")
    assert second["hits"] >= 1


def test_opt_out_and_the_users_directory(tmp_path):
    for off in ("off", "0", ""):
        assert _probe(off)["dir"] is None
    mine = tmp_path / "mine"
    got = _probe(tmp_path / "ours", mine)
    assert got["dir"] == str(mine) and not (tmp_path / "ours").exists()


_EXPORT_PROBE = """
import json, os
os.environ["AMPLIFY_JAX_HOST"] = "off"
import jax
traces = []
jax.monitoring.register_event_duration_secs_listener(
    lambda name, d, **kw: traces.append(name) if name == "/jax/core/compile/jaxpr_trace_duration" else None)
import amplify_jax as aj
v = aj.rdp.poisson_subsampled_gaussian_rdp([1.5, 2.0, 3.0], q=0.01, sigma=1.2)
print(json.dumps({"rdp": [float(x) for x in v], "traces": len(traces)}))
"""


def test_front_door_program_exported_once_and_reused(tmp_path):
    """A front door's kernel is exported once per machine (jax.export, amplify_jax/_cache.persisted): the next
    process loads it instead of tracing the kernel, and answers the same values bit for bit."""
    env = {**os.environ, "AMPLIFY_JAX_CACHE": str(tmp_path / "c")}

    def run():
        out = subprocess.run([sys.executable, "-c", _EXPORT_PROBE], capture_output=True, text=True, env=env,
                             timeout=600)
        assert out.returncode == 0, out.stderr[-2000:]
        return json.loads(out.stdout.strip().splitlines()[-1])

    first = run()
    files = list((tmp_path / "c" / "export").iterdir())
    assert len(files) == 1 and files[0].name.startswith("amplify_jax.accounting._rdp_curves._sgm_curve_kernel-")
    second = run()
    assert second["rdp"] == first["rdp"]
    assert second["traces"] < first["traces"]  # the kernel was not traced again
    env["AMPLIFY_JAX_CACHE"] = "off"
    assert run()["rdp"] == first["rdp"]  # without the cache: the same program through the plain jit
