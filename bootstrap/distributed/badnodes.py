"""Bad nodes: the nodes a job's findings name, as the observations it records (one per node: the lines of the ledger
and of ``bad_nodes.jsonl``, :class:`bootstrap.distributed.ledger.Observation`), and what the job judges of its own
findings before they count as evidence: a systemic fault (more than a fraction of its nodes named at once: the
network, a filesystem or the job itself, not a node) and its cap (at most K nodes' evidence from one job). Pure.

Nodes are named as the scheduler names them (:mod:`bootstrap.distributed.nodename`): the preflight's and the watch's
records carry each rank's node so.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any, Dict, Iterable, List, Optional, Sequence

from bootstrap.distributed.hostlist import compress
from bootstrap.distributed.ledger import Observation, stamp
from bootstrap.distributed.nodename import NAME
from bootstrap.doors import records
from bootstrap.doors.lean import lean_dataclass

RECORD_NAME = "bad_nodes.jsonl"  # in the run directory, written by rank 0: this job's observations
EXCLUDE_NAME = "exclude.txt"  # the nodes the evidence excludes, in SLURM's --exclude form
# The findings that name a node through its ranks; the world's bus bandwidth names no rank, so no node.
NODE_KINDS = ("faulty", "unfinished", "slow", "min_tflops", "min_node_busbw_gbps", "network", "slow_link", "absent",
              "invalid")
WATCH_PREFIX = "watch_"  # the watch's findings, each kind recorded as watch_<kind>
SPEED_KINDS = ("slow", "slow_link", "min_tflops", "min_node_busbw_gbps", "unfinished")


def _rank_figures(rank: records.PreflightRank, others: Optional[float]) -> Dict[str, Any]:
    figures: Dict[str, Any] = {"rank": rank.rank, "tflops": rank.tflops, "busbw_gbps": rank.busbw_gbps,
                               "node_busbw_gbps": rank.node_busbw_gbps, "compute": str(rank.compute)}
    if others is not None:  # the figure the finding judged it against (slow: the other ranks' median TFLOP/s)
        figures["others_median_tflops"] = others
    return figures


def _against(record: records.Preflight, compared: Optional[float]) -> Dict[str, Any]:
    """What the node's first finding judged it against, as its message states: the other ranks' median (a slow
    rank's; the world's median, its own figure among them, is the report's ``preflight.median_tflops``), the skew and
    the floors."""
    shown = {"others_median_tflops": compared, "max_skew": record.max_skew, "min_tflops": record.min_tflops,
             "min_busbw_gbps": record.min_busbw_gbps, "min_node_busbw_gbps": record.min_node_busbw_gbps}
    return {name: value for name, value in shown.items() if value is not None}


def from_preflight(record: records.Preflight, now: datetime, ttl_h: float, job_id: Optional[str] = None,
                   restart_count: int = 0, world: int = 1) -> List[Observation]:
    """One observation per node that a finding of ``record`` names through its ranks, in the findings' order (faulty
    first). A rank whose node the record does not hold (one that never sent its figures) names no node; nor does any
    rank where the figures were gathered from fewer than the job's ``world`` ranks (a peer of another version sends
    only its header): rank 0 could not name the peer's node, and every rank records alike."""
    if record.world_size is not None and record.world_size < world:
        return []
    hosts = {rank.rank: rank for rank in record.ranks}
    by_node: Dict[str, Observation] = {}
    observed, until = stamp(now), stamp(now + timedelta(hours=ttl_h))
    for finding in record.findings:
        if finding.kind not in NODE_KINDS:
            continue
        compared = dict(zip(finding.ranks, finding.against, strict=False))
        for number in finding.ranks:
            rank = hosts.get(number)
            if rank is None or not NAME.fullmatch(rank.host or ""):
                continue
            seen = by_node.get(rank.host)
            if seen is None:
                seen = by_node[rank.host] = Observation(rank.host, finding.kind, observed, until, job_id, restart_count,
                                                        against=_against(record, compared.get(number)),
                                                        message=finding.message)
            if finding.kind not in seen.kinds:
                seen.kinds.append(finding.kind)
            if number not in seen.ranks:
                seen.ranks.append(number)
                seen.figures.append(_rank_figures(rank, compared.get(number)))
    return list(by_node.values())


def from_findings(findings: Sequence[Any], now: datetime, ttl_h: float, job_id: Optional[str] = None,
                  restart_count: int = 0, prefix: str = WATCH_PREFIX) -> List[Observation]:
    """One observation per node named by ``findings`` shaped as ``records.PreflightFinding`` with each named rank's
    node beside it (``kind``, ``message``, ``ranks``, ``hosts``: the watch's), each kind recorded as
    ``<prefix><kind>``: soft evidence."""
    by_node: Dict[str, Observation] = {}
    observed, until = stamp(now), stamp(now + timedelta(hours=ttl_h))
    for finding in findings:
        kind = prefix + re.sub(r"[^a-z_]", "_", str(finding.kind).lower())[:32 - len(prefix)]
        for number, host in zip(finding.ranks, finding.hosts, strict=False):
            if not NAME.fullmatch(host or ""):
                continue
            seen = by_node.setdefault(host, Observation(host, kind, observed, until, job_id, restart_count,
                                                        message=finding.message))
            if kind not in seen.kinds:
                seen.kinds.append(kind)
            if number not in seen.ranks:
                seen.ranks.append(number)
    return list(by_node.values())


def weigh(observations: Sequence[Observation], job_nodes: int, fraction: float, cap: int, key: str = "env"
          ) -> Optional[str]:
    """Mark the observations that will not count as evidence, in place, and return the job's one line about them
    (None: every one counts).

    - **systemic**: at least two nodes, and more than ``fraction`` of the job's ``job_nodes``, named at once: none
      counts (NVRx excludes nothing when its suspects exceed ``max_candidate_nodes``);
    - **the cap**: past the first ``cap`` nodes (hard evidence first), none counts (NVRx's ``max_avoids_per_cycle``).
    """
    named = len(observations)
    nodes = max(job_nodes, named)
    if named >= 2 and named > fraction * nodes:
        kinds = {kind for seen in observations for kind in seen.kinds}
        adjective = "slow" if kinds <= set(SPEED_KINDS) or all(k.startswith(WATCH_PREFIX) for k in kinds) else "named"
        line = (f"systemic: {named} of {nodes} nodes {adjective} at once: the network, a filesystem or the job itself, "
                f"not a node: no node is excluded for it ({key}.nodes.systemic_fraction={fraction:g})")
        for seen in observations:
            seen.counts, seen.note = False, f"systemic: {named} of {nodes} nodes at once"
        return line
    ordered = sorted(observations, key=lambda seen: not seen.hard)
    over = ordered[cap:]
    for seen in over:
        seen.counts, seen.note = False, f"over {key}.nodes.max_per_job={cap}"
    if not over:
        return None
    return (f"{key}.nodes.max_per_job={cap}: this job named {named} nodes; the evidence against "
            f"{exclude_text(seen.node for seen in over)} is recorded and does not count")


def exclude_text(hosts: Iterable[str]) -> str:
    """The hosts as ``sbatch --exclude`` reads them (``node[3,7]``)."""
    return compress(hosts)
