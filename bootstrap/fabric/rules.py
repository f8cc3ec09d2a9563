"""The fabric rules: what NCCL's log and the environment must show for each fabric, each with its source. Pure.

Two moments (docs/fabrics.md):

- **before the group** (:func:`stale`): a variable old guides still copy, named with its version rule and its
  source. A warning: the plugin's version is known only once NCCL has loaded it;
- **at the first collective** (:func:`judge`), from what NCCL said (:mod:`bootstrap.fabric.nccl_log`): the
  network by its name and kind, the OFI provider, the NIC count where the instance type is known, no sockets
  between nodes, GPUDirect RDMA on the network's channel lines, a plugin that did not load; and the stale rules
  again, now definite or cleared by the versions NCCL and the plugin printed.

Every finding is one line: the rank and host, what NCCL said (quoted, made visible), what was expected, the
likely cause and the fix. The rule's source is kept beside it (:data:`SOURCES`); docs/fabrics.md lists them.

**A verdict from evidence.** A finding stops the job (``stops``, under ``preflight.mode=error``) only where NCCL's
own lines show what is wrong: another network, a plugin that failed, sockets or a virtual interface between nodes,
channels without GPUDirect RDMA, fewer NICs than the instance has. A risk that the log does not show (a version
rule: NCCL older than 2.21 on RoCE without ``NCCL_IB_GID_INDEX``, a stale variable) is a warning, unless NCCL's
own words show it happened (error 12, the timeout a wrong GID gives).
"""

from __future__ import annotations

import re
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from bootstrap.doors import outbound
from bootstrap.doors.lean import lean_dataclass
from bootstrap.fabric.nccl_log import Process

MAX_QUOTE = 160  # characters of NCCL's line quoted in a finding
KIND = "fabric"  # the preflight finding kind these rules make (shared name, issue 40)

# fabric -> the network kind NCCL must choose, what a person reads, and the plugin that provides it (None: NCCL's own)
FABRICS: Dict[str, Tuple[str, str, Optional[str]]] = {
    "socket": ("socket", "Socket", None),
    "ib": ("ib", "IB (or the RDMA plugin's IBext) over InfiniBand", None),
    "roce": ("roce", "IB over RoCE devices", None),
    "aws_efa": ("efa", "Libfabric (AWS Libfabric before aws-ofi-nccl 1.13) with provider efa", "aws-ofi-nccl"),
    "gcp_tcpxo": ("fastrak", "FasTrak", "the GPUDirect-TCPXO (FasTrak) plugin"),
    "gcp_tcpx": ("tcpx", "GPUDirectTCPX_v7", "the GPUDirect-TCPX plugin"),
}

SOURCES = {  # rule -> its primary source, and whether it was written from a document or from a log read
    "network": "NCCL src/net.cc 'Using network %s' (2.4+); aws-ofi-nccl 'Libfabric' since 1.13 (earlier 'AWS "
               "Libfabric'); google/nccl-plugin-gpudirect-tcpxo fastrak_offload/init.cc; logs in tests/data/nccl",
    "provider": "aws-ofi-nccl 'Selected provider is efa'; NVIDIA/nccl#229 (tcp;ofi_rxm: a security group)",
    "nics": "AWS EC2 User Guide, network cards per instance: p4d/p4de 4 EFA, p5/p5e 32, p5en 16, p6-b200 8",
    "socket_between_nodes": "NCCL transport/net.cc 'Channel ... via NET/Socket/0'; NVIDIA/nccl#398",
    "interface": "NVIDIA/nccl-tests#29 (virbr0), NVIDIA/nccl#1126 (lo), NCCL_SOCKET_IFNAME docs",
    "gdr": "NCCL transport/net.cc: '/GDRDMA' ends a channel line when GPUDirect RDMA is used (NVIDIA/nccl#392)",
    "plugin": "NCCL src/plugin/net.cc 'NET/Plugin: Could not find' (2.23+), 'No plugin found' (< 2.23), "
              "'Failed to initialize any NET plugin'; aws-ofi-nccl 'fi_getinfo ... No data available'",
    "gid": "NCCL environment docs, NCCL_IB_GID_INDEX: selected dynamically since 2.21; NVIDIA/nccl#426 (error 12)",
    "stale": "aws-ofi-nccl doc/efa-env-var.md; NVIDIA/aicr#422 (NCCL_FASTRAK_* against Google's checker)",
}

