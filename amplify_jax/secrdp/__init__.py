"""SecRDP accountant of Decor: correlated Gaussian noise over a graph (Allouah, Koloskova, El Firdoussi,
Jaggi, Guerraoui, "The Privacy Power of Correlated Noise in Decentralized Learning", ICML 2024).

The model (Decor, Eq. 3 and the proof of Thm 6, Eqs. 14-21; the extraction lost the formulas, ERRATA.md
states them).  At every step user i shares its clipped gradient (norm <= C) plus uncorrelated noise
N(0, sigma_unc^2) plus, for each neighbour j, a pairwise-cancelling term v_ij = -v_ji ~ N(0, w_ij sigma_cor^2)
(w_ij = 1 on unweighted graphs).  An adversary who knows the secrets of a set of colluders subtracts their
terms; for the honest users H the shared vector is Gaussian with covariance

    Sigma_H = sigma_unc^2 I + sigma_cor^2 L_H,        L_H = D_H - A_H (graph restricted to H),

and replacing one user's clipped gradient moves the mean by at most 2 C e_i, so one step is

    (alpha, alpha * eps1)-SecRDP,   eps1 = 2 C^2 max_{i in H} [Sigma_H^{-1}]_ii          (Thm 6, Eq. 19).

Adversaries (Sec. 2): I ``"eavesdropper"`` (H = all users), II ``"curious"`` (every single user removed in
turn), III ``"colluding"`` (every set of up to c users removed), IV ``"local"`` (no secrets: local DP,
eps1 = 2 C^2 / sigma_unc^2).

The spectral bound of Thm 1 (ERRATA.md, "derived, check it"; derived again in :func:`spectral_bound`):

    [Sigma_H^{-1}]_ii <= 1/(|H| sigma_unc^2) + (1 - 1/|H|) / (sigma_unc^2 + a(H) sigma_cor^2),

a(H) the algebraic connectivity; it is exact for the complete graph.

How the accountant computes
- Adversary I: one eigendecomposition L = V diag(lambda) V^T per graph (cached), then for every pair of
  noise levels diag(Sigma^{-1})_i = sum_k V_ik^2 / (sigma_unc^2 + sigma_cor^2 lambda_k): one matrix product
  (P pairs x n eigenvalues) @ (n eigenvalues x n users) in JAX float64.
- Adversaries II and III: exact by enumerating every removed set (each single user for II, every set of
  size <= c for III) while the number of sets times n^3 is affordable (``_ENUMERATION_BUDGET``: II up to
  n = 447; used by II below 48 users and for dense graphs), each Sigma_H inverted directly after deflating its constant directions (see :func:`_direct_masks`:
  Sigma_H's condition number grows like sigma_cor^2 / sigma_unc^2, the deflated matrix's does not).
  Adversary II from n = 48 on (connected graphs of bounded degree, ``_fast_affordable``; below, and for dense
  graphs, the enumeration above): a certified low-rank update, :class:`_Certifier`.  One
  approximate inverse S of the *deflated* M = Sigma_G + (beta/n) 1 1^T per noise pair (O(n^3), from the
  cached eigendecomposition); removing user j is a rank-(deg j + 1) Woodbury update of it, O(n deg^2) for all
  i at once, and each diagonal entry gets a rigorous residual bound (y_i - ||y|| rho <= [N^{-1}]_ii <=
  y_i + ||y|| rho + rho^2 / sigma_unc^2 for r = e_i - N y, ||r|| <= rho), so the reported value is a certified
  upper bound and ``eps1_lower`` a certified lower bound.  Users whose gap could decide the maximum are
  re-bounded after a Newton-Schulz step, then inverted directly (a few), then capped by the spectral bound;
  ``exact`` says whether the certified gap is below ``_CERT_RTOL`` = 1e-9 (relative).
  Otherwise the sound spectral bound with a lower bound on min(a(G), a(G - S)): exact minimum over single
  removals for n <= 400, enumerated for small c, else a(G) - c w_max (Cauchy interlacing and Weyl: deleting
  vertex v moves lambda_2 down by at most max_u w_uv; Fiedler 1973).  (An earlier Schur-complement/Woodbury
  update of the *undeflated* Sigma^{-1} for adversary II was removed: it loses all accuracy when sigma_cor >>
  sigma_unc and under-reported eps1 by up to 17%; the certified update deflates first and checks itself.)
  Wherever only a bound is available (beyond enumeration, n >= LARGE_N), the value is the smaller of that
  spectral bound and a local flow bound (:func:`_flow_diag_bound`: [Sigma_H^{-1}]_ii is the effective
  resistance from i to ground, bounded by Thomson's principle with flows on i's non-backtracking tree, at
  every node the c strongest branches removed, or on its breadth-first tree with one removal budget c),
  which needs no eigendecomposition and does not collapse to local DP when a(G) <= c w_max.
- Graphs with n >= ``LARGE_N`` users: no dense eigendecomposition; the result is the spectral bound with a
  *certified* lower bound on a(G): a shift-invert Lanczos estimate t, then Sylvester's law of inertia on a
  sparse LDL^T of L - t I (exactly one negative pivot <=> lambda_2 > t), or the flow bound if smaller.
  Flagged ``exact=False``.

Soundness: every exact value on the eigendecomposition and direct paths gets an absolute rounding margin of
``8 n u / sigma_unc^2`` (u = 2^-53, the size of the error of a sum of n terms bounded by 1/sigma_unc^2), and
the direct (deflated Cholesky) path a further margin scaled by the deflated matrix's condition number
(:func:`_direct_masks`); the certified path of adversary II bounds its own rounding (:class:`_Certifier`);
bounds only ever replace a value by something larger.

Disconnected graphs (or, for adversaries II/III, graphs that some admissible removal disconnects): the
inverse still exists (sigma_unc > 0) and the value returned is still exact and valid, but a user cut off
from the others is protected by sigma_unc alone -- the guarantee falls back to local DP.  This is reported
by a :class:`DisconnectedGraphWarning` and by the ``connected`` flag of :class:`StepAccount`; no error.

Over T steps: the closed form of ERRATA.md, eps = T eps1 + 2 sqrt(T eps1 ln(1/delta)) (the exact minimum over
alpha > 1 of Mironov's conversion of alpha T eps1), and the core's conversions (``amplify_jax.conversions``,
Balle et al. 2020 by default, never larger).  Example-level privacy by subsampling: see
:func:`example_level_rdp` for the effective noise multiplier.

Graphs: the builders (``ring_graph``, ``torus_graph``, ``complete_graph``, ``star_graph``,
``random_regular_graph(d, n, seed=...)`` in networkx's order, ``erdos_renyi_graph``) and ``adjacency`` live in
:mod:`amplify_jax.graphs` and are re-exported here; ``amplify_jax.graphs.from_spec`` reads specs such as
``"ring:16"`` and graph files.  The old order ``random_regular_graph(n, degree, seed=...)`` still works for one
release, with a ``DeprecationWarning``.

The bound registry (``amplify_jax.bounds``) holds this module's bounds as ``secrdp.step`` (:func:`epsilon`),
``secrdp.step-rdp``, ``secrdp.spectral``, ``secrdp.spectral-rdp``, ``secrdp.closed-form``,
``secrdp.example-level`` and ``secrdp.example-level-rdp`` (declared in ``secrdp/_bounds.py``).
"""

from __future__ import annotations

import hashlib
import itertools
import math
import warnings
from collections import OrderedDict
from typing import NamedTuple

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.csgraph as csgraph
import scipy.sparse.linalg as spla

import jax
import jax.numpy as jnp
from jax import lax

from .. import _validate as V
from ..graphs import adjacency, complete_graph, erdos_renyi_graph, random_regular_graph, ring_graph
from ..graphs import star_graph, torus_graph
from ..numerics import float64_jit, x64_scope

__all__ = [
    "ADVERSARIES",
    "LARGE_N",
    "DisconnectedGraphWarning",
    "SecGraph",
    "StepAccount",
    "ring_graph",
    "torus_graph",
    "complete_graph",
    "star_graph",
    "random_regular_graph",
    "erdos_renyi_graph",
    "prepare_graph",
    "algebraic_connectivity",
    "step_rdp",
    "step_account",
    "spectral_bound",
    "diag_inverse_covariance",
    "adjacency",
    "closed_form_epsilon",
    "closed_form_eps1",
    "epsilon",
    "effective_noise_multiplier",
    "example_level_rdp",
    "example_level_epsilon",
    "Calibration",
    "eps1_budget",
    "min_sigma_cor",
    "Baselines",
    "baselines",
    "Frontier",
    "noise_frontier",
    "OptimalNoise",
    "metropolis_hastings",
    "utility_weights",
    "optimal_noise",
    "example_level_eps1_budget",
    "example_level_min_sigma_cor",
]

ADVERSARIES = ("eavesdropper", "curious", "colluding", "local")
LARGE_N = 20_000  # from this size on: sparse path with a certified spectral bound
_U = 2.0**-53  # unit roundoff of float64
_ROUND_ABS = 8.0  # absolute margin _ROUND_ABS * n * u / sigma_unc^2 on every exact diagonal entry
_ENUMERATION_BUDGET = 4e10  # adversaries II/III: (number of removed sets) * n^3 allowed for exact enumeration
_EIG_CACHE_SIZE = 8
_LDP_UP = 1.0 + 8.0 * _U  # rounds a few correctly rounded float operations up (1/sigma^2, 2 C^2 d)


class DisconnectedGraphWarning(UserWarning):
    """The graph (or the graph left after an admissible removal) is disconnected: some users are protected
    by sigma_unc alone, i.e. their guarantee falls back to local DP."""


# ----------------------------------------------------------------------------------------------------------
# Graphs (the builders and the validation live in amplify_jax.graphs, re-exported here under the same names)


class SecGraph:
    """A validated graph with its cached spectral data (use :func:`prepare_graph`).

    Attributes: ``adjacency`` (CSR, float64), ``n``, ``degrees`` (weighted), ``n_components``.
    The eigendecomposition of the Laplacian is computed on first use (dense, n < LARGE_N) and kept.
    """

    def __init__(self, adj: sp.csr_matrix):
        self.adjacency = adj
        self.n = adj.shape[0]
        self.degrees = np.asarray(adj.sum(axis=1)).ravel()
        self.w_max = float(adj.data.max()) if adj.nnz else 0.0
        self.n_components = int(csgraph.connected_components(adj, directed=False)[0])
        self._eig = None
        self._node_connectivity = None
        self._fiedler_lower = None
        self._neighbours = None

    @property
    def connected(self) -> bool:
        return self.n_components == 1

    @property
    def laplacian(self) -> np.ndarray:
        """Dense Laplacian D - A."""
        a = self.adjacency.toarray()
        return np.diag(a.sum(axis=1)) - a

    def eigh(self):
        """(lambda, V) of the Laplacian, ascending; cached.  Eigenvalues below 0 (rounding) are set to 0."""
        if self._eig is None:
            if self.n >= LARGE_N:
                raise ValueError(f"Expected a graph with n < {LARGE_N} users for a dense eigendecomposition, got n={self.n}.")
            lam, vec = sla.eigh(self.laplacian, driver="evd")
            # Safe-side rounding of the spectrum.  The n_components smallest eigenvalues are exactly 0 with the
            # normalised component indicators as eigenvectors: set them exactly.  Every other eigenvalue is
            # lowered by a bound on the eigensolver's backward error, tau = 4 n u lambda_max (a smaller
            # eigenvalue makes every term 1/(sigma_unc^2 + sigma_cor^2 lambda_k) larger).
            k = self.n_components
            labels = csgraph.connected_components(self.adjacency, directed=False)[1]
            ind = np.zeros((self.n, k))
            ind[np.arange(self.n), labels] = 1.0
            ind /= np.sqrt(ind.sum(axis=0, keepdims=True))
            tau = 4.0 * self.n * _U * max(float(lam[-1]), 0.0)
            lam = np.concatenate([np.zeros(k), np.maximum(lam[k:] - tau, 0.0)])
            vec = np.concatenate([ind, vec[:, k:]], axis=1)
            self._eig = (lam, vec)
        return self._eig

    def node_connectivity(self) -> int:
        """Vertex connectivity (networkx), cached; for the collusion checks."""
        if self._node_connectivity is None:
            import networkx as nx

            g = nx.from_scipy_sparse_array(self.adjacency)
            self._node_connectivity = int(nx.node_connectivity(g)) if self.connected else 0
        return self._node_connectivity

    def is_biconnected(self) -> bool:
        """No single removal disconnects the rest (networkx articulation points)."""
        if not self.connected:
            return False
        if getattr(self, "_biconnected", None) is None:
            import networkx as nx

            g = nx.from_scipy_sparse_array(self.adjacency)
            self._biconnected = self.n > 2 and not any(True for _ in nx.articulation_points(g))
        return self._biconnected

    def neighbours(self):
        """Padded neighbour table (n, dmax) and weights (0 on padding, padding index = the user itself)."""
        if self._neighbours is None:
            a = self.adjacency
            deg_count = np.diff(a.indptr)
            dmax = max(int(deg_count.max()), 1)
            nbr = np.repeat(np.arange(self.n)[:, None], dmax, axis=1)
            wts = np.zeros((self.n, dmax))
            for i in range(self.n):
                s, e = a.indptr[i], a.indptr[i + 1]
                nbr[i, : e - s] = a.indices[s:e]
                wts[i, : e - s] = a.data[s:e]
            self._neighbours = (nbr, wts, deg_count)
        return self._neighbours

    def fiedler_lower(self):
        """(t, exact): a certified lower bound t <= a(G) (exact eigenvalue for n < LARGE_N)."""
        if self._fiedler_lower is None:
            if not self.connected:
                self._fiedler_lower = (0.0, True)
            elif self.n < LARGE_N:
                lam, _ = self.eigh()
                self._fiedler_lower = (float(lam[1]), True)
            else:
                self._fiedler_lower = (_certified_fiedler_lower(self.adjacency), False)
        return self._fiedler_lower

    def __repr__(self):
        return f"SecGraph(n={self.n}, edges={self.adjacency.nnz // 2}, components={self.n_components})"


