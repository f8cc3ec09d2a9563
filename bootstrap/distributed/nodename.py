"""The name a node goes by: the scheduler's name for it where there is one, with the kernel's host name beside it.

A scheduler knows its nodes by its own names: SLURM by each node's ``NodeName`` in ``slurm.conf``, which slurmd
exports to every task it starts as ``SLURMD_NODENAME`` (``srun`` tasks and the batch script alike; Debian's
slurm-wlm 22.05, tests/cluster). Those names need not be the kernel's: a host ``node3.cluster.local`` is often
SLURM's ``node3``, and ``scontrol update ExcNodeList=node3.cluster.local`` is refused ("Invalid node name").
So everything that names a node to a scheduler or to a person (``exclude.txt``, ``ExcNodeList``, the bad-node
records, the shared list's match at start, ``--exclude`` hints, the reports' hosts, the preflight's and the
watch's messages) uses :func:`node`, and shows :func:`kernel_host` beside it where the two differ.

The other launchers give no scheduler name of their own (torchrun, mpirun, a Kubernetes pod, Ray, Lightning, submitit
outside SLURM): there the kernel's host name is the node's name. A process they start under SLURM (``srun
torchrun``, submitit's SLURM executor) still has ``SLURMD_NODENAME``.
"""

from __future__ import annotations

import os
import re
import socket
from typing import Mapping, Optional

SCHEDULER_VARIABLE = "SLURMD_NODENAME"
# A node's name as SLURM and socket.gethostname() give it: what a shared list, an ExcNodeList and a message take.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}", re.ASCII)


def kernel_host() -> str:
    """The kernel's host name (``socket.gethostname()``)."""
    return socket.gethostname()


def scheduler_name(environ: Mapping[str, str] = os.environ) -> Optional[str]:
    """The scheduler's name for this node (SLURM's ``SLURMD_NODENAME``), or None: none set, or not a node's name
    (a value no scheduler gives is not trusted to name a node)."""
    value = environ.get(SCHEDULER_VARIABLE, "")
    return value if NAME.fullmatch(value) else None


def node(environ: Mapping[str, str] = os.environ) -> str:
    """The node's name for schedulers and people: the scheduler's where there is one, else the kernel's host."""
    return scheduler_name(environ) or kernel_host()
