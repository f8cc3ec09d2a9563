"""When each environment variable is read, and so whether setting it now still works.

The bootstrap runs after ``import torch``. A variable read at library load or at
CUDA start-up may already be too late for this process; it is still exported, for
child processes, and reported as not effective. This table is the one place that
knowledge lives; the README shows the same table (a test keeps them in step).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Callable, Tuple


@dataclass(frozen=True)
class ProcessState:
    """The facts that decide whether a late variable still takes effect."""

    cuda_initialized: bool
    process_group_initialized: bool


@dataclass(frozen=True)
class Reader:
    patterns: Tuple[str, ...]  # shell-style patterns of variable names
    read_when: str  # the moment the library reads the variable
    applied_by: str  # how the bootstrap makes it take effect in this process
    still_read: Callable[[ProcessState], bool]  # is that moment still ahead of us?
    # False where an API call already gives this process the same effect, so a
    # late variable needs no warning (threads, seeding).
    warn_when_late: bool = True


def _never(state: ProcessState) -> bool:
    return False


def _before_cuda(state: ProcessState) -> bool:
    return not state.cuda_initialized


def _before_process_group(state: ProcessState) -> bool:
    return not state.process_group_initialized


READERS: Tuple[Reader, ...] = (
    Reader(("OMP_NUM_THREADS", "MKL_NUM_THREADS"), "at library load (libgomp, MKL)",
           "torch.set_num_threads from env.threads.intra_op; the variable reaches child processes", _never,
           warn_when_late=False),
    Reader(("PYTHONHASHSEED",), "at interpreter start",
           "child processes only; this process is seeded through random/numpy/torch", _never,
           warn_when_late=False),
    Reader(("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"), "when the CUDA caching allocator initialises",
           "the variable, if CUDA is not initialised yet", _before_cuda),
    Reader(("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_MAX_CONNECTIONS", "CUDA_LAUNCH_BLOCKING", "CUDA_MODULE_LOADING"),
           "when the CUDA context is created", "the variable, if CUDA is not initialised yet", _before_cuda),
    Reader(("CUBLAS_WORKSPACE_CONFIG",), "at the first cuBLAS call",
           "the variable, if CUDA is not initialised yet", _before_cuda),
    Reader(("TORCH_SHOW_CPP_STACKTRACES",), "at the first C++ error (then cached)",
           "the variable", lambda state: True),
    Reader(("TORCH_NCCL_*", "TORCH_DISTRIBUTED_DEBUG"), "when a process group is created",
           "the variable, if no process group exists yet", _before_process_group),
    Reader(("NCCL_*",), "when an NCCL communicator is created",
           "the variable, if no process group exists yet", _before_process_group),
)

UNKNOWN = Reader(("*",), "not in the bootstrap's table", "the variable; assumed to be read after start-up",
                 lambda state: True)


def reader_for(name: str) -> Reader:
    for reader in READERS:
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in reader.patterns):
            return reader
    return UNKNOWN


def current_state() -> ProcessState:
    """Read the process state. Imports nothing that is not already loaded."""
    import sys

    torch = sys.modules.get("torch")
    if torch is None:
        return ProcessState(cuda_initialized=False, process_group_initialized=False)
    dist = torch.distributed
    return ProcessState(
        cuda_initialized=torch.cuda.is_initialized(),
        process_group_initialized=dist.is_available() and dist.is_initialized(),
    )
