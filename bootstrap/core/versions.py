"""Version check: :func:`detect` reads the machine (versions, GPUs, CPUs), :func:`check` is pure.

``check`` takes version strings, so every rule is unit-tested without the hardware
it describes. Every failure is listed at once, each with its fix.
"""

from __future__ import annotations

import os
import platform
from typing import List, Optional

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from bootstrap.core import presets
from bootstrap.core.schema import Requires
from bootstrap.doors.errors import PRESET_KEY
from bootstrap.doors.lean import lean_dataclass

# The package's one version: pyproject reads it (without importing), reports record it as found.bootstrap,
# and bootstrap.__version__ gives it.
PACKAGE_VERSION = "0.1.0"


@lean_dataclass(frozen=True)
class Found:
    """What this machine provides; ``None`` means "absent"."""

    python: str
    torch: str
    cuda: Optional[str]  # torch.version.cuda: None for a CPU build
    nccl: Optional[str]
    cudnn: Optional[str]  # torch.backends.cudnn.version(), e.g. "91002"
    compute_capability: Optional[str]  # the lowest among visible GPUs
    gpus: int
    gpu_names: tuple = ()
    cpus: int = 1  # os.cpu_count()
    cpus_usable: int = 1  # the CPUs this process may run on (affinity, cgroup cpuset)
    cpu_affinity: str = "unknown"  # those CPUs as ranges: 0-3,8
    hip: Optional[str] = None  # torch.version.hip: a ROCm build
    bootstrap: Optional[str] = None  # this package's version


@lean_dataclass(frozen=True)
class Check:
    name: str
    required: str
    found: Optional[str]
    ok: bool
    fix: str = ""  # how to satisfy the requirement, empty when ok


def detect() -> Found:
    """Read versions and GPUs. Does not create a CUDA context on a CPU-only machine."""
    import torch

    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    capabilities = [torch.cuda.get_device_capability(i) for i in range(gpus)]
    nccl = None
    if torch.version.cuda is not None:
        try:
            nccl = ".".join(str(part) for part in torch.cuda.nccl.version())
        except (AttributeError, RuntimeError):  # a build without NCCL
            nccl = None
    return Found(
        python=platform.python_version(),
        torch=torch.__version__,
        cuda=torch.version.cuda,
        nccl=nccl,
        cudnn=str(torch.backends.cudnn.version()) if torch.backends.cudnn.is_available() else None,
        compute_capability="%d.%d" % min(capabilities) if capabilities else None,
        gpus=gpus,
        gpu_names=tuple(torch.cuda.get_device_name(i) for i in range(gpus)),
        cpus=os.cpu_count() or 1,
        cpus_usable=usable_cpus(),
        cpu_affinity=cpu_affinity(),
        hip=getattr(torch.version, "hip", None),
        bootstrap=PACKAGE_VERSION,
    )



def usable_cpus() -> int:
    """CPUs this process may run on (respects taskset, cgroups cpusets, SLURM and MPI binding)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def launcher_cpus() -> Optional[int]:
    """CPUs the process that started this one may run on (None: unknown). Fewer usable here means
    the launcher bound this process to a part of them (see ``plan.ranks_sharing_cpus``)."""
    try:
        return len(os.sched_getaffinity(os.getppid()))
    except (AttributeError, OSError):  # macOS, Windows; a parent that is gone or not ours to read
        return None


def cpu_affinity() -> str:
    """The CPUs this process may run on, as ranges: ``0-3,8``."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except AttributeError:
        return "unknown"
    ranges: List[str] = []
    start: Optional[int] = cpus[0]  # None past the last
    for prev, cur in zip(cpus, cpus[1:] + [None], strict=True):
        if cur != prev + 1:
            ranges.append(f"{start}-{prev}" if prev != start else str(start))
            start = cur
    return ",".join(ranges)


def _contains(spec: str, found: str) -> bool:
    try:
        # prereleases=True: a nightly torch (2.14.0.dev...) satisfies ">=2.1".
        return SpecifierSet(spec).contains(Version(found), prereleases=True)
    except InvalidVersion:
        return False


def check(requires: Requires, found: Found, device: str = "cpu") -> List[Check]:
    """One Check per non-null requirement, in a fixed order.

    ``device: cuda`` is a requirement of its own: a task told to use CUDA needs a GPU.
    """
    checks: List[Check] = []
    if device == "cuda":
        ok = found.gpus > 0
        fix = "" if ok else "sets device: cuda, but no CUDA device is visible"
        checks.append(Check("device", "cuda", "cuda" if ok else "cpu only", ok, fix))
    for name, label in (("python", "Python"), ("torch", "torch"), ("cuda", "CUDA"), ("nccl", "NCCL")):
        spec = getattr(requires, name)
        if spec is None:
            continue
        have = getattr(found, name)
        ok = have is not None and _contains(spec, have)
        if ok:
            fix = ""
        elif have is None and name in ("cuda", "nccl"):
            fix = f"needs {label} {spec}, but this torch ({found.torch}) was built without {label}"
        else:
            fix = f"needs {label} {spec}, but found {have}"
        checks.append(Check(name, spec, have, ok, fix))

    if requires.compute_capability is not None:
        have = found.compute_capability
        ok = have is not None and Version(have) >= Version(requires.compute_capability)
        if ok:
            fix = ""
        elif have is None:
            fix = f"needs a GPU of compute capability >= {requires.compute_capability}, but no CUDA GPU is visible"
        else:
            fix = f"needs compute capability >= {requires.compute_capability}, but the GPUs here have {have}"
        checks.append(Check("compute_capability", f">={requires.compute_capability}", have, ok, fix))

    if requires.gpus is not None:
        ok = found.gpus >= requires.gpus
        fix = "" if ok else f"needs at least {requires.gpus} GPU(s), but {found.gpus} are visible"
        checks.append(Check("gpus", f">={requires.gpus}", str(found.gpus), ok, fix))
    return checks


def mismatch_message(preset_name: str, checks: List[Check], *, cpu_override: str = f"{PRESET_KEY}={presets.CPU_PRESET}",
                     warn: bool = False) -> str:
    """One block listing every failed check and the ways forward.

    ``cpu_override`` chooses the cpu preset as this job can (``+env=cpu_debug`` for an app that
    enabled the bootstrap with ``+env=...``): the suggested command works there.
    With ``warn``, the job goes on, and the message says so instead of suggesting it.
    """
    failed = [c for c in checks if not c.ok]
    lines = [f"{PRESET_KEY}={preset_name} does not fit this machine:"]
    lines += [f"  - {PRESET_KEY}={preset_name} {c.fix}" for c in failed]
    if warn:
        lines.append(f"Continuing because {PRESET_KEY}.on_mismatch=warn.")
    else:
        alternative = f"run with {cpu_override}, or " \
            if preset_name != presets.CPU_PRESET else ""
        lines.append(f"Fix: {alternative}with {PRESET_KEY}.on_mismatch=warn to continue anyway.")
    return "\n".join(lines)


OPENMP_RUNTIMES = ("libgomp", "libiomp5", "libomp")


def openmp_runtimes() -> tuple:
    """The OpenMP runtimes loaded in this process (from /proc/self/maps); empty where it cannot tell."""
    try:
        with open("/proc/self/maps") as maps:
            loaded = maps.read()
    except OSError:
        return ()
    return tuple(name for name in OPENMP_RUNTIMES if f"/{name}" in loaded or f"{name}-" in loaded or
                 f"{name}." in loaded)
