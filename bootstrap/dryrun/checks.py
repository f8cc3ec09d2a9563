"""What ``bootstrap dryrun`` checks across ranks, tallied one rank at a time in bounded memory: findings (one line, the ranks by range, the fix), and the scale figures of a world of N ranks. Pure.

A :class:`Tally` takes each rank's start-up as the dry run plans it (:meth:`Tally.add`) and keeps only
spans of ranks, one fingerprint per distinct digest (at most :data:`MAX_DIGESTS`), and a sum per node,
so that 16,384 ranks cost what a few do. :meth:`Tally.findings` then says what would go wrong.
"""

from __future__ import annotations

import re
from array import array
from typing import Dict, List, Mapping, Optional, Tuple

from bootstrap.core import comparison
from bootstrap.distributed import mesh as meshes
from bootstrap.distributed import seeding
from bootstrap.distributed.ranks import Ranks
from bootstrap.doors.errors import PRESET_KEY
from bootstrap.doors.lean import lean_dataclass

MAX_DIGESTS = 16  # distinct fingerprints kept whole; further ones are counted with the last kept
MAX_KEYS_SAID = 6  # differing keys a finding names


@lean_dataclass(frozen=True)
class Finding:
    """One thing that would go wrong: its kind, the ranks it concerns, what it is, and the fix."""

    kind: str  # ranks | mesh | fingerprint | threads | seed | devices | nodelist | plan
    ranks: str  # "ranks 8-15", "every rank"
    what: str
    fix: str

    def line(self) -> str:
        return f"{self.kind}: {self.ranks}: {self.what} Fix: {self.fix}"

    def as_dict(self) -> Dict[str, str]:
        return {"kind": self.kind, "ranks": self.ranks, "what": self.what, "fix": self.fix}


class _Spans:
    """Ranks added in increasing order, kept as spans."""

    def __init__(self) -> None:
        self.starts, self.stops, self.count = array("q"), array("q"), 0

    def add(self, rank: int) -> None:
        if self.stops and self.stops[-1] == rank:
            self.stops[-1] += 1
        else:
            self.starts.append(rank)
            self.stops.append(rank + 1)
        self.count += 1

    def ranks(self) -> Ranks:
        return Ranks(self.starts, self.stops, self.count)

    def text(self, world: int) -> str:
        return "every rank" if self.count == world and world > 1 else self.ranks().text()


