"""The local-DP baseline of Cyffers & Bellet Sec. 5.1 (Fig. 1(a)): Algorithm 3 analysed under local DP."""

from __future__ import annotations

import numpy as np
import jax.numpy as jnp

from .._core import validate as V
from .._core.domains import check_params
from ..accounting.approx_dp import advanced_composition
from .._core.numerics import float64_jit
from ._common import NetworkBound, _b, _up
from ._composition import _chernoff_count
from . import _params as P


@float64_jit
def _local_sum_kernel(n, T, eps0, d0, dp, dh, fixed):
    nu, ok = _chernoff_count(T / n, -jnp.log(dh))
    k = jnp.where(fixed, _up(T / n), nu)  # rounded up, as the Chernoff count is
    eps = advanced_composition(eps0, k, -jnp.log(dp))
    return NetworkBound(eps, _up(jnp.where(fixed, k * d0 + dp, k * d0 + dp + dh)), jnp.where(fixed, True, ok))


def local_sum_bound(*, n, steps, eps0, delta0, delta_prime, delta_hat, fixed_contributions=False):
    """Local-DP analogue of Thm 3 (Sec. 5.1, Fig. 1(a)): Algorithm 3 analysed under LDP.

    Over a walk of T = ``steps`` steps, every contribution of u is seen; u contributes at most
    N_u = T/n + sqrt(3 T/n ln(1/delta_hat)) times (Chernoff, probability 1 - delta_hat; exactly T/n with
    ``fixed_contributions``), each (eps0, delta0)-LDP: eps = sqrt(2 N_u ln(1/delta')) eps0 + N_u eps0 (e^eps0 - 1),
    delta = N_u delta0 + delta' (+ delta_hat).
    """
    nn, tt, e, d0, dp, dh = check_params((P.N, P.STEPS_T, P.EPS0_LOCAL, P.DELTA0_PURE, P.DELTA_PRIME, P.DELTA_HAT),
                                         broadcast=False, n=n, steps=steps, eps0=eps0, delta0=delta0,
                                         delta_prime=delta_prime, delta_hat=delta_hat)
    shape = V.broadcastable(n=nn, steps=tt, eps0=e, delta0=d0, delta_prime=dp, delta_hat=dh)
    r = _local_sum_kernel(*_b(shape, nn, tt, e, d0, dp, dh), np.asarray(bool(fixed_contributions)))
    over = ~np.isfinite(np.asarray(r.epsilon))  # e^eps0 overflows from eps0 ~ 709 (eps0 = 1e300: +inf)
    if np.any(over):
        i = tuple(int(j) for j in np.argwhere(over)[0]) if over.ndim else ()
        raise ValueError("Expected eps0 and steps whose advanced composition sqrt(2 N_u ln(1/delta')) eps0 + N_u "
                         "eps0 (e^eps0 - 1) is finite in float64, got "
                         f"eps0={np.broadcast_to(e, shape)[i].item()!r}, steps={np.broadcast_to(tt, shape)[i].item()!r}.")
    return r
