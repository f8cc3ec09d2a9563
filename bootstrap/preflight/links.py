"""The links between nodes, one at a time: which pairs exchange in which round, and the node whose links are slow. Pure.

A world all_reduce runs at the pace of its slowest link, so every rank sees the same low figure and none can say
which node is to blame (design.md section 8: one node's link at 50 Mbit/s slowed a 3-node ring alike on every
rank). So the first rank of each node exchanges a message with the first rank of the next node of a ring of the
nodes, in pairs that never share a node (:func:`rounds`): at most 3 rounds, whatever the number of nodes, so the
step costs 3 exchanges at any world size. Within a node the ranks share its memory: there is no link to time.

Each end times its exchange; a link's figure is the faster of its two ends' (the slower end also waited for its
partner to arrive). A node's figure is its fastest link: a node is to blame only when every link it has is slow.
A node is named (:func:`slow_nodes`) when its figure is more than ``max_skew`` times below the median of the
links that do not touch it, so no absolute floor is needed; with 2 nodes there is one link, and nothing to
compare it with.
"""

from __future__ import annotations

from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

from bootstrap.preflight.figures import RankFigures

Pair = Tuple[int, int]  # two node numbers: the link from the first to the next node of the ring


def ring(k: int) -> List[Pair]:
    """The links of a ring of ``k`` nodes: node i to node i+1, and the last to the first (2 nodes: one link)."""
    if k < 2:
        return []
    return [(i, (i + 1) % k) for i in range(k if k > 2 else 1)]


def rounds(k: int) -> List[List[Pair]]:
    """The ring's links in rounds where no node takes part twice: the even links, the odd ones, and with an odd
    number of nodes the last link (it shares a node with both). At most 3, whatever ``k``."""
    links = ring(k)
    if k < 3:
        return [links] if links else []
    last = [links[-1]] if k % 2 else []
    body = links[:-1] if k % 2 else links
    return [r for r in ([p for p in body if p[0] % 2 == 0], [p for p in body if p[0] % 2 == 1], last) if r]


class Node(NamedTuple):  # tuples: 10,000 nodes are made in milliseconds
    """A node as the links see it: its first rank (the one that exchanges), its host and its ranks."""

    number: int
    leader: int
    host: str
    ranks: List[int]


def nodes_of(node_of_rank: Sequence[str], hosts: Sequence[str]) -> List[Node]:
    """The nodes in the order of their first rank, from each rank's node (host and launcher node rank)."""
    found: Dict[str, Node] = {}
    for rank, node in enumerate(node_of_rank):
        if node not in found:
            found[node] = Node(len(found), rank, hosts[rank], [])
        found[node].ranks.append(rank)
    return list(found.values())


class Link(NamedTuple):
    a: Node
    b: Node
    gbps: Optional[float]  # the faster of its two ends' figures; None: neither was measured


def links(figures: Sequence[RankFigures]) -> List[Link]:
    """Every link of the ring with its figure, from the records the nodes' first ranks sent."""
    nodes = nodes_of([r.node for r in figures], [r.host for r in figures])
    out = []
    for a, b in ring(len(nodes)):
        ends = [figures[nodes[a].leader].link_next_gbps, figures[nodes[b].leader].link_prev_gbps]
        seen = [value for value in ends if value is not None]
        out.append(Link(nodes[a], nodes[b], max(seen) if seen else None))
    return out


class SlowNode(NamedTuple):
    node: Node
    gbps: float  # its fastest link
    others_gbps: float  # the median of the links that do not touch it


def _median_without(ranked: Sequence[float], taken: Sequence[int]) -> Optional[float]:
    """The median of the sorted ``ranked`` without the values at positions ``taken`` (a few), in constant time."""
    left = len(ranked) - len(taken)
    if left < 1:
        return None

    def nth(j: int) -> float:  # the j-th smallest of what is left
        for position in sorted(taken):
            if position <= j:
                j += 1
        return ranked[j]

    return (nth((left - 1) // 2) + nth(left // 2)) / 2


def slow_nodes(measured: Sequence[Link], max_skew: float) -> List[SlowNode]:
    """The nodes whose every link is more than ``max_skew`` times slower than the median of the other links,
    slowest first. Sorted once, then each node in constant time: 10,000 nodes cost what sorting their links
    costs."""
    seen = [link for link in measured if link.gbps is not None and link.gbps > 0]
    order = sorted(range(len(seen)), key=lambda i: seen[i].gbps)  # type: ignore[arg-type,return-value]
    position = {index: place for place, index in enumerate(order)}
    ranked = [seen[i].gbps for i in order]
    by_node: Dict[int, Tuple[Node, List[int]]] = {}
    for index, link in enumerate(seen):
        for node in {link.a.number: link.a, link.b.number: link.b}.values():
            by_node.setdefault(node.number, (node, []))[1].append(index)
    slow = []
    for node, touching in by_node.values():
        others = _median_without(ranked, [position[i] for i in touching])  # type: ignore[arg-type]
        fastest = max(seen[i].gbps for i in touching)  # type: ignore[type-var]
        if others is not None and others / fastest > max_skew:  # type: ignore[operator]
            slow.append(SlowNode(node, fastest, others))  # type: ignore[arg-type]
    return sorted(slow, key=lambda s: s.gbps / s.others_gbps)


def measured_any(figures: Sequence[RankFigures]) -> bool:
    """Whether any rank sent a link's figure (else there are no links to list or judge)."""
    return any(r.link_next_gbps is not None or r.link_prev_gbps is not None for r in figures)
