"""One status vocabulary for every result of amplify_jax (bounds, inversions, calibrations, sweeps).

A result carries an integer array ``status`` (one code per grid point); :class:`Status` names the codes, and
``str(Status(code))`` is the word the command line prints (``"ok"``, ``"infeasible"``, ...).
"""

from __future__ import annotations

import enum

import numpy as np

# status_names (the command line's words for codes) is importable, not in __all__
__all__ = ["Status"]


class Status(enum.IntEnum):
    """Per-point status codes (int32 in arrays; ``str()`` gives the command line's word)."""

    OK = 0  #: the value is the bound (or, for an inversion, the feasible endpoint within rtol)
    INFEASIBLE = 1  #: inversion: no parameter in the range meets the target; the value is the range's best end
    AT_LIMIT = 2  #: inversion: the whole range meets the target; the value is its extreme end
    NOT_MONOTONE = 3  #: inversion: the re-check at the returned value failed
    MAX_ITER = 4  #: inversion: feasible, but the bracket did not reach rtol within the iteration budget
    FALLBACK = 5  #: the theorem's conditions fail here; the value is a weaker bound that holds (see the bound)
    ERROR = 6  #: the kernel produced no number here; the value is the safe end (+inf for an upper bound)
    #: the value is a sound bound, but its method's own lower bound of the truth lies further below it than the
    #: method's tolerance (a PLD whose upper / lower gap exceeds ``pld.LOOSE_RTOL`` after its finer grid and
    #: the RDP bound): the truth may be well under the value
    LOOSE = 7

    def __str__(self) -> str:
        return self.name.lower()


def status_names(codes) -> list:
    """The command line's words for an array of status codes (flattened, row-major)."""
    return [str(Status(int(c))) for c in np.asarray(codes).ravel()]