AWS_NICS = {  # EFA interfaces per instance type (AWS EC2 User Guide, "Maximize network bandwidth ... network cards")
    "p4d.24xlarge": 4, "p4de.24xlarge": 4, "p5.48xlarge": 32, "p5e.48xlarge": 32, "p5en.48xlarge": 16,
    "p6-b200.48xlarge": 8,
}
VIRTUAL_INTERFACES = re.compile(r"^(lo|docker\d*|virbr\d*|veth\w*|br-\w+|cni\d*|flannel\.\d+|tailscale\d*)$")


@lean_dataclass(frozen=True)
class Stale:
    """A variable old guides still copy, its rule, and when the rule holds."""

    name: str
    fabric: str
    rule: str  # the source's words
    source: str
    value: Optional[str] = None  # only this value is stale (case-insensitive); None: any
    ofi_at_least: Optional[str] = None  # stale from this aws-ofi-nccl version on; None: whatever the version
    libfabric_at_least: Optional[str] = None


STALE = (
    Stale("FI_EFA_USE_DEVICE_RDMA", "aws_efa", "'Do not set for libfabric>=1.18.0 and aws-ofi-nccl>=1.7.0'",
          "aws-ofi-nccl doc/efa-env-var.md", ofi_at_least="1.7.0", libfabric_at_least="1.18.0"),
    Stale("FI_PROVIDER", "aws_efa", "needed only up to aws-ofi-nccl 1.5.0: the plugin selects efa itself",
          "aws-ofi-nccl doc/efa-env-var.md", value="efa", ofi_at_least="1.6.0"),
    Stale("NCCL_PROTO", "aws_efa", "needed only up to aws-ofi-nccl 1.5.0; later it forbids LL128 where unsafe",
          "aws-ofi-nccl doc/efa-env-var.md", value="simple", ofi_at_least="1.6.0"),
    Stale("RDMAV_FORK_SAFE", "aws_efa", "'Do not use'", "aws-ofi-nccl doc/efa-env-var.md"),
    Stale("FI_EFA_FORK_SAFE", "aws_efa", "'Not needed anymore': the plugin sets it itself",
          "aws-ofi-nccl doc/efa-env-var.md"),
)


@lean_dataclass
class FabricFinding:
    """One line about one process; ``stops``: a finding that stops the job under ``preflight.mode=error``."""

    message: str
    rank: Optional[int] = None
    stops: bool = True


def version_tuple(text: Optional[str]) -> Optional[Tuple[int, ...]]:
    """``"1.11.0-aws"`` -> ``(1, 11, 0)``; ``"2.19.3+cuda12.3"`` -> ``(2, 19, 3)``; None when no version is there."""
    match = re.match(r"\s*v?(\d{1,4})\.(\d{1,4})(?:\.(\d{1,4}))?", text or "")
    return tuple(int(part or 0) for part in match.groups()) if match else None


def at_least(version: Optional[str], floor: str) -> Optional[bool]:
    """Is ``version`` at least ``floor``? None when the version is unknown."""
    found = version_tuple(version)
    return None if found is None else found >= version_tuple(floor)  # type: ignore[operator]


def ofi_network_name(ofi_version: Optional[str]) -> str:
    """The name aws-ofi-nccl gives its network: ``Libfabric`` from 1.13.0 on, ``AWS Libfabric`` before (either when
    the version is unknown)."""
    newer = at_least(ofi_version, "1.13.0")
    return "Libfabric or AWS Libfabric" if newer is None else "Libfabric" if newer else "AWS Libfabric"


def gid_index_needed(nccl_version: Optional[str]) -> Optional[bool]:
    """Does this NCCL need NCCL_IB_GID_INDEX set for RoCE v2? NCCL >= 2.21 selects the GID itself."""
    newer = at_least(nccl_version, "2.21.0")
    return None if newer is None else not newer


def quoted(text: str) -> str:
    """NCCL's line as a finding quotes it: masked, made visible, cut, and always between quotes."""
    shown = outbound.shown(text, limit=MAX_QUOTE)
    return shown if shown[:1] in ("'", '"') else f"'{shown}'"


# -- before the group ------------------------------------------------------------------------------------------------

