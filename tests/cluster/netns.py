"""A cluster on one machine: nodes that are network namespaces, each with its own hostname, on one bridge.

Layout (../../shared/design.md section 8; docs/distributed.md#tested-on):

- one network namespace per node (``<prefix>node1`` ...), holding one end of a veth pair named ``eth0``
  with a link-local address ``169.254.0.<i>/24``, and ``lo``; no other route, so nothing leaves the cluster;
- a "switch" namespace (``<prefix>switch``) holding the bridge ``br0`` and the veths' other ends
  (``node1`` ...), and a "head" namespace (``<prefix>head``, ``169.254.0.254``) for the scheduler and
  whatever drives the nodes;
- per node a *holder* process (``unshare --uts --mount``) that owns the node's hostname (a UTS namespace)
  and a private mount namespace in which the cluster's ``/etc/hosts`` is bind-mounted.

A command runs "on" a node through ``nsenter --net=/run/netns/NS --uts=... --mount=... --wd=CWD``: not
``ip netns exec``, which remounts ``/sys`` and hides ``/sys/fs/cgroup`` (slurmd 22.05 then refuses to
start). The cluster's files (logs, spool, the run directories) are on the host's filesystem, which every
node shares.

Nothing here is global: every name carries the prefix, and ``<prefix>`` holds the owner's PID, so two
clusters (two pytest workers, two helpers, two clusters of one process) never collide, and :func:`sweep`
removes only the clusters whose owner is gone. Teardown (:meth:`Cluster.down`) kills by PID every process
whose network namespace is one of the cluster's (daemons, their children, the holders), then deletes the
namespaces; it runs on failure, on interrupt (SIGTERM, SIGINT, in the main thread) and at interpreter exit.
"""

from __future__ import annotations

import atexit
import itertools
import os
import shlex
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence

PREFIX = "cluster"  # the namespaces' base prefix: ``cluster<pid>-<n>-node1``
SUBNET = "169.254.0"
HEAD_ADDRESS = f"{SUBNET}.254"
NETNS_DIR = Path("/run/netns")
_CLUSTERS = itertools.count(1)


class NotPermitted(RuntimeError):
    """This machine does not let us make network namespaces (not root, or a sandbox that forbids it)."""


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    ran = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and ran.returncode:
        raise RuntimeError(f"`ip {' '.join(args)}` exited {ran.returncode}: {ran.stderr.strip()}")
    return ran


def permitted() -> Optional[str]:
    """None when namespaces, veths and bridges can be made here, else one line saying why not."""
    for tool in ("ip", "nsenter", "unshare", "tc"):
        if subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True).returncode:
            return f"the cluster needs `{tool}`, which is not installed"
    if os.geteuid() != 0:
        return "network namespaces need root (the cluster tests run as root in CI)"
    name = f"{PREFIX}{os.getpid()}-probe"
    made = _ip("netns", "add", name, check=False)
    if made.returncode:
        return f"network namespaces are not permitted here: `ip netns add` said {made.stderr.strip()!r}"
    try:
        veth = _ip("-n", name, "link", "add", "name", "probe0", "type", "veth", "peer", "name", "probe1", check=False)
        if veth.returncode:
            return f"veth pairs are not permitted here: {veth.stderr.strip()!r}"
        uts = subprocess.run(["unshare", "--uts", "--mount", "true"], capture_output=True, text=True)
        if uts.returncode:
            return f"UTS and mount namespaces are not permitted here: {uts.stderr.strip()!r}"
    finally:
        _ip("netns", "del", name, check=False)
    return None


@dataclass
class Node:
    name: str  # node1 ...: its hostname, and its SLURM NodeName
    address: str
    netns: str
    holder: Optional[subprocess.Popen] = None
    env: Dict[str, str] = field(default_factory=dict)  # what this node exports to every command run on it

    @property
    def netns_path(self) -> str:
        return str(NETNS_DIR / self.netns)


