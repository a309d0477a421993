"""The covariance of the honest users' shares and the diagonal of its inverse (Decor, proof of Thm 6, Eqs. 14-21;
Algorithms 2-3; the formulas the extraction lost are rebuilt in docs/errata.md#e-secrdp-accountant).

Sigma_H = sigma_unc^2 I + sigma_cor^2 L_H (L_H the Laplacian of the graph restricted to the honest users H).
H = all users: one cached eigendecomposition L = V diag(lambda) V^T, then diag(Sigma^{-1})_i = sum_k V_ik^2 /
(sigma_unc^2 + sigma_cor^2 lambda_k) for every noise pair in one JAX float64 matrix product (:func:`_eig_path`).
Removed sets (adversaries II and III), while (number of sets) * n^3 <= ``_ENUMERATION_BUDGET``: each Sigma_H
inverted directly after deflating its constant directions (:func:`_direct_masks`; the jnp twin
:func:`_masked_one` serves the traced calibration), with an absolute rounding margin scaled by the deflated
matrix's condition number.  ``_ENUMERATION_BUDGET`` is read only through :func:`_enumeration_affordable`: patch
it here (``_covariance._ENUMERATION_BUDGET``).
"""

from __future__ import annotations

import hashlib

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.csgraph as csgraph

import jax
import jax.numpy as jnp

from .._core import validate as V
from .._core.numerics import float64_jit, x64_scope
from ._adversaries import _pairs, _sigma_cor, _sigma_unc
from ._graph import SecGraph, _n_removal_sets, prepare_graph
from ._rounding import _ROUND_ABS, _U, _dev

_ENUMERATION_BUDGET = 4e10  # adversaries II/III: (number of removed sets) * n^3 allowed for exact enumeration


def _enumeration_affordable(n, c) -> bool:
    """Whether every removed set of size <= c among n users can be inverted directly (sets * n^3 in budget)."""
    return _n_removal_sets(n, c) * float(n) ** 3 <= _ENUMERATION_BUDGET


@float64_jit
def _eig_diag_max(w, lam, su2, sc2):
    """max_i sum_k w_ik / (su2 + sc2 lam_k) for every pair: (P,) from w = V**2 (n, n), lam (n,), su2, sc2 (P,)."""
    r = 1.0 / (su2[:, None] + sc2[:, None] * lam[None, :])
    d = r @ w.T
    return jnp.max(d, axis=1)


@float64_jit
def _eig_diag(w, lam, su2, sc2):
    """The whole diagonal (P, n)."""
    r = 1.0 / (su2[:, None] + sc2[:, None] * lam[None, :])
    return r @ w.T


def _lam_bound(g: SecGraph) -> float:
    """2 x the largest weighted degree: >= lambda_max(L_H) for every honest subgraph H (Gershgorin)."""
    return 2.0 * float(g.degrees.max()) if g.degrees.size else 0.0


def _masked_one(adj, mask, labels, inv_size, a_h, su2, sc2, lam_b):
    """jnp twin of :func:`_direct_masks` for one honest mask and one pair (traced calibration): the deflated
    Cholesky inverse plus its correction and rounding margin (``labels``, ``inv_size``, ``a_h`` from
    :func:`_mask_structure`)."""
    n = adj.shape[0]
    am = adj * mask[:, None] * mask[None, :]
    lap = jnp.diag(jnp.sum(am, axis=1)) - am
    k = jnp.sum(mask)
    beta = sc2 * lam_b
    blocks = (labels[:, None] == labels[None, :]) * (mask[:, None] * mask[None, :]) * inv_size[None, :]
    sig = su2 * jnp.eye(n) + sc2 * lap + beta * blocks
    chol = jnp.linalg.cholesky(sig)
    inv_l = jax.scipy.linalg.solve_triangular(chol, jnp.eye(n), lower=True)
    corr = beta * inv_size / (su2 * (su2 + beta))
    diag = jnp.sum(inv_l * inv_l, axis=0) + corr  # diag(M^-1) = column norms of L^-1
    margin = _deflated_margin(k, su2, sc2, a_h, lam_b, jnp.max(corr))
    return jnp.max(jnp.where(mask > 0, diag, -jnp.inf)) + margin


