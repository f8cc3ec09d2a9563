"""The host's name, the container the job runs in, and the NVIDIA driver's version."""

from __future__ import annotations

import os
import re
import socket
from typing import Callable, Mapping, Optional

from bootstrap.doors import inbound

NVIDIA_VERSION_FILE = "/proc/driver/nvidia/version"
# "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar ..." and, for the open kernel modules,
# "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build ..."
_DRIVER = re.compile(r"Kernel Module(?: for \S+)?\s+([0-9]+(?:\.[0-9]+)+)")


def host() -> str:
    return socket.gethostname()


def container(environ: Mapping[str, str], exists: Callable[[str], bool] = os.path.exists) -> Optional[str]:
    """The container the process runs in, from each engine's documented marker; None outside one.

    Kubernetes first: its pods run in a container engine of their own, and the pod is what a user names."""
    if environ.get("KUBERNETES_SERVICE_HOST"):  # set in every container of a pod
        return "kubernetes"
    if environ.get("APPTAINER_CONTAINER") or environ.get("SINGULARITY_CONTAINER") or exists("/.singularity.d"):
        return "apptainer"
    if exists("/run/.containerenv"):  # Podman's; Docker writes none
        return "podman"
    if exists("/.dockerenv"):
        return "docker"
    return None


def driver_version(text: str) -> Optional[str]:
    """The driver's version from /proc/driver/nvidia/version's text; None if it names none."""
    found = _DRIVER.search(text)
    return found.group(1) if found else None


def gpu_driver() -> Optional[str]:
    """The loaded NVIDIA driver's version: from the kernel module's file, else NVML (nvidia-ml-py) where
    installed; None on a machine without one."""
    try:
        return driver_version(inbound.read_text(NVIDIA_VERSION_FILE, limit=64 * 1024))
    except (OSError, inbound.Unreadable):
        pass
    try:
        import pynvml  # type: ignore[import-not-found]  # optional: nvidia-ml-py
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        try:
            version = pynvml.nvmlSystemGetDriverVersion()
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - NVML without a driver raises its own errors: no driver to record
        return None
    return version.decode() if isinstance(version, bytes) else str(version)
