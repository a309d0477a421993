"""Communication graphs: builders, validation, and graphs named by a spec string or a file.

Every builder returns a validated symmetric float64 SciPy CSR adjacency matrix (unweighted: 1 on every edge).
A graph can also be named by a *spec* (:func:`from_spec`), the form the command line and the bound registry
(``amplify_jax.bounds.Graph``) take::

    ring:16                            cycle on 16 users                  (ring_graph(16))
    torus:4x4, torus:8                 2-D torus grid rows x cols         (torus_graph(4, 4), torus_graph(8))
    complete:16                        complete graph K_16                (complete_graph(16))
    star:16                            star, user 0 the centre            (star_graph(16))
    random-regular:d=4,n=2000,seed=7   random 4-regular graph (networkx)  (random_regular_graph(4, 2000, seed=7))
    erdos-renyi:n=100,p=0.1,seed=1     G(n, p) (networkx fast_gnp)        (erdos_renyi_graph(100, 0.1, seed=1))
    path/to/graph.edges                edge list (.txt, .edges, .edgelist): lines "u v [weight]", # comments
    path/to/graph.graphml              GraphML (networkx.read_graphml), undirected

or an object :func:`adjacency` accepts (a networkx graph, a SciPy sparse matrix, a NumPy array).

This module depends only on NumPy, SciPy, networkx and :mod:`amplify_jax._core.validate`; the paper subpackages
(``amplify_jax.secrdp``) build on it and re-export the builders.
"""

from __future__ import annotations

import os
import re

import numpy as np
import scipy.sparse as sp

from . import validate as V

# the graphs users build.  Importable, not in __all__: adjacency (the check every function taking a graph applies)
# and the spec tables (SPEC_FORMS, EDGE_LIST_SUFFIXES, GRAPHML_SUFFIXES)
__all__ = ["ring_graph", "torus_graph", "complete_graph", "star_graph", "random_regular_graph", "erdos_renyi_graph",
           "from_spec"]

SPEC_FORMS = ("ring:16, torus:4x4 (or torus:8), complete:16, star:16, random-regular:d=4,n=2000,seed=7, "
              "erdos-renyi:n=100,p=0.1,seed=1, or a path to an edge list (.txt/.edges/.edgelist) or a "
              "GraphML file (.graphml)")
EDGE_LIST_SUFFIXES = (".txt", ".edges", ".edgelist")
GRAPHML_SUFFIXES = (".graphml",)


# ----------------------------------------------------------------------------------------------------------
# Builders


def _n_users(name, n, minimum=2):
    return V.count(name, n, minimum=minimum)


def _sym_csr(rows, cols, n):
    data = np.ones(len(rows), dtype=np.float64)
    a = sp.coo_matrix((data, (rows, cols)), shape=(n, n)).tocsr()
    a = a + a.T
    a.data[:] = 1.0  # duplicate edges (tiny rings/tori) collapse to one unweighted edge
    a.setdiag(0.0)
    a.eliminate_zeros()
    return a.tocsr()


def ring_graph(n) -> sp.csr_matrix:
    """Adjacency of the ring (cycle) on n >= 3 users (n = 2: one edge)."""
    n = _n_users("n", n)
    i = np.arange(n)
    return _sym_csr(i, (i + 1) % n, n)


def torus_graph(rows, cols=None) -> sp.csr_matrix:
    """Adjacency of the 2-D torus grid rows x cols (cols = rows by default); user r * cols + c.

    Each user is linked to its four neighbours with wrap-around (fewer when a side has length <= 2, where
    the wrapped neighbours coincide; duplicate edges collapse).  The 4 x 4 torus is Decor's "grid" for 16 users.
    """
    r = _n_users("rows", rows, minimum=1)
    c = r if cols is None else _n_users("cols", cols, minimum=1)
    if r * c < 2:
        raise ValueError(f"Expected rows * cols >= 2, got rows={r}, cols={c}.")
    idx = np.arange(r * c).reshape(r, c)
    right = np.roll(idx, -1, axis=1)
    down = np.roll(idx, -1, axis=0)
    src = np.concatenate([idx.ravel(), idx.ravel()])
    dst = np.concatenate([right.ravel(), down.ravel()])
    keep = src != dst
    return _sym_csr(src[keep], dst[keep], r * c)