def stale_rule_holds(rule: Stale, value: str, ofi: Optional[str], libfabric: Optional[str]) -> Optional[bool]:
    """Is ``value`` stale under ``rule`` with these versions? None: not known until the versions are (a warning)."""
    if rule.value is not None and value.strip().lower() != rule.value:
        return False
    holds: Optional[bool] = True
    for version, floor in ((ofi, rule.ofi_at_least), (libfabric, rule.libfabric_at_least)):
        if floor is None:
            continue
        known = at_least(version, floor)
        if known is False:
            return False
        if known is None:
            holds = None
    if rule.ofi_at_least is None and ofi is None:
        return None  # "do not use": definite once the plugin is known to be there
    return holds


def stale(fabric: str, variables: Mapping[str, str], ofi: Optional[str] = None,
          libfabric: Optional[str] = None) -> List[Tuple[str, bool]]:
    """Each stale variable in ``variables`` (what the job's processes start with) for ``fabric``: (line, definite).
    Without the versions, every rule that may hold is a warning; with them, a definite finding or nothing."""
    found: List[Tuple[str, bool]] = []
    for rule in STALE:
        if rule.fabric != fabric or rule.name not in variables:
            continue
        holds = stale_rule_holds(rule, variables[rule.name], ofi, libfabric)
        if holds is False:
            continue
        versions = ", ".join(f"{what} {version}" for what, version in (("aws-ofi-nccl", ofi), ("libfabric", libfabric))
                             if version) or "the plugin's version not yet known"
        found.append((f"{rule.name}={outbound.shown(variables[rule.name], rule.name, 40)} is stale for env/fabric="
                      f"{fabric}: {rule.rule} ({rule.source}; {versions}): unset it, and the plugin uses its own "
                      "value", bool(holds)))
    if fabric == "gcp_tcpxo":
        fixed = sorted(name for name in variables if name.startswith("NCCL_FASTRAK_"))
        if fixed:
            found.append((f"{', '.join(fixed[:4])}{' ...' if len(fixed) > 4 else ''} set by hand for env/fabric="
                          "gcp_tcpxo: these change between plugin releases, and Google's guest-config checker aborts "
                          "stale ones (NVIDIA/aicr#422): leave them to the plugin's nccl-env-profile.sh", False))
    return found


# -- at the first collective -----------------------------------------------------------------------------------------

def judge(fabric: str, processes: Sequence[Process], variables: Mapping[str, str], spans_nodes: Optional[bool],
          gdr: bool = False) -> List[FabricFinding]:
    """The findings for ``fabric`` from what each process of NCCL said. ``variables``: the environment the processes
    ran with (for the stale rules); ``spans_nodes``: the job runs on more than one node (None: not known, then taken
    from the log: several hosts, or NCCL's nNodes)."""
    if fabric not in FABRICS:
        return []
    if spans_nodes is None:
        spans_nodes = len({p.host for p in processes if p.host}) > 1 or any((p.nnodes or 0) > 1 for p in processes)
    findings: List[FabricFinding] = []
    providers = {p.host: (p.provider, p.provider_line) for p in processes if p.provider}
    for process in processes:
        if process.provider is None and process.host in providers:  # one process of the host said it for all
            process.provider, process.provider_line = providers[process.host]
        findings += _process(fabric, process, spans_nodes, gdr)
    ofi = next((p.ofi_version for p in processes if p.ofi_version), None)
    libfabric = next((p.libfabric_version for p in processes if p.libfabric_version), None)
    if ofi is not None or fabric != "aws_efa":  # a version rule, which no line of NCCL's shows failing: a warning
        findings += [FabricFinding(line, stops=False) for line, definite in stale(fabric, variables, ofi, libfabric)
                     if definite]
    if fabric == "roce" and "NCCL_IB_GID_INDEX" not in variables:
        nccl = next((p.nccl_version for p in processes if p.nccl_version), None)
        timed_out = next((line for p in processes for line in p.failures if _ERROR_12.search(line)), None)
        if gid_index_needed(nccl):
            said = f"NCCL said {quoted(timed_out)}: " if timed_out else ""
            findings.append(FabricFinding(
                f"{said}NCCL {outbound.shown(nccl, limit=32)} does not select the RoCE v2 GID itself (NCCL >= 2.21 "
                "does), and NCCL_IB_GID_INDEX is unset: its connections " + ("timed out" if timed_out else "may time "
                "out") + " with error 12 (NVIDIA/nccl#426). Set NCCL_IB_GID_INDEX=3 (RoCE v2; show_gids names the "
                "index), or use NCCL >= 2.21", stops=timed_out is not None))  # a risk; a stop once NCCL says it
    return findings


