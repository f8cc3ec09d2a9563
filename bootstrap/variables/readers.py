"""When each environment variable is read, and so whether setting it now still works.

The bootstrap runs after ``import torch``. A variable read at library load, at
interpreter start or at CUDA start-up may already be too late for this process.
Where torch has an API that applies the value now, the bootstrap calls it, so this
process and the ranks or children it starts run with the same setting. Where it has
none, the variable is still exported for child processes and reported as not
effective here; one that ranks must agree on (debug and numerics, collectives) is
withheld instead, because a child started with it would disagree with this process.

Every row is checked against the real torch in a fresh process by
``tests/e2e/test_readers.py``, as far as a CPU build can show it. The docs show the same
table (``tests/unit/test_docs.py`` keeps them in step).

The table, :func:`reader_for` and the ``still_read`` tests are pure. :func:`current_state`
is the one part that looks at the process, and it keeps the module's one piece of state,
``_group_seen``: whether a process group has ever existed in this process. Torch keeps no
such record (destroying the last group resets its group count), yet some values are read
once per process, at the first group, so a one-process sweep's later jobs must know.
"""

from __future__ import annotations

import fnmatch
import functools
from typing import Callable, Optional, Tuple

from bootstrap.doors.lean import lean_dataclass


@lean_dataclass(frozen=True)
class ProcessState:
    """The facts that decide whether a late variable still takes effect."""

    cuda_initialized: bool
    process_group_initialized: bool
    # A group existed at some point: some values are read once per process, at the
    # first group, and a group destroyed since (a one-process sweep) does not reset them.
    process_group_seen: bool = False


@lean_dataclass(frozen=True)
class Reader:
    patterns: Tuple[str, ...]  # shell-style patterns of variable names
    read_when: str  # the moment the library reads the variable
    applied_by: str  # how the bootstrap makes it take effect in this process
    still_read: Callable[[ProcessState], bool]  # is that moment still ahead of us?
    # False where an API call already gives this process the same effect, so a
    # late variable needs no warning (threads, seeding).
    warn_when_late: bool = True
    # The torch call (in bootstrap.core.runtime.APPLY_NOW) that applies a late value in
    # this process, so that it and its children agree.
    apply_now: Optional[str] = None
    # Ranks and children must run with the same value (debug level, numerics,
    # collective set-up): a late value with no API is withheld, not exported.
    must_agree: bool = False


def _never(state: ProcessState) -> bool:
    return False


def _always(state: ProcessState) -> bool:
    return True


def _before_cuda(state: ProcessState) -> bool:
    return not state.cuda_initialized


def _before_process_group(state: ProcessState) -> bool:
    return not state.process_group_initialized


def _before_first_process_group(state: ProcessState) -> bool:
    return not (state.process_group_initialized or state.process_group_seen)


READERS: Tuple[Reader, ...] = (
    Reader(("OMP_NUM_THREADS", "MKL_NUM_THREADS"), "at library load (libgomp, MKL)",
           "torch.set_num_threads from env.threads.intra_op; the variable reaches child processes", _never,
           warn_when_late=False),
    Reader(("PYTHONHASHSEED",), "at interpreter start",
           "child processes only; this process is seeded through random/numpy/torch", _never,
           warn_when_late=False),
    # Python reads a few variables when it is used, not at start-up.
    Reader(("PYTHONBREAKPOINT", "PYTHONASYNCIODEBUG"), "when used (each breakpoint() call, each new event loop)",
           "the variable", _always),
    # The rest of the interpreter's and the dynamic loader's variables: at process start.
    Reader(("PYTHON*", "LD_*"), "at process start (interpreter, dynamic loader)", "child processes only", _never),
    Reader(("TORCH_DISTRIBUTED_DEBUG",), "when torch.distributed is imported (by import torch)",
           "torch.distributed.set_debug_level_from_env(), so this process and its children agree", _never,
           apply_now="distributed_debug", must_agree=True),
    Reader(("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"), "when the CUDA caching allocator initialises",
           "the variable, if CUDA is not initialised yet", _before_cuda),
    Reader(("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_MAX_CONNECTIONS", "CUDA_LAUNCH_BLOCKING", "CUDA_MODULE_LOADING"),
           "when the CUDA context is created", "the variable, if CUDA is not initialised yet", _before_cuda),
    Reader(("CUBLAS_WORKSPACE_CONFIG",), "at the first cuBLAS call",
           "the variable, if CUDA is not initialised yet", _before_cuda, must_agree=True),
    Reader(("TORCH_SHOW_CPP_STACKTRACES",), "when import torch initialises torch._C (then cached)",
           "child processes only", _never),
    # The flight recorder's ring buffer is sized once per process, at the first group.
    Reader(("TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE"),
           "once per process, when the first process group is created",
           "the variable, if no process group was made in this process yet", _before_first_process_group),
    # Read by NCCL's watchdog when it writes its first dump (gloo writes none): once per process.
    Reader(("TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE"),
           "when NCCL's watchdog writes its first flight-recorder dump", "the variable", _always),
    Reader(("TORCH_NCCL_*",), "when a process group is created",
           "the variable, if no process group exists yet", _before_process_group, must_agree=True),
    Reader(("NCCL_*",), "when an NCCL communicator is created",
           "the variable, if no process group exists yet", _before_process_group, must_agree=True),
)

UNKNOWN = Reader(("*",), "not in the bootstrap's table", "the variable; assumed to be read after start-up", _always)


@functools.lru_cache(maxsize=4096)  # the table is fixed; a dry run asks for the same names at every rank
def reader_for(name: str) -> Reader:
    for reader in READERS:
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in reader.patterns):
            return reader
    return UNKNOWN


# Set once a group is seen, never cleared: it outlives the job, as torch's own once-per-process reads do.
_group_seen = False


def current_state() -> ProcessState:
    """Read the process state, and remember a live process group. Imports nothing new.

    The session calls this at job start and at job end, so a group the bootstrap or a
    framework made during a job is remembered after it is destroyed.
    """
    import sys

    global _group_seen
    torch = sys.modules.get("torch")
    if torch is None:
        return ProcessState(cuda_initialized=False, process_group_initialized=False)
    dist = torch.distributed
    initialized = dist.is_available() and dist.is_initialized()
    _group_seen = _group_seen or initialized
    return ProcessState(cuda_initialized=torch.cuda.is_initialized(), process_group_initialized=initialized,
                        process_group_seen=_group_seen)
