"""One multi-node job on the cluster, launched two ways: torchrun's c10d rendezvous with one agent per node,
or ``srun`` on the real SLURM; each rank's report read back from the one run directory they share.

What differs between nodes (an exported variable, an extra package) comes from a per-node profile,
``<dir>/<hostname>.env``, which a wrapper sources before the rank starts: the same under both launchers,
as a node's image or shell profile would be on a real cluster.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence

from cluster.netns import Cluster
from cluster.slurm import Slurm

RDZV_PORT = 29500
WRAPPER = """#!/bin/sh
# the node's profile, if it has one: what this node exports that the others do not
profile="{profiles}/$(hostname).env"
[ -f "$profile" ] && . "$profile"
exec "$@"
"""


@dataclass
class Finished:
    where: str  # the node (torchrun) or "srun"
    returncode: int
    output: str  # all of it: the ranks' and, under torchrun, the node's agent's
    seconds: float
    ranks_output: str  # the ranks' own (under srun, all of it: there is no agent)


def profiles(work: Path, exports: Mapping[str, Mapping[str, str]]) -> Path:
    """Write each node's profile (``{"node2": {"NCCL_ALGO": "Tree"}}``) and the wrapper that reads it."""
    folder = work / "profiles"
    folder.mkdir(parents=True, exist_ok=True)
    for node, variables in exports.items():
        (folder / f"{node}.env").write_text("".join(f"export {k}='{v}'\n" for k, v in variables.items()))
    wrapper = folder / "on_node.sh"
    wrapper.write_text(WRAPPER.format(profiles=folder))
    wrapper.chmod(0o755)
    return wrapper


def torchrun(cluster: Cluster, script: Sequence[str], *, work: Path, env: Mapping[str, str],
             exports: Optional[Mapping[str, Mapping[str, str]]] = None, nproc: int = 1, timeout: float = 300,
             during=None) -> List[Finished]:
    """``torchrun --nnodes=N`` on every node (c10d rendezvous at node1), ``script`` run by each rank through the
    node's profile; ``during(processes)`` runs once every agent has started (a test cuts a link there)."""
    wrapper = profiles(work, exports or {})
    n = len(cluster.nodes)
    agents: Dict[str, subprocess.Popen] = {}
    started = time.monotonic()
    for node in cluster.nodes:
        argv = [sys.executable, "-m", "torch.distributed.run", f"--nnodes={n}", f"--nproc_per_node={nproc}",
                "--rdzv_backend=c10d", f"--rdzv_endpoint={cluster.nodes[0].address}:{RDZV_PORT}",
                "--rdzv_id=cluster-job", "--max_restarts=0", "--tee=3", f"--log-dir={_log_dir(work, node.name)}",
                "--no-python", str(wrapper), *script]
        agents[node.name] = _start(cluster, node, argv, env, work, node.name)
    if during is not None:
        during(agents)
    return [_finish(name, process, work, started, timeout, _log_dir(work, name))
            for name, process in agents.items()]


def _log_dir(work: Path, node: str) -> Path:
    # torchrun --tee: each rank's stdout and stderr to a file here as well as to the console. The console also
    # holds the agent's own output, which is torchrun's: when a failed job's agents close the c10d rendezvous,
    # the agent that hosts its store may leave first, and another's close (TCPStore::compareSet) then prints
    # c10's DistNetworkError with C++ frames before dynamic_rendezvous.py's "has failed to shutdown the
    # rendezvous" warning (torch 2.13; seen in CI on 2026-12-06; a cousin of pytorch/pytorch#194871). A check of
    # what the ranks print reads these files
    return work / "torchrun-logs" / node


def srun(slurm: Slurm, script: Sequence[str], *, work: Path, env: Mapping[str, str],
         exports: Optional[Mapping[str, Mapping[str, str]]] = None, ntasks_per_node: int = 1,
         timeout: float = 300, during=None) -> List[Finished]:
    """``srun -N<nodes> --ntasks-per-node=K`` from the head, each task through its node's profile."""
    wrapper = profiles(work, exports or {})
    n = len(slurm.cluster.nodes)
    argv = ["srun", f"-N{n}", f"--ntasks-per-node={ntasks_per_node}", "--kill-on-bad-exit=0", str(wrapper), *script]
    started = time.monotonic()
    process = _start(slurm.cluster, slurm.cluster.head, argv, {**env, **slurm.env}, work, "srun")
    if during is not None:
        during({"srun": process})
    return [_finish("srun", process, work, started, timeout)]


def _start(cluster: Cluster, node, argv: Sequence[str], env: Mapping[str, str], work: Path, name: str
           ) -> subprocess.Popen:
    # output to a file, not a pipe: a rank left behind on a cut node would hold a pipe open for good
    with open(work / f"{name}.out", "w") as out:
        return cluster.popen(node, argv, env=env, cwd=work, stdout=out, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL)


def _finish(name: str, process: subprocess.Popen, work: Path, started: float, timeout: float,
            log_dir: Optional[Path] = None) -> Finished:
    try:
        process.wait(timeout=max(1.0, timeout - (time.monotonic() - started)))
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise AssertionError(f"the job on {name} ran past {timeout} s:\n{_output(work, name)[-4000:]}")
    output = _output(work, name)
    if log_dir is None:
        ranks_output = output
    else:  # <log-dir>/<run id>_<random>/attempt_0/<local rank>/{stdout,stderr}.log; none if no rank started
        ranks_output = "\n".join(log.read_text(errors="replace")
                                  for log in sorted(log_dir.glob("*/attempt_*/*/std*.log")))
    return Finished(name, process.returncode, output, time.monotonic() - started, ranks_output)


def _output(work: Path, name: str) -> str:
    return (work / f"{name}.out").read_text(errors="replace")


def rank_reports(run_dir: Path, world: int) -> List[dict]:
    """Every rank's ``bootstrap.rank<N>.json``, in rank order."""
    names = [f"bootstrap.rank{rank}.json" for rank in range(world)]
    missing = [name for name in names if not (run_dir / name).exists()]
    assert not missing, f"{missing} not in {run_dir}: {sorted(p.name for p in run_dir.glob('*'))}"
    return [json.loads((run_dir / name).read_text()) for name in names]