_ERROR_12 = re.compile(r"with (?:error |status=)12\b")  # NCCL's words for an IB/RoCE timeout


def _process(fabric: str, process: Process, spans_nodes: bool, gdr: bool) -> List[FabricFinding]:
    kind, expected, plugin = FABRICS[fabric]
    who = process.who
    if fabric == "aws_efa":
        expected = f"{ofi_network_name(process.ofi_version)} with provider efa"
    network = process.network
    failures = failures_for(fabric, process)
    if not process.networks:
        if failures:  # the failure is the finding (NCCL stopped, or the log holds no later line)
            return [_finding(process, f"NCCL said {quoted(decisive(failures))}, and this log names no network it "
                                      f"chose; expected {expected}: {_cause(fabric, None, process)}")]
        # a process that said nothing of its network (a later communicator's lines, a cut log): its channels speak
        return _channels(fabric, process, spans_nodes, gdr, expected)
    findings = []
    if network.kind != kind or len(process.networks) > 1:
        said = decisive(failures) if failures else process.network_line or process.networks[0]
        extra = f" (then {quoted(process.network_line)})" if said != process.network_line and process.network_line \
            else ""
        if network.kind == "ofi" and process.provider_line:
            said, extra = process.provider_line, f" (then {quoted(process.network_line or '')})"
        findings.append(_finding(process, f"NCCL said {quoted(said)}{extra}; expected {expected}: "
                                          f"{_cause(fabric, network.kind, process)}"))
    elif fabric == "aws_efa" and process.provider not in (None, "efa"):
        findings.append(_finding(process, f"NCCL said {quoted(process.provider_line or '')}; expected provider efa: "
                                          f"{_cause(fabric, 'ofi', process)}"))
    if fabric == "aws_efa" and process.platform in AWS_NICS and process.nics is not None \
            and process.nics < AWS_NICS[process.platform]:
        findings.append(_finding(process, f"NCCL said {quoted(process.provider_line or '')} on "
                                          f"{process.platform}, which has {AWS_NICS[process.platform]} EFA "
                                          "interfaces: some are not visible here. Attach every network card at launch "
                                          "and give the container every /dev/infiniband/uverbs* device "
                                          "(vpc.amazonaws.com/efa on Kubernetes)"))
    return findings or _channels(fabric, process, spans_nodes, gdr, expected)


def _channels(fabric: str, process: Process, spans_nodes: bool, gdr: bool, expected: str) -> List[FabricFinding]:
    """What the channel lines and the socket interfaces say, when the network itself was as expected or unnamed."""
    findings: List[FabricFinding] = []
    sockets = [line for line in process.channel_lines if " via NET/Socket" in line]
    if spans_nodes and fabric != "socket" and sockets:
        findings.append(_finding(process, f"NCCL said {quoted(sockets[0])}: sockets between nodes; expected "
                                          f"{expected}: {_cause(fabric, 'socket', process)}"))
    virtual = [name for name in process.socket_devices if VIRTUAL_INTERFACES.match(name)]
    socket_line = process.socket_line or ""
    sockets_chosen = bool(socket_line) and (fabric == "socket" or process.network.kind == "socket")
    fix = ("expected the node's own network interface: set NCCL_SOCKET_IFNAME to it (NCCL_SOCKET_IFNAME=eth0, or "
           "=^lo,docker,virbr to leave those out)")
    if sockets_chosen and spans_nodes and virtual:
        findings.append(_finding(process, f"NCCL said {quoted(socket_line)}: {', '.join(virtual)} "
                                          f"cannot reach another node; {fix}"))
    elif sockets_chosen and "lo" in process.socket_devices:
        # A fabric preset says the job spans nodes, and loopback never leaves this host: a finding where this log
        # shows one host too, a warning there (a stop needs the job seen across nodes, above).
        findings.append(FabricFinding(
            f"{process.who}: NCCL said {quoted(socket_line)}: lo never leaves this host, and env/fabric="
            f"{fabric} is for a job across nodes; {fix}", rank=process.rank, stops=False))
    nets = [line for line in process.channel_lines if " via NET/" in line and " via NET/Socket" not in line]
    if fabric == "aws_efa":  # GPUDirect RDMA over EFA only on the instance types that have it (p4d and later)
        gdr = gdr and process.platform in AWS_NICS
    if gdr and nets and not any("/GDRDMA" in line for line in nets) and not findings:
        findings.append(_finding(process, f"NCCL said {quoted(nets[0])}, without /GDRDMA; expected GPUDirect RDMA "
                                          "on the network's channels: the GPU's memory cannot be registered with the "
                                          "NIC. Load nvidia-peermem (or use a driver and NCCL with DMA-BUF), and "
                                          "check NCCL_NET_GDR_LEVEL is not set lower"))
    return findings


