"""amplify_jax.graphs: the builders (random_regular_graph in networkx's order) and graphs named by a spec string or
a file."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from amplify_jax._core import graphs as G
from amplify_jax import secrdp as S


def _same(a, b) -> bool:
    a, b = sp.csr_matrix(a), sp.csr_matrix(b)
    return a.shape == b.shape and (a != b).nnz == 0


# ----------------------------------------------------------------------------------------------------------
# Builders


def test_builders():
    assert G.ring_graph(10).sum() == 20
    t = G.torus_graph(4, 5)
    assert t.shape == (20, 20) and np.all(np.asarray(t.sum(1)).ravel() == 4)
    assert G.complete_graph(6).sum() == 30
    s = G.star_graph(6)
    assert s.sum() == 10 and s[0].sum() == 5
    r = G.random_regular_graph(4, 20, seed=1)
    assert r.shape == (20, 20) and np.all(np.asarray(r.sum(1)).ravel() == 4)
    assert _same(r, G.adjacency(nx.random_regular_graph(4, 20, seed=1)))  # networkx's order and graph
    e = G.erdos_renyi_graph(30, 0.2, seed=2)
    assert _same(e, G.adjacency(nx.fast_gnp_random_graph(30, 0.2, seed=2)))
    for a in (t, r, e):
        assert a.dtype == np.float64 and (a != a.T).nnz == 0 and np.all(a.diagonal() == 0)


def test_graphs_is_the_one_home_of_the_builders():
    """Issue 29: the builders are exported by amplify_jax.graphs only (secrdp no longer re-exports them)."""
    for name in ("ring_graph", "torus_graph", "complete_graph", "star_graph", "random_regular_graph",
                 "erdos_renyi_graph"):
        assert name in G.__all__ and callable(getattr(G, name)), name
        assert name not in S.__all__ and not hasattr(S, name), name


def test_random_regular_graph_order_and_domain():
    """networkx's order (d, n): keywords give the same graph; the former order (n, d) is now refused (d < n)."""
    assert _same(G.random_regular_graph(d=4, n=20, seed=1), G.random_regular_graph(4, 20, seed=1))
    with pytest.raises(ValueError, match="d < n"):
        G.random_regular_graph(20, 4, seed=1)
    with pytest.raises(ValueError, match="n \\* d even"):
        G.random_regular_graph(3, 9, seed=0)
    with pytest.raises(ValueError, match="d < n"):
        G.random_regular_graph(5, 5, seed=0)


def test_adjacency_validation():
    with pytest.raises(ValueError, match="symmetric"):
        G.adjacency(np.array([[0.0, 1.0], [0.0, 0.0]]))
    with pytest.raises(ValueError, match="self-loop"):
        G.adjacency(np.eye(3))
    with pytest.raises(ValueError, match="undirected"):
        G.adjacency(nx.DiGraph([(0, 1)]))
    with pytest.raises(ValueError, match="at least 2"):
        G.adjacency(np.zeros((1, 1)))
    g = S.prepare_graph(G.ring_graph(5))
    assert G.adjacency(g) is g.adjacency  # a SecGraph carries its validated adjacency


# ----------------------------------------------------------------------------------------------------------
# Specs


@pytest.mark.parametrize("spec,direct", [
    ("ring:16", lambda: G.ring_graph(16)),
    ("torus:4x4", lambda: G.torus_graph(4, 4)),
    ("torus:3x5", lambda: G.torus_graph(3, 5)),
    ("torus:8", lambda: G.torus_graph(8)),
    ("complete:16", lambda: G.complete_graph(16)),
    ("star:16", lambda: G.star_graph(16)),
    ("random-regular:d=4,n=200,seed=7", lambda: G.random_regular_graph(4, 200, seed=7)),
    ("random-regular:n=200,seed=7,d=4", lambda: G.random_regular_graph(4, 200, seed=7)),
    ("random-regular:d=3,n=10", lambda: G.random_regular_graph(3, 10, seed=0)),
    ("erdos-renyi:n=100,p=0.1,seed=1", lambda: G.erdos_renyi_graph(100, 0.1, seed=1)),
    (" Ring:16 ", lambda: G.ring_graph(16)),
])
def test_from_spec_equals_the_builders(spec, direct):
    assert _same(G.from_spec(spec), direct())


