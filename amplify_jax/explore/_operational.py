"""The operational reading of an (eps, delta) guarantee: the best membership attack it allows.

An attacker who must tell, from the output, whether one person's data was used (a hypothesis test between
neighbouring datasets) and accepts a false-positive rate ``fpr`` (type I error alpha) reaches at most the
true-positive rate (power, 1 - beta)::

    TPR <= min(1, e^eps * fpr + delta, 1 - e^-eps * (1 - delta - fpr))

for every mechanism that is (eps, delta)-DP: Kairouz, Oh and Viswanath 2015 ("The composition theorem for
differential privacy", Theorem 2.1: the privacy region of an (eps, delta)-DP mechanism), written as the
trade-off function f_{eps,delta}(alpha) = max(0, 1 - delta - e^eps alpha, e^-eps (1 - delta - alpha)) of Dong,
Roth and Su 2019 ("Gaussian differential privacy", Eq. (5) / Proposition 2.5): TPR <= 1 - f(fpr).  The bound is
tight (some (eps, delta)-DP mechanism attains it), so it is the attacker's advantage that the guarantee rules
out, no more.
"""

from __future__ import annotations

import numpy as np

__all__ = ["tpr_bound"]


def tpr_bound(epsilon, delta, fpr):
    """The largest true-positive rate of a membership test at false-positive rate ``fpr`` against an
    (``epsilon``, ``delta``)-DP mechanism (broadcast; float64): ``min(1, e^eps fpr + delta,
    1 - e^-eps (1 - delta - fpr))``, Kairouz-Oh-Viswanath 2015 Thm 2.1 / Dong-Roth-Su 2019 Eq. (5)."""
    eps = np.asarray(epsilon, dtype=np.float64)
    d = np.asarray(delta, dtype=np.float64)
    a = np.asarray(fpr, dtype=np.float64)
    for name, v, lo, hi in (("epsilon", eps, 0.0, np.inf), ("delta", d, 0.0, 1.0), ("fpr", a, 0.0, 1.0)):
        if np.any(np.isnan(v)) or np.any(v < lo) or np.any(v > hi):
            bad = v[np.isnan(v) | (v < lo) | (v > hi)].ravel()[0]
            raise ValueError(f"Expected {name} in [{lo:g}, {hi:g}], got {name}={float(bad)!r}.")
    with np.errstate(over="ignore"):
        linear = np.exp(eps) * a + d  # inf for a huge eps: the min then takes another term
    return np.minimum(np.minimum(1.0, linear), 1.0 - np.exp(-eps) * (1.0 - d - a))