class Tally:
    """The cross-rank checks of one world, fed rank by rank in order."""

    def __init__(self, world: int, nodes: int, per_node: int, seed: Optional[int], per_rank_data_seed: bool,
                 cpus_per_node: Optional[int], gpus_per_node: Optional[int], uses_gpus: bool,
                 threads_auto: bool = False):
        self.world, self.nodes, self.per_node = world, nodes, per_node
        self.seed, self.per_rank_data_seed = seed, per_rank_data_seed
        self.cpus_per_node, self.gpus_per_node, self.uses_gpus = cpus_per_node, gpus_per_node, uses_gpus
        self.threads_auto = threads_auto  # the preset's intra_op is auto already: advising it would repeat it
        self.refused: Dict[str, _Spans] = {}  # a start-up refused: its (first) message -> ranks
        self.refused_as: Dict[str, str] = {}  # a message with its numbers blanked -> the first such message
        self.refusals_over = 0  # ranks refused in more ways than are kept
        self.misplaced: Dict[str, _Spans] = {}  # a launch that is not the rank asked for: what -> ranks
        self.seen = bytearray(world)
        self.duplicates = _Spans()
        self.reference: Optional[Tuple[str, Dict[str, str]]] = None  # rank 0's compared part: (digest, it)
        self.differ: Dict[Tuple[str, ...], Tuple[Dict[str, str], _Spans]] = {}  # keys that differ -> (first, ranks)
        self.full_prints: Dict[str, Tuple[Dict[str, str], _Spans]] = {}  # digest -> (the whole fingerprint, ranks)
        self.digests_over = 0  # ranks whose digest was one too many to keep
        self.node_threads = array("q", [0]) * nodes  # intra_op summed over each node's ranks
        self.seed_wrong = _Spans()
        self.no_gpu = _Spans()
        self.mesh: Optional[Dict[str, int]] = None
        self.lightning_rank0 = False  # rank 0 plans as one process (Lightning): the world starts at rank 1
        self._last: Optional[Tuple[Dict[str, str], str]] = None  # the last fingerprint digested, and its digest

    def refuse(self, rank: int, message: str) -> None:
        """A rank whose start-up is refused. Messages that differ only in numbers (``RANK=3``) are one finding,
        said with the first rank's message; at most :data:`MAX_DIGESTS` kinds are kept, the rest counted."""
        shape = re.sub(r"\d+", "#", message)
        kept = self.refused_as.get(shape)
        if kept is None:
            if len(self.refused) >= MAX_DIGESTS:
                self.refusals_over += 1
                return
            kept = self.refused_as[shape] = message
        self.refused.setdefault(kept, _Spans()).add(rank)

    def add(self, rank: int, launch: object, plan: object, prints: Mapping[str, str], compared: Mapping[str, str],
            single_first: bool = False) -> None:
        """One rank's launch and plan, its fingerprint (``compared``: the part the ranks compare)."""
        node, local = divmod(rank, self.per_node)
        got = (launch.rank, launch.local_rank, launch.node_rank, launch.world_size,  # type: ignore[attr-defined]
               launch.local_world_size)  # type: ignore[attr-defined]
        wanted = (0, 0, 0, 1, 1) if single_first else (rank, local, node, self.world, self.per_node)
        if got != wanted:
            what = ", ".join(f"{name} {g} (expected {w})" for name, g, w in zip(
                ("rank", "local rank", "node", "world size", "ranks per node"), got, wanted, strict=True) if g != w)
            self.misplaced.setdefault(what, _Spans()).add(rank)
        if not single_first:
            if self.seen[launch.rank]:  # type: ignore[attr-defined]
                self.duplicates.add(rank)
            self.seen[launch.rank] = 1  # type: ignore[attr-defined]
        self.lightning_rank0 = self.lightning_rank0 or single_first
        if plan.mesh and self.mesh is None:  # type: ignore[attr-defined]
            self.mesh = dict(plan.mesh)  # type: ignore[attr-defined]
        self.node_threads[node] += plan.threads.intra_op  # type: ignore[attr-defined]
        self._seeds(rank, plan, single_first)
        if self.uses_gpus and self.gpus_per_node is not None and local >= self.gpus_per_node:
            self.no_gpu.add(rank)
        digest = self._digest(prints)  # once: the whole fingerprint's, the compared part's where it is all of it
        self._compare(rank, compared, digest if compared is prints else self._digest(compared))
        self._fingerprint(self.full_prints, rank, prints, digest)

    def _digest(self, prints: Mapping[str, str]) -> str:
        """``comparison.digest``, kept for the last fingerprint: most ranks' are equal to the rank's before."""
        if self._last is None or self._last[0] != prints:
            self._last = (dict(prints), comparison.digest(prints))
        return self._last[1]

    def _seeds(self, rank: int, plan: object, single_first: bool) -> None:
        """docs/distributed.md: global seed = seed + 100 * pp_rank; data seed = seed + rank (seed_offset: rank)."""
        if self.seed is None:
            return
        shape = {} if single_first else (self.mesh or {})
        pp = meshes.coordinate(rank, shape, "pp")
        own = 0 if single_first else rank
        wanted = (seeding.global_seed(self.seed, pp), self.seed + own if self.per_rank_data_seed else self.seed)
        if (plan.global_seed, plan.data_seed) != wanted:  # type: ignore[attr-defined]
            self.seed_wrong.add(rank)

    def _compare(self, rank: int, compared: Mapping[str, str], digest: str) -> None:
        """Against rank 0's, as the job compares (agree_store: every rank with rank 0); ranks grouped by the keys
        that differ, so that one per-rank value over 16k ranks is one finding."""
        if self.reference is None:
            self.reference = (digest, dict(compared))
            return
        if digest == self.reference[0]:
            return
        reference = self.reference[1]
        keys = tuple(sorted(key for key in reference.keys() | compared.keys() if reference.get(key) != compared.get(key)))
        kept = self.differ.get(keys)
        if kept is None and len(self.differ) >= MAX_DIGESTS:
            self.digests_over += 1
            return
        if kept is None:
            kept = self.differ[keys] = (dict(compared), _Spans())
        kept[1].add(rank)

    def _fingerprint(self, kept_by_digest: Dict[str, Tuple[Dict[str, str], _Spans]], rank: int,
                     prints: Mapping[str, str], digest: str) -> None:
        kept = kept_by_digest.get(digest)
        if kept is None and len(kept_by_digest) >= MAX_DIGESTS:
            return
        if kept is None:
            kept = kept_by_digest[digest] = (dict(prints), _Spans())
        kept[1].add(rank)

    # -- the findings --------------------------------------------------------------------------------
    def findings(self) -> List[Finding]:
        found = [Finding("mesh" if ".distributed.mesh" in message else "plan", spans.text(self.world), message,
                         "the message says it; the job would stop the same way on these ranks.")
                 for message, spans in self.refused.items()]
        if self.refusals_over:
            found.append(Finding("plan", f"{self.refusals_over} more ranks", f"are refused in more than {MAX_DIGESTS} "
                                 "ways; the first are named above.", "fix those first."))
        found += [Finding("ranks", spans.text(self.world), f"the launcher's variables give {what}.",
                          "check --nodes/--ranks-per-node against the launcher's own numbering.")
                  for what, spans in self.misplaced.items()]
        if self.duplicates.count:
            found.append(Finding("ranks", self.duplicates.text(self.world), "share a global rank with an earlier rank.",
                                 "every rank needs its own RANK: check the launcher's numbering."))
        found += self._fingerprint_findings()
        found += self._thread_findings()
        if self.seed_wrong.count:
            found.append(Finding("seed", self.seed_wrong.text(self.world), "plan seeds other than docs/distributed.md "
                                 "defines (global seed + 100 * pp_rank, data seed + rank).",
                                 "report it: the plan and the seeding policy disagree."))
        if self.no_gpu.count:
            found.append(Finding("devices", self.no_gpu.text(self.world), f"have no GPU: {self.per_node} ranks per node "
                                 f"against --gpus-per-node {self.gpus_per_node} (the local rank is the device).",
                                 f"run at most {self.gpus_per_node} ranks per node, or ask for nodes with more GPUs."))
        return found

    def _fingerprint_findings(self) -> List[Finding]:
        if self.reference is None:
            return []
        reference = self.reference[1]
        out = []
        for differing, (prints, spans) in self.differ.items():
            keys = sorted(differing, key=lambda key: (comparison.kind_of(key) not in comparison.STOPPING, key))
            said = ", ".join(f"{comparison.label(key)} ({comparison.kind_of(key)}): "
                             f"{comparison.shown(key, prints.get(key))} against rank 0's "
                             f"{comparison.shown(key, reference.get(key))}" for key in keys[:MAX_KEYS_SAID])
            more = f" and {len(keys) - MAX_KEYS_SAID} more" if len(keys) > MAX_KEYS_SAID else ""
            first = "" if spans.count == 1 else f" (the first of them: rank {spans.starts[0]})"
            out.append(Finding("fingerprint", spans.text(self.world), f"would start unlike rank 0{first}: {said}{more}.",
                               "set the value the same on every rank (a per-rank value from ${oc.env:RANK} or "
                               "an interpolation of the rank makes the ranks differ)."))
        if self.digests_over:
            out.append(Finding("fingerprint", f"{self.digests_over} more ranks", f"differ from rank 0 in more than "
                               f"{MAX_DIGESTS} ways; the first {MAX_DIGESTS} are named above.", "fix those first."))
        return out

    def _thread_findings(self) -> List[Finding]:
        if self.cpus_per_node is None:
            return []
        over = [(node, total) for node, total in enumerate(self.node_threads) if total > self.cpus_per_node]
        if not over:
            return []
        node, total = max(over, key=lambda item: item[1])
        nodes = Ranks.of(n for n, _ in over)
        start = node * self.per_node
        ranks = "every rank" if len(over) == self.nodes and self.world > 1 else \
            Ranks.span(start, start + self.per_node).text() + \
            (f" (and the ranks of {len(over) - 1} more nodes)" if len(over) > 1 else "")
        return [Finding("threads", ranks,
                        f"node{'s' if len(nodes) > 1 else ''} {nodes.text().removeprefix('ranks ').removeprefix('rank ')}"
                        f" would run {total} intra-op threads on {self.cpus_per_node} CPUs ({total / self.cpus_per_node:.2g}x"
                        " oversubscribed).", self._thread_fix())]

    def _thread_fix(self) -> str:
        """A fix that removes the finding: never the setting the preset has already, never a count that gives the
        same finding again (one thread each is already too many when the ranks outnumber the CPUs)."""
        cpus, per_node = self.cpus_per_node or 1, self.per_node
        if per_node > cpus:
            return (f"run at most {cpus} ranks per node (--ranks-per-node {cpus}, more nodes), or ask for nodes with "
                    f"at least {per_node} CPUs: even one intra-op thread each runs {per_node} threads on {cpus} CPUs.")
        count = f"set {PRESET_KEY}.threads.intra_op={cpus // per_node} ({cpus} CPUs / {per_node} ranks)"
        return f"{count}." if self.threads_auto else f"{count}, or {PRESET_KEY}.threads.intra_op=auto."