_CACHE: "OrderedDict[str, SecGraph]" = OrderedDict()


def prepare_graph(graph) -> SecGraph:
    """Validate ``graph`` and return a :class:`SecGraph` (cached by content: the same adjacency given again
    reuses its eigendecomposition)."""
    if isinstance(graph, SecGraph):
        return graph
    adj = adjacency(graph)
    h = hashlib.sha1()
    h.update(np.int64(adj.shape[0]).tobytes())
    for part in (adj.indptr, adj.indices, adj.data):
        h.update(np.ascontiguousarray(part).tobytes())
    key = h.hexdigest()
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    g = SecGraph(adj)
    _CACHE[key] = g
    while len(_CACHE) > _EIG_CACHE_SIZE:
        _CACHE.popitem(last=False)
    return g


def _laplacian_sparse(adj):
    deg = np.asarray(adj.sum(axis=1)).ravel()
    return (sp.diags(deg) - adj).tocsc()


def _negative_pivots(mat) -> int | None:
    """Number of negative pivots of a symmetric LDL^T (SuperLU with diagonal pivoting only), or None when the
    factorization did not pivot symmetrically or broke down."""
    try:
        lu = spla.splu(
            mat.tocsc(),
            permc_spec="MMD_AT_PLUS_A",
            diag_pivot_thresh=0.0,
            options=dict(SymmetricMode=True),
        )
    except RuntimeError:
        return None
    if not np.array_equal(lu.perm_r, lu.perm_c):
        return None
    piv = lu.U.diagonal()
    if not np.all(np.isfinite(piv)) or np.any(piv == 0):
        return None
    return int(np.sum(piv < 0))


def _certified_fiedler_lower(adj) -> float:
    """Certified lower bound on lambda_2 of a connected graph's Laplacian, for large sparse graphs.

    Estimate: Lanczos on P (L + s I)^{-1} P (P projects out the constant vector, s a tiny shift), whose largest
    eigenvalue is 1/(lambda_2 + s).  Certificate: t < lambda_2 iff L - t I has exactly one negative eigenvalue
    (the zero one), read off the pivots of a symmetric LDL^T (Sylvester's law of inertia).  Halves t until it
    is certified; returns 0 (local-DP fallback) if nothing is.
    """
    n = adj.shape[0]
    lap = _laplacian_sparse(adj)
    shift = 1e-10 * max(1.0, float(lap.diagonal().max()))
    ones = np.ones(n) / math.sqrt(n)
    try:
        fac = spla.splu((lap + shift * sp.identity(n, format="csc")).tocsc())

        def mv(x):
            x = x - ones * (ones @ x)
            y = fac.solve(x)
            return y - ones * (ones @ y)

        op = spla.LinearOperator((n, n), matvec=mv, dtype=np.float64)
        mu = spla.eigsh(op, k=1, which="LA", return_eigenvectors=False, tol=1e-8, maxiter=2000)[0]
        est = max(1.0 / mu - shift, 0.0)
    except (RuntimeError, spla.ArpackNoConvergence):
        est = 0.0
    t = 0.99 * est
    for _ in range(12):
        if t <= 0:
            break
        neg = _negative_pivots(lap - t * sp.identity(n, format="csc"))
        if neg == 1:
            return float(t)
        t *= 0.5
    return 0.0


def algebraic_connectivity(graph, *, removed: int = 0):
    """(a, exact): the algebraic connectivity a(G) (second-smallest Laplacian eigenvalue, Fiedler 1973), or,
    with ``removed = c > 0``, a lower bound on the minimum of a(G - S) over removed sets |S| <= c.

    n < LARGE_N: a(G) exact from the dense eigendecomposition; with ``removed = 1`` and n <= 400 the minimum
    over single removals is computed exactly (n small eigensolves, cached on the graph), and with
    ``removed >= 2`` by enumerating the removed sets when n <= 200 and there are at most 20000 of them.  Otherwise the sound bound a(G - S) >= a(G) - c w_max (Cauchy
    interlacing for the principal submatrix, then Weyl for the lost degrees), and for n >= LARGE_N a(G) itself
    is a certified lower bound (see the module docstring).  ``exact`` says which.
    """
    g = prepare_graph(graph)
    c = int(V.integer("removed", removed, minimum=0))
    if c >= g.n - 1:
        raise ValueError(f"Expected removed < n - 1 = {g.n - 1}, got removed={c}.")
    if not hasattr(g, "_alg_conn"):
        g._alg_conn = {}
    if c not in g._alg_conn:
        g._alg_conn[c] = _algebraic_connectivity(g, c)
    return g._alg_conn[c]


def _algebraic_connectivity(g: SecGraph, c: int):
    a0, exact = g.fiedler_lower()
    if c == 0:
        return a0, exact
    # Every branch below returns min(a(G), worst a(G - S)): the removed sets |S| <= c include the empty one,
    # as in the exact accountant (which also keeps H = all users); a(G - S) can exceed a(G) (a path loses an end).
    if c == 1 and g.n <= 400:
        lap = g.laplacian
        adj = g.adjacency.toarray()
        vals = []
        for j in range(g.n):
            keep = np.arange(g.n) != j
            if csgraph.connected_components(sp.csr_matrix(adj[np.ix_(keep, keep)]), directed=False)[0] > 1:
                return 0.0, True  # some removal disconnects the graph: a(G - j) = 0 exactly
            sub = lap[np.ix_(keep, keep)] - np.diag(adj[keep, j])
            lam = sla.eigvalsh(sub, subset_by_index=[0, 1])
            tau = 8.0 * g.n * _U * float(g.degrees.max())  # safe side: eigensolver error, ||L|| <= 2 max degree
            vals.append(lam[1] - tau)
        return float(max(min(min(vals), a0), 0.0)), True
    if c >= 2 and g.n <= 200 and _n_removal_sets(g.n, c) <= 20_000:
        # enumerate every removed set of size <= c (the same sets as the exact accountant of adversary III)
        adj = g.adjacency.toarray()
        tau = 8.0 * g.n * _U * float(g.degrees.max())
        best = np.inf
        for mask in _removal_masks(g.n, c):
            keep = np.flatnonzero(mask > 0)
            a = adj[np.ix_(keep, keep)]
            if csgraph.connected_components(sp.csr_matrix(a), directed=False)[0] > 1:
                return 0.0, True
            lap = np.diag(a.sum(axis=1)) - a
            best = min(best, float(sla.eigvalsh(lap, subset_by_index=[0, 1])[1]) - tau)
        return float(max(min(best, a0), 0.0)), True
    return float(max(a0 - c * g.w_max, 0.0)), False


# ----------------------------------------------------------------------------------------------------------
# Kernels (float64, broadcasting over flattened pairs of noise levels)


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


# ----------------------------------------------------------------------------------------------------------
# Per-step accountant


class StepAccount(NamedTuple):
    """One step of Decor against one adversary (arrays broadcast over sigma_unc, sigma_cor, clip).

    eps1: the per-step SecRDP coefficient (the step is (alpha, alpha * eps1)-SecRDP for every alpha > 1);
        exact (plus a rounding margin) where ``exact`` is True, else a sound upper bound.
    spectral: the spectral bound of Thm 1 (2 C^2 times the bound on max_i [Sigma^-1]_ii), always >= eps1.
    exact: whether eps1 is the exact accountant value (Algorithm 2/3) rather than a bound.
    connected: whether every honest graph the adversary can leave is connected (False: some user's
        guarantee falls back to local DP; a DisconnectedGraphWarning was issued).
    ldp: 2 C^2 / sigma_unc^2, the local-DP value (adversary IV), for reference.
    eps1_lower: a lower bound on the exact accountant value, so that eps1_lower <= exact value <= eps1.
        Certified on the certified path of adversary II (:func:`_curious_fast`); on the direct and
        eigendecomposition paths the computed value minus its rounding margin; under the spectral fallback
        the value of H = all users (or, for n >= LARGE_N, 2 C^2 / (sigma_unc^2 + sigma_cor^2 d_min) by
        [Sigma^{-1}]_ii >= 1 / Sigma_ii).  The gap eps1 - eps1_lower says how far from exact a fallback is.
    """

    eps1: jax.Array
    spectral: jax.Array
    exact: jax.Array
    connected: jax.Array
    ldp: jax.Array
    eps1_lower: jax.Array


def _validate_noise(sigma_unc, sigma_cor, clip):
    su = V.positive("sigma_unc", sigma_unc)
    sc = V.nonnegative("sigma_cor", sigma_cor)
    c = V.positive("clip", clip)
    shape = V.broadcastable(sigma_unc=su, sigma_cor=sc, clip=c)
    return su, sc, c, shape


def _validate_adversary(g: SecGraph, adversary, colluders):
    V.one_of("adversary", adversary, ADVERSARIES)
    if adversary == "colluding":
        if colluders is None:
            raise ValueError("Expected colluders (an integer >= 1) with adversary='colluding', got colluders=None.")
        c = int(V.integer("colluders", colluders, minimum=0))
        if c >= g.n:
            raise ValueError(f"Expected colluders < n = {g.n}, got colluders={c}.")
        if c == g.n - 1:
            raise ValueError(
                f"Expected colluders < n - 1 = {g.n - 1} (with n - 1 colluders only local DP is left: "
                f"use adversary='local'), got colluders={c}."
            )
        return c
    if colluders is not None:
        raise ValueError(f"Expected colluders=None unless adversary='colluding', got colluders={colluders!r}.")
    return {"eavesdropper": 0, "curious": 1, "local": None}[adversary]


def _check_connectivity(g: SecGraph, removed: int | None) -> bool:
    """Whether no admissible removal of ``removed`` users disconnects the honest graph; warns if one does.

    removed = 0: connected components.  removed = 1: articulation points (networkx, linear time; up to
    200000 users).  removed = c >= 2: vertex connectivity (networkx, n <= 2000).  Beyond those sizes the
    sufficient condition a(G) > c w_max (Fiedler) is tried, and a warning says when it cannot be verified.
    """
    if removed is None:
        return True
    verified = True
    if removed == 0:
        ok = g.connected
        what = "the graph is disconnected"
    elif removed == 1:
        if g.n <= 200_000:
            ok = g.is_biconnected()
        else:
            ok = verified = g.connected and g.fiedler_lower()[0] > g.w_max
        what = "the graph is not 2-connected (removing one curious user disconnects it)"
    else:
        if g.n <= 2000:
            ok = g.node_connectivity() > removed
        else:
            ok = verified = g.connected and g.fiedler_lower()[0] > removed * g.w_max
        what = f"the graph is not {removed + 1}-connected (some {removed} colluders disconnect it)"
    if not ok:
        if not verified:
            what = f"could not verify ({g.n} users) that {what.split(' (')[0].replace('is not', 'is')}"
        warnings.warn(
            f"SecRDP: {what}; users cut off from the others are protected by sigma_unc alone, so the "
            f"guarantee falls back to local DP for them (the accountant value stays valid).",
            DisconnectedGraphWarning,
            stacklevel=4,
        )
    return bool(ok)


