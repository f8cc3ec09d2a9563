"""The fabric rules inside a job: each rank judges its own NCCL log at the first collective, and every rank gathers
every rank's findings, so that all reach the same verdict (docs/fabrics.md).

Which log: the one the bootstrap pointed ``NCCL_DEBUG_FILE`` at; or, when the user set ``NCCL_DEBUG`` or
``NCCL_DEBUG_FILE`` themselves, theirs, if it is at INFO with the subsystems the rules need and written to a file
of this process (``%h`` and ``%p`` in its name). Otherwise the fabric is not checked, and the record's note says why.
"""

from __future__ import annotations

import os
import socket
import struct
from pathlib import Path
from typing import TYPE_CHECKING, List, Mapping, Optional, Sequence, Tuple

from bootstrap.doors import inbound, outbound
from bootstrap.fabric import nccl_log
from bootstrap.fabric import rules as fabric_rules
from bootstrap.preflight.verdict import Finding

if TYPE_CHECKING:
    from torch.distributed import ProcessGroup

    from bootstrap.preflight.measure import Meeting
    from bootstrap.preflight.request import Request

VERSION = 1  # the layout of a rank's record of fabric findings
MAX_LINES = 3  # findings one rank sends
LINE_BYTES = 600  # bytes of each, cut on a character
LAYOUT = struct.Struct(f"<BB{MAX_LINES}H{MAX_LINES * LINE_BYTES}s")  # version, count, lengths, the lines
NEEDED = ("INIT", "NET")  # "Using network" is INIT|NET, channel lines INIT|NET (NCCL src/net.cc, transport/net.cc)


def user_log(environ: Mapping[str, str], pid: int, host: Optional[str] = None) -> Tuple[Optional[Path], str]:
    """The user's own NCCL log of this process, when the rules can read it; else None and why not."""
    level = environ.get("NCCL_DEBUG", "").upper()
    if level not in ("INFO", "TRACE"):
        return None, (f"NCCL_DEBUG={outbound.shown(environ.get('NCCL_DEBUG', ''), limit=20)} is yours and below INFO: "
                      "NCCL does not say which network it chose")
    subsystems = environ.get("NCCL_DEBUG_SUBSYS", "")
    if subsystems and not subsystems.startswith("^") and not {"ALL", *NEEDED} & set(subsystems.upper().split(",")):
        return None, (f"NCCL_DEBUG_SUBSYS={outbound.shown(subsystems, limit=40)} is yours and leaves out INIT and "
                      "NET, where NCCL names its network")
    pattern = environ.get("NCCL_DEBUG_FILE")
    if not pattern or "%p" not in pattern:
        return None, ("NCCL_DEBUG_FILE is yours and unset, or names no %p: NCCL's lines go to the console or one shared "
                      "file, which this process cannot tell as its own")
    short = (host or socket.gethostname()).split(".")[0]
    return Path(pattern.replace("%h", short).replace("%p", str(pid))), ""


def own_log(request: "Request", environ: Mapping[str, str]) -> Tuple[Optional[str], Optional[str]]:
    """This process's NCCL log's whole lines, or None and the note that says why it was not read."""
    try:
        if request.nccl_log_dir is not None:
            return nccl_log.read_text(request.nccl_log_dir, os.getpid()), None
        path, why = user_log(environ, os.getpid())
        if path is None:
            return None, f"the fabric was not checked: {why}"
        return inbound.read_own_log_lines(path, nccl_log.MAX_LOG_BYTES), None
    except inbound.Unreadable as error:
        return None, f"NCCL's log was not read: {error}"


def own_findings(request: "Request", text: str, environ: Mapping[str, str], spans_nodes: bool,
                 warnings: Optional[List[str]] = None) -> List[str]:
    """This rank's fabric findings from its own log that stop the job, each one line naming this rank and host (the
    ones every rank gathers); the rest, the risks the log does not show, go to ``warnings`` (this rank's own)."""
    processes = nccl_log.processes(text)
    for process in processes:  # the log is this process's: its rank and host are known, whatever NCCL printed
        process.rank, process.host = request.rank, request.host or process.host
    found = fabric_rules.judge(request.fabric, processes, environ, spans_nodes, request.fabric_gdr)
    if warnings is not None:
        warnings += [f"fabric: {finding.message}".replace("; ", ", ") for finding in found if not finding.stops]
    return [finding.message for finding in found if finding.stops][:MAX_LINES]


def pack(lines: Sequence[str]) -> bytes:
    encoded = [outbound.finding(line, LINE_BYTES).encode("utf-8")[:LINE_BYTES] for line in lines[:MAX_LINES]]
    encoded = [data.decode("utf-8", errors="ignore").encode("utf-8") for data in encoded]  # never half a character
    lengths = [len(data) for data in encoded] + [0] * (MAX_LINES - len(encoded))
    return LAYOUT.pack(VERSION, len(encoded), *lengths, b"".join(data.ljust(LINE_BYTES, b"\0") for data in encoded))


def unpack(rank: int, data: bytes) -> List[Finding]:
    """Rank ``rank``'s fabric findings as it sent them; a record of another shape is itself a finding."""
    try:
        version, count, *rest = inbound.unpack_record(LAYOUT, data, f"rank {rank}'s fabric findings")
    except inbound.Unreadable as error:
        return [Finding(fabric_rules.KIND, f"rank {rank}: {error}", [rank])]
    lengths, body = rest[:MAX_LINES], rest[MAX_LINES]
    if version != VERSION or count > MAX_LINES or any(length > LINE_BYTES for length in lengths):
        return [Finding(fabric_rules.KIND, f"rank {rank} sent a fabric record of another version ({version}): "
                                           "every rank must run the same bootstrap", [rank])]
    lines = [body[i * LINE_BYTES:i * LINE_BYTES + lengths[i]].decode("utf-8", errors="replace") for i in range(count)]
    return [Finding(fabric_rules.KIND, outbound.finding(line), [rank]) for line in lines if line]


def agreed(meeting: "Meeting", group: Optional["ProcessGroup"], device: str, lines: Sequence[str]) -> List[Finding]:
    """Every rank's fabric findings, gathered: every rank judges the same bytes."""
    from bootstrap.preflight import measure

    sent = measure.gather(meeting, group, pack(lines), device, "gather_fabric")
    return [finding for rank, data in enumerate(sent) for finding in unpack(rank, data)]