def _netns_inode(path: str) -> Optional[int]:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def _pids_in(inodes: set) -> List[int]:
    """The PIDs of every process whose network namespace is one of ``inodes``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            if os.stat(f"/proc/{entry}/ns/net").st_ino in inodes:
                found.append(int(entry))
        except OSError:
            continue
    return found


def _kill_all(pids_of, deadline_s: float = 3.0) -> None:
    """SIGTERM, then SIGKILL, whatever ``pids_of()`` still lists, each by its PID."""
    for sig, wait in ((signal.SIGTERM, deadline_s), (signal.SIGKILL, deadline_s)):
        pids = pids_of()
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        end = time.monotonic() + wait
        while time.monotonic() < end and pids_of():
            time.sleep(0.05)


class Cluster:
    """``nodes`` nodes ``node1``.. on one bridge, plus a head namespace; :meth:`up`, then :meth:`down`."""

    def __init__(self, workdir: Path, nodes: int = 3, prefix: str = PREFIX):
        if not 1 <= nodes <= 200:
            raise ValueError(f"nodes={nodes}: from 1 to 200")
        self.workdir = Path(workdir)
        self.prefix = f"{prefix}{os.getpid()}-{next(_CLUSTERS)}-"  # the owner's PID, then its own number
        self.nodes = [Node(f"node{i}", f"{SUBNET}.{i}", f"{self.prefix}node{i}") for i in range(1, nodes + 1)]
        self.head = Node("head", HEAD_ADDRESS, f"{self.prefix}head")
        self.switch = f"{self.prefix}switch"
        self.hosts_file = self.workdir / "hosts"
        self.processes: List[subprocess.Popen] = []
        self.timings: Dict[str, float] = {}
        self._is_up = False
        self._old_handlers: Dict[int, object] = {}

    # -- bring-up and teardown --------------------------------------------------------------------------------

    @property
    def namespaces(self) -> List[str]:
        return [self.switch, self.head.netns, *(node.netns for node in self.nodes)]

    def up(self) -> "Cluster":
        started = time.perf_counter()
        self.workdir.mkdir(parents=True, exist_ok=True)
        atexit.register(self.down)
        if threading.current_thread() is threading.main_thread():  # signal handlers live in the main thread
            for sig in (signal.SIGTERM, signal.SIGINT):
                self._old_handlers[sig] = signal.signal(sig, self._interrupted)
        self._is_up = True
        try:
            self._build()
        except BaseException:
            self.down()
            raise
        self.timings["up_s"] = time.perf_counter() - started
        return self

    def _interrupted(self, signum, frame):
        self.down()
        old = self._old_handlers.get(signum)
        if callable(old):
            old(signum, frame)
        raise KeyboardInterrupt(f"signal {signum}")

    def _build(self) -> None:
        lines = ["127.0.0.1 localhost", f"{HEAD_ADDRESS} head"]
        lines += [f"{node.address} {node.name}" for node in self.nodes]
        self.hosts_file.write_text("\n".join(lines) + "\n")
        for netns in self.namespaces:
            _ip("netns", "add", netns)
        _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.switch, "link", "set", "br0", "up")
        for node in (self.head, *self.nodes):
            _ip("link", "add", "eth0", "netns", node.netns, "type", "veth",
                "peer", "name", node.name, "netns", self.switch)
            _ip("-n", self.switch, "link", "set", node.name, "master", "br0", "up")
            _ip("-n", node.netns, "addr", "add", f"{node.address}/24", "dev", "eth0")
            _ip("-n", node.netns, "link", "set", "eth0", "up")
            _ip("-n", node.netns, "link", "set", "lo", "up")
            script = (f"hostname {node.name} && mount --bind {shlex.quote(str(self.hosts_file))} /etc/hosts"
                      " && echo ready && exec sleep infinity")
            node.holder = subprocess.Popen(
                ["nsenter", f"--net={node.netns_path}", "unshare", "--uts", "--mount", "sh", "-c", script],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
            self.processes.append(node.holder)
        for node in (self.head, *self.nodes):
            assert node.holder and node.holder.stdout
            if node.holder.stdout.readline().strip() != "ready":
                raise RuntimeError(f"{node.name}'s holder did not start: {node.holder.stderr.read()[:500]}")

    def down(self) -> None:
        """Kill every process in the cluster's namespaces by PID, then delete the namespaces. Idempotent."""
        if not self._is_up:
            return
        started = time.perf_counter()
        self._is_up = False
        inodes = {i for i in (_netns_inode(str(NETNS_DIR / ns)) for ns in self.namespaces) if i is not None}
        _kill_all(lambda: sorted(set(_pids_in(inodes)) | {p.pid for p in self.processes if p.poll() is None}))
        for process in self.processes:
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            for stream in (process.stdout, process.stderr):
                if stream:
                    stream.close()
        for netns in self.namespaces:
            _ip("netns", "del", netns, check=False)
        if threading.current_thread() is threading.main_thread():
            for sig, handler in self._old_handlers.items():
                signal.signal(sig, handler)  # type: ignore[arg-type]
            self._old_handlers.clear()
        atexit.unregister(self.down)
        self.timings["down_s"] = time.perf_counter() - started

    def leftovers(self) -> List[str]:
        """What of this cluster is still there: namespaces, host links, processes in its namespaces."""
        left = [f"netns {ns}" for ns in self.namespaces if (NETNS_DIR / ns).exists()]
        links = _ip("-o", "link").stdout
        left += [f"host link {name}" for name in ("br0",) if f": {name}:" in links]
        left += [f"host link {node.name}" for node in self.nodes if f": {node.name}@" in links]
        left += [f"process {p.pid}" for p in self.processes if p.poll() is None]
        return left

    def __enter__(self) -> "Cluster":
        return self.up()

    def __exit__(self, *exc) -> None:
        self.down()

    # -- running on a node -----------------------------------------------------------------------------------

    def node(self, name: str) -> Node:
        for node in (self.head, *self.nodes):
            if node.name == name:
                return node
        raise KeyError(name)

    def argv(self, node: Node, command: Sequence[str], cwd: Optional[Path] = None) -> List[str]:
        """``command`` as it runs on ``node``: its network, its hostname, the cluster's /etc/hosts."""
        assert node.holder is not None, "the cluster is not up"
        holder = node.holder.pid
        return ["nsenter", f"--net={node.netns_path}", f"--uts=/proc/{holder}/ns/uts",
                f"--mount=/proc/{holder}/ns/mnt", f"--wd={cwd or os.getcwd()}", "--", *command]

    def environ(self, node: Node, base: Optional[Mapping[str, str]] = None,
                extra: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
        """The node's environment: ``base`` (the caller's by default), its hostname, then the node's own exports
        (``node.env``), then ``extra``. Nothing else: gloo finds each node's address from its hostname, which
        the cluster's /etc/hosts maps to its eth0, so a command SLURM starts sees what one started here sees."""
        env = dict(os.environ if base is None else base)
        env.update(HOSTNAME=node.name)
        env.update(node.env)
        env.update(extra or {})
        return env

    def popen(self, node: Node, command: Sequence[str], *, env: Optional[Mapping[str, str]] = None,
              extra_env: Optional[Mapping[str, str]] = None, cwd: Optional[Path] = None,
              **kwargs) -> subprocess.Popen:
        """Start ``command`` on ``node``; it is killed at teardown if it still runs."""
        process = subprocess.Popen(self.argv(node, command, cwd), env=self.environ(node, env, extra_env),
                                   start_new_session=True, **kwargs)
        self.processes.append(process)
        return process

    def run(self, node: Node, command: Sequence[str], *, timeout: float = 120, **kwargs
            ) -> subprocess.CompletedProcess:
        """Run ``command`` on ``node`` to its end (its output captured as text)."""
        process = self.popen(node, command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            out, err = process.communicate()
            raise AssertionError(f"{' '.join(command)} on {node.name} ran past {timeout} s:\n{out}\n{err}")
        return subprocess.CompletedProcess(command, process.returncode, out, err)

    def pids_on(self, node: Node) -> List[int]:
        """Every process in ``node``'s network namespace (a daemon's children and a job's ranks among them)."""
        inode = _netns_inode(node.netns_path)
        return _pids_in({inode}) if inode is not None else []

    # -- links ------------------------------------------------------------------------------------------------

    def shape(self, node: Node, mbit: float) -> None:
        """Limit ``node``'s link to ``mbit`` Mbit/s both ways: a tbf on its eth0 (out) and on the switch's port
        (in). The kernel here has no netem: rate only, no delay or loss."""
        rate = f"{mbit}mbit"
        for netns, dev in ((node.netns, "eth0"), (self.switch, node.name)):
            _ip_tc(netns, "qdisc", "replace", "dev", dev, "root", "tbf", "rate", rate, "burst", "32kbit",
                   "latency", "400ms")

    def unshape(self, node: Node) -> None:
        for netns, dev in ((node.netns, "eth0"), (self.switch, node.name)):
            _ip_tc(netns, "qdisc", "del", "dev", dev, "root", check=False)

    def cut(self, node: Node) -> None:
        """Cut ``node`` off: its port on the switch goes down (the node's own eth0 stays up, as a cable pulled
        at the switch would leave it)."""
        _ip("-n", self.switch, "link", "set", node.name, "down")

    def mend(self, node: Node) -> None:
        _ip("-n", self.switch, "link", "set", node.name, "up")


def _ip_tc(netns: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["nsenter", f"--net={NETNS_DIR / netns}", "tc", *args], capture_output=True,
                          text=True, check=check, timeout=30)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def sweep(prefix: str = PREFIX) -> List[str]:
    """Remove the namespaces of every cluster with this prefix whose owner process is gone (a run killed
    with SIGKILL, a crashed CI job), killing the processes in them by PID first. Returns what it removed."""
    removed = []
    if not NETNS_DIR.is_dir():
        return removed
    for entry in sorted(os.listdir(NETNS_DIR)):
        if not entry.startswith(prefix):
            continue
        owner = entry[len(prefix):].split("-", 1)[0]
        if owner.isdigit() and _alive(int(owner)):
            continue
        inode = _netns_inode(str(NETNS_DIR / entry))
        if inode is not None:
            _kill_all(lambda: _pids_in({inode}))
        _ip("netns", "del", entry, check=False)
        removed.append(entry)
    return removed


if __name__ == "__main__":  # .ci/run's trap: python tests/cluster/netns.py
    for name in sweep():
        print(f"removed a left-over namespace: {name}")
