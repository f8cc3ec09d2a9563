"""``run(request) -> records.Preflight``: the preflight check of one rank, from its request to its record.

Every rank measures its matmul, times the world's all_reduce, and sends its figures to every other rank in one
``all_gather``; with more than one node it also times the all_reduce within its node and gathers that. Each
rank then judges the world's figures (:mod:`bootstrap.preflight.verdict`), so all reach the same verdict. A
single process has no one to compare with: it runs only where the preset sets a floor, and is skipped
otherwise, so that a quick start pays nothing for it. The check stays within ``seconds``
(:class:`~bootstrap.distributed.waits.Deadline`): a collective that does not finish is a finding that names
the ranks that had not arrived.
"""

from __future__ import annotations

import itertools
import os
import statistics
import time
from typing import TYPE_CHECKING, List, Optional, Sequence, Tuple

from bootstrap.distributed.ranks import Ranks
from bootstrap.distributed.waits import Deadline
from bootstrap.doors import outbound, records
from bootstrap.doors.errors import PRESET_KEY
from bootstrap.doors.statuses import ComputeVerdict
from bootstrap.doors.timeline import TIMELINE
from bootstrap.preflight import figures as rank_figures
from bootstrap.fabric import nccl_log
from bootstrap.preflight import bounds, fabric_check, measure
from bootstrap.preflight import links as node_links
from bootstrap.preflight.figures import Compute, RankFigures
from bootstrap.preflight.request import Request, planned, skipped_because
from bootstrap.preflight.verdict import MAX_NAMED, Finding, judge, status

if TYPE_CHECKING:
    from torch.distributed import ProcessGroup

MAX_RANKS_LISTED = 64  # ranks a report lists with their figures (rank 0, this rank, the slowest, those named)


def run(request: Request) -> records.Preflight:
    started = time.perf_counter()
    record = planned(request)
    if skipped_because(request):
        return record
    notes = [request.note] if request.note else []
    own = _compute(request, record, notes)
    world, extra = [own], list[Finding]()
    if request.grouped:
        TIMELINE.mark("preflight")  # its matmul; next, the first collective (timeline: the start's phases)
        try:
            world, headed = _collectives(request, record, own, Deadline(request.seconds), notes)
            extra.extend(headed)
        except measure.Unfinished as unfinished:
            extra.append(_unfinished(unfinished))
        except RuntimeError as error:  # a peer left during the check (gloo's connection reset, a store gone)
            extra.append(Finding("unfinished", f"the check's collectives failed: {error}: a rank left during the "
                                               "check (crashed or stopped)?"))
    else:
        notes.append("one process: no collective" if request.world_size == 1 else
                     "no process group yet: this rank's matmul against the floors only, no collective")
    if request.backend != "nccl":
        notes.append(f"no NCCL ({request.backend or 'no process group'}): the network it chose is not read")
    findings = judge(world, request.floors, request.max_skew, request.device.split(":")[0], request.backend or "",
                     request.network if request.fabric == "none" else None, extra, request.key)  # else: fabric rules
    _summarise(record, world, own, findings)
    record.note = "; ".join(notes).replace(PRESET_KEY, request.key) or None
    if request.picture is not None and findings:
        from bootstrap.preflight import picture  # loaded only when there is something to draw

        if picture.wanted(findings):
            picture.draw(picture.picture(world, findings, request), request.picture)
    if request.device.startswith("cuda"):
        import torch

        torch.cuda.empty_cache()  # the task gets back the memory the check's tensors held
    record.seconds = round(time.perf_counter() - started, 4)
    return record


def _compute(request: Request, record: records.Preflight, notes: List[str]) -> RankFigures:
    """This rank's matmul; a rank whose matmul fails (a GPU in a bad state, out of memory) sends ``NOT_RUN``,
    which every rank judges faulty, and says why in its own record."""
    own = RankFigures(rank=request.rank, host=request.host, node_rank=request.node_rank)
    try:
        result = measure.compute(request.device, request.seconds)
    except (RuntimeError, MemoryError) as error:
        notes.append(f"the matmul failed here: {outbound.finding(error, 500)}")
        return own
    own.compute, own.tflops = result.verdict, result.tflops
    record.precision, record.matrix, record.compute_error = result.precision, result.matrix, result.error
    return own


def _network(request: Request, record: records.Preflight, notes: List[str], log: List[str]) -> Optional[str]:
    """The kind of network NCCL chose here, from its log (None: not read, and the note says why); its text in
    ``log``, for the fabric's rules."""
    if request.network is None or request.backend != "nccl":
        return None
    text, why = fabric_check.own_log(request, os.environ)  # ours, or the user's own NCCL_DEBUG_FILE at INFO
    if text is None:
        notes.append(why or "NCCL's log was not read")
        return None
    log.append(text)
    found = nccl_log.parse(text)
    if found.text is None:
        notes.append("NCCL's log names no network (no 'Using network' line)")
        return None
    record.network, record.network_kind = outbound.shown(found.text), found.kind
    return found.kind if len(found.names) == 1 else "other"  # two networks at once: none is the one expected


