"""Shared pieces of the sweeps: constants, devices, progress bars, tables."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import jax

from .._core.io import atomic_write

#: Most rows (grid points x orders) a CSV / Parquet export of a bound sweep may hold; above it, read the store.
EXPORT_LIMIT = 2_000_000
#: Export formats of bound sweeps.
FORMATS = ("csv", "parquet")
#: Quantities of bound sweeps.
BOUND_QUANTITIES = ("evaluate", "invert")



# ----------------------------------------------------------------------------------------------------------
# Devices and files


def device_mesh(devices=None):
    """A 1-D mesh over all local devices (axis name "points")."""
    devs = np.array(jax.local_devices() if devices is None else devices)
    return jax.sharding.Mesh(devs, ("points",))


def hosts(distributed: bool) -> tuple[int, int]:
    """(this host's index, number of hosts): from ``jax.distributed`` when ``distributed``, else (0, 1)."""
    return (jax.process_index(), jax.process_count()) if distributed else (0, 1)


def barrier(name: str, distributed: bool) -> None:
    """Wait until every host of a ``jax.distributed`` run gets here (a no-op for one host).

    Through :func:`jax.experimental.multihost_utils.sync_global_devices`, a tiny collective over all devices
    (Gloo between CPU processes), so that host 0 sees every host's chunks before it checks and exports them.
    """
    if distributed and jax.process_count() > 1:
        from jax.experimental import multihost_utils  # lazy: multi-host runs only (~0.5 ms of `--help`)

        multihost_utils.sync_global_devices(name)


def _save_npz(tmp, arrays):
    with open(tmp, "wb") as fh:
        np.savez(fh, **arrays)
        fh.flush()
        os.fsync(fh.fileno())


def _bar(progress, total, initial, desc):
    if not progress:
        return None
    from tqdm.auto import tqdm  # lazy: tqdm takes ~70 ms to import, for progress bars only

    return tqdm(total=total, initial=initial, unit="chunk", desc=desc, disable=None)

def _write_table(table: dict, csv_path: Path | None, parquet_path: Path | None):
    """Columns (1-D arrays of equal length) to CSV (%.17g, integers as %d) and Parquet, each atomically."""
    header = list(table)
    if csv_path is not None:
        def write_csv(tmp):
            with open(tmp, "w") as fh:
                fh.write(",".join(header) + "\n")
                data = np.column_stack([table[h].astype(np.float64) for h in header])
                fmt = ["%d" if table[h].dtype.kind in "iu" else "%.17g" for h in header]
                np.savetxt(fh, data, fmt=fmt, delimiter=",")

        atomic_write(csv_path, write_csv)
    if parquet_path is not None:
        import pyarrow as pa  # lazy: pyarrow takes ~80 ms to import, for Parquet only
        import pyarrow.parquet as pq

        tbl = pa.table({k: pa.array(v) for k, v in table.items()})
        atomic_write(parquet_path, lambda t: pq.write_table(tbl, t))
