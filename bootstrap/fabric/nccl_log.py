"""The network NCCL chose, and what it said on the way, read from its own log. Pure, apart from :func:`read`.

NCCL picks its network when its first communicator starts and says so, with ``NCCL_DEBUG=INFO`` and
``NCCL_DEBUG_SUBSYS=INIT,NET``, in one line: ``NCCL INFO Using network IB`` (``Socket``, ``Libfabric`` or
``AWS Libfabric``, a plugin's ``IBext``, ``FasTrak``, ``GPUDirectTCPX_v7``, ...). Only that line names the
network: "NET/IB : No device found." comes just before a fall back to sockets, and "NET/Plugin : No plugin
found" before NCCL's own IB. With aws-ofi-nccl the provider (``NET/OFI Selected Provider is efa``) tells EFA from
another Libfabric network. The other lines the fabric rules judge (:mod:`bootstrap.fabric.rules`)
are gathered per process (host and pid): versions, devices, channels, failures. The bootstrap points
``NCCL_DEBUG_FILE`` at the job's directory (``nccl.%h.%p.log``: host, pid), so nothing reaches the console.

The log is another program's text, read within bounds (:func:`bootstrap.doors.inbound.read_own_log_lines`):
its head only, whole lines only (a line cut at the bound or still being written never decides), a line
longer than any NCCL writes is skipped, a name only of the characters a network's name has. A line may
carry what a launcher or a log collector put before it (mpirun's ``[1,23]<stdout>:``, pdsh's ``host: ``,
Ray's ``(pid=...)``, a CloudWatch timestamp): NCCL's own header (``host:pid:tid [dev]``) is found before
``NCCL INFO``, in one pass.
"""

from __future__ import annotations

import os
import re
import socket
from dataclasses import field
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

from bootstrap.doors import inbound
from bootstrap.doors.lean import lean_dataclass

LOG_PATTERN = "nccl.%h.%p.log"  # NCCL_DEBUG_FILE, in the job's directory: %h host, %p pid
MAX_LOG_BYTES = 4 * 2**20  # NCCL's start-up lines fill a few KiB; a long run's log is not read past this
MAX_LINE = 2048  # NCCL's logger formats into 1024 bytes (debug.cc); a longer line is not NCCL's: skipped whole
MAX_NAMES = 4  # distinct networks kept (one per communicator, in practice one)
MAX_PROCESSES = 4096  # processes one set of logs may hold (a 512-node job's ranks); more are not gathered
MAX_KEPT = 8  # lines of one kind kept per process (failures, channels, devices)
KINDS = ("ib", "roce", "efa", "socket", "fastrak", "tcpx")  # what env.preflight.network may expect (and "any")

_NAME = r"[A-Za-z0-9_. -]{1,48}?"
_MARKERS = ("NCCL INFO ", "NCCL WARN ")
_FILE_LINE = re.compile(r"[A-Za-z0-9_./-]{1,128}:\d{1,6}")  # before a WARN: "transport/net_ib.cc:839"
_DEVICE = re.compile(r"\[\d{1,4}\]")
_HOST_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_USING = re.compile(rf"^Using network ({_NAME})\s*$")
_PROVIDER = re.compile(r"NET/OFI Selected [Pp]rovider is ([A-Za-z0-9_;+-]{1,32})(?:.*\(found (\d{1,4}) nics\))?")
_PLATFORM = re.compile(r"NET/OFI (?:Running on|.{0,64}instance type) ([a-z0-9-]{1,24}\.[a-z0-9]{1,16})\b")
_OFI_VERSION = re.compile(r"NET/OFI (?:Using|Initializing) aws-ofi-nccl ([0-9][0-9A-Za-z.+-]{0,31})")
_LIBFABRIC_VERSION = re.compile(r"NET/OFI Using Libfabric version ([0-9][0-9.]{0,15})")
_FASTRAK_VERSION = re.compile(r"Initializing network FasTrak, version: ([0-9][0-9.]{0,15})")
_NCCL_VERSION = re.compile(r"^NCCL version ([0-9][0-9A-Za-z.+]{0,31})")
_COMM = re.compile(r"comm 0x[0-9a-f]{1,16} rank (\d{1,7}) n[Rr]anks (\d{1,7})(?: nNodes (\d{1,7}))?")
_IB_DEVICES = re.compile(r"^NET/IB ?: Using ((?:\[\d{1,3}\][A-Za-z0-9_.-]{1,32}:\d{1,3}/[A-Za-z]{1,8}\S{0,16} ?){1,64})")
_IB_DEVICE = re.compile(r"\[\d{1,3}\]([A-Za-z0-9_.-]{1,32}):\d{1,3}/([A-Za-z]{1,8})")
_SOCKET_DEVICES = re.compile(r"^NET/Socket ?: Using ((?:\[\d{1,3}\][A-Za-z0-9_.@-]{1,32}:\S{0,64} ?){1,64})")
_SOCKET_DEVICE = re.compile(r"\[\d{1,3}\]([A-Za-z0-9_.@-]{1,32}):")
_SET = re.compile(r"^(NCCL_[A-Z0-9_]{1,64}) set by environment to (.{0,200}?)\.?$")
_CHANNEL = re.compile(r"^(?:Channel|Ring) \d{1,3}(?:/\d{1,3})? : .{1,80}? via "  # "Ring" before NCCL 2.7
                      r"(NET/[A-Za-z0-9_ ]{1,32}?/\d{1,3}(?:/[A-Za-z]{1,16})*|NET/[A-Za-z0-9_]{1,32})")
