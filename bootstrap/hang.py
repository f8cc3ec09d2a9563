"""``python -m bootstrap hang RUN_DIR``: what the ranks' flight-recorder dumps say about a hang.

Each rank's dump (:mod:`bootstrap.flightrec` writes ``<dir>/comm_lib_trace_rank_<rank>``, the
name torch itself uses) lists the collectives the rank entered, per process group, by sequence
id. :func:`diagnose` compares the ranks and says, for each group, the last collective every
rank entered, the ranks that never entered the next one, and what the others were waiting in
and for how long:

    rank 1 never entered collective #2 (all_reduce on default_pg); rank 0 waited in it for 600.0 s

Mismatches (ranks in the same collective with different operations, sizes or dtypes) come from
torch's own analyser (``torch.distributed.flight_recorder``), given the same dumps. What this
module adds to it: the waiting time (gloo records no start or end, so it is the dump's time
less the entry's), the last collective in common, ranks whose dump is missing, one sentence
per finding, and dumps read without running pickled code. Pure, apart from reading files.

Exit status: 0 when the dumps show no divergence, 1 when they do, 2 when there are no dumps
or the usage is wrong.
"""

from __future__ import annotations

import argparse
import json
import logging
import pickle
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

DUMP_PREFIX = "comm_lib_trace_rank_"  # torch's own, so its analyser (torchfrtrace) reads a run directory too
MAX_DUMP_BYTES = 256 * 2**20


class _DataOnly(pickle.Unpickler):
    """Plain data only: a dump found on disk must not run code when it is read."""

    def find_class(self, module: str, name: str):
        raise pickle.UnpicklingError(f"a dump holds only plain data, not {module}.{name}")


def load(path: Path) -> Optional[dict]:
    """One rank's dump as a dict; None when the file is not a dump (unreadable, not plain data, wrong shape)."""
    try:
        if path.stat().st_size > MAX_DUMP_BYTES:
            return None
        with open(path, "rb") as f:
            dump = _DataOnly(f).load()
    except Exception:  # noqa: BLE001 - a hostile or half-written file is simply not a dump
        return None
    if not isinstance(dump, dict) or not isinstance(dump.get("entries", []), list):
        return None
    return dump


def find_dumps(run_dir: Path) -> Dict[int, Path]:
    """``{rank: path}`` of the dumps directly in ``run_dir``."""
    found = {}
    for path in Path(run_dir).glob(f"{DUMP_PREFIX}*"):
        suffix = path.name[len(DUMP_PREFIX):]
        if suffix.isdigit() and path.is_file():
            found[int(suffix)] = path
    return dict(sorted(found.items()))


@dataclass
class Diagnosis:
    """What the dumps of one run show."""

    ranks: List[int]  # ranks with a readable dump
    world_size: Optional[int]
    findings: List[str] = field(default_factory=list)  # one sentence each; empty: no divergence
    groups: List[str] = field(default_factory=list)  # one line per process group: the last collective in common

    @property
    def hang(self) -> Optional[str]:
        """The findings as one line, for a report and torchrun's summary."""
        return "; ".join(self.findings) or None

    def as_dict(self) -> dict:
        return {"ranks": self.ranks, "world_size": self.world_size, "finding": self.hang, "findings": self.findings,
                "groups": self.groups}


def _op(entry: dict) -> str:
    name = str(entry.get("profiling_name") or "?")
    return name.split(":", 1)[-1]  # "gloo:all_reduce", "nccl:all_reduce" -> "all_reduce"


def _group_names(dumps: Dict[int, dict]) -> Dict[str, Tuple[str, Optional[List[int]]]]:
    """group name -> (description, member ranks if the dumps say)."""
    names: Dict[str, Tuple[str, Optional[List[int]]]] = {}
    for dump in dumps.values():
        for entry in dump.get("entries", []):
            group = entry.get("process_group")
            if isinstance(group, (list, tuple)) and len(group) == 2:
                config = (dump.get("pg_config") or {}).get(str(group[0])) or {}
                members = config.get("ranks")
                ranks = json.loads(members) if isinstance(members, str) and members.startswith("[") else members
                names.setdefault(str(group[0]), (str(group[1]), ranks if isinstance(ranks, list) else None))
    return names


def _ranks_text(ranks: List[int]) -> str:
    return f"rank {ranks[0]}" if len(ranks) == 1 else "ranks " + ", ".join(map(str, ranks))


def diagnose(dumps: Dict[int, dict], world_size: Optional[int] = None) -> Diagnosis:
    """Compare the ranks' dumps (``{rank: dump}``) process group by process group."""
    world_size = world_size or next((d.get("bootstrap", {}).get("world_size") for d in dumps.values()
                                     if isinstance(d.get("bootstrap"), dict)), None)
    result = Diagnosis(ranks=sorted(dumps), world_size=world_size)
    if world_size:
        absent = sorted(set(range(world_size)) - set(dumps))
        if absent:
            result.findings.append(f"no dump from {_ranks_text(absent)}: it ended without one (killed with SIGKILL, "
                                   "or crashed inside a collective)")
    for group, (desc, members) in sorted(_group_names(dumps).items()):
        ranks = [r for r in (members or sorted(dumps)) if r in dumps]
        seen = {r: {e["collective_seq_id"]: e for e in dumps[r].get("entries", [])
                    if isinstance(e, dict) and str((e.get("process_group") or ("",))[0]) == group
                    and isinstance(e.get("collective_seq_id"), int) and not e.get("is_p2p")} for r in ranks}
        last = {r: max(entries, default=0) for r, entries in seen.items()}
        common = min(last.values(), default=0)
        label = desc if desc and desc != "undefined" else f"group {group}"
        common_op = _op(seen[ranks[0]][common]) if ranks and common in seen[ranks[0]] else None
        result.groups.append(f"{label} ({_ranks_text(ranks)}): last collective every rank entered: "
                             + (f"#{common} ({common_op})" if common_op else f"#{common}"))
        ahead = [r for r in ranks if last[r] > common]
        if ahead:
            behind = [r for r in ranks if last[r] == common]
            entry = seen[ahead[0]][common + 1] if common + 1 in seen[ahead[0]] else None
            waited = _waited(dumps[ahead[0]], entry)
            result.findings.append(
                f"{_ranks_text(behind)} never entered collective #{common + 1} "
                f"({_op(entry) if entry else '?'} on {label}); {_ranks_text(ahead)} "
                f"waited in it{f' for {waited:.1f} s' if waited is not None else ''}")
    result.findings.extend(_mismatches(dumps))
    return result


