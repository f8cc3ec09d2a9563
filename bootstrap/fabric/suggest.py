"""The fabric this machine looks like, for ``bootstrap doctor`` to suggest (never to choose): its RDMA devices and
their link layer, EFA devices, and the fabric plugins' files on the library path.

Read from a root directory (``/`` by default; ``bootstrap doctor --sys-root DIR`` for another tree, as the tests
give a fake one): ``<root>/sys/class/infiniband/<device>/ports/<n>/link_layer`` (``InfiniBand`` or ``Ethernet``: the
kernel's rdma core), ``<device>/device/driver`` (a link to the ``efa`` driver on AWS), and the plugins' directories.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import List, Mapping, Optional, Tuple

from bootstrap.doors import inbound, outbound

MAX_DEVICES = 64
OFI_DIRECTORIES = ("opt/amazon/ofi-nccl/lib", "opt/amazon/ofi-nccl/lib64", "opt/aws-ofi-nccl/lib")  # the EFA installer
TCPXO_DIRECTORIES = ("usr/local/nvidia/lib64", "usr/local/tcpxo/lib64", "var/lib/tcpxo/lib64")
TCPX_DIRECTORIES = ("usr/local/tcpx/lib64",)


def _text(path: Path) -> str:
    try:
        return inbound.read_text(path, 256).strip()
    except inbound.Unreadable:
        return ""


def devices(root: Path) -> List[Tuple[str, str]]:
    """Each RDMA device under ``root``: (name, link layer: InfiniBand | Ethernet | efa)."""
    folder = root / "sys" / "class" / "infiniband"
    found: List[Tuple[str, str]] = []
    try:
        names = sorted(os.listdir(folder))[:MAX_DEVICES]
    except OSError:
        return found
    for name in names:
        driver = folder / name / "device" / "driver"
        if os.path.islink(driver) and os.path.basename(os.readlink(driver)) == "efa":
            found.append((name, "efa"))
            continue
        layers = {_text(port / "link_layer") for port in sorted((folder / name / "ports").glob("*"))[:8]}
        layer = "Ethernet" if "Ethernet" in layers else "InfiniBand" if "InfiniBand" in layers else ""
        if layer:
            found.append((name, layer))
    return found


def _names(names: List[str]) -> str:
    return ", ".join(outbound.shown(name, limit=40) for name in names[:4])


def suggest(root: Path = Path("/"), environ: Mapping[str, str] = os.environ) -> Optional[Tuple[str, str]]:
    """(fabric, why) for the fabric this machine looks like, or None when nothing says."""
    found = devices(root)
    efa = [name for name, layer in found if layer == "efa"]
    if efa:
        return "aws_efa", f"EFA devices {_names(efa)} in {outbound.shown(str(root / 'sys/class/infiniband'))}"
    ib = [name for name, layer in found if layer == "InfiniBand"]
    roce = [name for name, layer in found if layer == "Ethernet"]
    if ib or roce:
        fabric, names, layer = ("ib", ib, "InfiniBand") if len(ib) >= len(roce) else ("roce", roce, "Ethernet")
        return fabric, f"{_names(names)}: link layer {layer}"
    library_path = [part.lstrip("/") for part in environ.get("LD_LIBRARY_PATH", "").split(":") if part]
    for folder in (*library_path, *TCPXO_DIRECTORIES):
        if os.path.isfile(root / folder / "nccl-env-profile.sh"):
            return "gcp_tcpxo", f"the GPUDirect-TCPXO plugin's profile in {outbound.shown(str(root / folder))}"
    for folder in (*library_path, *OFI_DIRECTORIES):
        if any(os.path.isfile(root / folder / name) for name in ("libnccl-net-ofi.so", "libnccl-net-aws-ofi.so")):
            return "aws_efa", f"aws-ofi-nccl in {outbound.shown(str(root / folder))} (no EFA device seen)"
    for folder in (*library_path, *TCPX_DIRECTORIES):
        if "tcpx" in folder and os.path.isfile(root / folder / "libnccl-net.so"):
            return "gcp_tcpx", f"a GPUDirect-TCPX plugin in {outbound.shown(str(root / folder))}"
    return None
