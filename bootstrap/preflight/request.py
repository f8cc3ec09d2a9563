"""What the preflight check is asked (:class:`Request`), when it does not run, and what its record makes the job
do. Kept apart from the check itself, whose modules load only when a check runs: a lone process that skips it
(cpu_debug's default) pays nothing at start-up for the code it does not run."""

from __future__ import annotations

from dataclasses import field
from pathlib import Path
from typing import List, Optional, Tuple

from bootstrap.doors import records
from bootstrap.doors.errors import PRESET_KEY
from bootstrap.doors.lean import lean_dataclass


@lean_dataclass(frozen=True)
class Floors:
    min_tflops: Optional[float] = None
    min_busbw_gbps: Optional[float] = None
    min_node_busbw_gbps: Optional[float] = None


PREFIX = "hydra_train_bootstrap/preflight"
PICTURE = "preflight.png"  # rank 0 draws every rank's figures there, in the job's directory, when the check finds


@lean_dataclass(frozen=True)
class Request:
    """What to check, from ``env.preflight`` and how the job runs."""

    mode: str  # error | warn | off
    seconds: float
    max_skew: float
    floors: Floors = field(default_factory=Floors)
    sizes_mb: Tuple[float, ...] = (1.0,)
    network: Optional[str] = None  # ib | roce | efa | socket | fastrak | tcpx | any; None: NCCL's log is not read
    fabric: str = "none"  # env.fabric.name: its rules judge NCCL's log (bootstrap.preflight.fabric_check)
    fabric_gdr: bool = False  # the fabric expects GPUDirect RDMA on NCCL's network channels
    device: str = "cpu"  # the job's device (cuda:N)
    backend: Optional[str] = None  # the process group's; None: no group
    rank: int = 0
    world_size: int = 1
    node_rank: int = 0
    ranks_here: int = 1  # ranks sharing this rank's device memory (its node's, on a CPU; one a GPU)
    host: str = ""
    nccl_log_dir: Optional[Path] = None  # where the bootstrap pointed NCCL_DEBUG_FILE; None: it did not
    store_key: str = PREFIX  # this check's keys in the group's store (the run, the restart, the check's number)
    key: str = "env"  # the preset's key in messages
    always: bool = False  # measure even a single process with no floor (bootstrap doctor --preflight)
    note: Optional[str] = None  # what the caller left out, for the record (floors meant for another device)
    picture: Optional[Path] = None  # where to draw every rank's figures when the check finds something; None: nowhere

    @property
    def has_floor(self) -> bool:
        return any(value is not None for value in (self.floors.min_tflops, self.floors.min_busbw_gbps,
                                                   self.floors.min_node_busbw_gbps))

    @property
    def grouped(self) -> bool:  # a process group to time the all_reduce over (one rank: algbw only, busbw 0)
        return self.backend is not None

    @property
    def compares(self) -> bool:  # other ranks to compare with
        return self.grouped and self.world_size > 1


def skipped_because(request: Request) -> Optional[str]:
    """Why the check does not run at all, or None."""
    if request.mode == "off":
        return f"{PRESET_KEY}.preflight.mode=off"
    if not (request.compares or request.has_floor or request.network is not None or request.always):
        alone = "one process" if request.world_size == 1 else \
            f"no process group yet (a framework makes it later, or {PRESET_KEY}.distributed.init=never)"
        return (f"{alone} and no floor: nothing to compare with (set {PRESET_KEY}.preflight.min_tflops to check "
                "this machine alone)")
    return None


def planned(request: Request) -> records.Preflight:
    """The record before anything is measured; with its note when the check is skipped."""
    record = records.Preflight(mode=request.mode, budget_s=request.seconds, max_skew=request.max_skew,
                               min_tflops=request.floors.min_tflops, min_busbw_gbps=request.floors.min_busbw_gbps,
                               min_node_busbw_gbps=request.floors.min_node_busbw_gbps,
                               network_expected=request.network)
    why = skipped_because(request)
    if why:
        record.note = "; ".join(filter(None, [request.note, why.replace(PRESET_KEY, request.key)]))
    return record


def capped(record: records.Preflight) -> List[str]:
    """The sizes the check did not measure, and why, and the fabric's risks that NCCL's log does not show (its
    note's parts that say so): warnings of the job."""
    return [part for part in (record.note or "").split("; ")
            if ".preflight.sizes_mb: " in part or part.startswith("fabric: ")]


def stops(record: records.Preflight) -> bool:
    """Does this record stop the job? Under ``error`` any finding does; under ``warn`` only a collective that
    did not finish: a rank that did not take part in the check would leave training waiting for it."""
    if record.status in ("ok", "skipped"):
        return False
    return record.mode == "error" or any(finding.kind == "unfinished" for finding in record.findings)


def message(record: records.Preflight, key: str) -> str:
    lines = [f"preflight: {finding.message}" for finding in record.findings]
    if any(finding.kind == "unfinished" for finding in record.findings):
        fix = "(a rank that did not take part in the check would not take part in training either)"
    else:
        fix = f"(set {key}.preflight.mode=warn to train anyway, and the finding is recorded)"
    return "\n".join(lines) + f"\n{fix}"
