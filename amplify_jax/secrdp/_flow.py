"""A local bound for removals beyond enumeration: flows on non-backtracking and breadth-first trees (Thomson's
principle; Doyle and Snell, Random Walks and Electric Networks, 1984).

[Sigma_H^{-1}]_ii is the effective resistance from i to ground in the network with conductance sigma_unc^2 from
every user to ground and sigma_cor^2 w_uv on every edge, so any unit flow from i bounds it.
:func:`_flow_diag_bound` is the smaller of the bound on i's non-backtracking tree (at every node the c strongest
branches removed, :func:`_tree_diag_bound`) and on its breadth-first tree with one removal budget c
(:func:`_bfs_diag_bound`).  It needs no eigendecomposition and does not collapse to local DP when
a(G) <= c w_max, so it stands beside Thm 1's bound wherever only a bound is available.  (The accountant it bounds,
eps1 = 2 C^2 max_i [Sigma_H^{-1}]_ii, and Thm 1's bound are rebuilt in docs/errata.md#e-secrdp-accountant and
docs/errata.md#e-secrdp-spectral.)
"""

from __future__ import annotations

import numpy as np

from ._graph import SecGraph
from ._rounding import _LDP_UP, _U

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