def _pairs(su, sc, shape2):
    su_b, sc_b = np.broadcast_arrays(su, sc)
    return (su_b.reshape(-1) ** 2, sc_b.reshape(-1) ** 2)


_PAIR_CHUNK = 1 << 22  # entries of the (pairs x n) intermediate per call of the eigen kernel


def _eig_path(g: SecGraph, su2, sc2):
    lam, vec = g.eigh()
    with x64_scope():
        w = jnp.asarray(vec * vec)
        lj = jnp.asarray(lam)
        step = max(1, _PAIR_CHUNK // g.n)
        out = [np.asarray(_eig_diag_max(w, lj, jnp.asarray(su2[i : i + step]), jnp.asarray(sc2[i : i + step])))
               for i in range(0, su2.size, step)]
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


# ----------------------------------------------------------------------------------------------------------
# Adversary II on mid-size graphs: a low-rank update of one deflated inverse, certified by residual bounds

_FAST_MIN_N = 48  # adversary II: from this size on (or where enumeration is unaffordable) the certified update
_FAST_COST_BUDGET = 2e10  # the certified update is used while sum over users j of n (deg_j + 1)^2 stays below
_REFINE_BUDGET = 1e10  # direct re-inversions of loose contenders: (number of them) * n^3 allowed per noise pair
_CERT_RTOL = 1e-9  # certified relative gap (upper - lower) / upper under which the value is reported exact
_GATHER_CHUNK = 1 << 21  # entries of one (users x (deg + 1) x n) gather block


def _gamma(k):
    """gamma_k = k u / (1 - k u), the bound on the relative error of k floating-point operations (Higham,
    Accuracy and Stability of Numerical Algorithms, 2nd ed., Sec. 3.1)."""
    return k * _U / (1.0 - k * _U)


def _fast_affordable(g: SecGraph) -> bool:
    """Connected, and the per-user updates (n (deg + 1)^2 each) cost at most a few times the n^3 inverse and
    at most _FAST_COST_BUDGET in all (dense graphs go to direct enumeration or the spectral bound)."""
    _, _, deg_count = g.neighbours()
    work = float(np.sum((deg_count + 1.0) ** 2))
    return g.connected and work <= 4.0 * float(g.n) ** 2 and float(g.n) * work <= _FAST_COST_BUDGET


class _Certifier:
    """Certified bounds for adversary II at one noise pair (s2 = sigma_unc^2 > 0, c2 = sigma_cor^2 > 0) on a
    connected graph, from one dense inverse instead of n (see :func:`_curious_fast`).

    :meth:`bounds` returns, for removed users js, upper[j] >= max_{i != j} [Sigma_{G-j}^{-1}]_ii >= lower[j];
    :meth:`bounds_all_users` the same for H = G.  :meth:`refine` tightens them (one Newton-Schulz step on the
    approximate inverse and exact norms of the approximate columns: two more n^3 products).

    Derivation (all identities exact; only the computed quantities carry rounding, bounded explicitly).
    1. Deflated full matrix: M = Sigma_G + (beta/n) 1 1^T, beta = sigma_cor^2 a(G) (any beta > 0 would do).  Its
       spectrum is sigma_unc^2 + beta on 1 and sigma_unc^2 + sigma_cor^2 lambda_k (k >= 2) elsewhere: M is as
       well conditioned as the graph's non-constant spectrum, unlike Sigma_G (ratio ~ sigma_cor^2 / sigma_unc^2).
       S = V diag(1/mu) V^T from the cached eigendecomposition approximates M^{-1}; G = I - M S is its residual.
    2. Removing j: N_j = M - U C U^T with U = [e_j, e_k (k ~ j)] and C = sigma_cor^2 [[0, -w^T], [-w, diag(w)]]
       (w the weights of j's edges) equals Sigma_{G'} + (beta/n) 1 1^T + sigma_cor^2 d_j e_j e_j^T, G' = G with
       j's edges deleted; so N_j >= sigma_unc^2 I, and by the block inverse with N_j[j, H] = (beta/n) 1^T,
       [N_j^{-1}]_HH = (Sigma_H + beta_H 1 1^T)^{-1}, beta_H = (beta/n)(sigma_unc^2 + sigma_cor^2 d_j) / N_j[j, j].
       1_H is an eigenvector of Sigma_H (eigenvalue sigma_unc^2), hence
       [Sigma_H^{-1}]_ii = [N_j^{-1}]_ii + x / (sigma_unc^2 (sigma_unc^2 + x) (n - 1)),  x = (n - 1) beta_H.
    3. Approximate column (Woodbury with the computed S): y = S e_i + S U w, w = fl(Om z), z = U^T S e_i =
       S[Q_j, i], Om ~ (I - C A)^{-1} C, A = U^T S U (any computed Om and w).  Expanding N_j y gives exactly
       r = e_i - N_j y = G e_i + G U w - U f,  f = (I - C A) w - C z,   so
       ||r|| <= rho = ||G e_i|| + ||G U||_F ||w|| + ||f||,   y_i = S_ii + z^T w,
       ||y|| <= ||S e_i|| + ||S U||_F ||w||, or after :meth:`refine`, ||y||^2 = (S^2)_ii + 2 w^T (S^2)[Q, i] +
       w^T (S^2)[Q, Q] w (no cancellation loss in the bound: |fl(S^2) - S^2| <= gamma_n ||S e_a|| ||S e_b||).
    4. For SPD N and any y, r = e_i - N y:  [N^{-1}]_ii = y_i + y^T r + r^T N^{-1} r  (expand), so
       y_i - ||y|| rho <= [N^{-1}]_ii <= y_i + ||y|| rho + rho^2 / sigma_unc^2   (lambda_min(N_j) >= sigma_unc^2).
    Every floating-point product and sum is bounded by gamma_k |.| |.| (Higham, Accuracy and Stability of
    Numerical Algorithms, 2nd ed., Secs. 3.1 and 3.5) with k counting its terms; norms and bounds are rounded
    up.  G is the residual of the exact M (real arithmetic on the float parameters s2, c2, beta), bounded by
    the computed one plus gamma_k (I + |Sigma| |S|) + gamma_n (beta/n) 1 1^T |S| column by column.
    H = G is step 4 with y = S e_i, r = G e_i and x = beta.
    """

    def __init__(self, g: SecGraph, s2: float, c2: float):
        self.g, self.s2, self.c2 = g, s2, c2
        n = g.n
        lam, vec = g.eigh()
        self.nbr, self.wts, self.deg_count = g.neighbours()
        self.dmax = int(self.deg_count.max())
        self.beta = c2 * max(float(lam[1]), 1e-300)  # connected: lam[1] > 0
        self.bn = self.beta / n
        mu = s2 + c2 * lam
        mu[0] = s2 + self.beta  # connected: vec[:, 0] is exactly the normalised constant vector (SecGraph.eigh)
        wv = vec / np.sqrt(mu)[None, :]
        s_mat = wv @ wv.T
        self.s_mat = 0.5 * (s_mat + s_mat.T)  # exactly symmetric; it only has to approximate M^{-1}
        self.lap = _laplacian_sparse(g.adjacency).tocsr()
        self.up = 1.0 + 4.0 * (n + 2 * self.dmax + 16) * _U
        self.s2mat = None
        self._residual_norms()

    def _residual_norms(self):
        """Column norms of S and rigorous column-norm bounds of G = I - M S."""
        n, s2, c2, bn, s_mat = self.g.n, self.s2, self.c2, self.bn, self.s_mat
        g_sp = _gamma(2 * self.dmax + 8)  # Sigma S: <= dmax + 1 products per entry, degrees summed in float
        g_dn = _gamma(n + 4)  # (beta/n) 1 (1^T S): column sums of n terms
        alap = abs(self.lap)
        colsum = s_mat.sum(axis=0)
        acolsum = np.abs(s_mat).sum(axis=0)
        gnorm = np.empty(n)
        blk = max(1, (1 << 22) // n)
        for b0 in range(0, n, blk):
            b1 = min(n, b0 + blk)
            sb = s_mat[:, b0:b1]
            asb = np.abs(sb)
            cols = np.arange(b1 - b0)
            p = s2 * sb + c2 * (self.lap @ sb) + bn * colsum[None, b0:b1]
            p[b0 + cols, cols] -= 1.0  # = -(I - M S) on these columns
            e = g_sp * (s2 * asb + c2 * (alap @ asb) + np.abs(p)) + g_dn * bn * acolsum[None, b0:b1]
            e[b0 + cols, cols] += g_sp
            gnorm[b0:b1] = np.linalg.norm(p, axis=0) + np.linalg.norm(e, axis=0)
        self.gnorm = gnorm * self.up
        self.snorm = np.linalg.norm(s_mat, axis=0) * self.up
        self.diag_s = np.diag(s_mat).copy()

    def refine(self):
        """One Newton-Schulz step S <- S + S (I - M S) (the residual squares), then S^2 for exact ||y||."""
        n, s2, c2, bn, s_mat = self.g.n, self.s2, self.c2, self.bn, self.s_mat
        p = s2 * s_mat + c2 * (self.lap @ s_mat) + bn * s_mat.sum(axis=0)[None, :]
        p = np.eye(n) - p
        s_new = s_mat + s_mat @ p
        del p
        self.s_mat = 0.5 * (s_new + s_new.T)
        del s_new
        self._residual_norms()
        sq = self.s_mat @ self.s_mat
        self.s2mat = 0.5 * (sq + sq.T)

    def bounds_all_users(self):
        s2, n = self.s2, self.g.n
        corr = self.beta / (s2 * (s2 + self.beta) * n)
        ny = self.snorm if self.s2mat is None else np.sqrt(
            np.diag(self.s2mat) * (1.0 + 4.0 * _U) + _gamma(n + 2) * self.snorm**2) * self.up
        hi = (self.diag_s + ny * self.gnorm + self.gnorm**2 / s2) * (1.0 + 8.0 * _U)
        lo = (self.diag_s - ny * self.gnorm) * (1.0 - 8.0 * _U)
        return float(hi.max()) + corr * (1.0 + 32.0 * _U), float(lo.max()) + corr * (1.0 - 32.0 * _U)

    def bounds(self, js_all):
        n, s2, c2, bn, up = self.g.n, self.s2, self.c2, self.bn, self.up
        s_mat, gnorm, snorm, diag_s = self.s_mat, self.gnorm, self.snorm, self.diag_s
        upper = np.full(js_all.size, -np.inf)
        lower = np.full(js_all.size, -np.inf)
        degs = self.deg_count[js_all]
        for d in np.unique(degs):
            d = int(d)
            sel = np.flatnonzero(degs == d)
            q = d + 1
            eye = np.eye(q)
            g_f = 2.0 * _gamma(2 * q + 6)
            g_y = _gamma(q + 4)  # y_i = S_ii + z^T w
            step = max(1, _GATHER_CHUNK // (q * n))
            for s0 in range(0, sel.size, step):
                pos = sel[s0 : s0 + step]
                js = js_all[pos]
                m = js.size
                qi = np.concatenate([js[:, None], self.nbr[js, :d]], axis=1)  # (m, q): j, then its neighbours
                w_e = self.wts[js, :d]
                cm = np.zeros((m, q, q))
                cm[:, 0, 1:] = -c2 * w_e
                cm[:, 1:, 0] = -c2 * w_e
                cm[:, np.arange(1, q), np.arange(1, q)] = c2 * w_e
                a = s_mat[qi[:, :, None], qi[:, None, :]]
                kmat = eye[None] - cm @ a
                om = np.linalg.solve(kmat, cm)
                # F = (I - C A) Om - C for the exact C (rounding of C, C A, the product and the difference)
                a_om, a_c = np.abs(om), np.abs(cm)
                f_mat = np.abs(kmat @ om - cm) + g_f * (a_om + a_c @ (np.abs(a) @ a_om) + a_c)
                f_fro = np.sqrt(np.sum(f_mat**2, axis=(1, 2))) * up
                k_fro = np.sqrt(np.sum((1.0 + 2.0 * _U) * (np.abs(kmat) + g_f * a_c @ np.abs(a)) ** 2,
                                       axis=(1, 2))) * up  # >= ||I - C A||_F
                om_fro = np.sqrt(np.sum(om**2, axis=(1, 2))) * up
                z = s_mat[qi]  # (m, q, n): z[:, :, i] = S[Q_j, i]
                w = om @ z  # the computed w of step 3, one per (j, i): |w - Om z| <= gamma_q |Om| |z|
                y_i = diag_s[None, :] + np.einsum("mqi,mqi->mi", z, w)
                nz = np.linalg.norm(z, axis=1) * up
                nw = np.linalg.norm(w, axis=1) * up
                err_y = g_y * (diag_s[None, :] + nz * nw) * up  # sum |z_k| |w_k| <= ||z|| ||w||
                # f = (I - C A) w - C z = (I - C A)(w - Om z) + F z
                nf = (k_fro[:, None] * _gamma(q) * om_fro[:, None] + f_fro[:, None]) * nz * up
                gq = np.sqrt(np.sum(gnorm[qi] ** 2, axis=1)) * up  # >= ||G U||_F
                rho = (gnorm[None, :] + gq[:, None] * nw + nf) * up
                if self.s2mat is None:
                    sq = np.sqrt(np.sum(snorm[qi] ** 2, axis=1)) * up  # >= ||S U||_F
                    ny = (snorm[None, :] + sq[:, None] * nw) * up
                else:
                    t2 = self.s2mat[qi[:, :, None], qi[:, None, :]]
                    z2 = self.s2mat[qi]
                    val = (np.diag(self.s2mat)[None, :] + 2.0 * np.einsum("mqi,mqi->mi", w, z2)
                           + np.einsum("mqi,mqp,mpi->mi", w, t2, w))
                    # |fl(S^2) - S^2| <= gamma_n ||S e_a|| ||S e_b||, plus the rounding of the quadratic form
                    aw = np.abs(w)
                    sa = snorm[qi][:, :, None] * aw  # (m, q, n)
                    err = (_gamma(n + 2) * (snorm[None, :] + np.sum(sa, axis=1)) ** 2
                           + _gamma(q * q + 2 * q + 4) * (np.abs(np.diag(self.s2mat))[None, :]
                                                          + 2.0 * np.einsum("mqi,mqi->mi", aw, np.abs(z2))
                                                          + np.einsum("mqi,mqp,mpi->mi", aw, np.abs(t2), aw)))
                    ny = np.sqrt(np.maximum(val + err * up, 0.0)) * up
                hi = (y_i + err_y + ny * rho + rho * rho / s2) * (1.0 + 8.0 * _U)
                lo = (y_i - err_y - ny * rho) * (1.0 - 8.0 * _U)
                rows = np.arange(m)
                hi[rows, js] = -np.inf
                lo[rows, js] = -np.inf
                degw = self.g.degrees[js]
                x = (n - 1) * (bn * (s2 + c2 * degw) / (s2 + c2 * degw + bn))
                corr = x / (s2 * (s2 + x) * (n - 1))  # increasing in x; relative rounding <= gamma_12
                upper[pos] = np.max(hi, axis=1) + corr * (1.0 + 32.0 * _U)
                lower[pos] = np.max(lo, axis=1) + corr * (1.0 - 32.0 * _U)
        return upper, lower


def _curious_fast(g: SecGraph, su2, sc2, spec):
    """Adversary II by the certified update (:class:`_Certifier`) for every pair of noise levels.

    Returns (upper, lower, exact) arrays over the pairs: upper >= max over H in {G, G - j} and i in H of
    [Sigma_H^{-1}]_ii >= lower.  Removed users whose certified gap could decide the maximum
    (upper[j] > (1 + _CERT_RTOL) max lower) are re-bounded after :meth:`_Certifier.refine`; those still loose
    are re-inverted directly (:func:`_direct_masks`), the loosest first, within ``_REFINE_BUDGET``; any left
    are capped by the spectral bound ``spec``.  ``exact`` is True where the reported upper bound is within
    _CERT_RTOL of the certified lower bound.
    """
    n = g.n
    out_hi = np.empty(su2.shape)
    out_lo = np.empty(su2.shape)
    exact = np.zeros(su2.shape, dtype=bool)
    n_refine = int(_REFINE_BUDGET // float(n) ** 3)
    everyone = np.arange(n)
    for p, (s2, c2) in enumerate(zip(su2, sc2)):
        s2, c2 = float(s2), float(c2)
        if c2 == 0.0:  # Sigma_H = sigma_unc^2 I for every H
            out_hi[p], out_lo[p], exact[p] = _LDP_UP / s2, (1.0 - 4.0 * _U) / s2, True
            continue
        cert = _Certifier(g, s2, c2)
        hi, lo = cert.bounds(everyone)
        hi0, lo0 = cert.bounds_all_users()
        lmax = max(float(lo.max()), lo0)
        loose = np.flatnonzero(hi > lmax * (1.0 + _CERT_RTOL))
        if loose.size:
            cert.refine()
            h2, l2 = cert.bounds(loose)
            hi[loose] = np.minimum(hi[loose], h2)
            lo[loose] = np.maximum(lo[loose], l2)
            h0b, l0b = cert.bounds_all_users()
            hi0, lo0 = min(hi0, h0b), max(lo0, l0b)
            lmax = max(float(lo.max()), lo0)
        del cert
        refined = np.zeros(n, dtype=bool)
        for _ in range(n_refine):
            loose = np.flatnonzero((hi > lmax * (1.0 + _CERT_RTOL)) & ~refined)
            if loose.size == 0:
                break
            j = int(loose[np.argmax(hi[loose])])
            mask = np.ones((1, n))
            mask[0, j] = 0.0
            dh, dl = _direct_masks(g, mask, np.array([s2]), np.array([c2]), with_lower=True)
            hi[j] = min(hi[j], float(dh[0]))
            lo[j] = max(lo[j], float(dl[0]))
            lmax = max(lmax, lo[j])
            refined[j] = True
        hi = np.minimum(hi, float(spec[p]))  # Thm 1's bound holds for every removed set
        out_hi[p] = max(float(hi.max()), hi0)
        out_lo[p] = lmax
        exact[p] = out_hi[p] <= lmax * (1.0 + _CERT_RTOL)
    return out_hi, out_lo, exact


# ----------------------------------------------------------------------------------------------------------
# A local bound for removals beyond enumeration: flows on non-backtracking trees (Thomson's principle)

_TREE_ENTRIES = 1 << 20  # total entries of the unrolled trees of all users, or 8 n (sets the largest depth)
_TREE_MAX_DEPTH = 8


def _tree_levels(g: SecGraph):
    """Non-backtracking unrolled trees of every user (root), as deep as ``_TREE_ENTRIES`` allows (cached):
    a list of levels, each a dict with, per entry, the graph node, its root, the node before it (``prev``),
    the index of its parent entry in the previous level and its slot among the parent's children, and the
    weight of the edge to the parent."""
    if getattr(g, "_tree", None) is not None:
        return g._tree
    nbr, wts, _ = g.neighbours()
    n = g.n
    roots = np.arange(n)
    level = dict(node=roots, root=roots, prev=np.full(n, -1), parent=None, slot=None, w=None)
    levels = [level]
    total = n
    for _ in range(_TREE_MAX_DEPTH):
        node, root, prev = level["node"], level["root"], level["prev"]
        cand, cw = nbr[node], wts[node]
        ok = (cw > 0) & (cand != prev[:, None]) & (cand != root[:, None])
        size = int(ok.sum())
        if size == 0 or total + size > max(_TREE_ENTRIES, 8 * n):
            break
        ent, slot = np.nonzero(ok)
        level = dict(node=cand[ok], root=root[ent], prev=node[ent], parent=ent, slot=slot, w=cw[ok])
        levels.append(level)
        total += size
    g._tree = (levels, nbr.shape[1])
    return g._tree


def _tree_shares(levels, depth, n, decay):
    """Shares of the copies in the trees truncated at ``depth``: a node (ground edge) or edge occurring several
    times in one root's tree gives its copy at depth t the share decay^t / sum over its copies of decay^t'
    (shares sum to 1).  Returns per level (node_share, edge_share)."""
    keys, ekeys, wt, ewt = [], [], [], []
    for t in range(depth + 1):
        lv = levels[t]
        keys.append(lv["root"] * n + lv["node"])
        wt.append(np.full(lv["node"].size, decay**t))
        if t > 0:
            lo_, hi_ = np.minimum(lv["node"], lv["prev"]), np.maximum(lv["node"], lv["prev"])
            ekeys.append((lv["root"] * n + lo_) * n + hi_)
            ewt.append(np.full(lv["node"].size, decay**t))
    _, inv = np.unique(np.concatenate(keys), return_inverse=True)
    allw = np.concatenate(wt)
    node_share = allw / np.bincount(inv, weights=allw)[inv]
    if depth > 0:
        _, inv_e = np.unique(np.concatenate(ekeys), return_inverse=True)
        allwe = np.concatenate(ewt)
        edge_share = allwe / np.bincount(inv_e, weights=allwe)[inv_e]
    out, start, e_start = [], 0, 0
    for t in range(depth + 1):
        m = levels[t]["node"].size
        ns = node_share[start : start + m]
        start += m
        es = None
        if t > 0:
            es = edge_share[e_start : e_start + m]
            e_start += m
        out.append((ns, es))
    return out


def _tree_diag_bound(g: SecGraph, removed: int, su2, sc2):
    """Upper bound on max over removed sets |S| <= ``removed`` and honest i of [Sigma_{G-S}^{-1}]_ii, for every
    pair, from local flows; sound for any graph, connected or not, and cheap (no eigendecomposition).

    Sigma_H = sigma_unc^2 I + sigma_cor^2 L_H is the grounded Laplacian of the network with a conductance
    sigma_unc^2 from every user to ground and sigma_cor^2 w_uv on every edge, so [Sigma_H^{-1}]_ii is the
    effective resistance from i to ground, and by Thomson's principle at most the energy of any unit flow from
    i to ground in G - S (Doyle and Snell, Random Walks and Electric Networks, 1984, Ch. 1.3-1.4).  The flows
    used run on the non-backtracking tree of i unrolled to depth r (:func:`_tree_levels`): a node or edge
    occurring several times in the tree splits its conductance among its copies in shares theta summing to 1
    (:func:`_tree_shares`); summing the copies' flows back costs at most sum f_c^2 / (theta_c g) by
    Cauchy-Schwarz, so the tree's resistance bounds the graph's.  Removals: at every tree node the children
    with the c largest branch conductances are dropped (a set of c users removes at most c children anywhere,
    and conductance is monotone), which covers every |S| <= c at once (i in H).  The minimum over depths
    r = 1..R and two share profiles (uniform, decaying like 1/(d_max - 1) per level) is returned.  Rounding:
    each level adds a few relative u, absorbed by a final factor.
    """
    levels, dmax = _tree_levels(g)
    n = g.n
    c = int(removed)
    best = np.minimum(_LDP_UP / su2, np.inf)
    if not hasattr(g, "_tree_shares"):
        g._tree_shares = {}
    for depth in range(1, len(levels)):
        for decay in (1.0, 1.0 / max(dmax - 1, 2)):
            key = (depth, decay)
            if key not in g._tree_shares:
                g._tree_shares[key] = _tree_shares(levels, depth, n, decay)
            shares = g._tree_shares[key]
            fudge = 1.0 + 8.0 * (dmax + 8) * (depth + 2) * _U
            for p, (s2, c2) in enumerate(zip(su2, sc2)):
                s2, c2 = float(s2), float(c2)
                if c2 == 0.0:
                    continue
                cond = s2 * shares[depth][0]
                for k in range(depth, 0, -1):
                    lv = levels[k]
                    a = c2 * lv["w"] * shares[k][1]
                    branch = a * cond / (a + cond)
                    table = np.zeros((levels[k - 1]["node"].size, dmax))
                    table[lv["parent"], lv["slot"]] = branch
                    if c > 0:
                        table.sort(axis=1)
                        kept = table[:, : max(dmax - c, 0)].sum(axis=1)
                    else:
                        kept = table.sum(axis=1)
                    cond = s2 * shares[k - 1][0] + kept
                best[p] = min(best[p], float(np.max(1.0 / cond)) * fudge)
    return best


def _bfs_levels(g: SecGraph):
    """Breadth-first trees of every user (root) as deep as ``_TREE_ENTRIES`` (or 8 n entries) allows, each
    graph node at most once per root (cached): per level, the node, its root, the index of its parent entry,
    its slot among the parent's children and the weight of the tree edge."""
    if getattr(g, "_bfs", None) is not None:
        return g._bfs
    nbr, wts, _ = g.neighbours()
    n = g.n
    roots = np.arange(n)
    level = dict(node=roots, root=roots, parent=None, slot=None, w=None)
    levels = [level]
    # a neighbour of a node at hop distance t is at distance t - 1, t or t + 1: the visited check needs only
    # the last two levels (sorted keys root * n + node)
    seen_prev, seen_cur = np.empty(0, dtype=np.int64), np.sort(roots * n + roots)
    total = n
    for _ in range(_TREE_MAX_DEPTH + 4):
        node, root = level["node"], level["root"]
        cand, cw = nbr[node], wts[node]
        keys = root[:, None] * n + cand
        ok = cw > 0
        for seen in (seen_prev, seen_cur):
            if seen.size:
                pos = np.searchsorted(seen, keys).clip(max=seen.size - 1)
                ok &= seen[pos] != keys
        ent, slot = np.nonzero(ok)
        k = keys[ok]
        _, first = np.unique(k, return_index=True)  # a node reached from several parents: the first one
        keep = np.zeros(k.size, dtype=bool)
        keep[first] = True
        ent, slot, k = ent[keep], slot[keep], k[keep]
        if k.size == 0 or total + k.size > max(_TREE_ENTRIES, 8 * n):
            break
        level = dict(node=cand[ent, slot], root=root[ent], parent=ent, slot=slot, w=cw[ent, slot])
        levels.append(level)
        seen_prev, seen_cur = seen_cur, np.sort(k)
        total += k.size
    g._bfs = (levels, nbr.shape[1])
    return g._bfs


def _bfs_diag_bound(g: SecGraph, removed: int, su2, sc2):
    """The flow bound of :func:`_tree_diag_bound` on breadth-first trees instead: every user occurs once in
    its root's tree, so no conductance is split, and a set S of c users costs exactly |S| removals in the tree,
    so the adversary gets one budget c for the whole tree (a min-plus knapsack over each node's children:
    drop a child for 1, or pass it part of the budget) instead of c removals at every node."""
    levels, dmax = _bfs_levels(g)
    c = int(removed)
    out = _LDP_UP / su2
    depth = len(levels) - 1
    if depth == 0:
        return out
    fudge = 1.0 + 8.0 * (dmax + 8) * (depth + 2) * (c + 1) * _U
    out = out.copy()
    for p, (s2, c2) in enumerate(zip(su2, sc2)):
        s2, c2 = float(s2), float(c2)
        if c2 == 0.0:
            continue
        cond = np.full((levels[-1]["node"].size, c + 1), s2)  # cond[:, b]: worst with b removals below
        for k in range(depth, 0, -1):
            lv = levels[k]
            a = (c2 * lv["w"])[:, None]
            branch = a * cond / (a + cond)  # (entries, c + 1)
            n_par = levels[k - 1]["node"].size
            f = np.zeros((n_par, c + 1))
            for s in range(dmax):
                sel = lv["slot"] == s
                if not np.any(sel):
                    continue
                par, t = lv["parent"][sel], branch[sel]
                old = f[par]
                new = old + t[:, :1]  # keep the child, no budget passed down (b' = 0)
                for b in range(1, c + 1):
                    cand = [old[:, b - 1]]  # drop the child
                    cand += [old[:, b - bp] + t[:, bp] for bp in range(0, b + 1)]
                    new[:, b] = np.min(np.stack(cand), axis=0)
                f[par] = new
            cond = s2 + f
        out[p] = min(out[p], float(np.max(1.0 / cond[:, c])) * fudge)
    return out



def _flow_diag_bound(g: SecGraph, removed: int, su2, sc2):
    """The smaller of the two local flow bounds (:func:`_tree_diag_bound`, :func:`_bfs_diag_bound`)."""
    return np.minimum(_tree_diag_bound(g, removed, su2, sc2), _bfs_diag_bound(g, removed, su2, sc2))

def _removal_masks(n, c):
    sets = [s for k in range(1, c + 1) for s in itertools.combinations(range(n), k)]
    masks = np.ones((len(sets), n))
    for r, s in enumerate(sets):
        masks[r, list(s)] = 0.0
    return masks


def _n_removal_sets(n, c):
    return sum(math.comb(n, k) for k in range(1, c + 1))


def _spectral_diag_bound(n_h, a, su2, sc2):
    """Thm 1 (ERRATA.md): 1/(n_H su2) + (1 - 1/n_H)/(su2 + a sc2), a bound on max_i [Sigma_H^{-1}]_ii."""
    return 1.0 / (n_h * su2) + (1.0 - 1.0 / n_h) / (su2 + a * sc2)


def _step_diag(g: SecGraph, adversary, c, su2, sc2):
    """(diag_max, spectral_diag, exact, lower) arrays over the flattened pairs; ``lower`` is a lower bound on
    the exact maximum (certified on the certified path; elsewhere value minus its rounding margin, or the
    Cauchy-Schwarz bound [Sigma^{-1}]_ii >= 1 / Sigma_ii under the spectral fallback)."""
    n = g.n
    ones = np.ones(su2.shape, dtype=bool)
    if adversary == "local":
        d = _LDP_UP / su2
        return d, d, ones, (1.0 - 4.0 * _U) / su2
    removed = c
    a_lo, a_exact = algebraic_connectivity(g, removed=removed)
    n_h = n - removed
    spec = np.minimum(_spectral_diag_bound(n_h, a_lo, su2, sc2) * _LDP_UP, _LDP_UP / su2)
    if n >= LARGE_N:
        dmin = float(g.degrees.min())
        d = np.minimum(spec, _flow_diag_bound(g, removed, su2, sc2))
        return d, spec, ~ones, (1.0 - 8.0 * _U) / (su2 + sc2 * dmin * (1.0 + 4.0 * _U))
    margin = _ROUND_ABS * n * _U / su2
    d = _eig_path(g, su2, sc2)  # H = all users: adversary I, and the empty removed set of II/III
    lower = d - margin
    exact = ones
    if removed >= 1:
        # every removed set (one user for II, up to c for III) inverted directly, deflated (_direct_masks),
        # while (number of sets) * n^3 is affordable; adversary II from _FAST_MIN_N users on (or beyond the
        # enumeration budget) by the certified low-rank update (_curious_fast) where the graph is connected
        # and sparse enough; otherwise the spectral bound
        direct_ok = _n_removal_sets(n, removed) * float(n) ** 3 <= _ENUMERATION_BUDGET
        if removed == 1 and (n >= _FAST_MIN_N or not direct_ok) and _fast_affordable(g):
            hi, lo, exact = _curious_fast(g, su2, sc2, spec)
            d = np.maximum(d + margin, hi)
            lower = np.maximum(lower, lo)
        elif direct_ok:
            hi, lo = _direct_masks(g, _removal_masks(n, removed), su2, sc2, with_lower=True)
            d = np.maximum(d, hi) + margin
            lower = np.maximum(lower, lo) - margin
        else:  # Thm 1's bound or the local flow bound, whichever is smaller
            d, exact = np.minimum(spec, _flow_diag_bound(g, removed, su2, sc2)), ~ones
    else:
        d = d + margin
    # Sigma_H >= sigma_unc^2 I, so [Sigma_H^{-1}]_ii <= 1/sigma_unc^2 exactly: the margin never goes above it
    # (1/sigma_unc^2 itself rounded up).
    d = np.minimum(d, _LDP_UP / su2)
    lower = np.minimum(lower, d)
    # The spectral bound is mathematically >= the exact value; keep the reported pair ordered under rounding.
    spec = np.maximum(spec, d)
    return d, spec, exact, lower


def step_account(graph, *, sigma_unc, sigma_cor, clip, adversary, colluders=None) -> StepAccount:
    """The per-step SecRDP coefficient eps1 = 2 C^2 max_{i in H} [Sigma_H^{-1}]_ii for one adversary, with the
    spectral bound of Thm 1 and flags (Decor, Thm 1 / Thm 6 and Algorithms 2-3; ERRATA.md states the
    accountant).  Broadcasts over ``sigma_unc`` (> 0), ``sigma_cor`` (>= 0) and ``clip`` (> 0).

    adversary: "eavesdropper" (I), "curious" (II), "colluding" (III, with ``colluders`` = c), "local" (IV).
    See the module docstring for the algorithms and the soundness margins.
    """
    g = prepare_graph(graph)
    c = _validate_adversary(g, adversary, colluders)
    su, sc, clip_a, shape = _validate_noise(sigma_unc, sigma_cor, clip)
    connected = _check_connectivity(g, c)
    shape2 = np.broadcast_shapes(np.shape(su), np.shape(sc))
    su2, sc2 = _pairs(su, sc, shape2)
    d, spec, exact, lower = _step_diag(g, adversary, c, su2, sc2)
    d = d.reshape(shape2)
    spec = np.asarray(spec).reshape(shape2)
    exact = np.broadcast_to(exact, su2.shape).reshape(shape2)
    lower = np.broadcast_to(lower, su2.shape).reshape(shape2)
    c2 = 2.0 * np.asarray(clip_a) ** 2
    ldp = c2 / np.asarray(su) ** 2 * _LDP_UP
    with x64_scope():
        return StepAccount(
            eps1=jnp.asarray(np.broadcast_to(c2 * d * _LDP_UP, shape)),
            spectral=jnp.asarray(np.broadcast_to(c2 * spec * _LDP_UP, shape)),
            exact=jnp.asarray(np.broadcast_to(exact, shape)),
            connected=jnp.asarray(np.broadcast_to(connected, shape)),
            ldp=jnp.asarray(np.broadcast_to(ldp, shape)),
            eps1_lower=jnp.asarray(np.broadcast_to(np.maximum(c2 * lower * (1.0 - 4.0 * _U), 0.0), shape)),
        )


def step_rdp(orders, graph, *, sigma_unc, sigma_cor, clip, adversary, colluders=None):
    """RDP curve of one step of Decor, alpha * eps1 (Decor Thm 1 / Thm 6; ERRATA.md), eps1 from
    :func:`step_account`.  Shape: broadcast(sigma_unc, sigma_cor, clip) + (len(orders),)."""
    a = V.orders("orders", orders)
    acc = step_account(graph, sigma_unc=sigma_unc, sigma_cor=sigma_cor, clip=clip, adversary=adversary,
                       colluders=colluders)
    with x64_scope():
        return acc.eps1[..., None] * jnp.asarray(a)


def spectral_bound(graph, *, sigma_unc, sigma_cor, clip, adversary, colluders=None):
    """The spectral bound of Decor Thm 1 on eps1 (ERRATA.md form, derived here):

    with Sigma = sigma_unc^2 I + sigma_cor^2 L_H = sum_k (sigma_unc^2 + sigma_cor^2 lambda_k) v_k v_k^T,
    lambda_1 = 0, v_1 = 1/sqrt(|H|) (per component the constant vector; the bound below uses only
    lambda_k >= a(H) for k >= 2), [Sigma^{-1}]_ii = sum_k v_ki^2 / (sigma_unc^2 + sigma_cor^2 lambda_k)
    <= 1/(|H| sigma_unc^2) + (1 - 1/|H|)/(sigma_unc^2 + a(H) sigma_cor^2), because sum_{k>=2} v_ki^2 = 1 - 1/|H|.
    Equality for K_n (all nonzero eigenvalues equal n).  Against removals (II, III), |H| = n - c and a(H) is
    replaced by a lower bound on the worst a(G - S) (:func:`algebraic_connectivity`).  Returns 2 C^2 times the
    bound, broadcast like :func:`step_account`.  For a disconnected graph a = 0 and the bound is the LDP value.
    """
    g = prepare_graph(graph)
    c = _validate_adversary(g, adversary, colluders)
    su, sc, clip_a, shape = _validate_noise(sigma_unc, sigma_cor, clip)
    su2 = np.asarray(su) ** 2
    sc2 = np.asarray(sc) ** 2
    if c is None:
        d = _LDP_UP / su2
    else:
        a, _ = algebraic_connectivity(g, removed=c)
        d = np.minimum(_spectral_diag_bound(g.n - c, a, su2, sc2) * _LDP_UP, _LDP_UP / su2)
    with x64_scope():
        return jnp.asarray(np.broadcast_to(2.0 * np.asarray(clip_a) ** 2 * d * _LDP_UP, shape))


def diag_inverse_covariance(graph, *, sigma_unc, sigma_cor, removed=()):
    """The whole diagonal of Sigma_H^{-1} (H = all users minus ``removed``), shape broadcast(sigma_unc,
    sigma_cor) + (n,), with removed users' entries set to 0.  From the cached eigendecomposition when nothing
    is removed, else by Cholesky.  For inspection and tests."""
    g = prepare_graph(graph)
    su = V.positive("sigma_unc", sigma_unc)
    sc = V.nonnegative("sigma_cor", sigma_cor)
    shape2 = V.broadcastable(sigma_unc=su, sigma_cor=sc)
    rem = np.asarray(V.integer("removed", np.asarray(removed, dtype=float).reshape(-1), minimum=0)).reshape(-1)
    if rem.size and (rem.max() >= g.n or len(set(rem.tolist())) != rem.size):
        raise ValueError(f"Expected distinct removed users in [0, {g.n}), got removed={rem.tolist()}.")
    su2, sc2 = _pairs(su, sc, shape2)
    if rem.size == 0:
        lam, vec = g.eigh()
        with x64_scope():
            d = np.asarray(_eig_diag(jnp.asarray(vec * vec), jnp.asarray(lam), jnp.asarray(su2), jnp.asarray(sc2)))
    else:
        mask = np.ones(g.n)
        mask[rem] = 0.0
        a = g.adjacency.toarray() * mask[:, None] * mask[None, :]
        lap = np.diag(a.sum(1)) - a
        d = np.stack([np.diag(np.linalg.inv(s2 * np.eye(g.n) + c2 * lap)) for s2, c2 in zip(su2, sc2)])
        d = d * mask[None, :]
    return d.reshape(shape2 + (g.n,))


# ----------------------------------------------------------------------------------------------------------
# Over T steps: composition and conversion


def closed_form_epsilon(eps1, *, steps, delta):
    """eps = T eps1 + 2 sqrt(T eps1 ln(1/delta)) (Decor Cor. 12 proof, ERRATA.md): the exact minimum over
    continuous alpha > 1 of Mironov's conversion alpha T eps1 + ln(1/delta)/(alpha - 1) of the T-fold
    composition of (alpha, alpha eps1)-SecRDP.  Broadcasts over eps1 (>= 0), steps (>= 1), delta (in (0, 1))."""
    e = V.nonnegative("eps1", eps1)
    t = V.positive("steps", steps)
    d = V.unit_open("delta", delta)
    V.broadcastable(eps1=e, steps=t, delta=d)
    x = t * e
    with x64_scope():
        return jnp.asarray(x + 2.0 * np.sqrt(x * np.log(1.0 / d)))


def closed_form_eps1(epsilon, *, steps, delta):
    """The inverse of :func:`closed_form_epsilon`: the largest per-step eps1 whose T-step closed form is
    <= epsilon, eps1 = (sqrt(ln(1/delta) + eps) - sqrt(ln(1/delta)))^2 / T (App. D.1, step 1), evaluated
    without cancellation as eps^2 / (T (sqrt(ln(1/delta) + eps) + sqrt(ln(1/delta)))^2) and rounded down by
    a relative 1e-12 (safe side)."""
    e = V.positive("epsilon", epsilon)
    t = V.positive("steps", steps)
    d = V.unit_open("delta", delta)
    V.broadcastable(epsilon=e, steps=t, delta=d)
    ld = np.log(1.0 / d)
    val = e * e / (t * (np.sqrt(ld + e) + np.sqrt(ld)) ** 2)
    with x64_scope():
        return jnp.asarray(val * (1.0 - 1e-12))


_CONVERSION_METHODS = ("closed_form", "balle2020", "mironov")
_CURVE_ORDERS = np.concatenate([1.0 + np.geomspace(1e-4, 1.0, 60, endpoint=False), np.geomspace(2.0, 1e5, 140)])


def _eps_from_eps1_kernel(eps1, log_delta, steps, orders, method):
    """min over orders of the core conversion of the curve alpha * T * eps1 (jnp, broadcasting)."""
    from ..conversions import rdp_epsilon_terms

    curve = orders * (steps * eps1)[..., None]
    return jnp.min(rdp_epsilon_terms(orders, curve, log_delta[..., None], method), axis=-1)


def epsilon(graph, *, sigma_unc, sigma_cor, clip, steps, delta, adversary, colluders=None, method="closed_form",
            orders=None):
    """User-level (eps, delta)-SecLDP after T steps of Decor against one adversary.

    method "closed_form": ERRATA's T eps1 + 2 sqrt(T eps1 ln(1/delta)); "balle2020" / "mironov": the core's
    conversion (``amplify_jax.conversions.epsilon_from_rdp``) of the composed curve alpha T eps1 on ``orders``
    (default: a dense grid from 1.0001 to 1e5), never above the closed form for "balle2020".
    """
    V.one_of("method", method, _CONVERSION_METHODS)
    acc = step_account(graph, sigma_unc=sigma_unc, sigma_cor=sigma_cor, clip=clip, adversary=adversary,
                       colluders=colluders)
    if method == "closed_form":
        return closed_form_epsilon(acc.eps1, steps=steps, delta=delta)
    from ..conversions import epsilon_from_rdp

    a = _CURVE_ORDERS if orders is None else V.orders("orders", orders)
    t = V.positive("steps", steps)
    with x64_scope():
        curve = jnp.asarray(t)[..., None] * acc.eps1[..., None] * jnp.asarray(a)
    return epsilon_from_rdp(a, curve, delta=delta, method=method).epsilon


# ----------------------------------------------------------------------------------------------------------
# Example-level privacy (subsampling through the core)

_SAMPLINGS = ("poisson", "without_replacement")


def effective_noise_multiplier(eps1, *, clip, batch_size, sampling="poisson"):
    """The noise multiplier of the scalar Gaussian mechanism that one step of Decor is, for one example.

    Whitening by Sigma_H^{-1/2} turns the shared vector into N(mean, I); a change of the user's input by a
    vector g moves the whitened mean by ||g|| sqrt([Sigma_H^{-1}]_ii).  With d = max_i [Sigma_H^{-1}]_ii =
    eps1 / (2 C^2) (eps1 from the accountant at clip C):

    - "poisson" (add/remove one example, each example sampled independently with rate q, the sum of clipped
      per-example gradients divided by the expected batch size b): the shift is at most (C/b) sqrt(d), so the
      step is the Poisson-subsampled Gaussian of Mironov-Talwar-Zhang with sigma = b / (C sqrt(d))
      = b sqrt(2 / eps1) (sensitivity 1).
    - "without_replacement" (replace one example, fixed batch of b out of m, mean of b clipped gradients):
      the shift is at most (2C/b) sqrt(d), sigma = b / (2 C sqrt(d)) = b / sqrt(2 eps1) (sensitivity 1): the
      base curve is alpha eps1 / b^2, which is the authors' "clip / batch_size" substitution (Decor App. D,
      Wang et al. 2019).
    """
    e = V.positive("eps1", eps1)
    V.positive("clip", clip)
    b = V.positive("batch_size", batch_size)
    V.one_of("sampling", sampling, _SAMPLINGS)
    if sampling == "poisson":
        return b * np.sqrt(2.0 / e)
    return b / np.sqrt(2.0 * e)


def example_level_rdp(orders, graph, *, sigma_unc, sigma_cor, clip, batch_size, sampling_rate, steps=1,
                      sampling="poisson", adversary="eavesdropper", colluders=None):
    """Example-level SecRDP curve of T steps of Decor with subsampled mini-batches (Decor Sec. 6.2 and
    App. D: "privacy amplification by subsampling (Wang et al., 2019)"), through the core:
    ``amplify_jax.rdp.poisson_subsampled_gaussian_rdp`` (sampling="poisson") or
    ``amplify_jax.rdp.subsampled_gaussian_wor_rdp`` (Wang-Balle-Kasiviswanathan Thm 9, "without_replacement";
    integer orders exact, fractional ones interpolated by convexity), with the effective noise multiplier of
    :func:`effective_noise_multiplier`; composed over ``steps``.  Unlike the authors' code, which returns the
    single-step subsampled bound (ERRATA.md), the T steps are composed here.
    """
    from .. import rdp as core_rdp

    a = V.orders("orders", orders)
    q = V.unit_open("sampling_rate", sampling_rate)
    t = V.positive("steps", steps)
    V.one_of("sampling", sampling, _SAMPLINGS)
    acc = step_account(graph, sigma_unc=sigma_unc, sigma_cor=sigma_cor, clip=clip, adversary=adversary,
                       colluders=colluders)
    eps1 = np.asarray(acc.eps1)
    sig = effective_noise_multiplier(eps1, clip=clip, batch_size=batch_size, sampling=sampling)
    if sampling == "poisson":
        curve = core_rdp.poisson_subsampled_gaussian_rdp(a, q=q, sigma=sig)
    else:
        curve = core_rdp.subsampled_gaussian_wor_rdp(a, q=q, sigma=sig)
    with x64_scope():
        return jnp.asarray(t)[..., None] * curve


def example_level_epsilon(graph, *, sigma_unc, sigma_cor, clip, batch_size, sampling_rate, steps, delta,
                          sampling="poisson", adversary="eavesdropper", colluders=None, orders=None,
                          method="balle2020"):
    """Example-level eps after T steps (curve of :func:`example_level_rdp`, converted by the core's
    ``epsilon_from_rdp``).  Default orders: 1.1 .. 256 (integers 2..256 for "without_replacement")."""
    from ..conversions import epsilon_from_rdp

    if orders is None:
        orders = _example_orders(sampling)
    a = V.orders("orders", orders)
    curve = example_level_rdp(a, graph, sigma_unc=sigma_unc, sigma_cor=sigma_cor, clip=clip,
                              batch_size=batch_size, sampling_rate=sampling_rate, steps=steps, sampling=sampling,
                              adversary=adversary, colluders=colluders)
    return epsilon_from_rdp(a, curve, delta=delta, method=method).epsilon


def _example_orders(sampling):
    if sampling == "poisson":
        return np.concatenate([np.linspace(1.1, 1.9, 9), np.arange(2.0, 65.0), np.geomspace(66.0, 256.0, 20)])
    return np.arange(2.0, 257.0)


# ----------------------------------------------------------------------------------------------------------
# Calibration of the two noise levels


class _Eps1Fn:
    """Traceable eps1(sigma_cor, sigma_unc, clip) for one graph and adversary (jnp, same-shape arrays), hashable
    by identity and cached on the graph so the core's inversion reuses its compiled code."""

    def __init__(self, g: SecGraph, adversary: str, c):
        self.kind = adversary
        self.n = g.n
        self.exact = True
        if adversary == "local":
            return
        a_lo, _ = algebraic_connectivity(g, removed=c)
        self.a_lo = a_lo
        self.n_h = g.n - c
        if g.n >= LARGE_N:
            self.kind, self.exact = "spectral", False
            return
        lam, vec = g.eigh()
        self.w = jnp.asarray(vec * vec)
        self.lam = jnp.asarray(lam)
        self.masks = None
        if c >= 1:
            if _n_removal_sets(g.n, c) * float(g.n) ** 3 <= _ENUMERATION_BUDGET:
                masks = _removal_masks(g.n, c)
                labels, inv_size, a_h = _mask_structure(g, masks)
                self.masks = jnp.asarray(masks)
                self.labels = jnp.asarray(labels)
                self.inv_size = jnp.asarray(inv_size)
                self.a_h = jnp.asarray(a_h)
                self.lam_b = _lam_bound(g)
            else:
                self.kind, self.exact = "spectral", False
        if self.masks is not None:
            self.adj = jnp.asarray(g.adjacency.toarray())

    def diag_max(self, su2, sc2):
        """max_i [Sigma_H^{-1}]_ii over the adversary's honest sets, flat (P,) arrays, plus margins."""
        if self.kind == "local":
            return _LDP_UP / su2
        if self.kind == "spectral":
            return _spectral_diag_bound(self.n_h, self.a_lo, su2, sc2)
        r = 1.0 / (su2[:, None] + sc2[:, None] * self.lam[None, :])
        d = jnp.max(r @ self.w.T, axis=1)
        if self.masks is not None:
            dm = lax.map(lambda p: jnp.max(lax.map(
                lambda m: _masked_one(self.adj, m[0], m[1], m[2], m[3], p[0], p[1], self.lam_b),
                (self.masks, self.labels, self.inv_size, self.a_h))), (su2, sc2))
            d = jnp.maximum(d, dm)
        return jnp.minimum(d + _ROUND_ABS * self.n * _U / su2, _LDP_UP / su2) * _LDP_UP

    def __call__(self, sigma_cor, sigma_unc, clip):
        shape = jnp.shape(sigma_cor)
        su2 = jnp.broadcast_to(sigma_unc, shape).reshape(-1) ** 2
        sc2 = jnp.reshape(sigma_cor, (-1,)) ** 2
        c2 = 2.0 * jnp.broadcast_to(clip, shape).reshape(-1) ** 2
        return (c2 * self.diag_max(su2, sc2)).reshape(shape)


def _eps1_fn(g: SecGraph, adversary, c) -> _Eps1Fn:
    if not hasattr(g, "_eps1_fns"):
        g._eps1_fns = {}
    key = (adversary, c)
    if key not in g._eps1_fns:
        g._eps1_fns[key] = _Eps1Fn(g, adversary, c)
    return g._eps1_fns[key]


class Calibration(NamedTuple):
    """Calibrated noise levels (arrays broadcast over the inputs).

    sigma_unc, sigma_cor: the noise pair (sigma_cor is the minimal one for the given sigma_unc, rounded up to
        within rtol: the feasible endpoint of the bisection, re-checked).
    status: 0 ok; 1 infeasible (no sigma_cor meets the budget at this sigma_unc: sigma_unc <= the central-DP
        level of the honest set, or a graph the adversary can disconnect); 2 at limit (sigma_cor = 0 already
        meets it: sigma_unc >= the local-DP level); 3 re-check failed.  See ``amplify_jax.calibrate``.
    eps1: the per-step coefficient achieved, re-computed (<= eps1_budget where status is 0 or 2).
    eps1_budget: the per-step budget derived from (epsilon, delta, steps).
    """

    sigma_unc: jax.Array
    sigma_cor: jax.Array
    status: jax.Array
    eps1: jax.Array
    eps1_budget: jax.Array


def eps1_budget(epsilon, *, steps, delta, method="closed_form"):
    """The largest per-step eps1 such that T steps stay (epsilon, delta)-SecLDP (App. D.1, step 1).

    "closed_form": :func:`closed_form_eps1`; "balle2020" / "mironov": inverts the core's conversion of
    alpha T eps1 (min over a dense order grid) with ``amplify_jax.calibrate.invert_monotone`` (largest
    feasible eps1, re-checked).
    """
    V.one_of("method", method, _CONVERSION_METHODS)
    if method == "closed_form":
        return closed_form_eps1(epsilon, steps=steps, delta=delta)
    from ..calibrate import invert_monotone

    e = V.positive("epsilon", epsilon)
    t = V.positive("steps", steps)
    d = V.unit_open("delta", delta)
    shape = V.broadcastable(epsilon=e, steps=t, delta=d)
    lo = np.asarray(closed_form_eps1(e, steps=t, delta=d))  # feasible: balle2020/mironov <= closed form
    fn = _BUDGET_FNS[method]
    inv = invert_monotone(fn, np.broadcast_to(e, shape), args=(np.log(d), t), lo=lo * 0.5, hi=lo * 1e3 + 1e-300,
                          feasible="below", rtol=1e-9)
    return inv.value


def _budget_fn_balle(eps1, log_delta, steps):
    return _eps_from_eps1_kernel(eps1, log_delta, steps, jnp.asarray(_CURVE_ORDERS), "balle2020")


def _budget_fn_mironov(eps1, log_delta, steps):
    return _eps_from_eps1_kernel(eps1, log_delta, steps, jnp.asarray(_CURVE_ORDERS), "mironov")


_BUDGET_FNS = {"balle2020": _budget_fn_balle, "mironov": _budget_fn_mironov}


def _refine_curious_certified(g, su_b, c_b, b_b, value, status, rtol):
    """Adversary II where the traced accountant is only Thm 1's bound (n >= 448): the minimal sigma_cor under
    the certified accountant (:func:`_curious_fast`, an upper bound on the exact eps1), by a batched host
    bisection on log sigma_cor.  The upper end is the spectral answer (feasible: the certified value is
    never above Thm 1's bound) or, where that was infeasible, sigma_unc 1e9 if the certified accountant meets
    the budget there; the lower end is adversary I's minimal sigma_cor (less 2 rtol), infeasible for II since
    eps1_II >= eps1_I.  Returns (value, status, achieved) with the refined points replaced."""
    from ..calibrate import INFEASIBLE, OK

    def eps1(sc):
        d = _step_diag(g, "curious", 1, su_b.reshape(-1) ** 2, np.asarray(sc, dtype=np.float64).reshape(-1) ** 2)[0]
        return (2.0 * c_b.reshape(-1) ** 2 * d * _LDP_UP).reshape(su_b.shape)

    todo = (status == OK) | (status == INFEASIBLE)
    if not np.any(todo):
        return None
    hi = np.where(status == OK, value, su_b * 1e9)
    e_hi = eps1(hi)
    todo &= e_hi <= b_b
    if not np.any(todo):
        return None
    value_i, status_i, _ = _sigma_cor_for_budget(g, "eavesdropper", 0, su_b, c_b, b_b, rtol)
    lo = np.where(status_i == OK, value_i * (1.0 - 2.0 * rtol), su_b * 1e-6)
    for _ in range(200):
        active = todo & (hi > lo * (1.0 + rtol))
        if not np.any(active):
            break
        mid = np.sqrt(lo * hi)
        e_mid = eps1(np.where(active, mid, hi))
        ok = active & (e_mid <= b_b)
        hi = np.where(ok, mid, hi)
        e_hi = np.where(ok, e_mid, e_hi)
        lo = np.where(active & ~ok, mid, lo)
    return (np.where(todo, hi, value), np.where(todo, OK, status), np.where(todo, e_hi, np.nan))


def _sigma_cor_for_budget(g, adversary, c, su, clip_a, budget, rtol, certified=True):
    """Minimal sigma_cor with eps1(sigma_cor; sigma_unc) <= budget, batched (the core's inversion).

    For adversary II where the traced accountant falls back to Thm 1's bound (n >= 448) and the certified
    update applies (connected sparse graphs below LARGE_N), the answer is refined on the certified accountant
    (``certified=True``; :func:`_refine_curious_certified`)."""
    from ..calibrate import INFEASIBLE, AT_LIMIT, invert_monotone

    fn = _eps1_fn(g, adversary, c)
    shape = np.broadcast_shapes(np.shape(su), np.shape(clip_a), np.shape(budget))
    su_b, c_b, b_b = (np.broadcast_to(np.asarray(x, dtype=np.float64), shape) for x in (su, clip_a, budget))
    with x64_scope():
        at_zero = np.asarray(fn(jnp.zeros(shape), jnp.asarray(su_b), jnp.asarray(c_b)))
    # eps1 decreases in sigma_cor towards 2 C^2 / (n_H sigma_unc^2) at best: search sigma_cor up to where the
    # component-average term dominates (hi), starting near sigma_unc / sqrt(lambda_max) scale (lo).
    lam_max = 2.0 * float(g.degrees.max()) if g.degrees.size else 1.0
    lo = su_b * 1e-6 / math.sqrt(max(lam_max, 1e-300))
    hi = su_b * 1e9
    inv = invert_monotone(fn, b_b, args=(su_b, c_b), lo=lo, hi=hi, feasible="above", rtol=rtol)
    value = np.where(at_zero <= b_b, 0.0, np.asarray(inv.value))
    status = np.where(at_zero <= b_b, AT_LIMIT, np.asarray(inv.status))
    status = np.where((status == AT_LIMIT) & (at_zero > b_b), 0, status)  # feasible at lo > 0 (tiny): fine
    with x64_scope():
        achieved = np.asarray(fn(jnp.asarray(value), jnp.asarray(su_b), jnp.asarray(c_b)))
    status = np.where((status != INFEASIBLE) & (achieved > b_b), 3, status)
    if (certified and adversary == "curious" and fn.kind == "spectral" and g.n < LARGE_N
            and _fast_affordable(g)):
        refined = _refine_curious_certified(g, su_b, c_b, b_b, value, status, rtol)
        if refined is not None:
            value, status, ach = refined
            achieved = np.where(np.isnan(ach), achieved, ach)
    return value, status, achieved


def min_sigma_cor(graph, *, sigma_unc, clip, epsilon, delta, steps, adversary="eavesdropper", colluders=None,
                  method="closed_form", rtol=1e-6) -> Calibration:
    """For a fixed sigma_unc, the minimal sigma_cor such that T steps of Decor are (epsilon, delta)-SecLDP
    against the adversary (Decor App. D.1: fix sigma_unc, bisect sigma_cor on the accountant, which is
    non-increasing in sigma_cor since Sigma grows in the Loewner order).  Batched over sigma_unc, clip, epsilon,
    delta, steps through ``amplify_jax.calibrate.invert_monotone`` (feasible endpoint, re-checked).  For
    curious users (adversary II) on 448 or more users, where the traced accountant is Thm 1's bound, the
    answer is refined on the certified accountant of :func:`step_account` by a host bisection (seconds per
    batch at 500-2000 users)."""
    g = prepare_graph(graph)
    c = _validate_adversary(g, adversary, colluders)
    su = V.positive("sigma_unc", sigma_unc)
    clip_a = V.positive("clip", clip)
    budget = np.asarray(eps1_budget(epsilon, steps=steps, delta=delta, method=method))
    V.broadcastable(sigma_unc=su, clip=clip_a, budget=budget)
    _check_connectivity(g, c)
    value, status, achieved = _sigma_cor_for_budget(g, adversary, c, su, clip_a, budget, rtol)
    shape = value.shape
    with x64_scope():
        return Calibration(jnp.asarray(np.broadcast_to(su, shape)), jnp.asarray(value), jnp.asarray(status),
                           jnp.asarray(achieved), jnp.asarray(np.broadcast_to(budget, shape)))


class Baselines(NamedTuple):
    """Noise of the two D-SGD baselines with uncorrelated noise only, for the same per-step budget
    (Decor Sec. 6 and App. D.1-D.2; Gaussian mechanism, Mironov 2017): local DP, each user's message private,
    eps1 = 2 C^2 / sigma_ldp^2; central DP, only the average of the n users' models private, sigma_cdp =
    sigma_ldp / sqrt(n) (the average has sensitivity 2C/n and noise variance sigma_cdp^2 / n)."""

    sigma_ldp: jax.Array
    sigma_cdp: jax.Array
    eps1_budget: jax.Array


def baselines(n, *, clip, epsilon, delta, steps, method="closed_form") -> Baselines:
    """Local-DP and central-DP noise levels for n users (see :class:`Baselines`)."""
    nn = V.integer("n", n, minimum=1)
    cl = V.positive("clip", clip)
    b = np.asarray(eps1_budget(epsilon, steps=steps, delta=delta, method=method))
    ldp = cl * np.sqrt(2.0 / b)
    cdp = ldp / np.sqrt(nn)
    with x64_scope():
        return Baselines(jnp.asarray(ldp), jnp.asarray(cdp), jnp.asarray(b))


class Frontier(NamedTuple):
    """Admissible pairs: for each sigma_unc on a grid, the minimal sigma_cor (every pair with a larger
    sigma_cor is admissible too).  Fields as in :class:`Calibration`."""

    sigma_unc: jax.Array
    sigma_cor: jax.Array
    status: jax.Array
    eps1: jax.Array
    eps1_budget: jax.Array


def _honest_size(g, c):
    return g.n if c is None else g.n - c


def noise_frontier(graph, *, clip, epsilon, delta, steps, adversary="eavesdropper", colluders=None, num=32,
                   method="closed_form", rtol=1e-6) -> Frontier:
    """The frontier of admissible (sigma_unc, sigma_cor) pairs for one target (scalar epsilon, delta, steps).

    sigma_unc runs geometrically over (sigma_low, sigma_ldp], sigma_low = sigma_ldp / sqrt(n_H) (n_H = n - c
    honest users; below it no sigma_cor suffices, since eps1 -> 2 C^2 / (n_H sigma_unc^2) as sigma_cor -> inf)
    and sigma_ldp the local-DP level (sigma_cor = 0 suffices above it).  One batched inversion.
    """
    g = prepare_graph(graph)
    c = _validate_adversary(g, adversary, colluders)
    num = int(V.integer("num", num, minimum=2))
    budget = float(np.asarray(eps1_budget(epsilon, steps=steps, delta=delta, method=method)).reshape(()))
    cl = float(V.positive("clip", clip))
    _check_connectivity(g, c)
    ldp = cl * math.sqrt(2.0 / budget)
    low = ldp / math.sqrt(_honest_size(g, c) if c is not None else 1)
    su = np.geomspace(low * (1.0 + 1e-3), ldp, num)
    value, status, achieved = _sigma_cor_for_budget(g, adversary, c, su, cl, budget, rtol)
    with x64_scope():
        return Frontier(jnp.asarray(su), jnp.asarray(value), jnp.asarray(status), jnp.asarray(achieved),
                        jnp.asarray(np.full(su.shape, budget)))


class OptimalNoise(NamedTuple):
    """The pair on the frontier minimising ``cost = k_unc sigma_unc^2 + k_cor sigma_cor^2`` (see
    :func:`optimal_noise`), re-checked: eps1 <= eps1_budget."""

    sigma_unc: jax.Array
    sigma_cor: jax.Array
    cost: jax.Array
    eps1: jax.Array
    eps1_budget: jax.Array
    k_unc: jax.Array
    k_cor: jax.Array


def metropolis_hastings(graph) -> np.ndarray:
    """Metropolis-Hastings mixing matrix W_ij = 1 / (1 + max(d_i, d_j)) on edges, W_ii = 1 - sum_j W_ij
    (Boyd et al. 2006; Decor Sec. 6 setup).  Dense."""
    g = prepare_graph(graph)
    a = (g.adjacency.toarray() > 0).astype(float)
    deg = a.sum(1)
    w = a / (1.0 + np.maximum(deg[:, None], deg[None, :]))
    return w + np.diag(1.0 - w.sum(1))


def utility_weights(graph, cost="gossip", kappa=None):
    """(k_unc, k_cor) of the utility cost k_unc sigma_unc^2 + k_cor sigma_cor^2.

    "gossip": the noise variance per user and coordinate left after one gossip step of Decor with the
        Metropolis-Hastings matrix W (Decor Eq. 4, Sec. 6): the step noise has covariance
        sigma_unc^2 I + sigma_cor^2 L (the pairwise terms sum to B v, B the incidence matrix), so after mixing
        it is W (sigma_unc^2 I + sigma_cor^2 L) W: k_unc = tr(W^2)/n, k_cor = tr(W L W)/n.  This is the
        quantity Lemma 8 analyses exactly (the correlated-noise term of Thm 2, whose constants the extraction
        lost); k_cor = 0 for the complete graph with W = 11^T/n.
    "variance": the total injected variance per user, sigma_unc^2 + mean degree * sigma_cor^2.
    ``kappa``: overrides k_cor (with k_unc = 1).
    """
    g = prepare_graph(graph)
    V.one_of("cost", cost, ("gossip", "variance"))
    if kappa is not None:
        return 1.0, float(V.nonnegative("kappa", kappa))
    if cost == "variance":
        return 1.0, float(g.degrees.sum() / g.n)
    w = metropolis_hastings(g)
    lap = g.laplacian
    return float(np.trace(w @ w) / g.n), float(np.trace(w @ lap @ w) / g.n)


def optimal_noise(graph, *, clip, epsilon, delta, steps, adversary="eavesdropper", colluders=None, cost="gossip",
                  kappa=None, num=24, iterations=60, learning_rate=0.1, method="closed_form") -> OptimalNoise:
    """The admissible pair minimising a utility cost k_unc sigma_unc^2 + k_cor sigma_cor^2 (see
    :func:`utility_weights`: "gossip" by default, "variance", or a given kappa), with optax.

    Method: the problem is one-dimensional along the frontier sigma_cor = s(sigma_unc) (minimal sigma_cor,
    :func:`min_sigma_cor`).  A frontier grid (:func:`noise_frontier`) gives the start; optax.adam then descends
    on u = logit of sigma_unc's position in (sigma_low, sigma_ldp) with the implicit-function gradient
    ds/dsigma_unc = -(d eps1/d sigma_unc)/(d eps1/d sigma_cor) (jax.grad of the accountant), s re-computed by
    the core's inversion at every step.  Every candidate is a feasible endpoint; the best is returned.
    """
    import optax

    g = prepare_graph(graph)
    c = _validate_adversary(g, adversary, colluders)
    k_u, k_c = utility_weights(g, cost, kappa)
    cl = float(V.positive("clip", clip))
    fr = noise_frontier(g, clip=cl, epsilon=epsilon, delta=delta, steps=steps, adversary=adversary,
                        colluders=colluders, num=num, method=method)
    su_grid = np.asarray(fr.sigma_unc)
    sc_grid = np.asarray(fr.sigma_cor)
    ok = np.isin(np.asarray(fr.status), (0, 2))
    cost_grid = np.where(ok, k_u * su_grid**2 + k_c * sc_grid**2, np.inf)
    k0 = int(np.argmin(cost_grid))
    budget = float(fr.eps1_budget[0])
    best = (cost_grid[k0], su_grid[k0], sc_grid[k0], float(fr.eps1[k0]))
    low, high = su_grid[0] / (1.0 + 1e-3), su_grid[-1]
    fn = _eps1_fn(g, adversary, c)

    def to_su(u):
        return low + (high - low) / (1.0 + np.exp(-u))

    frac = np.clip((su_grid[k0] - low) / (high - low), 1e-6, 1 - 1e-6)
    u = np.array(np.log(frac / (1.0 - frac)))
    opt = optax.adam(learning_rate)
    state = opt.init(u)
    with x64_scope():
        grad_fn = jax.jit(jax.grad(lambda sc_, su_: jnp.sum(fn(sc_, su_, jnp.asarray(cl))), argnums=(0, 1)))
    for _ in range(int(iterations)):
        su = float(to_su(u))
        sc, st, ach = _sigma_cor_for_budget(g, adversary, c, np.asarray(su), cl, budget, 1e-9, certified=False)
        sc = float(sc)
        if int(st) in (0, 2):
            val = k_u * su**2 + k_c * sc**2
            if val < best[0]:
                best = (val, su, sc, float(ach))
        if int(st) != 0 or sc <= 0:
            break  # at the local-DP end or infeasible: the gradient is not defined there
        with x64_scope():
            g_sc, g_su = grad_fn(jnp.asarray([sc]), jnp.asarray([su]))
        ds = -float(g_su[0]) / float(g_sc[0]) if float(g_sc[0]) != 0 else 0.0
        dcost = 2.0 * k_u * su + 2.0 * k_c * sc * ds
        dsu_du = (high - low) * np.exp(-u) / (1.0 + np.exp(-u)) ** 2
        # gradient of log(cost): scale-free steps
        updates, state = opt.update(np.array(dcost * dsu_du / (k_u * su**2 + k_c * sc**2)), state, u)
        u = optax.apply_updates(u, updates)
    val, su, sc, e1 = best
    with x64_scope():
        return OptimalNoise(jnp.asarray(su), jnp.asarray(sc), jnp.asarray(val), jnp.asarray(e1),
                            jnp.asarray(budget), jnp.asarray(k_u), jnp.asarray(k_c))


def example_level_eps1_budget(epsilon, *, delta, steps, batch_size, sampling_rate, sampling="poisson",
                              orders=None, rtol=1e-7, method="balle2020"):
    """The largest per-step eps1 (at the user clip C used by the accountant) such that T subsampled steps are
    example-level (epsilon, delta)-SecLDP (App. D.1, "Example-level privacy": no closed form, so this is a
    bisection on eps1 over the core's subsampled curves; the example-level eps increases with eps1).  Returns
    the feasible (lower) endpoint, re-checked.  Scalar inputs."""
    from .. import rdp as core_rdp
    from ..conversions import epsilon_from_rdp

    e = float(V.positive("epsilon", epsilon))
    d = float(V.unit_open("delta", delta))
    t = float(V.positive("steps", steps))
    b = float(V.positive("batch_size", batch_size))
    q = float(V.unit_open("sampling_rate", sampling_rate))
    V.one_of("sampling", sampling, _SAMPLINGS)
    # integer orders by default: a superset-free, sound choice (any set of orders gives a valid bound)
    a = V.orders("orders", np.arange(2.0, 129.0) if orders is None else orders)

    def eps_of(eps1_arr):
        sig = effective_noise_multiplier(eps1_arr, clip=1.0, batch_size=b, sampling=sampling)
        if sampling == "poisson":
            curve = core_rdp.poisson_subsampled_gaussian_rdp(a, q=q, sigma=sig)
        else:
            curve = core_rdp.subsampled_gaussian_wor_rdp(a, q=q, sigma=sig)
        return np.asarray(epsilon_from_rdp(a, t * np.asarray(curve), delta=d, method=method).epsilon)

    # every call has 30 points: one compiled shape in the core's kernels
    grid = np.geomspace(1e-12, 1e6, 30)
    ok = eps_of(grid) <= e
    if not ok[0]:
        raise ValueError(f"Expected a reachable epsilon, got epsilon={e!r} (exceeded already at eps1=1e-12).")
    if ok[-1]:
        return grid[-1]
    k = int(np.flatnonzero(~ok)[0])
    lo, hi = grid[k - 1], grid[k]
    # bisection on log eps1, 30 interior points per round: the feasible endpoint is kept
    while hi / lo > 1.0 + rtol:
        grid = np.geomspace(lo, hi, 32)[1:-1]  # 30 interior points
        ok = eps_of(grid) <= e
        lo_i = np.flatnonzero(ok)
        hi_i = np.flatnonzero(~ok)
        lo, hi = (grid[lo_i[-1]] if lo_i.size else lo), (grid[hi_i[0]] if hi_i.size else hi)
    if not eps_of(np.full(30, lo))[0] <= e:  # re-check (monotone in eps1, so this holds)
        raise RuntimeError("example_level_eps1_budget: re-check failed (non-monotone conversion?)")
    return lo


def example_level_min_sigma_cor(graph, *, sigma_unc, clip, epsilon, delta, steps, batch_size, sampling_rate,
                                sampling="poisson", adversary="eavesdropper", colluders=None, orders=None,
                                rtol=1e-6) -> Calibration:
    """Example-level counterpart of :func:`min_sigma_cor` (Decor App. D.1): the eps1 budget from
    :func:`example_level_eps1_budget`, then the minimal sigma_cor for each sigma_unc (batched)."""
    g = prepare_graph(graph)
    c = _validate_adversary(g, adversary, colluders)
    su = V.positive("sigma_unc", sigma_unc)
    cl = V.positive("clip", clip)
    unit = example_level_eps1_budget(epsilon, delta=delta, steps=steps, batch_size=batch_size,
                                     sampling_rate=sampling_rate, sampling=sampling, orders=orders)
    budget = unit * np.asarray(cl) ** 2  # eps1 scales as C^2 at fixed effective noise: budget at clip C
    # effective_noise_multiplier divides by sqrt(eps1) at clip 1; at clip C the noise multiplier is the
    # same function of eps1 / C^2, hence the budget scales with C^2.
    _check_connectivity(g, c)
    value, status, achieved = _sigma_cor_for_budget(g, adversary, c, su, cl, budget, rtol)
    shape = value.shape
    with x64_scope():
        return Calibration(jnp.asarray(np.broadcast_to(su, shape)), jnp.asarray(value), jnp.asarray(status),
                           jnp.asarray(achieved), jnp.asarray(np.broadcast_to(budget, shape)))


from . import _bounds  # noqa: F401,E402  (registers the bounds)