def complete_graph(n) -> sp.csr_matrix:
    """Adjacency of the complete graph K_n."""
    n = _n_users("n", n)
    i, j = np.triu_indices(n, 1)
    return _sym_csr(i, j, n)


def star_graph(n) -> sp.csr_matrix:
    """Adjacency of the star on n users: user 0 is the centre."""
    n = _n_users("n", n)
    j = np.arange(1, n)
    return _sym_csr(np.zeros(n - 1, dtype=int), j, n)


def random_regular_graph(d, n, *, seed) -> sp.csr_matrix:
    """A uniformly random d-regular graph on n users: networkx's ``random_regular_graph(d, n, seed)``, seeded;
    d < n and n * d even."""
    import networkx as nx  # lazy: networkx takes ~170 ms to import, and `amplify-jax --help` loads this module

    dd = V.count("d", d, minimum=1)
    nn = V.count("n", n, minimum=1)
    if nn < 2:
        raise ValueError(f"Expected n >= 2, got n={nn}.")
    if dd >= nn or (nn * dd) % 2:
        raise ValueError(f"Expected d < n with n * d even, got d={dd}, n={nn}.")
    g = nx.random_regular_graph(dd, nn, seed=V.count("seed", seed, minimum=0))
    return adjacency(g)


def erdos_renyi_graph(n, p, *, seed) -> sp.csr_matrix:
    """An Erdos-Renyi G(n, p) graph (networkx ``fast_gnp_random_graph(n, p, seed)``); may be disconnected.
    ``p`` is 0 or in [1e-15, 1]: networkx's geometric skips divide by log(1 - p), which is 0 in float64 below
    ~1.1e-16 (p = 1e-300 raised ZeroDivisionError)."""
    import networkx as nx  # lazy: networkx takes ~170 ms to import, and `amplify-jax --help` loads this module

    n = _n_users("n", n)
    pp = V.scalar("p", p, V.probability)
    if 0.0 < pp < 1e-15:
        raise ValueError(f"Expected p = 0 or p >= 1e-15 (log(1 - p) is 0 in float64 below), got p={pp!r}.")
    g = nx.fast_gnp_random_graph(n, pp, seed=V.count("seed", seed, minimum=0))
    return adjacency(g)


# ----------------------------------------------------------------------------------------------------------
# Validation


def adjacency(graph) -> sp.csr_matrix:
    """Validated symmetric float64 CSR adjacency of a NumPy array, SciPy sparse matrix, networkx graph, or an
    object carrying one as its ``adjacency`` attribute (``amplify_jax.secrdp.SecGraph``).  Raises ValueError
    (naming ``graph``) for a non-square or asymmetric matrix, self-loops, negative or non-finite weights, or
    fewer than two users.  networkx edge weights are read from ``weight``.
    """
    held = getattr(graph, "adjacency", None)
    if sp.issparse(held):  # an already validated graph object (networkx's .adjacency is a method)
        return held
    try:
        import networkx as nx  # lazy: networkx takes ~170 ms to import, and `amplify-jax --help` loads this module
    except ImportError:  # pragma: no cover - networkx is a dependency
        nx = None
    if nx is not None and isinstance(graph, nx.Graph):
        if graph.is_directed():
            raise ValueError("Expected graph to be undirected, got a directed networkx graph.")
        loops = list(nx.selfloop_edges(graph))
        if loops:
            raise ValueError(f"Expected graph without self-loops, got graph with a self-loop at {loops[0][0]!r}.")
        a = nx.to_scipy_sparse_array(graph, format="csr", dtype=np.float64, weight="weight")
        a = sp.csr_matrix(a)
    elif sp.issparse(graph):
        a = sp.csr_matrix(graph, dtype=np.float64)
    else:
        try:
            arr = np.asarray(graph, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(
                f"Expected graph to be an adjacency matrix (NumPy / SciPy sparse) or a networkx graph, "
                f"got graph={type(graph).__name__}."
            ) from None
        if arr.ndim != 2:
            raise ValueError(f"Expected graph to be a square 2-D adjacency matrix, got shape {arr.shape}.")
        a = sp.csr_matrix(arr)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"Expected graph to be a square adjacency matrix, got shape {a.shape}.")
    if a.shape[0] < 2:
        raise ValueError(f"Expected graph with at least 2 users, got {a.shape[0]}.")
    a.sum_duplicates()
    if not np.all(np.isfinite(a.data)):
        raise ValueError("Expected graph with finite edge weights, got a non-finite weight.")
    if np.any(a.data < 0):
        raise ValueError(f"Expected graph with non-negative edge weights, got weight {a.data.min()!r}.")
    diag = a.diagonal()
    if np.any(diag != 0):
        i = int(np.flatnonzero(diag)[0])
        raise ValueError(f"Expected graph without self-loops, got graph[{i}, {i}]={diag[i]!r}.")
    asym = abs(a - a.T)
    if asym.nnz and asym.max() > 1e-12 * max(1.0, abs(a).max()):
        raise ValueError("Expected graph to be a symmetric adjacency matrix (undirected), got an asymmetric one.")
    a.eliminate_zeros()
    return a.tocsr()