# A plugin that did not load, or a network that could not start: NCCL's and the plugins' own words.
_FAILURES = (
    re.compile(r"NET/Plugin ?: ?Could not find"),  # NCCL >= 2.23: "NET/Plugin: Could not find: libnccl-net.so."
    re.compile(r"NET/Plugin ?: ?Plugin load \(.{0,128}\) returned"),  # NCCL 2.19-2.22
    re.compile(r"NET/Plugin ?: ?(?:dlerror=.{0,256} )?No plugin found"),  # NCCL <= 2.22
    re.compile(r"Failed to initialize any NET plugin"),
    re.compile(r"NET/OFI .{0,64}fi_getinfo.{0,128}"),  # "OFI fi_getinfo() call failed: No data available"
    re.compile(r"NET/OFI Only EFA provider is supported"),
    re.compile(r"NET/IB ?: ?No device found"),
    re.compile(r"NET/OFI .{0,32}[Uu]nable to find a protocol that worked"),
    re.compile(r"NET/OFI (?:aws-ofi-nccl initialization|Initializing plugin) failed"),  # aws-ofi-nccl >= 1.9
    re.compile(r"NET/OFI Could not find any optimal provider"),  # aws-ofi-nccl 2019 (NVIDIA/nccl#229)
    re.compile(r"Failed to open libibverbs\.so"),
    re.compile(r"NET/Plugin ?: ?Failed to find ncclNetPlugin symbol"),  # a plugin of an API NCCL no longer takes
    re.compile(r"NET/OFI GDR disabled"),
    re.compile(r"NET/IB ?: ?Got completion (?:from peer \S{1,64} )?with (?:error |status=)12\b"),  # a timeout
)


@lean_dataclass
class Process:
    """What one NCCL process (a host and a pid) said, each line kept as NCCL wrote it (the first of a kind)."""

    host: str = ""
    pid: int = 0
    rank: Optional[int] = None  # from "comm 0x... rank N nranks M": the first communicator's
    nranks: Optional[int] = None
    nnodes: Optional[int] = None  # NCCL >= 2.20 prints "nNodes" on that line
    nccl_version: Optional[str] = None
    ofi_version: Optional[str] = None  # aws-ofi-nccl's own
    libfabric_version: Optional[str] = None
    fastrak_version: Optional[str] = None
    platform: Optional[str] = None  # aws-ofi-nccl: "Running on p4d.24xlarge platform"
    networks: List[str] = field(default_factory=list)  # "Using network X", in order, distinct
    network_line: Optional[str] = None
    provider: Optional[str] = None  # the OFI provider, "efa" or "tcp;ofi_rxm"
    provider_line: Optional[str] = None
    nics: Optional[int] = None  # "(found N nics)"
    ib_devices: List[Tuple[str, str]] = field(default_factory=list)  # (mlx5_0, IB | RoCE)
    socket_devices: List[str] = field(default_factory=list)  # NET/Socket's interfaces (eth0, virbr0)
    socket_line: Optional[str] = None
    channels: List[str] = field(default_factory=list)  # NET transports on channel lines ("NET/IB/0/GDRDMA")
    channel_lines: List[str] = field(default_factory=list)
    failures: List[str] = field(default_factory=list)  # the lines that say a plugin or a network failed
    environment: Dict[str, str] = field(default_factory=dict)  # "NCCL_PROTO set by environment to simple."

    @property
    def who(self) -> str:
        rank = f"rank {self.rank}" if self.rank is not None else "rank ?"
        return f"{rank} on {self.host or 'an unnamed host'}" + (f" (pid {self.pid})" if self.pid else "")

    @property
    def network(self) -> "Network":
        return Network(names=list(self.networks), provider=self.provider,
                       link=_link_layer(self.ib_devices))


