"""A real SLURM (Debian's slurm-wlm 22.05) on the one-machine cluster: one munged, slurmctld in the head
namespace, one slurmd per node namespace, all from tests/cluster/slurm.conf; and the client commands
(srun, sbatch, squeue, scontrol) run from the head namespace against it.

Every daemon runs in the foreground (``-D``/``-F``), started through the cluster (:meth:`Cluster.popen`),
so the cluster's teardown kills it by PID with everything it started (slurmstepd, the job's tasks).
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import time
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence

from cluster.netns import Cluster

CONF_TEMPLATE = Path(__file__).with_name("slurm.conf")
DAEMONS = ("munged", "slurmctld", "slurmd", "srun", "sbatch", "squeue", "scontrol", "sinfo")


def missing() -> Optional[str]:
    """None when SLURM and munge are installed, else one line saying what to install."""
    absent = [name for name in DAEMONS if shutil.which(name) is None
              and not Path("/usr/sbin", name).exists()]
    if absent:
        return f"{', '.join(absent)} not installed: apt-get install -y slurm-wlm munge"
    return None


def _binary(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


class Slurm:
    """SLURM on ``cluster``: :meth:`up` starts the daemons and waits until every node is idle."""

    def __init__(self, cluster: Cluster, cpus_per_node: int = 2):
        self.cluster = cluster
        self.dir = cluster.workdir / "slurm"
        self.conf = self.dir / "slurm.conf"
        self.munge_socket = self.dir / "munge" / "munge.socket.2"
        self.cpus_per_node = cpus_per_node
        self.timings: Dict[str, float] = {}
        self.daemons: Dict[str, subprocess.Popen] = {}

    @property
    def env(self) -> Dict[str, str]:
        """What a client command needs to find this cluster's controller."""
        return {"SLURM_CONF": str(self.conf)}

    def write_conf(self) -> str:
        nodes = "\n".join(f"NodeName={node.name} NodeAddr={node.address} NodeHostname={node.name} "
                          f"CPUs={self.cpus_per_node} State=UNKNOWN" for node in self.cluster.nodes)
        dirs = {name: self.dir / name for name in ("state", "spool", "run", "log")}
        for path in dirs.values():
            path.mkdir(parents=True, exist_ok=True)
        text = CONF_TEMPLATE.read_text().format(
            cluster_name=re.sub(r"[^a-z0-9]", "", self.cluster.prefix.lower())[:30] or "cluster",
            head_address=self.cluster.head.address, munge_socket=self.munge_socket,
            state_dir=dirs["state"], spool_dir=dirs["spool"], run_dir=dirs["run"], log_dir=dirs["log"],
            nodes=nodes)
        self.conf.write_text(text)
        return text

    def up(self, timeout: float = 60) -> "Slurm":
        started = time.perf_counter()
        self.write_conf()
        self._start_munge()
        head = self.cluster.head
        self.daemons["slurmctld"] = self._daemon(head, [_binary("slurmctld"), "-D", "-i", "-f", str(self.conf)],
                                                 "slurmctld")
        self.wait_for(lambda: self.command(["scontrol", "ping"], check=False).returncode == 0, timeout,
                      "slurmctld answers `scontrol ping`")
        for node in self.cluster.nodes:
            self.daemons[node.name] = self._daemon(
                node, [_binary("slurmd"), "-D", "-N", node.name, "-f", str(self.conf)], f"slurmd-{node.name}")
        self.wait_for(lambda: self.idle_nodes() == {n.name for n in self.cluster.nodes}, timeout,
                      "every node idle in sinfo")
        self.timings["up_s"] = time.perf_counter() - started
        return self

    def _start_munge(self) -> None:
        munge_dir = self.munge_socket.parent
        munge_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(munge_dir, 0o755)  # munged refuses a socket directory it cannot share (0700 is refused too)
        key = self.dir / "munge.key"
        key.write_bytes(secrets.token_bytes(1024))
        os.chmod(key, 0o600)
        self.daemons["munged"] = self._daemon(self.cluster.head, [
            _binary("munged"), "-F", "--force", f"--socket={self.munge_socket}", f"--key-file={key}",
            f"--pid-file={munge_dir / 'munged.pid'}", f"--log-file={self.dir / 'log' / 'munged.log'}",
            f"--seed-file={munge_dir / 'munged.seed'}"], "munged")
        self.wait_for(self.munge_socket.exists, 20, "munged's socket")

    def _daemon(self, node, argv: Sequence[str], name: str) -> subprocess.Popen:
        out = open(self.dir / "log" / f"{name}.out", "w")
        try:
            return self.cluster.popen(node, argv, extra_env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, cwd=self.dir)
        finally:
            out.close()

    def wait_for(self, condition, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            dead = [name for name, p in self.daemons.items() if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                raise RuntimeError(f"SLURM: no {what} within {timeout} s (ended: {dead}); logs:\n{self.logs()}")
            time.sleep(0.2)

    def logs(self, lines: int = 15) -> str:
        out = []
        for path in sorted((self.dir / "log").glob("*")):
            tail = path.read_text(errors="replace").splitlines()[-lines:]
            out.append(f"--- {path.name}\n" + "\n".join(tail))
        return "\n".join(out)

    # -- the client side ----------------------------------------------------------------------------------

    def command(self, argv: Sequence[str], *, env: Optional[Mapping[str, str]] = None,
                extra_env: Optional[Mapping[str, str]] = None, cwd: Optional[Path] = None,
                timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess:
        """A SLURM client command (srun, sbatch, ...) run from the head namespace against this cluster."""
        ran = self.cluster.run(self.cluster.head, list(argv), env=env, extra_env={**self.env, **(extra_env or {})},
                               cwd=cwd, timeout=timeout)
        if check and ran.returncode:
            raise AssertionError(f"{' '.join(argv)} exited {ran.returncode}:\n{ran.stdout}\n{ran.stderr}\n"
                                 f"{self.logs()}")
        return ran

    def idle_nodes(self) -> set:
        ran = self.command(["sinfo", "-h", "-N", "-o", "%N %t"], check=False)
        return {line.split()[0] for line in ran.stdout.splitlines() if line.split()[1:] == ["idle"]}

    def node_states(self) -> Dict[str, str]:
        ran = self.command(["sinfo", "-h", "-N", "-o", "%N %t"], check=False)
        return dict(line.split()[:2] for line in ran.stdout.splitlines() if len(line.split()) >= 2)

    def sbatch(self, argv: Sequence[str], **kwargs) -> int:
        """Submit; the job's id."""
        ran = self.command(["sbatch", "--parsable", *argv], **kwargs)
        return int(ran.stdout.strip().split(";")[0])

    def wait_jobs(self, job_ids: Sequence[int], timeout: float = 180) -> None:
        """Until none of ``job_ids`` (arrays included) is pending or running."""
        ids = ",".join(str(job) for job in job_ids)
        self.wait_for(lambda: not self.command(["squeue", "-h", "-j", ids, "-o", "%i"], check=False).stdout.strip(),
                      timeout, f"end of jobs {ids}")

    def job_states(self, job_id: int) -> List[str]:
        ran = self.command(["scontrol", "-o", "show", "job", str(job_id)], check=False)
        return re.findall(r"JobState=(\S+)", ran.stdout)