# ----------------------------------------------------------------------------------------------------------
# Specs and files

_INT = re.compile(r"^[0-9]+$")


def _spec_int(spec, key, text):
    if not _INT.match(text.strip()):
        raise ValueError(f"Expected {key} to be a non-negative integer in the graph spec, got {spec!r}.")
    return int(text)


def _keyed(spec, kind, body, required, optional):
    """``k=v,k=v`` -> dict, every key known, the required ones present."""
    out = {}
    for part in body.split(","):
        key, eq, val = part.partition("=")
        key = key.strip()
        if not eq or key not in (*required, *optional) or key in out:
            raise ValueError(f"Expected {kind}:{','.join(k + '=...' for k in required)}"
                             f"{''.join(',' + k + '=...' for k in optional)}, got {spec!r}.")
        out[key] = val.strip()
    missing = [k for k in required if k not in out]
    if missing:
        raise ValueError(f"Expected {kind}:{','.join(k + '=...' for k in required)} (missing {missing[0]}), "
                         f"got {spec!r}.")
    return out


def _parse_spec(spec: str):
    kind, colon, body = spec.strip().partition(":")
    kind = kind.strip().lower()
    if not colon or not body.strip():
        raise ValueError(f"Expected a graph spec ({SPEC_FORMS}), got {spec!r}.")
    if kind in ("ring", "complete", "star"):
        n = _spec_int(spec, "n", body)
        return {"ring": ring_graph, "complete": complete_graph, "star": star_graph}[kind](n)
    if kind == "torus":
        parts = body.lower().split("x")
        if len(parts) not in (1, 2):
            raise ValueError(f"Expected torus:ROWSxCOLS or torus:SIDE, got {spec!r}.")
        dims = [_spec_int(spec, "the torus side", p) for p in parts]
        return torus_graph(*dims)
    if kind == "random-regular":
        kv = _keyed(spec, kind, body, ("d", "n"), ("seed",))
        return random_regular_graph(_spec_int(spec, "d", kv["d"]), _spec_int(spec, "n", kv["n"]),
                                    seed=_spec_int(spec, "seed", kv.get("seed", "0")))
    if kind == "erdos-renyi":
        kv = _keyed(spec, kind, body, ("n", "p"), ("seed",))
        try:
            p = float(kv["p"])
        except ValueError:
            raise ValueError(f"Expected p to be a number in [0, 1] in the graph spec, got {spec!r}.") from None
        return erdos_renyi_graph(_spec_int(spec, "n", kv["n"]), p, seed=_spec_int(spec, "seed", kv.get("seed", "0")))
    raise ValueError(f"Expected a graph spec ({SPEC_FORMS}), got {spec!r}.")


