"""The PLD's FFT round-off estimate against the error it estimates, measured with a long-double composition
(issue 13: where the automatic grid stays more than 1e-3 above dp_accounting, is it the grid or the round-off?).

For each point (DP-SGD: Poisson-subsampled Gaussian, both relations), on the grid the automatic grid ends on
(2^17 points, ``pld.AUTO_MAX_GRID_SIZE``), with the pessimistic (connect-the-dots) masses of one step as
``amplify_jax.pld`` computes them:
- the T-fold composition in float64 exactly as the package does it (``jnp.fft``, exp(T log z)), and again in
  NumPy's long double (x86: 64-bit mantissa, 2^11 times finer than float64), from the same masses;
- the actual l2 norm of the float64 composition's error (against the long-double one), and the package's
  estimate of it (``_compose``'s r2, which includes the safety factor ``FFT_C`` = 8);
- eps at delta from the long-double masses with no round-off term (the grid's own value: what an accountant
  that ignores round-off, as dp_accounting does, would answer on this grid), next to the package's answer
  and dp_accounting's.

    python benchmarks/pld_roundoff_check.py            # the points of pld_vs_dp_accounting.json above 1e-3

Writes benchmarks/results/pld_roundoff_check.json.  Uses the package's private modules (a diagnostic).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
OUT = HERE / "results" / "pld_roundoff_check.json"


def check(sigma, q, steps, delta, n):
    import jax.numpy as jnp

    from amplify_jax.internal import x64_scope
    from amplify_jax.accounting.pld import _compose as C
    from amplify_jax.accounting.pld import _queries as Q
    from amplify_jax.accounting.pld._discretize import discretize_mirrored, merged_mirrored
    from amplify_jax.accounting.pld._mechanisms import REMOVE

    T = float(steps)
    with x64_scope():
        mech, p = Q.event("gaussian", REMOVE, jnp.float64(sigma), jnp.float64(q))
        log_tail = Q._eps_log_tail(jnp.float64(delta))
        lmin, lmax = mech.loss_range(p)
        cut_r, cut_a = merged_mirrored(mech, p, C.WINDOW_GRID)
        win_r = C._window([cut_r], ((lmin, lmax),), [jnp.float64(T)], log_tail, n)
        win_a = C._window([cut_a], ((-lmax, -lmin),), [jnp.float64(T)], log_tail, n)
        h = C._aligned_step(jnp.maximum(win_r[1], win_a[1]) / (n - 2), lmax - lmin)
        d_r, d_a = discretize_mirrored(mech, p, lmax, h, n)
        rows = []
        for name, d, l0, win in (("remove", d_r, lmax - (n - 1) * h, win_r), ("add", d_a, -lmax, win_a)):
            comp = C._fourier([(d, l0)], [jnp.float64(T)], h, n, win[0], win[2], win[3], log_tail)
            pm = np.asarray(d.pess, dtype=np.float64)
            z = jnp.fft.rfft(jnp.asarray(pm))
            circ64 = np.asarray(jnp.fft.irfft(jnp.exp(T * jnp.log(jnp.where(z == 0, 1e-300, z))), n=n))
            zl = np.fft.rfft(pm.astype(np.longdouble))
            circ_ld = np.fft.irfft(np.exp(np.longdouble(T) * np.log(np.where(zl == 0, 1e-300, zl))), n=n)
            actual = float(np.sqrt(np.sum((circ64 - circ_ld).astype(np.float64) ** 2)))
            hh = np.longdouble(float(h))
            shift = np.longdouble(T) * np.longdouble(float(l0))
            k_lo = np.floor((np.longdouble(float(win[0])) - shift) / hh)
            masses = np.maximum(np.roll(circ_ld, -int(k_lo) % n), 0)
            losses = shift + k_lo * hh + hh * np.arange(n, dtype=np.longdouble)
            inf_t = 1 - (1 - np.longdouble(float(d.inf))) ** np.longdouble(T)

            def delta_at(e):
                return np.sum(masses * -np.expm1(np.minimum(np.longdouble(e) - losses, 0))) + inf_t

            lo_e, hi_e = 0.0, float(losses[-1])
            for _ in range(80):
                mid = 0.5 * (lo_e + hi_e)
                lo_e, hi_e = (lo_e, mid) if delta_at(mid) <= delta else (mid, hi_e)
            rows.append({"relation": name, "estimate_l2": float(comp.r2[0][0] + comp.r2[0][3]), "actual_l2": actual,
                         "estimate_over_actual": float(comp.r2[0][0] + comp.r2[0][3]) / actual if actual > 0 else None,
                         "eps_long_double_no_roundoff": hi_e})
    return rows


def main():
    import argparse

    from amplify_jax.accounting import pld

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    src = json.loads((HERE / "results" / "pld_vs_dp_accounting.json").read_text())["per_point"]
    pts = [i for i, (o, r) in enumerate(zip(src["ours"], src["dpa"])) if r >= 0.01 and o > r * (1 + 1e-3)]
    n = pld.AUTO_MAX_GRID_SIZE
    res = []
    for i in pts:
        s, q, t, d = (src[k][i] for k in ("sigma", "q", "steps", "delta"))
        rows = check(s, q, t, d, n)
        grid_eps = max(r["eps_long_double_no_roundoff"] for r in rows)
        res.append({"sigma": s, "q": q, "steps": t, "delta": d, "grid_size": n, "ours": src["ours"][i],
                    "dp_accounting": src["dpa"][i], "grid_without_roundoff": grid_eps,
                    "grid_without_roundoff_over_dpa": grid_eps / src["dpa"][i], "relations": rows})
        print(f"sigma {s:.4g} q {q:.4g} steps {t:.0f} delta {d:.3g}: ours {src['ours'][i]:.6g}, dp_accounting "
              f"{src['dpa'][i]:.6g}, this grid without the round-off term (long double) {grid_eps:.6g}; "
              + "; ".join(f"{r['relation']}: round-off estimate / actual (l2) {r['estimate_over_actual']:.3g}"
                          for r in rows))
    Path(args.out).write_text(json.dumps({"command": "python benchmarks/pld_roundoff_check.py", "points": res},
                                         indent=2) + "\n")


if __name__ == "__main__":
    main()
