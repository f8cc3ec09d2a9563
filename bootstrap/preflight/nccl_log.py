"""The network NCCL chose, read from its own log. Pure, apart from :func:`read`.

NCCL picks its network when its first communicator starts and says so, with ``NCCL_DEBUG=INFO`` and
``NCCL_DEBUG_SUBSYS=INIT,NET``, in one line: ``NCCL INFO Using network IB`` (``Socket``, ``AWS Libfabric``,
a plugin's ``IBext``, ...). Only that line decides: "NET/IB : No device found." comes just before a fall
back to sockets, and "NET/Plugin : No plugin found" before NCCL's own IB. With aws-ofi-nccl the provider
(``NET/OFI Selected Provider is efa``) tells EFA from another Libfabric network. The bootstrap points
``NCCL_DEBUG_FILE`` at the job's directory (``nccl.%h.%p.log``: host, pid), so nothing reaches the console.

The log is another program's text, read within bounds: its head only, every line length-capped, a name
only of the characters a network's name has.
"""

from __future__ import annotations

import os
import re
import socket
from dataclasses import field
from pathlib import Path
from typing import List, Optional

from bootstrap.doors import inbound
from bootstrap.doors.lean import lean_dataclass

LOG_PATTERN = "nccl.%h.%p.log"  # NCCL_DEBUG_FILE, in the job's directory: %h host, %p pid
MAX_LOG_BYTES = 4 * 2**20  # NCCL's start-up lines fill a few KiB; a long run's log is not read past this
MAX_LINE = 1024  # characters of one line looked at
MAX_NAMES = 4  # distinct networks kept (one per communicator, in practice one)
_USING = re.compile(r"NCCL INFO Using network ([A-Za-z0-9_. -]{1,48}?)\s*$")
_PROVIDER = re.compile(r"NET/OFI Selected [Pp]rovider is ([A-Za-z0-9_;+-]{1,32})")  # "provider" since 1.9
KINDS = ("ib", "efa", "socket")  # what env.preflight.network may expect (and "any")


@lean_dataclass
class Network:
    """What NCCL said: each network name it chose (``IB``), the OFI provider if any, and its kind."""

    names: List[str] = field(default_factory=list)
    provider: Optional[str] = None

    @property
    def kind(self) -> Optional[str]:
        """ib | efa | socket | ofi (a Libfabric network that is not EFA) | other; None when NCCL said nothing."""
        if not self.names:
            return None
        name = self.names[0].lower()
        if name == "socket":
            return "socket"
        if name == "ib" or name.startswith("ibext"):
            return "ib"
        if "libfabric" in name or "ofi" in name:
            # aws-ofi-nccl names itself "AWS Libfabric": EFA, unless a provider line says otherwise
            efa = self.provider == "efa" or (self.provider is None and name.startswith("aws"))
            return "efa" if efa else "ofi"
        return "other"

    @property
    def text(self) -> Optional[str]:
        if not self.names:
            return None
        shown = " + ".join(self.names)
        return f"{shown} (provider {self.provider})" if self.provider else shown

    def matches(self, expected: str) -> bool:
        return expected == "any" or (len(set(self.names)) == 1 and self.kind == expected)


def parse(text: str) -> Network:
    """The networks named in ``text`` (NCCL's log), in the order NCCL chose them."""
    found = Network()
    for line in text.splitlines():
        line = line[:MAX_LINE]
        if "NCCL INFO" not in line:
            continue
        using = _USING.search(line)
        if using and using.group(1) not in found.names and len(found.names) < MAX_NAMES:
            found.names.append(using.group(1))
        provider = _PROVIDER.search(line)
        if provider and found.provider is None:
            found.provider = provider.group(1).split(";")[0]
    return found


def log_name(pid: int, host: Optional[str] = None) -> str:
    """This process's NCCL log (``%h``: the host's name up to its first dot, as NCCL writes it): in a job
    directory that several hosts share, a process on another host may have the same pid."""
    return f"nccl.{(host or socket.gethostname()).split('.')[0]}.{pid}.log"


def read(directory: Path, pid: int, host: Optional[str] = None) -> Network:
    """What this process's NCCL log says; raises :class:`~bootstrap.doors.inbound.Unreadable` when it cannot
    be read."""
    name = log_name(pid, host)
    if not os.path.lexists(directory / name):
        raise inbound.Unreadable(f"no NCCL log {name} in the job's directory")
    return parse(inbound.read_log_head(directory / name, MAX_LOG_BYTES))