def _read_edge_list(path: str) -> sp.csr_matrix:
    """Lines ``u v`` or ``u v weight`` (whitespace-separated; ``#`` starts a comment).  Users are the labels
    that occur, in increasing order (numerically where every label is an integer, else as strings)."""
    edges, weights = [], []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            tokens = line.split("#", 1)[0].split()
            if not tokens:
                continue
            if len(tokens) not in (2, 3):
                raise ValueError(f"Expected lines 'u v' or 'u v weight' in the graph edge list {path!r}, got line "
                                 f"{lineno}: {line.strip()!r}.")
            w = 1.0
            if len(tokens) == 3:
                try:
                    w = float(tokens[2])
                except ValueError:
                    raise ValueError(f"Expected a numeric weight in the graph edge list {path!r}, got line {lineno}: "
                                     f"{line.strip()!r}.") from None
            edges.append((tokens[0], tokens[1]))
            weights.append(w)
    if not edges:
        raise ValueError(f"Expected at least one edge in the graph edge list {path!r}, got none.")
    labels = sorted({u for e in edges for u in e})
    if all(re.match(r"^-?[0-9]+$", u) for u in labels):
        labels = sorted(labels, key=int)
    index = {u: i for i, u in enumerate(labels)}
    rows = np.array([index[u] for u, _ in edges])
    cols = np.array([index[v] for _, v in edges])
    if np.any(rows == cols):
        k = int(np.flatnonzero(rows == cols)[0])
        raise ValueError(f"Expected no self-loops in the graph edge list {path!r}, got edge {edges[k]!r}.")
    n = len(labels)
    # an undirected edge may be listed once or repeated (either direction) with the same weight
    seen = {}
    for k, (i, j) in enumerate(zip(rows.tolist(), cols.tolist())):
        key = (min(i, j), max(i, j))
        if key in seen and seen[key] != weights[k]:
            raise ValueError(f"Expected one weight per edge in the graph edge list {path!r}, got edge {edges[k]!r} "
                             f"with weights {seen[key]!r} and {weights[k]!r}.")
        seen[key] = weights[k]
    ij = np.array(list(seen), dtype=np.int64).reshape(-1, 2)
    w = np.array(list(seen.values()), dtype=np.float64)
    a = sp.coo_matrix((np.concatenate([w, w]), (np.concatenate([ij[:, 0], ij[:, 1]]),
                                                 np.concatenate([ij[:, 1], ij[:, 0]]))), shape=(n, n))
    return adjacency(a.tocsr())


def _read_graphml(path: str) -> sp.csr_matrix:
    import networkx as nx  # lazy: networkx takes ~170 ms to import, and `amplify-jax --help` loads this module

    try:
        g = nx.read_graphml(path)
    except Exception as exc:  # networkx raises several kinds (XML, key errors)
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(f"Expected a readable GraphML file, got {path!r} ({first}).") from None
    if g.is_directed():
        raise ValueError(f"Expected an undirected GraphML graph, got a directed one in {path!r}.")
    return adjacency(g)


def _is_path_like(spec) -> bool:
    if isinstance(spec, os.PathLike):
        return True
    if not isinstance(spec, str):
        return False
    return spec.lower().endswith(EDGE_LIST_SUFFIXES + GRAPHML_SUFFIXES) or os.path.isfile(spec)


def from_spec(spec) -> sp.csr_matrix:
    """The validated adjacency (SciPy CSR, float64) of a graph given by a spec string, a file or an object.

    ``spec``: ``"ring:16"``, ``"torus:4x4"`` / ``"torus:8"``, ``"complete:16"``, ``"star:16"``,
    ``"random-regular:d=4,n=2000,seed=7"``, ``"erdos-renyi:n=100,p=0.1,seed=1"`` (``seed`` defaults to 0),
    a path (``str`` or ``os.PathLike``) to an edge list (``.txt``, ``.edges``, ``.edgelist``: whitespace-
    separated ``u v [weight]`` per line, ``#`` comments) or a GraphML file (``.graphml``), or an object already
    accepted by :func:`adjacency` (networkx graph, SciPy sparse matrix, NumPy array).  A bad spec raises a
    one-line ``ValueError`` saying what is expected and what was given.
    """
    if isinstance(spec, (str, os.PathLike)) and _is_path_like(spec):
        path = os.fspath(spec)
        if not os.path.isfile(path):
            raise ValueError(f"Expected an existing graph file ({SPEC_FORMS}), got {path!r} (no such file).")
        if path.lower().endswith(GRAPHML_SUFFIXES):
            return _read_graphml(path)
        return _read_edge_list(path)
    if isinstance(spec, str):
        try:
            return _parse_spec(spec)
        except ValueError as exc:
            msg = str(exc).splitlines()[0]
            if repr(spec) in msg:
                raise ValueError(msg) from None
            raise ValueError(f"{msg.rstrip('.')} (graph spec {spec!r}).") from None
    if isinstance(spec, (bytes, int, float, bool)) or spec is None:
        raise ValueError(f"Expected a graph spec ({SPEC_FORMS}) or a graph object, got {spec!r}.")
    return adjacency(spec)
