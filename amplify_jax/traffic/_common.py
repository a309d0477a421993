"""Helpers shared by the sections of the traffic subpackage (Ladjel, Anciaux, Bellet, Scerri): float64 copies
for the kernels and the caps of the deployment searches (the parameters' domains: ``_params.py``)."""

from __future__ import annotations

import warnings

import numpy as np

#: One cap per question (issue 27): the most dummies per scrambler that "fewest dummies" searches, whatever the
#: front door -- :func:`amplify_jax.traffic.scrambler_calibrate_dummies` (its ``max_dummies`` default) and
#: ``bounds.invert`` of ``traffic.scrambler`` over ``dummies`` (its declared search range).  Points that no d up to
#: the cap satisfies are answered INFEASIBLE with a warning naming the cap.  1000: the exact method's table of
#: Bin(M, 1/2) CDFs stops at M = 1500 (``shuffle.blanket.EXACT_MAX_M``), which d = 1000 reaches near T = 2;
#: the public function took 174 s for one infeasible point when it searched up to 1e5.
DUMMIES_CAP = 1000
#: One cap per question: the most messages per scrambler that "messages per scrambler" searches
#: (:func:`amplify_jax.traffic.scrambler_calibrate_n`'s ``max_n`` default and the search range of
#: ``traffic.scrambler``'s ``n``); was 1e5 and 1e4.
N_CAP = 10_000


def _warn_cap(question, name, cap, infeasible, where):
    """The infeasible message of a search stopped at its cap: which cap, and how to search further."""
    k, m = int(np.count_nonzero(infeasible)), int(np.size(infeasible))
    warnings.warn(f"{question}: no {name} up to {cap:g} (the cap of this question, {where}) meets the target at "
                  f"{k} of {m} points: status infeasible there, the answer is the cap.", UserWarning, stacklevel=3)


def _f64(*xs):
    """NumPy float64 copies (converted to jax arrays inside the float64 scope of the kernels)."""
    return tuple(np.asarray(x, dtype=np.float64) for x in xs)

