"""The communication graph of Decor (Sec. 2) and its algebraic connectivity (Sec. 4, Thm 1; Fiedler 1973).

:class:`SecGraph` keeps a validated graph with its cached spectral data (the Laplacian's eigendecomposition,
rounded on the safe side); :func:`prepare_graph` caches SecGraphs by content.  :func:`algebraic_connectivity`
gives a(G) or a lower bound on the worst a(G - S) over removed sets |S| <= c (adversaries II and III), and for
n >= ``LARGE_N`` users a *certified* lower bound on a(G): a shift-invert Lanczos estimate t, then Sylvester's law
of inertia on a sparse LDL^T of L - t I (exactly one negative pivot <=> lambda_2 > t).  The removed sets of
adversaries II and III (:func:`_removal_masks`) are enumerated here too.

Outside this file ``LARGE_N`` is read only through :func:`_is_large`: patch it here (``_graph.LARGE_N``).

a(G) enters Thm 1's bound 1/(n sigma_unc^2) + (1 - 1/n)/(sigma_unc^2 + a(G) sigma_cor^2) on [Sigma^{-1}]_ii, whose
formula the extraction lost (rebuilt and derived again in docs/errata.md#e-secrdp-spectral).
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections import OrderedDict

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.csgraph as csgraph
import scipy.sparse.linalg as spla

from .._core import validate as V
from .._core.graphs import adjacency
from ._rounding import _U

LARGE_N = 20_000  # from this size on: sparse path with a certified spectral bound
_EIG_CACHE_SIZE = 8


def _is_large(n) -> bool:
    """Whether a graph of n users takes the sparse path (no dense eigendecomposition; n >= LARGE_N)."""
    return n >= LARGE_N


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
            import networkx as nx  # lazy: networkx takes ~170 ms to import; only these checks need it

            g = nx.from_scipy_sparse_array(self.adjacency)
            self._node_connectivity = int(nx.node_connectivity(g)) if self.connected else 0
        return self._node_connectivity

    def is_biconnected(self) -> bool:
        """No single removal disconnects the rest (networkx articulation points)."""
        if not self.connected:
            return False
        if getattr(self, "_biconnected", None) is None:
            import networkx as nx  # lazy: networkx takes ~170 ms to import; only these checks need it

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


def _removal_masks(n, c):
    sets = [s for k in range(1, c + 1) for s in itertools.combinations(range(n), k)]
    masks = np.ones((len(sets), n))
    for r, s in enumerate(sets):
        masks[r, list(s)] = 0.0
    return masks


def _n_removal_sets(n, c):
    return sum(math.comb(n, k) for k in range(1, c + 1))