def test_from_spec_objects():
    nxg = nx.cycle_graph(7)
    ring = G.ring_graph(7)
    assert _same(G.from_spec(nxg), ring)
    assert _same(G.from_spec(nx.to_numpy_array(nxg)), ring)
    assert _same(G.from_spec(ring), ring)


@pytest.mark.parametrize("spec,match", [
    ("no-such-graph:3", "Expected a graph spec"),
    ("ring", "Expected a graph spec"),
    ("ring:", "Expected a graph spec"),
    ("ring:-4", "ring:-4"),
    ("ring:1.5", "ring:1.5"),
    ("ring:1", "n >= 2"),
    ("torus:4x4x4", "torus:ROWSxCOLS"),
    ("torus:1x1", "rows \\* cols >= 2"),
    ("random-regular:d=4", "missing n"),
    ("random-regular:d=4,n=20,k=3", "random-regular:d=...,n=..."),
    ("random-regular:d=3,n=9,seed=1", "n \\* d even"),
    ("erdos-renyi:n=10,p=2,seed=1", "p in \\[0, 1\\]"),
    ("erdos-renyi:n=10,p=x,seed=1", "p to be a number"),
    ("missing.edges", "no such file"),
    ("missing.graphml", "no such file"),
    ("", "Expected a graph spec"),
    (3, "Expected a graph spec"),
    (None, "Expected a graph spec"),
])
def test_from_spec_errors_are_one_line(spec, match):
    with pytest.raises(ValueError, match=match) as exc:
        G.from_spec(spec)
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith("Expected")
    if isinstance(spec, str) and spec:
        assert repr(spec) in msg  # what was given


# ----------------------------------------------------------------------------------------------------------
# Files


@pytest.mark.parametrize("suffix", [".txt", ".edges", ".edgelist"])
def test_edge_list_files(tmp_path, suffix):
    ring = G.ring_graph(6)
    path = tmp_path / f"ring{suffix}"
    lines = ["# a ring on 6 users", ""] + [f"{i} {(i + 1) % 6}" for i in range(6)] + ["1 0  # repeated edge"]
    path.write_text("\n".join(lines) + "\n")
    assert _same(G.from_spec(str(path)), ring)
    assert _same(G.from_spec(path), ring)  # os.PathLike


def test_edge_list_labels_and_weights(tmp_path):
    path = tmp_path / "w.edges"
    path.write_text("10 2 0.5\n2 3 2\n3 10 1\n")  # integer labels, sorted numerically: 2, 3, 10
    a = G.from_spec(str(path)).toarray()
    np.testing.assert_array_equal(a, [[0, 2, 0.5], [2, 0, 1], [0.5, 1, 0]])
    path = tmp_path / "names.txt"
    path.write_text("b a\nc b\n")  # string labels, sorted: a, b, c
    np.testing.assert_array_equal(G.from_spec(str(path)).toarray(), [[0, 1, 0], [1, 0, 1], [0, 1, 0]])


@pytest.mark.parametrize("text,match", [
    ("0 1 2 3\n", "'u v' or 'u v weight'"),
    ("0 0\n", "self-loops"),
    ("0 1 x\n", "numeric weight"),
    ("# nothing\n", "at least one edge"),
    ("0 1 1\n1 0 2\n", "one weight per edge"),
    ("0 1 -1\n", "non-negative"),
])
def test_edge_list_errors(tmp_path, text, match):
    path = tmp_path / "bad.edges"
    path.write_text(text)
    with pytest.raises(ValueError, match=match):
        G.from_spec(str(path))


def test_graphml_files(tmp_path):
    g = nx.random_regular_graph(3, 10, seed=4)
    path = tmp_path / "g.graphml"
    nx.write_graphml(g, path)
    assert _same(G.from_spec(str(path)), G.adjacency(nx.read_graphml(path)))
    assert _same(G.from_spec(str(path)), G.random_regular_graph(3, 10, seed=4))  # nodes written in order
    d = tmp_path / "d.graphml"
    nx.write_graphml(nx.DiGraph([(0, 1)]), d)
    with pytest.raises(ValueError, match="undirected"):
        G.from_spec(str(d))
    bad = tmp_path / "bad.graphml"
    bad.write_text("not xml")
    with pytest.raises(ValueError, match="readable GraphML"):
        G.from_spec(str(bad))
