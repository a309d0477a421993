"""Sec. II-D and Thm 1 of Ladjel, Anciaux, Bellet, Scerri: execution plans as DAGs of clusters and the privacy
of a whole plan from its clusters' guarantees; the running examples (Aggregate with G grouping sets, K-means
unrolled over I iterations, §II-A and §V-A)."""

from __future__ import annotations

import dataclasses
from typing import Mapping, NamedTuple

import numpy as np

from .._core import validate as V


# ---------------------------------------------------------------------------------------------------------
# Thm 1: execution plans
# ---------------------------------------------------------------------------------------------------------


class PlanPrivacy(NamedTuple):
    """(epsilon, delta) of a whole execution plan (Thm 1) and the data entry points that attain them."""

    epsilon: np.ndarray
    delta: np.ndarray
    worst_eps_root: str
    worst_delta_root: str


@dataclasses.dataclass(frozen=True)
class ExecutionPlan:
    """An execution plan as a DAG of clusters (Ladjel et al. §II-D, Thm 1).

    ``edges`` are (upstream, downstream) pairs of cluster names: messages flow along them.  Clusters with no
    incoming edge are *data entry points*; the data path of an item entering at a root is every cluster
    reachable from it (an item that fans out to G grouping sets influences all G branches, Example 5; items
    that go to one branch or the other enter at different roots, Example 6).  ``protected`` names the clusters
    with data-dependent communications (the ones that need a countermeasure and carry (eps_i, delta_i));
    the others are data-independent (eps_i = delta_i = 0, e.g. compute nodes sending one message to R).

    Raises ValueError if the plan has a cycle (iterative computations are unrolled, Remark 1) or a protected
    cluster is not in the plan.
    """

    edges: tuple
    protected: tuple = ()

    def __post_init__(self):
        edges = tuple((str(u), str(v)) for u, v in self.edges)
        object.__setattr__(self, "edges", edges)
        object.__setattr__(self, "protected", tuple(str(p) for p in self.protected))
        nodes = []
        for u, v in edges:
            for x in (u, v):
                if x not in nodes:
                    nodes.append(x)
        missing = [p for p in self.protected if p not in nodes]
        if missing:
            raise ValueError(f"Expected protected clusters to be nodes of the plan, got protected={missing!r}.")
        cycle = _find_cycle(nodes, edges)
        if cycle:
            raise ValueError(
                f"Expected plan to be acyclic (unroll iterations into distinct clusters, Remark 1), "
                f"got plan with the cycle {' -> '.join(cycle)}."
            )
        object.__setattr__(self, "_nodes", tuple(nodes))

    @property
    def nodes(self) -> tuple:
        return self._nodes

    @property
    def roots(self) -> tuple:
        heads = {v for _, v in self.edges}
        return tuple(x for x in self._nodes if x not in heads)

    def data_path(self, root: str) -> tuple:
        """The clusters an item entering at ``root`` can influence (root included), in plan order."""
        succ = {}
        for u, v in self.edges:
            succ.setdefault(u, []).append(v)
        seen, stack = {root}, [root]
        while stack:
            for v in succ.get(stack.pop(), []):
                if v not in seen:
                    seen.add(v)
                    stack.append(v)
        return tuple(x for x in self._nodes if x in seen)


def _find_cycle(nodes, edges):
    succ = {x: [] for x in nodes}
    for u, v in edges:
        succ[u].append(v)
    color = {x: 0 for x in nodes}  # 0 new, 1 on stack, 2 done
    for start in nodes:
        if color[start]:
            continue
        stack = [(start, iter(succ[start]))]
        path = [start]
        color[start] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                color[node] = 2
                stack.pop()
                path.pop()
            elif color[nxt] == 1:
                return path[path.index(nxt):] + [nxt]
            elif color[nxt] == 0:
                color[nxt] = 1
                stack.append((nxt, iter(succ[nxt])))
                path.append(nxt)
    return None


def _per_cluster(name, values, plan: ExecutionPlan, check):
    if isinstance(values, Mapping):
        unknown = [c for c in values if str(c) not in plan.nodes]
        if unknown:
            raise ValueError(f"Expected {name} keys to be clusters of the plan, got {name} keys {unknown!r}.")
        return {str(c): check(f"{name}[{c!r}]", v) for c, v in values.items()}
    v = check(name, values)
    return {c: v for c in plan.protected}


