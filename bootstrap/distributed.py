"""The parts of multi-process start-up that touch the process: the submitit query,
the process group, the device mesh, and teardown. Detection itself is pure
(``bootstrap.launcher``); shape rules too (``bootstrap.mesh``).
"""

from __future__ import annotations

import datetime
import os
import time
from dataclasses import dataclass
from typing import Dict, Mapping, MutableMapping, Optional, Tuple

import torch
import torch.distributed as dist

from bootstrap.launcher import Launch, SubmititJob


def submitit_job(environ: Mapping[str, str]) -> Optional[SubmititJob]:
    """What ``submitit.JobEnvironment()`` reports, inside a submitit job with submitit installed."""
    if not any(name.startswith("SUBMITIT_") for name in environ):
        return None  # not a submitit job: skip importing submitit at all
    try:
        import submitit
    except ImportError:
        return None
    try:
        job = submitit.JobEnvironment()
    except RuntimeError:  # submitit finds no job environment
        return None
    return SubmititJob(job_id=str(job.job_id), global_rank=job.global_rank, local_rank=job.local_rank,
                       num_tasks=job.num_tasks, num_nodes=job.num_nodes, hostnames=list(job.hostnames))


def export_rendezvous(launch: Launch, environ: MutableMapping[str, str] = os.environ) -> None:
    """Give torch's env:// rendezvous (and user code) the torchrun-style variables.

    torchrun sets them itself; for submitit and srun the bootstrap does, and restores
    them with the rest of the environment at job end.
    """
    if not launch.exports_rendezvous:
        return
    environ.update({
        "RANK": str(launch.rank), "LOCAL_RANK": str(launch.local_rank), "WORLD_SIZE": str(launch.world_size),
        "LOCAL_WORLD_SIZE": str(launch.local_world_size),
        "MASTER_ADDR": launch.master_addr or "127.0.0.1", "MASTER_PORT": str(launch.master_port),
    })


@dataclass
class ProcessGroup:
    """What the bootstrap did about torch.distributed, and so what it must undo."""

    state: str  # "created" | "existing" | "none"
    mesh: object = None  # torch.distributed.device_mesh.DeviceMesh

    def teardown(self) -> None:
        # Only a group this session created: the user's own is theirs to destroy.
        if self.state == "created" and dist.is_initialized():
            dist.destroy_process_group()
        self.mesh = None


def group_in_use(made_here: bool) -> Optional[dict]:
    """The default process group as it stands now, or None: who made it, backend, size and rank.

    At job end this records a group that a framework (Lightning, Ray) or the task made itself.
    """
    if not (dist.is_available() and dist.is_initialized()):
        return None
    return {"owner": "bootstrap" if made_here else "framework", "backend": str(dist.get_backend()),
            "world_size": dist.get_world_size(), "rank": dist.get_rank()}


def start(launch: Launch, backend: str, timeout_s: int, device: str, mesh_shape: Optional[Dict[str, int]],
          create: bool) -> ProcessGroup:
    """Create the process group (or adopt an existing one) and build the mesh."""
    if device.startswith("cuda"):
        # Before init_process_group: NCCL binds each rank's communicator to the current device.
        torch.cuda.set_device(torch.device(device))
    if dist.is_available() and dist.is_initialized():
        group = ProcessGroup("existing")
    elif create:
        # A 1-rank group needs no rendezvous: an in-memory store, no port to pick.
        kwargs = {"store": dist.HashStore()} if launch.world_size == 1 else {"init_method": "env://"}
        if device.startswith("cuda"):
            kwargs["device_id"] = torch.device(device)  # NCCL starts eagerly, not at the first collective
        dist.init_process_group(backend=backend, rank=launch.rank, world_size=launch.world_size,
                                timeout=datetime.timedelta(seconds=timeout_s), **kwargs)
        group = ProcessGroup("created")
    else:
        return ProcessGroup("none")
    if mesh_shape:
        from torch.distributed.device_mesh import init_device_mesh

        try:
            group.mesh = init_device_mesh(device.split(":")[0], tuple(mesh_shape.values()),
                                          mesh_dim_names=tuple(mesh_shape))
        except BaseException:
            group.teardown()  # a group made here must not outlive a failed start
            raise
    return group


def agree_on_run_dir(run_dir: str, environ: Mapping[str, str] = os.environ, timeout_s: int = 300) -> str:
    """Under torchrun, return rank 0's run directory on every rank.

    Every rank runs Hydra and resolves ``${now:...}`` from its own clock, so ranks
    can land in different directories. torchrun's agent hosts a store that its
    workers may use (TORCHELASTIC_USE_AGENT_STORE): rank 0 publishes its directory
    there, keyed by the run id and restart count, and the others read it.
    """
    if environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True" or int(environ.get("WORLD_SIZE", "1")) <= 1:
        return run_dir
    store = dist.TCPStore(environ["MASTER_ADDR"], int(environ["MASTER_PORT"]), is_master=False,
                          timeout=datetime.timedelta(seconds=timeout_s))
    key = (f"hydra_train_bootstrap/{environ.get('TORCHELASTIC_RUN_ID', '')}/"
           f"{environ.get('TORCHELASTIC_RESTART_COUNT', '0')}/run_dir")
    if environ.get("RANK") == "0":
        store.set(key, run_dir)
        return run_dir
    return store.get(key).decode()  # waits until rank 0 has set it


FIRST_FAILURE_KEY = "hydra_train_bootstrap/first_failure"


def claim_first_failure(rank: int, error: str) -> Tuple[int, int, str]:
    """Record this rank's failure in the group's store unless another rank's came first.

    Returns the first failure as (rank, unix time, message). When one rank's task
    raises and tears down its group, its peers fail next inside a collective; the
    store tells them, and the user, which rank started it.
    """
    mine = f"{rank}|{int(time.time())}|{error}"
    try:
        store = dist.distributed_c10d._get_default_store()
        first = store.compare_set(FIRST_FAILURE_KEY, "", mine).decode()
    except (RuntimeError, ValueError, AttributeError):  # no store, or it went away with a peer
        first = mine
    first_rank, first_time, message = first.split("|", 2)
    return int(first_rank), int(first_time), message


def write_elastic_error_file(message: str, timestamp: int, environ: Mapping[str, str] = os.environ) -> None:
    """Write torch elastic's error file (TORCHELASTIC_ERROR_FILE), in the format torchrun reads.

    torchrun names as root cause the failure with the smallest timestamp. Timestamps
    are whole seconds and ties go to the lowest rank, so a rank that failed only
    because a peer did is written one second after that peer: the summary then names
    the rank whose task raised.
    """
    path = environ.get("TORCHELASTIC_ERROR_FILE")
    if not path:
        return
    import json

    record = {"message": {"message": message, "extraInfo": {"py_callstack": message, "timestamp": str(timestamp)}}}
    with open(path, "w") as f:
        json.dump(record, f)