def _deflated_margin(k, su2, sc2, a_h, lam_b, corr):
    """Absolute rounding margin of one deflated diagonal entry (see :func:`_direct_masks`)."""
    lmax = su2 + sc2 * lam_b
    lmin = su2 + sc2 * a_h
    return _ROUND_ABS * k * _U * (lmax / (lmin * lmin) + corr)


_PAIR_CHUNK = 1 << 22  # entries of the (pairs x n) intermediate per call of the eigen kernel


def _eig_path(g: SecGraph, su2, sc2):
    lam, vec = g.eigh()
    with x64_scope():
        w = _dev(vec * vec)
        lj = _dev(lam)
        step = max(1, _PAIR_CHUNK // g.n)
        out = []
        for i in range(0, su2.size, step):
            a, b = su2[i : i + step], sc2[i : i + step]
            m = max(8, 1 << (a.size - 1).bit_length())  # pairs padded to a power of two: one program per size
            pad = lambda x: np.concatenate([x, np.full(m - x.size, x[0])])  # noqa: E731  (rows are independent)
            out.append(np.asarray(_eig_diag_max(w, lj, _dev(pad(a)), _dev(pad(b))))[: a.size])
    return np.concatenate(out)


def _mask_structure(g: SecGraph, masks):
    """Per honest mask (cached on the graph by the masks' bytes): component labels (M, n; removed users get
    label -1), 1/|component| per user (M, n; 0 for removed users), and a_h (M,), a lower bound on the smallest
    nonzero Laplacian eigenvalue of H, i.e. min over its components of their algebraic connectivity
    (eigensolver value minus its error bound 8 n u lambda_max; lam_b if H has no edge)."""
    if not hasattr(g, "_mask_struct"):
        g._mask_struct = {}
    key = hashlib.sha1(np.ascontiguousarray(masks).tobytes()).hexdigest()
    if key not in g._mask_struct:
        adj = g.adjacency.toarray()
        lam_b = _lam_bound(g)
        tau = 8.0 * g.n * _U * lam_b
        labels = np.full(masks.shape, -1, dtype=np.int64)
        inv_size = np.zeros(masks.shape)
        a_h = np.empty(masks.shape[0])
        for r, m in enumerate(masks):
            keep = np.flatnonzero(m > 0)
            a = adj[np.ix_(keep, keep)]
            ncomp, lab = csgraph.connected_components(sp.csr_matrix(a), directed=False)
            labels[r, keep] = lab
            inv_size[r, keep] = 1.0 / np.bincount(lab)[lab]
            lam = sla.eigvalsh(np.diag(a.sum(axis=1)) - a)
            a_h[r] = max(float(lam[ncomp]) - tau, 0.0) if ncomp < keep.size else lam_b
        g._mask_struct[key] = (labels, inv_size, a_h)
    return g._mask_struct[key]


def _direct_masks(g: SecGraph, masks, su2, sc2, *, with_lower=False):
    """max over honest-user masks and honest i of [Sigma_H^{-1}]_ii, plus a rounding margin, for every pair.

    Deflation: for every connected component c of H, L_H 1_c = 0, so 1_c is an eigenvector of Sigma_H with
    eigenvalue sigma_unc^2; with M = Sigma_H + beta sum_c 1_c 1_c^T / |c| (beta = sigma_cor^2 lam_b,
    lam_b = 2 max degree >= lambda_max(L_H)),

        [Sigma_H^{-1}]_ii = [M^{-1}]_ii + beta / (|c(i)| sigma_unc^2 (sigma_unc^2 + beta))

    exactly.  Sigma_H itself has condition number up to 1 + sigma_cor^2 lam_b / sigma_unc^2 (the constant
    directions), which for sigma_cor >> sigma_unc ruins any float64 inversion of it (or update of its inverse:
    the former Schur-complement/Woodbury path under-reported by up to 17% there); M has
    lambda_max(M) <= sigma_unc^2 + beta and lambda_min(M) >= sigma_unc^2 + sigma_cor^2 a_h (a_h from
    :func:`_mask_structure`).  [M^{-1}]_ii by LAPACK Cholesky (dpotrf) and the inverse from it (dpotri); the
    normwise error of a Cholesky-based inverse is O(k u kappa(M) ||M^{-1}||) (Higham, Accuracy and Stability
    of Numerical Algorithms, 2nd ed., Ch. 14), so each entry gets the absolute margin
    ``_ROUND_ABS k u (lambda_max(M) / lambda_min(M)^2 + correction)``.
    (Traced calibration uses the jnp twin ``_masked_one``.)  ``with_lower``: also return the computed value
    minus the margin, a lower bound on the same maximum."""
    adj = g.adjacency.toarray()
    lam_b = _lam_bound(g)
    labels, inv_size, a_h = _mask_structure(g, masks)
    out = np.full(su2.shape, -np.inf)
    low = np.full(su2.shape, -np.inf)
    for r, m in enumerate(masks):
        keep = np.flatnonzero(m > 0)
        k = keep.size
        a = adj[np.ix_(keep, keep)]
        lap = np.diag(a.sum(axis=1)) - a
        eye = np.eye(k)
        lab = labels[r, keep]
        isz = inv_size[r, keep]
        blocks = (lab[:, None] == lab[None, :]) * isz[None, :]
        for p, (s2, c2) in enumerate(zip(su2, sc2)):
            beta = c2 * lam_b
            chol, info = sla.lapack.dpotrf(s2 * eye + c2 * lap + beta * blocks, lower=1)
            if info != 0:  # pragma: no cover - M is positive definite
                raise np.linalg.LinAlgError(f"Cholesky failed (info={info})")
            inv, info = sla.lapack.dpotri(chol, lower=1)
            corr = beta * isz / (s2 * (s2 + beta))
            margin = _deflated_margin(k, s2, c2, a_h[r], lam_b, float(corr.max()))
            val = float(np.max(np.diag(inv) + corr))
            out[p] = max(out[p], val + margin)
            low[p] = max(low[p], val - margin)
    return (out, low) if with_lower else out


def diag_inverse_covariance(graph, *, sigma_unc, sigma_cor, removed=()):
    """The whole diagonal of Sigma_H^{-1} (H = all users minus ``removed``), shape broadcast(sigma_unc,
    sigma_cor) + (n,), with removed users' entries set to 0.  From the cached eigendecomposition when nothing
    is removed, else by Cholesky.  For inspection and tests."""
    g = prepare_graph(graph)
    su = _sigma_unc(sigma_unc)  # in SIGMA_UNC_RANGE
    sc = _sigma_cor(sigma_cor)  # at most SIGMA_COR_MAX
    shape2 = V.broadcastable(sigma_unc=su, sigma_cor=sc)
    rem = np.asarray(V.integer("removed", np.asarray(removed, dtype=float).reshape(-1), minimum=0, allow_empty=True)).reshape(-1)
    if rem.size and (rem.max() >= g.n or len(set(rem.tolist())) != rem.size):
        raise ValueError(f"Expected distinct removed users in [0, {g.n}), got removed={rem.tolist()}.")
    su2, sc2 = _pairs(su, sc, shape2)
    if rem.size == 0:
        lam, vec = g.eigh()
        with x64_scope():
            d = np.asarray(_eig_diag(_dev(vec * vec), _dev(lam), _dev(su2), _dev(sc2)))
    else:
        mask = np.ones(g.n)
        mask[rem] = 0.0
        a = g.adjacency.toarray() * mask[:, None] * mask[None, :]
        lap = np.diag(a.sum(1)) - a
        d = np.stack([np.diag(np.linalg.inv(s2 * np.eye(g.n) + c2 * lap)) for s2, c2 in zip(su2, sc2)])
        d = d * mask[None, :]
    return d.reshape(shape2 + (g.n,))
