"""The bound registry: one contract for every bound of amplify_jax.

Every bound is declared once, in its paper's subpackage, as a :class:`Bound`: an id, its paper and theorem,
its parameters with their domains and monotone directions, what it answers (eps at delta, delta at eps, or an
RDP curve at orders) and its kernel.  The command line, the sweeps, the calibration and the explorer read the
registry, so a registered bound can be evaluated, inverted, swept and plotted with nothing else written::

    from amplify_jax import bounds

    bounds.list()                                   # every bound, sorted by id
    bounds.get("shuffle.clones").params             # its declared parameters
    bounds.evaluate("shuffle.clones", eps0=[1, 2, 4], n=1e5, delta=1e-6).epsilon
    bounds.invert("dpsgd", solve_for="sigma", target_epsilon=1.0, q=0.01, steps=10_000, delta=1e-5).sigma

Input validation derives from the declared domains (one code path for every bound): a value outside its
domain, NaN or inf raises one ``ValueError`` line naming the parameter.
"""

from .._core.domains import Choice as Choice, Domain as Domain, Graph as Graph, Integer as Integer
from .._core.domains import Orders as Orders, Real as Real
from .._core.registry import ANSWERS as ANSWERS, DECREASING as DECREASING, INCREASING as INCREASING
from .._core.registry import REQUIRED as REQUIRED, Bound as Bound, Param as Param
from .._core.registry import get as get, list as list, register as register
from ._api import TARGET_DOMAINS as TARGET_DOMAINS, Result as Result, bind as bind, evaluate as evaluate
from ._api import invert as invert
from ._table import markdown_table as markdown_table

# What __all__ lists (issue 29: one home per name): the registry's functions and the declaration types a new
# bound is written with.  Importable from here, documented, not in __all__: the result type Result (what
# evaluate and invert return), the declaration constants (INCREASING, DECREASING: Param's monotone is +1 / -1;
# REQUIRED, Param's default; ANSWERS; TARGET_DOMAINS), the base class Domain, bind (the validation evaluate
# runs) and markdown_table (docs/bounds.md's table)
__all__ = ["Bound", "Param", "Real", "Integer", "Choice", "Graph", "Orders", "register", "get", "list", "evaluate",
           "invert"]
