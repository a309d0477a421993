"""Suite-wide settings: x64 on, four host devices (for the sharded sweep tests), a fixed hypothesis profile,
and one persistent compilation cache for the whole run.

The library scopes float64 itself (float64_jit); the suite also turns x64 on so that reference arrays built
in tests are float64.  One test module (test_numerics.py) checks the library with x64 *off* in a subprocess.

Compilation is most of the suite's time, and the same kernels are compiled by both xdist workers and by the
command-line subprocesses: the run shares one fresh cache directory (``AMPLIFY_JAX_CACHE``, made by the
controlling process before the workers start, removed at the end; JAX locks its files, ``amplify_jax._core.cache``).
Subprocesses inherit it and the XLA flags, so their programs have the same cache keys as the test process's.
"""

import os
import shutil
import tempfile

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")
# The suite checks the compiled kernels: the host path of a process's first small questions (amplify_jax._core.host)
# is off here and in the command-line subprocesses, and tests/test_host.py turns it on where it checks it.
os.environ.setdefault("AMPLIFY_JAX_HOST", "off")

import jax  # noqa: E402
from hypothesis import settings  # noqa: E402

jax.config.update("jax_enable_x64", True)

settings.register_profile("amplify", deadline=None, derandomize=True, max_examples=25, print_blob=True)
settings.load_profile("amplify")


def pytest_configure(config):
    if hasattr(config, "workerinput") or "AMPLIFY_JAX_CACHE" in os.environ:
        return  # an xdist worker (it inherited the controller's directory), or a directory the user chose
    path = tempfile.mkdtemp(prefix="amplify-jax-test-cache-")
    os.environ["AMPLIFY_JAX_CACHE"] = path
    config._amplify_jax_cache = path


def pytest_unconfigure(config):
    path = getattr(config, "_amplify_jax_cache", None)
    if path:
        shutil.rmtree(path, ignore_errors=True)