STOPPED = "Failed to initialize any NET plugin"  # NCCL's own words when NCCL_NET names a network that did not load
_PLUGIN_LOAD = ("Could not find", "No plugin found", "Plugin load", "Failed to find ncclNetPlugin symbol")


def failures_for(fabric: str, process: Process) -> List[str]:
    """The failure lines that matter for ``fabric``: a net plugin that did not load matters only where the fabric
    needs one (NCCL's own IB and sockets need none, and NCCL says "No plugin found ... using internal
    implementation" on every such job)."""
    plugin = FABRICS[fabric][2] if fabric in FABRICS else None
    return [line for line in process.failures
            if plugin is not None or not any(words in line for words in _PLUGIN_LOAD)]


def decisive(failures: Sequence[str]) -> str:
    """The failure line to quote: the first that says something failed, else the first."""
    return next((line for line in failures if "fail" in line.lower() or "No device" in line), failures[0])


def _finding(process: Process, text: str) -> FabricFinding:
    return FabricFinding(f"{process.who}: {text}", rank=process.rank)


def _cause(fabric: str, got: Optional[str], process: Process) -> str:
    """The likely cause and the fix, from the failure NCCL printed or, without one, from what it chose instead."""
    failures = " ".join(failures_for(fabric, process))
    if STOPPED in failures:
        return ("NCCL_NET names a network whose plugin did not load: put the plugin's directory on LD_LIBRARY_PATH "
                "(or unset NCCL_NET to see what NCCL finds)")
    if fabric == "aws_efa":
        if "fi_getinfo" in failures or "Only EFA provider" in failures:
            return ("Libfabric found no EFA device: EFA devices not visible in the container: mount /dev/infiniband "
                    "(request vpc.amazonaws.com/efa on Kubernetes), and use the EFA installer's libfabric")
        if got == "ofi":
            return ("Libfabric chose a TCP provider, not efa: the security group must allow all traffic to itself "
                    "(inbound and outbound), and the instance must have EFA interfaces attached (NVIDIA/nccl#229)")
        return ("aws-ofi-nccl did not load or found no EFA device: plugin not on LD_LIBRARY_PATH "
                "(/opt/amazon/ofi-nccl/lib), or EFA devices not visible in the container: mount /dev/infiniband")
    if fabric in ("gcp_tcpxo", "gcp_tcpx"):
        plugin = FABRICS[fabric][2]
        return (f"{plugin} did not load: plugin not on LD_LIBRARY_PATH (/usr/local/nvidia/lib64 on GKE), or its "
                "receive-datapath manager (RxDM / tcpx daemon) is not running on the node")
    if fabric in ("ib", "roce"):
        if _ERROR_12.search(failures):
            return ("error 12 is a timeout: the NICs cannot reach each other (NVIDIA/nccl#426). On RoCE v2 set "
                    "NCCL_IB_GID_INDEX=3 (show_gids names the index), or use NCCL >= 2.21's automatic GID; on a "
                    "rail-only fabric, NCCL_CROSS_NIC=0")
        disabled = [f"{name}={value}" for name, value in process.environment.items()
                    if (name, value.strip()) in (("NCCL_IB_DISABLE", "1"), ("NCCL_IBEXT_DISABLE", "1"))]
        if disabled:
            return f"{' and '.join(disabled)} set in the environment (NCCL said so): unset it"
        if got == "roce":
            return "the HCAs' link layer is Ethernet: this is RoCE; choose env/fabric=roce"
        if got == "ib":
            return "the HCAs' link layer is InfiniBand; choose env/fabric=ib"
        return ("NCCL found no usable HCA ('NET/IB : No device found'): the RDMA libraries (libibverbs, rdma-core) "
                "or /dev/infiniband are missing in the container, or NCCL_IB_DISABLE=1 / NCCL_NET=Socket is set")
    if fabric == "socket":
        return "NCCL found an RDMA network: choose the env/fabric preset for it, or set NCCL_NET=Socket"
    return "NCCL chose another network: check the fabric's plugin and NCCL_NET"