@lean_dataclass
class Network:
    """What NCCL said: each network name it chose (``IB``), the OFI provider if any, the link layer of NCCL's IB
    devices (``RoCE``) if it listed them, and its kind."""

    names: List[str] = field(default_factory=list)
    provider: Optional[str] = None
    link: Optional[str] = None  # IB | RoCE: every NET/IB device's link layer, when they agree

    @property
    def kind(self) -> Optional[str]:
        """ib | roce | efa | ofi (a Libfabric network that is not EFA) | socket | fastrak | tcpx | other; None
        when NCCL said nothing."""
        return network_kind(self.names[0], self.provider, self.link) if self.names else None

    @property
    def text(self) -> Optional[str]:
        if not self.names:
            return None
        shown = " + ".join(self.names)
        return f"{shown} (provider {self.provider})" if self.provider else shown

    def matches(self, expected: str) -> bool:
        return expected == "any" or (len(set(self.names)) == 1 and self.kind == expected)


def network_kind(name: str, provider: Optional[str] = None, link: Optional[str] = None) -> str:
    """The kind of the network NCCL named ``name`` (its ``Using network`` line)."""
    lowered = name.lower()
    if lowered == "socket":
        return "socket"
    if lowered == "ib" or lowered.startswith("ibext"):  # NCCL's IB transport, or the RDMA plugin's
        return "roce" if link == "RoCE" else "ib"
    if "libfabric" in lowered or "ofi" in lowered:
        # aws-ofi-nccl names itself "AWS Libfabric" (< 1.13) or "Libfabric": EFA (its default provider filter on
        # AWS), unless a provider line says otherwise
        return "efa" if provider in (None, "efa") else "ofi"
    if lowered == "fastrak":
        return "fastrak"
    if lowered.startswith("gpudirecttcpx"):
        return "tcpx"
    return "other"


def _link_layer(devices: List[Tuple[str, str]]) -> Optional[str]:
    layers = {layer for _, layer in devices}
    return layers.pop() if len(layers) == 1 else None


def lines(text: str) -> List[str]:
    """``text``'s lines (split at newlines only: a carriage return inside a line does not start another), each
    no longer than :data:`MAX_LINE` (a longer one is dropped whole)."""
    return [line for line in inbound.lines(text) if len(line) <= MAX_LINE]


def processes(text: str, over: Optional[Dict[str, int]] = None) -> List[Process]:
    """Every process that wrote NCCL lines in ``text``, in the order each first spoke; the first
    :data:`MAX_PROCESSES`, the others counted in ``over["processes"]`` (where given) and never judged."""
    found: Dict[Tuple[str, int], Process] = {}
    bare: Optional[str] = None  # "NCCL version 2.19.3+cuda12.3", which rank 0 prints on its own before NCCL 2.20
    counted: Set[Tuple[str, int]] = set()  # processes past the bound, each counted once
    for line in lines(text):
        if "NCCL " not in line:
            continue
        header = _header(line)
        if header is None:
            version = _NCCL_VERSION.search(line.strip())
            bare = bare or (version.group(1) if version else None)
            continue
        host, pid, text = header
        process = found.get((host, pid))
        if process is None:
            if len(found) >= MAX_PROCESSES:
                if over is not None and (host, pid) not in counted:
                    counted.add((host, pid))
                    over["processes"] = over.get("processes", 0) + 1
                continue
            process = found[(host, pid)] = Process(host=host, pid=pid)
        _said(process, text.strip())
    for process in found.values():
        process.nccl_version = process.nccl_version or bare  # one NCCL for the job: its ranks agree on it
    return list(found.values())


def _header(line: str) -> Optional[Tuple[str, int, str]]:
    """(host, pid, text) of an NCCL line, in one pass and no backtracking: NCCL's ``host:pid:tid [dev]`` (and a
    WARN's ``file:line``) before ``NCCL INFO``/``NCCL WARN``, whatever a launcher or a collector put before them;
    ("", 0, text) when the header is not there (a paste that cut it)."""
    at = next((found for found in (line.find(marker) for marker in _MARKERS) if found >= 0), -1)
    if at < 0:
        return None
    before = line[:at].split()
    if before and _FILE_LINE.fullmatch(before[-1]):
        before.pop()
    if before and _DEVICE.fullmatch(before[-1]):
        before.pop()
    host, pid = "", 0
    if before:
        head, _, tid = before[-1].rpartition(":")
        head, _, pid_text = head.rpartition(":")
        if tid.isdigit() and pid_text.isdigit() and len(tid) <= 10 and len(pid_text) <= 10:
            start = len(head)
            while start > 0 and head[start - 1] in _HOST_CHARS and len(head) - start < 253:
                start -= 1
            host, pid = head[start:], int(pid_text)
    return host, pid, line[at + len(_MARKERS[0]):]