def _collectives(request: Request, record: records.Preflight, own: RankFigures, deadline: Deadline,
                 notes: List[str]) -> Tuple[List[RankFigures], List[Finding]]:
    """On the check's own group: the headers (every rank's record agreed, and its node), the links between nodes,
    the world's all_reduce, with several ranks on a node the same within each node, and the gather of every rank's
    figures. Returns every rank's figures, as every rank reads them, and what the headers and the fabric's rules
    showed."""
    import torch.distributed as dist

    from bootstrap.distributed.group import default_store

    made: list = []
    with measure.Meeting(default_store(), request.store_key, request.rank, request.world_size, deadline) as meeting:
        try:
            made.append(world_group := measure.new_group(meeting, None, "group"))
            affordable = bounds.affordable_mb(measure.free_bytes(request.device), request.ranks_here)
            sent = measure.gather(meeting, world_group, rank_figures.header(rank_figures.pack(own), affordable,
                                                                            own.host, own.node_rank),
                                  request.device, "header")
            TIMELINE.mark("first_collective")  # the check's group made and its first gather: a communicator's start
            headers = [rank_figures.read_header(rank, data) for rank, data in enumerate(sent)]
            mismatched, affordable = rank_figures.agree(headers)
            if mismatched:  # every rank read the same headers: every rank stops gathering here
                return [own], [_mismatched(mismatched)]
            _links(meeting, world_group, request, own, [header.node for header in headers])
            timed, skipped = measure.all_reduce(meeting, world_group, request.device, request.sizes_mb, "world",
                                                affordable_mb=affordable)
            notes.extend(_skipped(skipped, request))
            record.collective = [records.CollectiveSize(size_mb=t.size_mb, reps=t.reps, seconds=round(t.seconds, 6),
                                                        algbw_gbps=t.algbw_gbps, busbw_gbps=t.busbw_gbps)
                                 for t in timed]
            if timed and request.world_size > 1:  # the largest: nearest the plateau (one rank moves nothing)
                own.busbw_gbps = max(timed, key=lambda t: t.size_mb).busbw_gbps
            log: List[str] = []
            own.network = _network(request, record, notes, log)  # NCCL has started the group's communicator
            node_of_rank = [header.node for header in headers]
            fabric_found: List[Finding] = []
            if request.fabric != "none" and request.backend == "nccl":  # issue 40: every rank judges every rank's
                spans = len(set(node_of_rank)) > 1  # own log, gathered, so that all agree
                lines = fabric_check.own_findings(request, log[0], os.environ, spans, notes) if log else []
                fabric_found = fabric_check.agreed(meeting, world_group, request.device, lines)
            members = measure.node_members(node_of_rank)
            for number, ranks in enumerate(members):  # every rank makes every node's group, in one order
                made.append(group := measure.new_group(meeting, ranks, f"node{number}"))
                if request.rank in ranks and timed:
                    within, _ = measure.all_reduce(meeting, group, request.device, [timed[-1].size_mb],
                                                   f"node{number}_", within_node=True, affordable_mb=affordable)
                    own.node_busbw_gbps = within[-1].busbw_gbps if within else None
            return _gathered(meeting, world_group, own, request.device, "gather"), fabric_found
        finally:
            for group in made:  # after a collective a peer never matched, this waits out the group's timeout
                dist.destroy_process_group(group)


def _links(meeting: measure.Meeting, group: ProcessGroup, request: Request, own: RankFigures,
           node_of_rank: Sequence[str]) -> None:
    """The first rank of each node exchanges with the first rank of the next and the previous node of the ring,
    in the rounds of :func:`bootstrap.preflight.links.rounds`; every rank marks each round."""
    nodes = node_links.nodes_of(node_of_rank, ["?"] * len(node_of_rank))
    size_mb = min(measure.LINK_MB, *request.sizes_mb)
    for number, pairs in enumerate(node_links.rounds(len(nodes))):
        for a, b in pairs:
            if request.rank in (nodes[a].leader, nodes[b].leader):
                mine, partner = (a, b) if request.rank == nodes[a].leader else (b, a)
                what = (f"the exchange of {size_mb:g} MB between rank {nodes[a].leader} and rank {nodes[b].leader} "
                        f"(the link between their nodes)")
                gbps = measure.time_link(meeting, group, request.device, nodes[partner].leader, size_mb,
                                        f"link{number}", what)
                if mine == a:
                    own.link_next_gbps = gbps
                else:
                    own.link_prev_gbps = gbps
                break
        else:
            measure.time_link(meeting, group, request.device, None, size_mb, f"link{number}", "")


