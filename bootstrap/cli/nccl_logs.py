"""``bootstrap doctor --nccl-log FILE...``: NCCL's logs that already exist, judged against a preset and its fabric.

Yesterday's slow job, a colleague's paste: every file is read through the same bounded reader as a job's own log
(whole lines, within 4 MiB; a file a person names may be anyone's), with whatever a launcher or a log collector put
before each line. The fabric's rules (:mod:`bootstrap.fabric.rules`) judge every process the logs hold,
and each finding is one line. The exit status is the logs' verdict alone: 1 when a finding would have stopped the
job (``preflight.mode=error``), else 0; 2 when a file cannot be read. This machine is shown, not judged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from bootstrap.core.schema import EnvConfig, FabricName
from bootstrap.doors import inbound, outbound
from bootstrap.fabric import nccl_log
from bootstrap.fabric import rules as fabric_rules

FABRIC_OF_KIND = {"socket": "socket", "ib": "ib", "roce": "roce", "efa": "aws_efa", "fastrak": "gcp_tcpxo",
                  "tcpx": "gcp_tcpx"}  # preflight.network, without a fabric: that kind's fabric rules judge
MAX_FILES = 4096  # files judged at once; the others are named and counted, and the logs get no verdict of "ok"
MAX_NAMED = 8  # files past a bound named one by one; the rest counted


def fabric_of(preset: EnvConfig) -> Optional[str]:
    """The fabric whose rules judge: the preset's, else the one ``preflight.network`` names; None: neither."""
    if preset.fabric.name is not FabricName.none:
        return preset.fabric.name.value
    network = preset.preflight.network.value if preset.preflight.network else None
    return FABRIC_OF_KIND.get(network or "")


FIX = ("name the files NCCL wrote with NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=INIT,NET (NCCL_DEBUG_FILE=nccl.%h.%p.log "
       "writes one per process)")


def unreadable(paths: Sequence[Path]) -> List[str]:
    """One line for each file named that cannot be read at all (absent, a directory, a FIFO, no permission), with the
    fix: said first and alone, before any report (nothing is judged while one is wrong)."""
    found = []
    for path in paths[:MAX_FILES]:
        try:
            nccl_log.openable(path)
        except inbound.Unreadable as error:
            reason = str(error).removeprefix(f"{Path(path).name}: ")  # the reader names the file; the path says it
            found.append(f"--nccl-log {outbound.shown(str(path))}: not read: {reason}; {FIX}")
    return found


def _named(paths: Sequence[Path]) -> str:
    shown = ", ".join(outbound.shown(str(path), limit=400) for path in paths[:MAX_NAMED])
    return shown + (f" and {len(paths) - MAX_NAMED} more" if len(paths) > MAX_NAMED else "")


def judge(preset: EnvConfig, paths: Sequence[Path]) -> Tuple[List[str], List[str], bool]:
    """(the lines to print, what was not read and why, whether a finding would stop the job). Nothing a bound
    leaves out is silent: files past :data:`MAX_FILES`, a file's bytes past ``nccl_log.MAX_LOG_BYTES`` and
    processes past ``nccl_log.MAX_PROCESSES`` are named and counted among what was not read, so the logs' verdict
    is never "no finding" on part of them."""
    processes: List[nccl_log.Process] = []
    unread: List[str] = []
    cut: List[Path] = []
    over: Dict[str, int] = {}
    for path in paths[:MAX_FILES]:
        try:
            text, size = nccl_log.read_named(path)
        except inbound.Unreadable as error:
            unread.append(f"{outbound.shown(str(path))}: not read: {error}")
            continue
        processes += nccl_log.processes(text, over)
        if size > nccl_log.MAX_LOG_BYTES:
            cut.append(path)
    if len(paths) > MAX_FILES:
        past = len(paths) - MAX_FILES
        unread.append(f"{past} file{'s' if past != 1 else ''} not read, past the first {MAX_FILES} (at most "
                      f"{MAX_FILES} are judged at once): {_named(paths[MAX_FILES:])}; judge them in another run")
    if cut:
        bound = nccl_log.MAX_LOG_BYTES
        first = f"{bound // 2**20} MiB" if bound % 2**20 == 0 else f"{bound} bytes"
        unread.append(f"{len(cut)} file{'s' if len(cut) != 1 else ''} read only to {'their' if len(cut) > 1 else 'its'}"
                      f" first {first}, the rest not judged: {_named(cut)}")
    if over.get("processes"):
        count = over["processes"]
        unread.append(f"{count} process{'es' if count != 1 else ''} not judged, past the first "
                      f"{nccl_log.MAX_PROCESSES} of one file")
    fabric = fabric_of(preset)
    hosts = sorted({p.host for p in processes if p.host})
    chosen: Dict[str, int] = {}
    for process in processes:
        if process.networks:
            text = process.network.text or ""
            chosen[text] = chosen.get(text, 0) + 1
    lines = [f"NCCL's logs: {len(paths)} file{'s' if len(paths) != 1 else ''} named, {len(processes)} process"
             f"{'es' if len(processes) != 1 else ''} on {len(hosts)} host{'s' if len(hosts) != 1 else ''}"
             + (f" ({', '.join(outbound.shown(h, limit=40) for h in hosts[:4])}{' ...' if len(hosts) > 4 else ''})"
                if hosts else "")]
    lines.append("  networks chosen: " + (", ".join(f"{outbound.shown(name, limit=60)} ({count})"
                                                     for name, count in chosen.items()) or "none named"))
    if fabric is None:
        lines.append("  nothing judged: the preset names no fabric and expects no network (add env/fabric=NAME, e.g. "
                     "env/fabric=aws_efa)")
        return lines, unread, False
    expected = fabric_rules.FABRICS[fabric][1]
    lines.append(f"  judged as env/fabric={fabric}: NCCL must choose {expected}")
    if not chosen:
        lines.append("  the logs name no network: were they written with NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS "
                     "holding INIT or NET?")
    variables = {name: value for process in processes for name, value in process.environment.items()}
    variables.update({name: str(value) for name, value in preset.vars.items() if value is not None})
    findings = fabric_rules.judge(fabric, processes, variables, None, preset.fabric.gdr)
    stops = preset.preflight.mode.value == "error" and any(finding.stops for finding in findings)
    lines += [f"  fabric{'' if finding.stops else ' warning (a risk the logs do not show happening)'}: "
              f"{outbound.finding(finding.message)}" for finding in findings]
    if not any(finding.stops for finding in findings):
        lines.append(f"  no finding{' that stops' if findings else ''}: every process that named its network chose "
                     f"{expected}")
    return lines, unread, stops