def nodelist_findings(given: Optional[int], nodes: int, nodelist: Optional[str]) -> List[Finding]:
    """A --nodelist that names more nodes than --nodes: SLURM refuses the job at submission."""
    if given is None or given <= nodes:
        return []
    return [Finding("nodelist", "every rank", f"--nodelist {nodelist!r} names {given} nodes for --nodes {nodes}: "
                    "SLURM refuses it (\"Required nodelist includes more nodes than permitted\"); the dry run "
                    f"planned the first {nodes}.", f"ask for --nodes {given}, or name {nodes} nodes.")]


def mesh_findings(shape: Mapping[str, int], per_node: int, nodes: int) -> List[Finding]:
    """A dimension whose groups would span nodes where it should not (tp, cp: every step's collectives)."""
    out = []
    inner = 1
    for name in reversed(list(shape)):
        inner *= shape[name]
        if name in ("tp", "cp", "ep") and nodes > 1 and inner > per_node and shape[name] > 1:
            out.append(Finding("mesh", "every rank", f"dimension {name}({shape[name]}) spans nodes: the ranks of one "
                               f"{name} group are {inner // shape[name]} apart, over {per_node} ranks per node.",
                               f"put {name} last in {PRESET_KEY}.distributed.mesh and at most {per_node} wide."))
    return out
