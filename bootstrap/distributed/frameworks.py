"""What a running framework says about this process: submitit's job, the CPUs Ray assigned, whether this is
a Ray worker. Each asks the framework itself (:mod:`bootstrap.distributed.launcher` reads only the
environment); the session and the launchers' rows call them, and a framework that is not imported is not
imported here either.
"""

from __future__ import annotations

import sys
from typing import Mapping, Optional, Sequence

from bootstrap.doors import outbound
from bootstrap.doors.errors import ConfigError
from bootstrap.doors.lean import lean_dataclass


@lean_dataclass(frozen=True)
class SubmititJob:
    """The fields of ``submitit.JobEnvironment()`` the bootstrap uses."""

    job_id: str
    global_rank: int
    local_rank: int
    num_tasks: int
    num_nodes: int
    hostnames: Sequence[str]
    node: int = 0


def submitit_job(environ: Mapping[str, str]) -> Optional[SubmititJob]:
    """What ``submitit.JobEnvironment()`` reports, inside a submitit job with submitit installed (the
    launcher's ``Hints``). ``SUBMITIT_EXECUTOR`` with a job submitit cannot read (no ``SLURM_JOB_ID``,
    a count that is not one) is evidence that contradicts itself: a ConfigError naming the variables."""
    if not any(name.startswith("SUBMITIT_") for name in environ):
        return None  # not a submitit job: skip importing submitit at all
    try:
        import submitit
    except ImportError:
        return None
    try:
        job = submitit.JobEnvironment()
        return SubmititJob(job_id=str(job.job_id), global_rank=job.global_rank, local_rank=job.local_rank,
                           num_tasks=job.num_tasks, num_nodes=job.num_nodes, hostnames=list(job.hostnames),
                           node=job.node)
    except Exception as error:  # noqa: BLE001 - submitit reads its variables with os.environ[...] and int()
        if "SUBMITIT_EXECUTOR" not in environ:  # another SUBMITIT_* of the user's own (a preemption signal)
            return None
        what = f"{outbound.shown(error.args[0])} is not set" if isinstance(error, KeyError) and error.args else \
            f"{type(error).__name__}: {outbound.finding(error, 200)}"
        raise ConfigError(f"SUBMITIT_EXECUTOR={outbound.shown(environ['SUBMITIT_EXECUTOR'])} says submitit started "
                          f"this process, but submitit cannot read its job ({what}). Unset SUBMITIT_EXECUTOR where it "
                          "leaked from a submitit job's environment, or start the job through submitit.") from None


def ray_assigned_cpus() -> Optional[int]:
    """The CPUs Ray assigned this worker (its resources), where it says."""
    if "ray" not in sys.modules:  # never imported here: a job in a Ray worker has it imported already
        return None
    try:
        cpus = sys.modules["ray"].get_runtime_context().get_assigned_resources().get("CPU")
    except Exception:  # noqa: BLE001 - not inside a worker after all, or another Ray version's API
        return None
    return max(1, int(cpus)) if cpus else None


def in_ray_worker() -> bool:
    """Is this a Ray worker process? Ray counts a worker that exits as crashed and re-runs it
    (see ``errors.JobRefused``)."""
    ray = sys.modules.get("ray")
    try:
        return ray is not None and ray.is_initialized() and \
            ray.get_runtime_context().worker.mode == ray.WORKER_MODE
    except Exception:  # noqa: BLE001 - a Ray too different to ask: behave as outside Ray
        return False