def _said(process: Process, text: str) -> None:  # noqa: C901 - one branch per kind of line
    using = _USING.search(text)
    if using:
        name = using.group(1)
        if name not in process.networks and len(process.networks) < MAX_NAMES:
            process.networks.append(name)
            process.network_line = process.network_line or text
        return
    if text.startswith("NET/OFI") or "aws-ofi-nccl" in text:
        provider = _PROVIDER.search(text)
        if provider and process.provider is None:
            process.provider, process.provider_line = provider.group(1).split(";")[0], text
            if ";" in provider.group(1):  # "tcp;ofi_rxm": the core provider is what differs from efa
                process.provider = provider.group(1)
            process.nics = int(provider.group(2)) if provider.group(2) else None
        for pattern, attribute in ((_PLATFORM, "platform"), (_OFI_VERSION, "ofi_version"),
                                   (_LIBFABRIC_VERSION, "libfabric_version")):
            match = pattern.search(text)
            if match and getattr(process, attribute) is None:
                setattr(process, attribute, match.group(1))
    fastrak = _FASTRAK_VERSION.search(text)
    if fastrak and process.fastrak_version is None:
        process.fastrak_version = fastrak.group(1)
    version = _NCCL_VERSION.search(text)
    if version and process.nccl_version is None:
        process.nccl_version = version.group(1)
    comm = _COMM.search(text)
    if comm and process.rank is None:
        process.rank, process.nranks = int(comm.group(1)), int(comm.group(2))
        process.nnodes = int(comm.group(3)) if comm.group(3) else None
    devices = _IB_DEVICES.search(text)
    if devices and not process.ib_devices:
        process.ib_devices = _IB_DEVICE.findall(devices.group(1))[:64]
    sockets = _SOCKET_DEVICES.search(text)
    if sockets and not process.socket_devices:
        process.socket_devices, process.socket_line = _SOCKET_DEVICE.findall(sockets.group(1))[:64], text
    setting = _SET.search(text)
    if setting and len(process.environment) < 256:
        process.environment.setdefault(setting.group(1), setting.group(2))
    channel = _CHANNEL.search(text)
    if channel and len(process.channels) < MAX_KEPT and channel.group(1) not in process.channels:
        process.channels.append(channel.group(1))
        process.channel_lines.append(text)
    if len(process.failures) < MAX_KEPT and any(pattern.search(text) for pattern in _FAILURES):
        process.failures.append(text)


def parse(text: str) -> Network:
    """The networks named in ``text`` (NCCL's log), in the order NCCL chose them, every process together."""
    found = Network()
    devices: List[Tuple[str, str]] = []
    for process in processes(text):
        for name in process.networks:
            if name not in found.names and len(found.names) < MAX_NAMES:
                found.names.append(name)
        found.provider = found.provider or process.provider
        devices += process.ib_devices
    found.link = _link_layer(devices)
    return found


def log_name(pid: int, host: Optional[str] = None) -> str:
    """This process's NCCL log (``%h``: the host's name up to its first dot, as NCCL writes it): in a job
    directory that several hosts share, a process on another host may have the same pid."""
    return f"nccl.{(host or socket.gethostname()).split('.')[0]}.{pid}.log"


def read_text(directory: Path, pid: int, host: Optional[str] = None) -> str:
    """This process's NCCL log, its whole lines within the bound; raises
    :class:`~bootstrap.doors.inbound.Unreadable`, saying why, when it cannot be read or is not this user's own
    regular file."""
    name = log_name(pid, host)
    if not os.path.lexists(directory / name):
        raise inbound.Unreadable(f"no NCCL log {name} in the job's directory")
    return inbound.read_own_log_lines(directory / name, MAX_LOG_BYTES)


def read_named(path: Path) -> Tuple[str, int]:
    """A log a person named (``bootstrap doctor --nccl-log FILE``): whole lines within the bound, whoever wrote it,
    and the file's size (past :data:`MAX_LOG_BYTES`, the rest was not read)."""
    return inbound.read_log_lines(path, MAX_LOG_BYTES)


def openable(path: Path) -> None:
    """Raises :class:`~bootstrap.doors.inbound.Unreadable`, saying why, where :func:`read_named` could not read the
    file at all (absent, a directory, a FIFO, no permission); reads nothing."""
    inbound.read_log_lines(path, 0)


def read(directory: Path, pid: int, host: Optional[str] = None) -> Network:
    """What this process's NCCL log says; raises :class:`~bootstrap.doors.inbound.Unreadable` when it cannot
    be read."""
    return parse(read_text(directory, pid, host))