def _mismatched(headers: Sequence[rank_figures.Header]) -> Finding:
    text = "; ".join(f"rank {h.rank} ({h.host}) {h.problem()}" for h in headers[:MAX_NAMED])
    more = f" and {len(headers) - MAX_NAMED} more" if len(headers) > MAX_NAMED else ""
    return Finding("invalid", f"{text}{more}: the ranks' figures were not gathered; run one version of "
                              "hydra-train-bootstrap on every node", [h.rank for h in headers[:MAX_NAMED]])


def _skipped(skipped: Sequence[measure.Skipped], request: Request) -> List[str]:
    """The notes that say which sizes were not measured, and why (the warnings the job logs)."""
    said = []
    for size in skipped:
        if size.why == "memory":
            said.append(f"{PRESET_KEY}.preflight.sizes_mb: {size.size_mb:g} MB not measured: more than every rank "
                        f"can hold ({bounds.MEMORY_SHARE:g} of the free memory, over the ranks that share it): "
                        f"lower {PRESET_KEY}.preflight.sizes_mb")
        else:
            said.append(f"{PRESET_KEY}.preflight.sizes_mb: {size.size_mb:g} MB not measured: its all_reduces would "
                        f"take {size.predicted_s:.3g} s at the speed of the size before, and "
                        f"{max(0.0, size.left_s):.3g} s of {PRESET_KEY}.preflight.seconds={request.seconds:g} were "
                        f"left: raise {PRESET_KEY}.preflight.seconds or lower {PRESET_KEY}.preflight.sizes_mb")
    return said


def _gathered(meeting: measure.Meeting, group: Optional[ProcessGroup], own: RankFigures,
              device: str, stage: str) -> List[RankFigures]:
    """Every rank's figures as it sent them, this rank's too, so that every rank judges the same bytes."""
    sent = measure.gather(meeting, group, rank_figures.pack(own), device, stage)
    return [rank_figures.unpack(rank, data, device) for rank, data in enumerate(sent)]


def _unfinished(unfinished: measure.Unfinished) -> Finding:
    budget = f"{PRESET_KEY}.preflight.seconds={unfinished.budget_s:g}"
    if unfinished.absent:
        more = "" if unfinished.complete else " (and more)"
        said = (f"{unfinished.absent.text()}{more} had not arrived: a rank stuck before the check, or one that "
                f"does not run it ({PRESET_KEY}.preflight.mode=off there?)")
    elif not unfinished.complete:  # the store that says who arrived was gone too
        said = "the ranks' store could not be read to name who had not arrived: rank 0, which hosts it, has ended?"
    else:
        said = (f"every rank had arrived: the network is far slower than the budget allows; raise {budget} or "
                f"lower {PRESET_KEY}.preflight.sizes_mb")
    return Finding("unfinished", f"{unfinished.what} did not finish within {budget}: {said}",
                   list(itertools.islice(unfinished.absent, MAX_NAMED)))


def _listed(world: Sequence[RankFigures], own: RankFigures, slowest: Optional[RankFigures],
            findings: Sequence[Finding]) -> List[RankFigures]:
    wanted = Ranks.of([0, own.rank, *([slowest.rank] if slowest else []),
                       *(rank for finding in findings for rank in finding.ranks)])
    return [world[rank] for rank in wanted if rank < len(world)][:MAX_RANKS_LISTED]


def _as_record(rank: RankFigures) -> records.PreflightRank:
    compute = ComputeVerdict(Compute(rank.compute).name.lower())
    return records.PreflightRank(rank=rank.rank, host=rank.host, compute=compute,
                                 tflops=rank.tflops, busbw_gbps=rank.busbw_gbps,
                                 node_busbw_gbps=rank.node_busbw_gbps)


def _summarise(record: records.Preflight, world: Sequence[RankFigures], own: RankFigures,
               findings: Sequence[Finding]) -> None:
    measured = [(rank.tflops, rank) for rank in world if rank.tflops is not None]
    slowest = min(measured, key=lambda pair: pair[0])[1] if measured else None
    seen_busbw = [rank.busbw_gbps for rank in world if rank.busbw_gbps is not None]
    record.world_size = len(world)
    record.median_tflops = statistics.median(tflops for tflops, _ in measured) if measured else None
    record.busbw_gbps = statistics.median(seen_busbw) if seen_busbw else None
    record.slowest = _as_record(slowest) if slowest else None
    record.ranks = [_as_record(rank) for rank in _listed(world, own, slowest, findings)]
    record.findings = [records.PreflightFinding(kind=f.kind, message=f.message, ranks=f.ranks, against=f.against)
                       for f in findings]
    ring = sorted(node_links.links(world) if node_links.measured_any(world) else [], key=lambda link: (link.gbps is None, link.gbps or 0.0))
    record.links = [records.PreflightLink(ranks=[link.a.leader, link.b.leader], hosts=[link.a.host, link.b.host],
                                          gbps=link.gbps) for link in ring[:MAX_RANKS_LISTED]]
    record.status = status(findings)
