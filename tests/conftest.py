"""Suite-wide settings: x64 on, four host devices (for the sharded sweep tests), a fixed hypothesis profile.

The library scopes float64 itself (float64_jit); the suite also turns x64 on so that reference arrays built
in tests are float64.  One test module (test_numerics.py) checks the library with x64 *off* in a subprocess.
"""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")
# the command line's persistent compilation cache stays off in the test process (tests that call cli.main
# in-process would otherwise switch it on for every later test; a sharded compile then crashed writing to it)
os.environ.setdefault("AMPLIFY_JAX_CACHE", "off")

import jax  # noqa: E402
from hypothesis import settings  # noqa: E402

jax.config.update("jax_enable_x64", True)

settings.register_profile("amplify", deadline=None, derandomize=True, max_examples=25, print_blob=True)
settings.load_profile("amplify")
