"""Sweeps over huge parameter grids: chunked, resumable, atomic; any registered bound into a labelled Zarr store.

Two kinds of sweep, chosen by the ``[sweep]`` table of a TOML file (or an equivalent dict).

**Bound sweeps** evaluate (or invert) any bound of :mod:`amplify_jax.bounds` over the Cartesian product of its
parameters and write an N-D labelled ``xarray`` Dataset to ``OUTPUT/results.zarr``::

    [sweep]
    bound = "shuffle.clones"        # any id of amplify_jax.bounds.list()
    quantity = "evaluate"           # or "invert" (then solve_for = "PARAM"; optional rtol, lo, hi)
    chunk_size = 65536              # grid points per chunk (one Zarr chunk per data variable)
    output = "sweep-out"            # folder (the command line's --output wins)
    format = ["csv"]                # optional export of a small grid: "csv", "parquet"

    [grid]                          # every parameter of the bound (those with defaults may be left out)
    eps0 = { start = 0.1, stop = 5.0, num = 200, scale = "log" }     # > 1 value: an axis (a dimension)
    n = [1000, 10000, 100000]
    delta = 1e-6                                                     # one value: fixed

- Numbers become dimensions (in the order written) when they have more than one value; choice and graph
  parameters are fixed strings; ``orders`` of an RDP bound becomes a trailing ``order`` dimension of the answer.
  For ``quantity = "invert"`` the grid holds ``target_epsilon`` (or ``target_delta``), which may be axes too.
- Everything is validated through the registry's domains before anything runs (one ``ValueError`` line naming
  the parameter).
- The store is created first (every array and coordinate; data variables: the answer, the bound's extra
  outputs and ``status`` as int8 with CF ``flag_values`` / ``flag_meanings``; for invert the solved parameter,
  the achieved answer and ``status``) in a temporary folder renamed into place, then filled chunk by chunk with
  region writes aligned with the Zarr chunks: memory stays flat in the grid's size.  Attributes: bound id,
  paper, theorem, parameters (fixed values, domains), quantity, solve_for, amplify_jax version, spec hash.
- Resume: after a chunk's region write returns, an empty marker ``OUTPUT/done/chunk-XXXXXXXX`` is created by
  an atomic rename.  A restart (after any kill, SIGKILL included) recomputes every chunk without its marker;
  each Zarr chunk file belongs to exactly one sweep chunk, so rewriting a half-written one is safe, and the
  result equals an uninterrupted run's.  A store of a different spec (hash) is refused.
- With several hosts started through ``jax.distributed`` (``--distributed``; ``--coordinator HOST:PORT
  --num-processes N --process-id I`` on the command line, or the cluster's environment), host h takes the
  chunks i with i % hosts == h (a shared file system holds OUTPUT); at the end every host waits for the others
  (a barrier through ``jax.distributed``), then host 0 removes a killed run's temporary files, checks that
  every chunk is done and writes the exports.  A job killed on any host resumes when started again.
- CSV / Parquet (``format`` or ``--export``) are exports of small grids (at most :data:`EXPORT_LIMIT` rows),
  written through temporary files and renames at the end.

**DP-SGD sweeps** (the original quantities, ``quantity = "epsilon"`` or ``"calibrate"``, ``mechanism =
"poisson-gaussian"``) call :func:`amplify_jax.accountants.dpsgd_epsilon` /
:func:`~amplify_jax.accountants.dpsgd_calibrate_sigma` on each chunk of a grid of (sigma or target_epsilon, q,
steps, delta), so the grid and the options of the ``[sweep]`` table (``orders``, ``method``; for calibrate also
``rtol``, ``sigma_range``) are checked as those calls check them (every point takes its own quadrature panel
count: one compiled program for every chunk, the whole grid's answers) and each chunk laid out over a 1-D
``Mesh`` of the local devices
(``devices=``).  Each chunk goes to ``OUTPUT/parts/part-XXXXXXXX.npz`` (temporary file + atomic rename; a
restart skips the parts present after checking ``OUTPUT/spec.json``); the parts are merged into
``OUTPUT/results.csv`` and ``OUTPUT/results.parquet``.  With ``--distributed`` host h takes the chunks
i % hosts == h, and host 0 merges the parts after the barrier.
"""

from ._common import BOUND_QUANTITIES as BOUND_QUANTITIES, EXPORT_LIMIT as EXPORT_LIMIT, FORMATS as FORMATS
from ._common import device_mesh as device_mesh
from ._dpsgd import run_dpsgd_sweep as _run_dpsgd_sweep
from ._quantities import QUANTITIES as QUANTITIES
from ._spec import BoundSweepSpec as BoundSweepSpec, SweepSpec as SweepSpec, grid_points as grid_points
from .._core import host as _host
from ._spec import load_spec as load_spec, parse_axis as parse_axis
from ._store import export as export, run_bound_sweep as _run_bound_sweep

# What __all__ lists (issue 29: one home per name): the specs and running them.  Importable from here,
# documented, not in __all__: export (the CSV / Parquet export that the spec's ``format`` and ``--export`` run;
# its name is explore's), the tables and limits (QUANTITIES, BOUND_QUANTITIES, FORMATS, EXPORT_LIMIT) and the
# helpers of the spec and the DP-SGD sweeps (parse_axis, grid_points, device_mesh)
__all__ = ["SweepSpec", "BoundSweepSpec", "load_spec", "run_sweep"]


def run_sweep(spec, *, progress: bool = True, devices=None, distributed: bool = False, max_chunks: int | None = None):
    """Run (or resume) a sweep; returns the output folder once complete (None if cut short, or on a host > 0).

    ``devices`` (DP-SGD sweeps): the local devices a chunk is sharded over (all by default).  ``max_chunks``:
    stop after computing that many chunks (tests: a sweep cut short).
    """
    # every chunk compiled: a resumed sweep's store is bit-identical to an uninterrupted one (the host path of a
    # process's first small questions, amplify_jax._core.host, agrees with it to ~1e-13 only)
    with _host.off():
        if isinstance(spec, BoundSweepSpec):
            return _run_bound_sweep(spec, progress=progress, distributed=distributed, max_chunks=max_chunks)
        return _run_dpsgd_sweep(spec, progress=progress, devices=devices, distributed=distributed,
                                max_chunks=max_chunks)