def _waited(dump: dict, entry: Optional[dict]) -> Optional[float]:
    """How long the rank had been in ``entry`` when it dumped (gloo records no end)."""
    info = dump.get("bootstrap") if isinstance(dump.get("bootstrap"), dict) else {}
    created, dumped = (entry or {}).get("time_created_ns"), info.get("dump_time_ns")
    if isinstance(created, int) and isinstance(dumped, int) and dumped >= created:
        return (dumped - created) / 1e9
    return None


def _mismatches(dumps: Dict[int, dict]) -> List[str]:
    """Collectives whose ranks disagree on the operation, sizes or dtypes: torch's analyser's verdicts."""
    if len(dumps) < 2:
        return []
    details = {f"{DUMP_PREFIX}{rank}": {"rank": rank, "entries": d.get("entries", []), "version": d.get("version"),
                                        "pg_config": d.get("pg_config") or {}} for rank, d in dumps.items()}
    try:
        # Its logger prints to stderr (even a warning while it is imported): keep it quiet.
        from torch.distributed.flight_recorder.components.fr_logger import FlightRecorderLogger

        analyser_log = FlightRecorderLogger().logger
        saved = (analyser_log.handlers[:], analyser_log.propagate)
        analyser_log.handlers, analyser_log.propagate = [logging.NullHandler()], False
        try:
            from torch.distributed.flight_recorder.components.builder import build_db
            from torch.distributed.flight_recorder.components.config_manager import JobConfig

            db = build_db(details, JobConfig().parse_args([".", "--allow-incomplete-ranks"]),
                          details[next(iter(details))]["version"])
        finally:
            analyser_log.handlers, analyser_log.propagate = saved
    except Exception:  # noqa: BLE001 - no analyser in this torch, or dumps it cannot read: no verdict
        return []
    found = []
    for collective in db.collectives:
        if not collective.mismatch_collectives:
            continue
        kind = getattr(getattr(next(iter(collective.mismatch_collectives.values())), "type_of_mismatch", None),
                       "state", None)
        what = {"COLLECTIVE_TYPE_MISMATCH": "operation", "SIZE_OR_SYNTAX_MISMATCH": "sizes",
                "COLLECTIVE_DTYPE_MISMATCH": "dtypes"}.get(getattr(kind, "name", ""), "state")
        group = collective.pg_desc.split(":", 1)[0]
        sides = [f"rank {rank} {_op(e)} {e.get('input_sizes')} {e.get('input_dtypes')}"
                 for rank, dump in sorted(dumps.items()) for e in dump.get("entries", [])
                 if e.get("collective_seq_id") == collective.collective_seq_id
                 and str((e.get("process_group") or ("",))[0]) == group]
        found.append(f"collective #{collective.collective_seq_id} on {collective.pg_desc.split(':', 1)[-1]}: the "
                     f"ranks disagree on the {what}: {', '.join(sides)}")
    return found


def diagnose_dir(run_dir: Path) -> Tuple[Diagnosis, Dict[int, Path]]:
    """The diagnosis of the dumps in ``run_dir``, and where they are."""
    paths = find_dumps(run_dir)
    dumps = {rank: dump for rank, path in paths.items() if (dump := load(path)) is not None}
    return diagnose(dumps), paths


def findings(run_dir: Path) -> dict:
    """What the dumps in ``run_dir`` show, as the report's ``distributed.hang`` (``dumps``: their names)."""
    diagnosis, paths = diagnose_dir(run_dir)
    return {"dump_dir": str(run_dir), "dumps": [p.name for p in paths.values()], **diagnosis.as_dict()}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="bootstrap hang", description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path, help="the job's output directory, which holds the ranks' dumps")
    parser.add_argument("--json", action="store_true", help="print the diagnosis as JSON")
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else 2
    if not args.run_dir.is_dir():
        print(f"bootstrap hang: {args.run_dir}: no such directory.", file=sys.stderr)
        return 2
    diagnosis, paths = diagnose_dir(args.run_dir)
    if not diagnosis.ranks:
        print(f"bootstrap hang: {args.run_dir} holds no flight-recorder dump ({DUMP_PREFIX}<rank>). The bootstrap "
              "writes one per rank when a job under a process group fails, times out or gets SIGTERM.",
              file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({**diagnosis.as_dict(), "dumps": [str(p) for p in paths.values()]}, indent=2))
    else:
        print(f"bootstrap hang: {args.run_dir} (dumps from {_ranks_text(diagnosis.ranks)})")
        print("\n".join(f"  {line}" for line in diagnosis.groups))
        print("\n".join(f"  {line}" for line in diagnosis.findings) or "  no divergence between the ranks")
    return 1 if diagnosis.findings else 0
