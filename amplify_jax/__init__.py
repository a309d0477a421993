"""amplify_jax: JAX-accelerated differential-privacy amplification bounds.

Families of bounds, one module each (find a bound by its paper's concept):

- :mod:`amplify_jax.rdp` -- Rényi-DP curves: Gaussian, Laplace, randomized response, Poisson-subsampled
  Gaussian (Mironov-Talwar-Zhang), sampling without replacement (Wang-Balle-Kasiviswanathan), composition.
- :mod:`amplify_jax.conversions` -- RDP <-> (eps, delta) with the optimal order, DP -> RDP.
- :mod:`amplify_jax.calibrate` -- the optimizer layer: invert any monotone bound, batched.
- :mod:`amplify_jax.accountants` -- ready-made accountants (DP-SGD with Poisson sampling) and their calibration.
- :mod:`amplify_jax.shuffle` -- amplification by shuffling (Erlingsson et al., Feldman-McMillan-Talwar
  closed form and clones bound) and the privacy blanket with dummies (Balle et al.; Ladjel et al. Lemma 2).
- :mod:`amplify_jax.traffic` -- DP for communication patterns (Ladjel, Anciaux, Bellet, Scerri).
- :mod:`amplify_jax.checkin` -- self check-in (Liew, Hasegawa, Takahashi).
- :mod:`amplify_jax.network` -- network DP for token walks (Cyffers and Bellet).
- :mod:`amplify_jax.secrdp` -- the SecRDP accountant of correlated noise (Decor, Allouah et al.).
- :mod:`amplify_jax.sweep`, :mod:`amplify_jax.cli`, :mod:`amplify_jax.plotting` -- sweeps, command line, plots.
- :mod:`amplify_jax.internal` -- the traceable kernels, and float64 scoping (``x64_scope``, ``float64_jit``).
- :mod:`amplify_jax.bounds` -- the registry: every bound declared once (id, paper, theorem, parameters),
  evaluated, inverted and swept through one contract; :mod:`amplify_jax.status` -- one status vocabulary.

Every public function validates its inputs (ValueError naming the parameter) and computes in float64
whatever the global JAX setting.

The top level holds only the front doors (``__all__``): :class:`Status`, :func:`dpsgd_epsilon`,
:func:`dpsgd_calibrate_sigma`, :func:`epsilon` and :func:`calibrate_sigma` (from :mod:`amplify_jax.accountants`).
Every other name lives in one module, its home: ``aj.rdp.gaussian_rdp``, ``aj.conversions.epsilon_from_rdp``,
``aj.calibrate.invert_monotone``, ``aj.checkin.distributed_gaussian_rdp``, ...; the modules are attributes of
the package (loaded on first use).

Importing amplify_jax turns JAX's persistent compilation cache on (``~/.cache/amplify_jax``, or
``$AMPLIFY_JAX_CACHE``; ``AMPLIFY_JAX_CACHE=off`` opts out; a cache directory you set in JAX first is kept),
so a new process loads the kernels it compiled before instead of compiling them again.
"""

import importlib as _importlib
import importlib.abc as _importlib_abc
import importlib.util as _importlib_util
import sys as _sys

from ._core.cache import enable_compilation_cache as _enable_compilation_cache

_enable_compilation_cache()

#: The import paths users know, for the modules that live in the accounting layer's folder or the core's: ``amplify_jax.rdp``
#: *is* ``amplify_jax.accounting.rdp`` (one module object under two names, never a copy), and so are their
#: submodules (``amplify_jax.pld._compose``).
ALIASES = {**{name: f"accounting.{name}" for name in
              ("accountants", "approx_dp", "calibrate", "conversions", "dp_events", "pld", "rdp")},
           **{name: f"_core.{name}" for name in ("status", "graphs")}}


class _AliasFinder(_importlib_abc.MetaPathFinder, _importlib_abc.Loader):
    """Imports ``amplify_jax.<alias>[.sub]`` as the module it names (see :data:`ALIASES`)."""

    def __init__(self):
        self._specs = {}

    @staticmethod
    def target(fullname):
        head, _, rest = fullname.partition(".")
        if head != __name__ or not rest:
            return None
        first, _, sub = rest.partition(".")
        return f"{__name__}.{ALIASES[first]}{'.' + sub if sub else ''}" if first in ALIASES else None

    def find_spec(self, fullname, path=None, target=None):
        return _importlib_util.spec_from_loader(fullname, self) if self.target(fullname) else None

    def create_module(self, spec):
        module = _importlib.import_module(self.target(spec.name))
        self._specs[module.__name__] = module.__spec__
        return module

    def exec_module(self, module):
        module.__spec__ = self._specs[module.__name__]  # the import machinery set the alias's: restore its own


_sys.meta_path.insert(0, _AliasFinder())

from .accounting import accountants, calibrate, conversions, rdp
from ._core import status
from ._core.status import Status
from .accounting.accountants import calibrate_sigma, dpsgd_calibrate_sigma, dpsgd_epsilon, epsilon

__version__ = "0.1.0"

# The paper subpackages, the registry and the front ends load on first use (PEP 562): ``import amplify_jax``
# stays the accounting core plus JAX, so a fresh process's first answer does not wait for every paper's
# module (and SciPy's linear algebra) to import.  ``amplify_jax.secrdp`` etc. work as attributes and imports.
_LAZY_MODULES = ("approx_dp", "bounds", "checkin", "graphs", "network", "secrdp", "shuffle", "sweep", "traffic",
                 "pld", "explore", "plotting", "dp_events", "internal", "integrations", "cli")


def __getattr__(name):
    if name in _LAZY_MODULES:
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY_MODULES))


#: The front doors; every other public name is exported by its one home module (issue 29 item 3).
__all__ = ["Status", "dpsgd_epsilon", "dpsgd_calibrate_sigma", "epsilon", "calibrate_sigma"]