def plan_privacy(plan: ExecutionPlan, *, epsilon, delta) -> PlanPrivacy:
    """Privacy of an execution plan from the guarantees of its clusters (Ladjel et al., Thm 1).

    ``epsilon`` and ``delta`` (the clusters' guarantees) are either mappings cluster -> value (array-likes that broadcast; clusters not named
    are data-independent, 0) or one value applied to every ``plan.protected`` cluster.  Result: the worst,
    over data entry points, of the sums of eps_i and of delta_i over the item's data path (each cluster counted
    once: a valid plan's cluster sees an item in at most one of its nodes).  As in the theorem the worst eps and
    the worst delta are taken separately.  delta is capped at 1.
    """
    if not isinstance(plan, ExecutionPlan):
        raise ValueError(f"Expected plan to be an ExecutionPlan, got plan={plan!r}.")
    e = _per_cluster("epsilon", epsilon, plan, V.nonnegative)

    def _delta_check(nm, x):
        a = V.probability(nm, x)
        return V._check(nm, a, a >= 1.0, "in [0, 1) (delta = 1 is no guarantee)")

    dl = _per_cluster("delta", delta, plan, _delta_check)
    V.broadcastable(**{f"epsilon_{k}": v for k, v in e.items()}, **{f"delta_{k}": v for k, v in dl.items()})
    best_e = best_d = None
    root_e = root_d = ""
    for r in plan.roots:
        path = plan.data_path(r)
        se = sum((np.asarray(e[c]) for c in path if c in e), np.float64(0.0))
        sd = sum((np.asarray(dl[c]) for c in path if c in dl), np.float64(0.0))
        if best_e is None or np.any(se > best_e):
            root_e = r if best_e is None or np.all(se >= best_e) else root_e
            best_e = se if best_e is None else np.maximum(best_e, se)
        if best_d is None or np.any(sd > best_d):
            root_d = r if best_d is None or np.all(sd >= best_d) else root_d
            best_d = sd if best_d is None else np.maximum(best_d, sd)
    # Round the float sums up (a few ulps per term) so that the composition never under-reports.
    up = 1.0 + 4.0 * len(plan.nodes) * np.finfo(np.float64).eps
    eps_out = np.asarray(best_e, np.float64) * up
    delta_out = np.minimum(np.asarray(best_d, np.float64) * up, 1.0)
    return PlanPrivacy(eps_out, delta_out, root_e, root_d)


def aggregate_plan(groups: int = 1) -> ExecutionPlan:
    """The Aggregate query of Ladjel et al. (§II-A, Example 1-5, §V-A) with ``groups`` = G grouping sets.

    Each data item ("data") is held by a source node in each grouping set's source cluster ``S1..SG``, which
    sends through that set's scramblers to the compute cluster ``C1..CG``; compute nodes send one message to
    the result node "R".  Protected clusters: ``S1..SG`` (one plan cluster per grouping set standing for its
    SC scrambler clusters, which are never on the same data path: give it the worst of their guarantees).
    Thm 1 then gives eps = G max_i eps_i, delta = G max_i delta_i, as in §V-B.
    """
    G = int(V.integer("groups", groups, minimum=1))
    edges = []
    for g in range(1, G + 1):
        edges += [("data", f"S{g}"), (f"S{g}", f"C{g}"), (f"C{g}", "R")]
    return ExecutionPlan(tuple(edges), tuple(f"S{g}" for g in range(1, G + 1)))


def kmeans_plan(iterations: int = 10) -> ExecutionPlan:
    """The K-means execution plan of Ladjel et al. (§V-A) unrolled over ``iterations`` = I (Remark 1).

    In iteration i the sources (cluster ``S{i}``, through its scramblers) send their tuple to the compute node
    of the closest centroid (cluster ``C{i}``); the new centroids flow back to the sources of iteration i + 1
    (edge ``C{i} -> S{i+1}``) and ``C{I}`` sends the result to "R".  The data item enters every ``S{i}``.
    Protected clusters: ``S1..SI``; Thm 1 gives eps = I max_i eps_i, delta = I max_i delta_i (§V-B).
    """
    I = int(V.integer("iterations", iterations, minimum=1))
    edges = []
    for i in range(1, I + 1):
        edges += [("data", f"S{i}"), (f"S{i}", f"C{i}")]
        edges.append((f"C{i}", f"S{i + 1}") if i < I else (f"C{i}", "R"))
    return ExecutionPlan(tuple(edges), tuple(f"S{i}" for i in range(1, I + 1)))
