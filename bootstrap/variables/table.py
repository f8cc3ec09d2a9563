"""Known environment variables: who reads each one, its valid values, the torch releases that read
the name, and the hardware it matters on. Pure data, imported only when a preset sets variables
(:mod:`bootstrap.variables.lint`).

When each variable is read is not restated here: that is :data:`bootstrap.variables.readers.READERS`,
whose rows are proven against torch by experiment (``tests/e2e/test_readers.py``). This table extends it
with what the lint needs, name by name.

Built from torch 2.13.0's own binaries, Python sources and shipped headers (the CPU build and the
``+cu130`` wheel), NVIDIA/nccl's source at every release tag 2.3.5 to 2.30.7 (torch 2.13 pins NCCL
2.29.7), and the vendors' documentation pages named at each group. A name in a known namespace
(:data:`NAMESPACES`) that is in no group here, and not among torch's other names
(:mod:`bootstrap.variables.torch_names`), is read by no known release.

Each group declares what its rows share (``row = rows(library=..., hardware=..., agree=...)``), so a row
states only what differs: its own library, values, releases, hardware tags ``also`` needed beyond the
group's (or ``hardware=`` in place of them), and ``agree``: what two ranks that differ in it differ in
(:data:`AGREE_MEANINGS`; the rank agreement reads it through :mod:`bootstrap.variables.difference_kinds`). What each
module here exports is checked for duplicates by ``tests/unit/test_lint.py``: no name is listed twice, nor in
two lists.
"""

from typing import Any, Callable, Dict, NamedTuple, Optional, Tuple


class KnownVariable(NamedTuple):
    """One known variable."""

    name: str
    library: str  # who reads it
    values: Tuple[str, ...] = ()  # the values it accepts, where the set is small (compared case-insensitively)
    kind: str = ""  # "int" where only an integer makes sense; "count" where only one >= 0 does
    renamed_to: Optional[str] = None  # the current name; the old one is still read, with a warning
    renamed_in: Optional[str] = None  # the torch release that renamed it
    obsolete_since: Optional[str] = None  # read, but it changes nothing since this release
    removed_in: Optional[str] = None  # no longer read since this release
    replaced_by: Optional[str] = None  # what took its place (obsolete or removed)
    hardware: Tuple[str, ...] = ()  # HARDWARE tags that must all hold for it to matter
    agree: str = ""  # what ranks that differ in it differ in: one of AGREE_KINDS


def rows(library: Optional[str] = None, hardware: Tuple[str, ...] = (), *, agree: str) -> Callable[..., KnownVariable]:
    """The maker of one group's rows: a row states only what differs from the group's ``library``,
    ``hardware`` (``also``: tags it needs beyond the group's) and ``agree``. A group with no library has each
    row name its own."""
    shared_library, shared_hardware, shared_agree = library, hardware, agree

    def row(name: str, library: Optional[str] = None, *, also: Tuple[str, ...] = (),
            hardware: Tuple[str, ...] = shared_hardware, agree: str = shared_agree, **fields: Any) -> KnownVariable:
        library = shared_library if library is None else library
        if library is None:
            raise TypeError(f"{name}: its group names no library, so the row must")
        if agree not in AGREE_KINDS:
            raise ValueError(f"{name}: agree={agree!r} is none of {AGREE_KINDS}")
        GROUP_AGREE[name] = shared_agree
        return KnownVariable(name, library, hardware=hardware + also, agree=agree, **fields)
    return row


# What a difference between two ranks in a variable changes (each row's ``agree``), and so what the ranks'
# agreement check (env.distributed.agree) does with it. Read by bootstrap.variables.difference_kinds.
AGREE_MEANINGS = {
    "collective": "how ranks build or run collectives (algorithm, protocol, transport, network, topology, "
                  "communicator set-up, failure handling): a difference can hang or break the job",
    "numerics": "the results (kernels, precision, determinism)",
    "speed": "only speed or memory (threads, allocators, caches, buffers a rank sizes alone)",
    "logging": "only what is logged, traced or dumped, and how a failed rank is reported",
    "per_rank": "nothing wrong: it differs per rank or per node by design, and is never compared",
}
AGREE_KINDS = tuple(AGREE_MEANINGS)
GROUP_AGREE: Dict[str, str] = {}  # each row's group's agree, by name: the docs list the rows that differ from it


BOOL = ('0', '1', 'y', 'yes', 't', 'true', 'n', 'no', 'f', 'false')  # c10d's getCvarBool, case-insensitive
ZERO_ONE = ('0', '1')

# The hardware tags. The lint judges the first group when it can know them (bootstrap.variables.lint.Machine);
# the others only describe a variable.
HARDWARE = {
    "nvidia_gpu": "an NVIDIA GPU and a CUDA build of torch",
    "sm80_plus": "compute capability 8.0 or newer (Ampere+)",
    "sm90_plus": "compute capability 9.0 or newer (Hopper+)",
    "sm100_plus": "compute capability 10.0 or newer (Blackwell+)",
    "pre_blackwell": "compute capability below 10.0",
    "rocm": "an AMD GPU and a ROCm build of torch",
    "x86_64": "an x86_64 torch wheel (oneMKL is linked in; aarch64 wheels have none)",
    "intel_openmp": "the Intel or LLVM OpenMP runtime loaded (torch wheels load GNU libgomp)",
    "mps": "Apple silicon (the MPS backend)",
    "multi_gpu": "collectives over more than one GPU",
    "multi_node": "collectives that cross nodes",
    "infiniband": "an InfiniBand or RoCE NIC driven through IB verbs",
    "roce": "RoCE (Ethernet) specifically",
    "gpudirect_rdma": "a GPUDirect RDMA capable NIC and driver",
    "nvlink": "NVLink between GPUs",
    "nvswitch": "NVSwitch with NVLink SHARP (NVLS)",
    "mnnvl": "multi-node NVLink (e.g. GB200 NVL72)",
    "ib_sharp": "InfiniBand SHARP switches",
    "c2c": "NVLink-C2C (Grace Hopper, Grace Blackwell)",
    "gin": "NCCL GPU-initiated networking",
}

# Where an unknown name is a finding: a name here that no group lists is read by no known release.
NAMESPACES = ("TORCH_NCCL_", "TORCH_FR_", "TORCH_DISTRIBUTED_", "TORCHINDUCTOR_", "TORCHDYNAMO_", "TORCH_",
              "PYTORCH_", "NCCL_", "CUDA_", "CUBLAS_", "CUBLASLT_", "OMP_", "GOMP_", "KMP_", "MKL_")

# The tags most groups share.
GPU = ('nvidia_gpu',)
GPUS = ('nvidia_gpu', 'multi_gpu')  # every collective library's variables

PG_NCCL = 'torch.distributed ProcessGroupNCCL (libtorch_cuda)'
FLIGHT_RECORDER = 'torch.distributed FlightRecorder (libtorch_cpu)'


# source: torch 2.13 torch/include/torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp + strings of libtorch_cuda.so
#         (torch-2.13.0+cu130); https://docs.pytorch.org/docs/stable/torch_nccl_environment_variables.html ;
#         pytorch PR #114077 (2.2 renames). Boolean parsing (c10d getCvarBool, Utils.hpp): y/yes/t/true/1 and
#         n/no/f/false/0, case-insensitive; anything else raises. When both a new and a legacy name are set, the
#         first (new) name wins and the legacy one triggers a deprecation warning.
# agree: collective by default: these decide how a rank sets up its communicators and waits for, times out of
# and aborts a collective, so ranks that differ fail differently (one aborts while its peers wait).
row = rows(library=PG_NCCL, hardware=GPUS, agree='collective')  # torch's ProcessGroupNCCL
TORCH_NCCL = (
    row('TORCH_NCCL_ASYNC_ERROR_HANDLING', values=('0', '1', '2', '3')),
    row('TORCH_NCCL_BLOCKING_WAIT', values=BOOL),
    row('TORCH_NCCL_DESYNC_DEBUG', values=BOOL),
    row('TORCH_NCCL_ENABLE_TIMING', values=BOOL, agree='logging'),
    row('TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK', values=BOOL),
    row('TORCH_ENABLE_NCCL_HEALTH_CHECK', values=BOOL, removed_in='2.3',
        replaced_by='init_process_group(device_id=...) eager init'),
    # how tensors are kept alive: memory
    row('TORCH_NCCL_AVOID_RECORD_STREAMS', values=BOOL, obsolete_since='2.8',
        replaced_by='default behaviour (CPU-side tensor stashing, no recordStream)', agree='speed'),
    row('TORCH_NCCL_DUMP_ON_TIMEOUT', values=BOOL, agree='logging'),
    # the watchdog's monitor: when a stuck rank dumps and is killed, not how collectives run
    row('TORCH_NCCL_ENABLE_MONITORING', values=BOOL, agree='logging'),
    row('TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC', kind='int', agree='logging'),
    row('TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC', kind='int', agree='logging'),
    row('TORCH_NCCL_COORD_CHECK_MILSEC', kind='int', agree='logging'),
    row('TORCH_NCCL_LOG_CPP_STACK_ON_UNCLEAN_SHUTDOWN', values=BOOL, agree='logging'),
    row('TORCH_NCCL_RETHROW_CUDA_ERRORS', values=BOOL),
    row('TORCH_NCCL_PROPAGATE_ERROR', values=BOOL),
    # a check that stops a rank on NaN input; the collective is unchanged
    row('TORCH_NCCL_NAN_CHECK', values=BOOL, agree='logging'),
    row('TORCH_NCCL_CUDA_EVENT_CACHE', values=BOOL, agree='speed'),  # event reuse, stream priority: local
    row('TORCH_NCCL_HIGH_PRIORITY', values=BOOL, agree='speed'),
    row('TORCH_NCCL_BCAST_UNIQUEID', values=BOOL),
    row('TORCH_NCCL_RANKS_PER_ROOT', kind='int'),
    row('TORCH_NCCL_SHOW_EAGER_INIT_P2P_SERIALIZATION_WARNING', values=BOOL, agree='logging'),
    row('TORCH_NCCL_EXTRA_DUMP_ON_EXEC', values=BOOL, agree='logging'),
    row('TORCH_NCCL_USE_COMM_NONBLOCKING', values=ZERO_ONE),
    row('TORCH_NCCL_NONBLOCKING_TIMEOUT', 'torch.distributed NCCLUtils (libtorch_cuda)', kind='int'),
    row('TORCH_NCCL_ABORT_IN_DESTROY_PG', values=BOOL, removed_in='2.4', replaced_by='default behaviour'),
    row('TORCH_NCCL_DEBUG_INFO_PIPE_FILE', agree='logging'),
    row('TORCH_NCCL_TRACE_BUFFER_SIZE',
        'torch.distributed FlightRecorder (libtorch_cpu); also torch.distributed ProcessGroupNCCL (libtorch_cuda)',
        kind='count', renamed_to='TORCH_FR_BUFFER_SIZE', renamed_in='2.8', hardware=(), agree='logging'),
    row('TORCH_NCCL_TRACE_CPP_STACK', FLIGHT_RECORDER, values=BOOL, renamed_to='TORCH_FR_CPP_STACK', hardware=(),
        agree='logging'),
    row('TORCH_NCCL_DEBUG_INFO_TEMP_FILE', FLIGHT_RECORDER, renamed_to='TORCH_FR_DUMP_TEMP_FILE', hardware=(),
        agree='logging'),
)

# source: ProcessGroupNCCL.hpp in torch 2.13 (legacy names listed as second element of the cvar vectors);
#         pytorch PR #114077
#         These NCCL_* names are read by *torch*, not by NCCL.
# Names torch renamed in 2.2 (PR #114077); torch, not NCCL, reads them. agree: each row as its new name
# (tests/unit/test_difference_kinds.py checks).
row = rows(library=PG_NCCL, hardware=GPUS, agree='collective')
TORCH_LEGACY_NCCL_PREFIX = (
    row('NCCL_BLOCKING_WAIT', values=BOOL, renamed_to='TORCH_NCCL_BLOCKING_WAIT', renamed_in='2.2'),
    row('NCCL_ASYNC_ERROR_HANDLING', values=('0', '1', '2', '3'), renamed_to='TORCH_NCCL_ASYNC_ERROR_HANDLING',
        renamed_in='2.2'),
    row('NCCL_DESYNC_DEBUG', values=BOOL, renamed_to='TORCH_NCCL_DESYNC_DEBUG', renamed_in='2.2'),
    row('NCCL_ENABLE_TIMING', values=BOOL, renamed_to='TORCH_NCCL_ENABLE_TIMING', renamed_in='2.2', agree='logging'),
    row('NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK', values=BOOL,
        renamed_to='TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK', renamed_in='2.2'),
    row('ENABLE_NCCL_HEALTH_CHECK', values=BOOL, renamed_to='TORCH_ENABLE_NCCL_HEALTH_CHECK', renamed_in='2.2',
        removed_in='2.3'),
    row('NCCL_AVOID_RECORD_STREAMS', renamed_to='TORCH_NCCL_AVOID_RECORD_STREAMS', agree='speed'),
)

# source: torch 2.13 FlightRecorder.hpp (shipped header) and libtorch_cpu.so strings;
#         pytorch PR #152563 (TORCH_FR_* names)
row = rows(library=FLIGHT_RECORDER, agree='logging')  # torch's flight recorder: it records and dumps, nothing more
TORCH_FR = (
    row('TORCH_FR_BUFFER_SIZE', kind='count'),
    row('TORCH_FR_CPP_STACK', values=BOOL),
    row('TORCH_FR_DUMP_TEMP_FILE'),
    row('TORCH_FR_DUMP_DYNAMIC_FILE_NAME', values=BOOL),
    row('TORCH_INCLUDE_STACK_TRACE', PG_NCCL, values=BOOL, hardware=GPUS),
    row('TORCH_INCLUDE_ONLY_ACTIVE', PG_NCCL, values=BOOL, hardware=GPUS),
    row('TORCH_SYMBOLIZE_MODE', 'torch (libtorch_cpu, C++ stack symbolizer)', values=('dladdr', 'addr2line', 'fast')),
)

# source: torch 2.13 python sources (torch/distributed/...) and libtorch_cpu.so strings;
#         https://docs.pytorch.org/docs/stable/distributed.html
# agree: collective by default: rendezvous, backends and the debug wrapper decide how ranks meet and run
# collectives (TORCH_DISTRIBUTED_DEBUG=DETAIL adds collectives that check the others).
row = rows(agree='collective')  # torch.distributed: no library most rows share, so each names its own
TORCH_DISTRIBUTED = (
    row('TORCH_DISTRIBUTED_DEBUG', 'torch.distributed (c10d) (python + libtorch_cpu)',
        values=('OFF', 'INFO', 'DETAIL')),
    row('TORCH_DISTRIBUTED_USE_TORCHCOMMS', 'torch.distributed (c10d) (python, torch.distributed.config)',
        values=ZERO_ONE),
    row('TORCH_DISTRIBUTED_COMPILE_ON_ONE_RANK', 'torch.distributed (c10d) (python, torch.distributed.config)'),
    row('TORCH_DIST_INIT_BARRIER', 'torch.distributed (c10d) (python)', values=ZERO_ONE),
    row('TORCH_GLOO_LAZY_INIT', 'torch.distributed ProcessGroupGloo (libtorch_cpu)', values=BOOL),
    row('GLOO_SOCKET_IFNAME', 'torch.distributed ProcessGroupGloo (libtorch_cpu)'),
    row('GLOO_DEVICE_TRANSPORT', 'torch.distributed ProcessGroupGloo (libtorch_cpu)'),
    row('TORCH_SYMMMEM', 'torch.distributed symmetric memory (libtorch_cuda / libtorch_nvshmem)',
        values=('CUDA', 'NVSHMEM', 'NCCL'), hardware=GPUS),
    row('TORCH_SYMMMEM_NBLOCKS', 'torch.distributed symmetric memory', kind='int', hardware=GPUS),
    row('TORCH_SYMMMEM_IMPLICIT_POOL', 'torch.distributed._symmetric_memory (python)', values=ZERO_ONE, hardware=GPUS),
    row('TORCH_SYMM_MEM_ALLOW_OVERLAPPING_DEVICES', 'torch.distributed symmetric memory', hardware=GPUS),
    row('TORCH_SYMM_MEM_DISABLE_MULTICAST', 'torch.distributed symmetric memory',
        hardware=('nvidia_gpu', 'multi_gpu', 'nvswitch')),
    row('TORCH_SYMM_MEM_ENABLE_NATIVE_ASYNC_TP', 'torch.distributed._symmetric_memory (python)', hardware=GPUS),
    row('USE_LIBUV', 'torch.distributed TCPStore rendezvous (python)', values=ZERO_ONE),
    # The launch's own (per_rank: never compared): the launcher sets them for each rank, the rendezvous
    # itself fails when they do not fit, and a framework that starts ranks itself (Lightning) sets them in
    # rank 0 only after rank 0's job has started.
    row('MASTER_ADDR', 'torch.distributed env:// rendezvous', agree='per_rank'),
    row('MASTER_PORT', 'torch.distributed env:// rendezvous', kind='int', agree='per_rank'),
    row('RANK', 'torch.distributed env:// rendezvous', kind='int', agree='per_rank'),  # each rank's own
    row('WORLD_SIZE', 'torch.distributed env:// rendezvous', kind='int', agree='per_rank'),
    row('LOCAL_RANK', 'torch.distributed (get_node_local_rank, DeviceMesh) - set by torchrun', kind='int',
        agree='per_rank'),
    # one per node: nodes may run different numbers of ranks
    row('LOCAL_WORLD_SIZE', 'set by torchrun; read by torch.distributed helpers', kind='int', agree='per_rank'),
    row('TORCHELASTIC_USE_AGENT_STORE', 'torch.distributed rendezvous (set by torchrun)', values=('True', 'False'),
        agree='per_rank'),
    # torchrun gives each rank its own file
    row('TORCHELASTIC_ERROR_FILE', 'torch.distributed.elastic (@record)', agree='per_rank'),
    # the agent's supervision of its workers, not the ranks' collectives
    row('TORCHELASTIC_ENABLE_FILE_TIMER', 'torch.distributed.elastic agent', values=ZERO_ONE, agree='logging'),
    row('TORCHELASTIC_HEALTH_CHECK_PORT', 'torch.distributed.elastic agent', kind='int', agree='logging'),
    row('TORCHELASTIC_SIGNALS_TO_HANDLE', 'torch.distributed.elastic', agree='logging'),
    row('TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE', 'torchrun', agree='logging'),
    row('TORCH_ELASTIC_SHUTDOWN_TIMEOUT', 'torchrun / elastic launcher', kind='int', agree='logging'),
    # the agent starts its workers faster
    row('TORCH_ELASTIC_WORKER_IDENTICAL', 'torch.distributed.elastic agent', values=ZERO_ONE, agree='speed'),
    row('TORCH_DISABLE_SHARE_RDZV_TCP_STORE', 'torch.distributed.elastic dynamic rendezvous', values=ZERO_ONE),
)

# source: torch 2.13 python sources, libc10/libc10_cuda/libtorch_cpu/libtorch_cuda strings;
#         https://docs.pytorch.org/docs/stable/cuda_environment_variables.html ;
#         https://docs.pytorch.org/docs/stable/logging.html
# agree: numerics by default: most of torch's switches choose a code path (a kernel, a library, a precision), and
# another path gives other numbers.
row = rows(agree='numerics')  # torch: each row names its own library
TORCH_GENERAL = (
    row('TORCH_SHOW_CPP_STACKTRACES', 'torch (libtorch_cpu)', values=ZERO_ONE, agree='logging'),
    row('TORCH_CPP_LOG_LEVEL', 'c10 (libc10)', values=('INFO', 'WARNING', 'ERROR', 'FATAL', '0', '1', '2', '3'),
        agree='logging'),
    row('TORCH_LOGS', 'torch._logging (python)', agree='logging'),
    row('TORCH_LOGS_OUT', 'torch._logging (python)', agree='logging'),
    row('TORCH_LOGS_FORMAT', 'torch._logging (python)', agree='logging'),
    row('TORCH_TRACE', 'torch._logging (python)', agree='logging'),
    row('TORCH_COMPILE_DEBUG', 'torch._dynamo / torch._inductor (python)', values=ZERO_ONE, agree='logging'),
    row('TORCH_COMPILE_DEBUG_DIR', 'torch._dynamo (python)', agree='logging'),
    # a rank that runs eager while its peers compile issues its collectives unbucketed and in another order
    row('TORCH_COMPILE_DISABLE', 'torch._dynamo (python)', values=ZERO_ONE, agree='collective'),
    row('TORCHDYNAMO_DISABLE', 'torch._dynamo (python)', values=ZERO_ONE, agree='collective'),
    row('TORCHDYNAMO_VERBOSE', 'torch._dynamo (python)', values=ZERO_ONE, agree='logging'),
    row('TORCHDYNAMO_SUPPRESS_ERRORS', 'torch._dynamo (python)', values=ZERO_ONE, agree='collective'),
    # repro scripts and accuracy checks on failure
    row('TORCHDYNAMO_REPRO_AFTER', 'torch._dynamo (python)', values=('dynamo', 'aot'), agree='logging'),
    row('TORCHDYNAMO_REPRO_LEVEL', 'torch._dynamo (python)', values=('1', '2', '3', '4'), agree='logging'),
    # often one per rank, so that ranks do not contend for a lock
    row('TORCHINDUCTOR_CACHE_DIR', 'torch._inductor (python)', agree='per_rank'),
    row('TORCHINDUCTOR_FX_GRAPH_CACHE', 'torch._inductor (python)', values=ZERO_ONE, agree='speed'),
    row('TORCHINDUCTOR_MAX_AUTOTUNE', 'torch._inductor (python)', values=ZERO_ONE),
    row('TORCHINDUCTOR_COMPILE_THREADS', 'torch._inductor (python)', kind='int', agree='speed'),
    row('TORCH_COMPILE_FORCE_DISABLE_CACHES', 'torch._inductor (python)', values=ZERO_ONE, agree='speed'),
    row('PYTORCH_CUDA_ALLOC_CONF', 'c10 caching allocator config (libc10 / libc10_cuda)', hardware=GPU, agree='speed'),
    row('PYTORCH_ALLOC_CONF', 'c10 caching allocator config (libc10)', agree='speed'),
    row('PYTORCH_HIP_ALLOC_CONF', 'c10 caching allocator config (ROCm builds)', hardware=('rocm',), agree='speed'),
    row('PYTORCH_NO_CUDA_MEMORY_CACHING', 'c10 CUDA caching allocator (libc10_cuda)', values=ZERO_ONE, hardware=GPU,
        agree='speed'),
    row('PYTORCH_NO_HIP_MEMORY_CACHING', 'c10 caching allocator (ROCm)', values=ZERO_ONE, hardware=('rocm',),
        agree='speed'),
    row('PYTORCH_NVML_BASED_CUDA_CHECK', 'torch.cuda (python)', values=ZERO_ONE, hardware=GPU, agree='speed'),
    row('PYTORCH_USE_CUDA_DSA', 'c10 CUDA device-side assertions (libc10_cuda)', values=ZERO_ONE, hardware=GPU,
        agree='logging'),
    row('PYTORCH_CUDA_DSA_STACKTRACING', 'c10 CUDA device-side assertions', values=ZERO_ONE, hardware=GPU,
        agree='logging'),
    row('TORCH_CUDA_EXPANDABLE_SEGMENTS_IPC', 'c10 CUDA caching allocator', values=ZERO_ONE, hardware=GPU,
        agree='speed'),
    row('TORCH_CUDNN_V8_API_LRU_CACHE_LIMIT', 'ATen cuDNN (libtorch_cuda)', kind='int', hardware=GPU, agree='speed'),
    row('TORCH_CUDNN_V8_API_DISABLED', 'ATen cuDNN', values=ZERO_ONE, hardware=GPU),
    row('TORCH_CUDNN_V8_API_DEBUG', 'ATen cuDNN', values=ZERO_ONE, hardware=GPU, agree='logging'),
    row('TORCH_ALLOW_TF32_CUBLAS_OVERRIDE', 'ATen Context (libtorch_cpu)', values=ZERO_ONE,
        hardware=('nvidia_gpu', 'sm80_plus')),
    row('TORCH_BLAS_PREFER_CUBLASLT', 'ATen Context', values=ZERO_ONE, hardware=GPU),
    row('TORCH_LINALG_PREFER_CUSOLVER', 'ATen Context', values=ZERO_ONE, hardware=GPU),
    row('TORCH_CUBLASLT_UNIFIED_WORKSPACE', 'ATen CUDA BLAS (libtorch_cuda)', values=ZERO_ONE, hardware=GPU),
    row('TORCH_CUBLAS_WORKSPACE_CACHE', 'ATen CUDA BLAS', values=ZERO_ONE, hardware=GPU, agree='speed'),
    row('CUBLASLT_WORKSPACE_SIZE', 'ATen CUDA BLAS (libtorch_cuda) - torch, not cuBLAS', kind='int', hardware=GPU),
    row('PYTORCH_TUNABLEOP_ENABLED', 'ATen TunableOp (libtorch_cuda)', values=ZERO_ONE, hardware=GPU),
    row('PYTORCH_KERNEL_CACHE_PATH', 'torch JIT fuser (libtorch_cuda)', hardware=GPU, agree='speed'),
    row('TORCH_FORCE_WEIGHTS_ONLY_LOAD', 'torch.serialization (python)', values=('1', 'y', 'yes', 'true')),
    row('TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD', 'torch.serialization (python)', values=('1', 'y', 'yes', 'true')),
    row('TORCH_DEVICE_BACKEND_AUTOLOAD', 'torch (python)', values=ZERO_ONE),
    row('TORCH_USE_RTLD_GLOBAL', 'torch (python)'),
    row('TORCH_HOME', 'torch.hub (python)', agree='speed'),
    row('TORCH_EXTENSIONS_DIR', 'torch.utils.cpp_extension (python)', agree='speed'),
    row('TORCH_CUDA_ARCH_LIST', 'torch.utils.cpp_extension (python)', hardware=GPU, agree='speed'),
    row('TORCH_NUM_THREADS', '', agree='speed'),
    row('PYTORCH_ENABLE_MPS_FALLBACK', 'torch (MPS backend, macOS wheels)', values=ZERO_ONE, hardware=('mps',)),
    row('PYTORCH_MPS_HIGH_WATERMARK_RATIO', 'torch (MPS allocator, macOS wheels)', hardware=('mps',), agree='speed'),
    row('PYTORCH_MPS_LOW_WATERMARK_RATIO', 'torch (MPS allocator, macOS wheels)', hardware=('mps',), agree='speed'),
)

# source: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html (documented=True entries)
#         + NVIDIA/nccl source: every NCCL_PARAM(...)/ncclGetEnv("NCCL_...") at tags v2.29.7-1 (pinned by
#           torch 2.13) and v2.30.7-1, cross-checked against `strings libnccl.so.2` of nvidia-nccl-cu13==2.29.7.
#         when: NCCL reads its environment at ncclInitEnv / first communicator creation and caches it for the process.
#         Note: /etc/nccl.conf and NCCL_CONF_FILE (or ~/.nccl.conf before 2.23) can also set these.
# NCCL (every name NCCL 2.29.7, which torch 2.13 pins, or 2.30.7 reads). The tags a row needs beyond GPUS:
MULTI_NODE = ('multi_node',)
IB = ('multi_node', 'infiniband')
ROCE = IB + ('roce',)
GDR = ('multi_node', 'gpudirect_rdma')
GIN = ('multi_node', 'infiniband', 'gpudirect_rdma', 'gin')
MNNVL = ('multi_node', 'mnnvl')
NVLS = ('nvswitch', 'sm90_plus')
# agree: collective by default: NCCL builds each communicator from every rank's view (algorithms, protocols,
# transports, interfaces, topology, channels, buffers the peer writes into), so ranks that differ can hang or
# corrupt. Only what is surely logging, or local to one rank's CPU threads, says otherwise.
row = rows(library='NCCL', hardware=GPUS, agree='collective')
NCCL = (
    row('NCCL_ALGO'),
    row('NCCL_ALLGATHERV_ENABLE', kind='int'),
    row('NCCL_ALLOC_P2P_NET_LL_BUFFERS', values=ZERO_ONE, also=MULTI_NODE),
    row('NCCL_BUFFSIZE', kind='int'),
    row('NCCL_CGA_CLUSTER_SIZE', kind='int', also=('sm90_plus',)),
    row('NCCL_CHECK_MODE'),
    row('NCCL_CHECK_POINTERS', values=ZERO_ONE, agree='logging'),  # argument checks: they only report misuse
    row('NCCL_CHUNK_SIZE', kind='int'),
    row('NCCL_COLLNET_ENABLE', values=ZERO_ONE, also=IB + ('ib_sharp',)),
    row('NCCL_COLLNET_NODE_THRESHOLD', kind='int', also=IB + ('ib_sharp',)),
    row('NCCL_COMM_BLOCKING', values=ZERO_ONE),
    row('NCCL_COMM_ID'),
    row('NCCL_COMM_SHRINK_SHARE_RESOURCES'),
    row('NCCL_COMM_SPLIT_SHARE_RESOURCES'),
    row('NCCL_CONF_FILE'),
    row('NCCL_CONNECT_ROUND_MAX_PEERS', kind='int'),
    row('NCCL_CREATE_THREAD_CONTEXT', kind='int', removed_in='NCCL 2.30'),
    row('NCCL_CROSS_NIC', values=('0', '1', '2'), also=MULTI_NODE),
    row('NCCL_CTA_POLICY'),
    row('NCCL_CUMEM_ENABLE', values=ZERO_ONE, hardware=GPU),
    row('NCCL_CUMEM_HOST_ENABLE', values=ZERO_ONE, hardware=GPU),
    row('NCCL_DEBUG', values=('VERSION', 'WARN', 'INFO', 'ABORT', 'TRACE'), agree='logging'),
    row('NCCL_DEBUG_FILE', agree='logging'),
    row('NCCL_DEBUG_SUBSYS', agree='logging'),
    row('NCCL_DEBUG_TIMESTAMP_FORMAT', agree='logging'),
    row('NCCL_DEBUG_TIMESTAMP_LEVELS', agree='logging'),
    row('NCCL_DEV_API_JIT', kind='int'),
    row('NCCL_DISABLE_MEM_MANAGER', kind='int'),
    row('NCCL_DMABUF_ENABLE', values=ZERO_ONE, also=GDR),
    row('NCCL_ELASTIC_BUFFER_REGISTER', kind='int'),
    row('NCCL_ENABLE_VERSION_CHECK', kind='int'),
    row('NCCL_ENV_PLUGIN'),
    row('NCCL_GDAKI_USE_RELIABLE_DB', kind='int', also=GIN),
    row('NCCL_GDRCOPY_ENABLE', values=ZERO_ONE, also=GDR),
    row('NCCL_GDRCOPY_FIFO_ENABLE', kind='int', also=GDR),
    row('NCCL_GDRCOPY_FLUSH_ENABLE', kind='int', also=GDR),
    row('NCCL_GDRCOPY_SYNC_ENABLE', kind='int', also=GDR),
    row('NCCL_GDR_FLUSH_DISABLE', kind='int', also=GDR),
    row('NCCL_GIN_COUNTER_POOL_SIZE', kind='int', removed_in='NCCL 2.30', also=GIN),
    row('NCCL_GIN_ENABLE', values=ZERO_ONE, also=GIN),
    row('NCCL_GIN_ERROR_QUERY_SEC', kind='int', also=GIN),
    row('NCCL_GIN_EXCLUSIVE_CONTEXTS', kind='int', removed_in='NCCL 2.30', also=GIN),
    row('NCCL_GIN_GDAKI_MAX_DEST_RD_ATOMIC', kind='int', also=GIN),
    row('NCCL_GIN_GDAKI_MAX_QP_RD_ATOMIC', kind='int', also=GIN),
    row('NCCL_GIN_GDAKI_NIC_HANDLER', kind='int', also=GIN),
    row('NCCL_GIN_GDAKI_QP_DEPTH', kind='int', also=GIN),
    row('NCCL_GIN_IB_TC', kind='int', also=GIN),
    row('NCCL_GIN_NCONNECTIONS', kind='int', also=GIN),
    row('NCCL_GIN_NCONTEXTS', kind='int', removed_in='NCCL 2.30', also=GIN),
    row('NCCL_GIN_PLUGIN', also=GIN),
    row('NCCL_GIN_PLUGIN_REF_COUNT', kind='int', also=GIN),
    row('NCCL_GIN_PROXY_QUEUE_SIZE', kind='int', also=GIN),
    row('NCCL_GIN_SIGNAL_POOL_SIZE', kind='int', removed_in='NCCL 2.30', also=GIN),
    row('NCCL_GIN_TYPE', kind='int', also=GIN),
    row('NCCL_GRAPH_DUMP_FILE', agree='logging'),
    row('NCCL_GRAPH_DUMP_FILE_RANK', kind='int', agree='logging'),
    row('NCCL_GRAPH_FILE'),
    row('NCCL_GRAPH_HELPER_DISABLE', kind='int'),
    row('NCCL_GRAPH_MIXING_SUPPORT', values=ZERO_ONE),
    row('NCCL_GRAPH_REGISTER', values=ZERO_ONE),
    row('NCCL_GRAPH_STREAM_ORDERING'),
    row('NCCL_GROUP_CUDA_STREAM'),
    row('NCCL_HOSTID', agree='per_rank'),  # one per host by design
    row('NCCL_IBVERBS_LIB', also=IB),
    row('NCCL_IB_ADAPTIVE_ROUTING', values=ZERO_ONE, also=IB),
    row('NCCL_IB_ADDR_FAMILY', values=('AF_INET', 'AF_INET6'), also=ROCE),
    row('NCCL_IB_ADDR_RANGE', also=ROCE),
    row('NCCL_IB_AR_THRESHOLD', kind='int', also=IB),
    row('NCCL_IB_DATA_DIRECT', values=ZERO_ONE, also=IB),
    row('NCCL_IB_DEVICE_PCI_ORDER', kind='int', also=IB),
    row('NCCL_IB_DISABLE', values=ZERO_ONE, also=IB),
    row('NCCL_IB_ECE_ENABLE', values=ZERO_ONE, also=IB),
    row('NCCL_IB_FIFO_TC', kind='int', also=IB),
    row('NCCL_IB_GID_INDEX', kind='int', also=ROCE),
    row('NCCL_IB_HCA', also=IB),
    row('NCCL_IB_MERGE_NICS', values=ZERO_ONE, also=IB),
    row('NCCL_IB_MERGE_VFS', values=ZERO_ONE, also=IB),
    row('NCCL_IB_MQP_RETRY_ALL', values=ZERO_ONE, also=IB),
    row('NCCL_IB_MQP_RETRY_CNT', kind='int', also=IB),
    row('NCCL_IB_MQP_RETRY_SLEEP_MSEC', kind='int', also=IB),
    row('NCCL_IB_OOO_RQ', values=ZERO_ONE, also=IB),
    row('NCCL_IB_PCI_RELAXED_ORDERING', values=('0', '1', '2'), also=IB),
    row('NCCL_IB_PKEY', kind='int', also=IB),
    row('NCCL_IB_PREPOST_RECEIVE_WORK_REQUESTS', kind='int', also=IB),
    row('NCCL_IB_QPS_PER_CONNECTION', kind='int', also=IB),
    row('NCCL_IB_QUERY_PORT_SPEED', values=ZERO_ONE, also=IB),
    row('NCCL_IB_RECEIVER_SIDE_MATCHING_SCHEME', kind='int', also=IB),
    row('NCCL_IB_RESILIENCY_PORT_FAILOVER', values=ZERO_ONE, also=IB),
    row('NCCL_IB_RESILIENCY_PORT_FAILOVER_MAX_ATTEMPTS', kind='int', also=IB),
    row('NCCL_IB_RESILIENCY_PORT_FAILOVER_PROBE_DELAY', kind='int', also=IB),
    row('NCCL_IB_RESILIENCY_PORT_RECOVERY', values=ZERO_ONE, also=IB),
    row('NCCL_IB_RESILIENCY_PORT_RECOVERY_ACK_TIMEOUT', kind='int', also=IB),
    row('NCCL_IB_RESILIENCY_PORT_RECOVERY_ALIVE_MSG_BATCH_INTERVAL', kind='int', also=IB),
    row('NCCL_IB_RESILIENCY_PORT_RECOVERY_ALIVE_MSG_BATCH_SIZE', kind='int', also=IB),
    row('NCCL_IB_RESILIENCY_PORT_RECOVERY_ALIVE_MSG_SEQUENCE_SIZE', kind='int', also=IB),
    row('NCCL_IB_RESILIENCY_PORT_RECOVERY_ALIVE_MSG_TIMEOUT', kind='int', also=IB),
    row('NCCL_IB_RESILIENCY_PORT_RECOVERY_ATTEMPTS_MAX', kind='int', also=IB),
    row('NCCL_IB_RESILIENCY_PORT_RECOVERY_START_DELAY', kind='int', also=IB),
    row('NCCL_IB_RETRY_CNT', kind='int', also=IB),
    row('NCCL_IB_RETURN_ASYNC_EVENTS', values=ZERO_ONE, also=IB),
    row('NCCL_IB_ROCE_VERSION_NUM', values=('1', '2'), also=ROCE),
    row('NCCL_IB_ROUTABLE_FLID_GID_INDEX', kind='int', also=IB),
    row('NCCL_IB_SL', kind='int', also=IB),
    row('NCCL_IB_SPLIT_DATA_ON_QPS', values=ZERO_ONE, also=IB),
    row('NCCL_IB_SUBNET_AWARE_ROUTING', values=ZERO_ONE, also=IB),
    row('NCCL_IB_SUBNET_PREFIX_LEN', kind='int', also=IB),
    row('NCCL_IB_TC', kind='int', also=IB),
    row('NCCL_IB_TIMEOUT', kind='int', also=IB),
    row('NCCL_IB_USE_INLINE', values=ZERO_ONE, also=IB),
    row('NCCL_IB_WARN_RAIL_LOCAL', values=ZERO_ONE, also=IB, agree='logging'),
    row('NCCL_IGNORE_COLLNET_MISMATCH', kind='int'),
    row('NCCL_IGNORE_CPU_AFFINITY', values=ZERO_ONE, agree='speed'),  # where and how this rank's own threads run
    row('NCCL_IGNORE_DISABLED_P2P', values=ZERO_ONE),
    row('NCCL_IGNORE_NET_MISMATCH', kind='int'),
    row('NCCL_IPC_USE_ABSTRACT_SOCKET', kind='int'),
    row('NCCL_L1_SHARED_MEMORY_CARVEOUT', kind='int', agree='speed'),
    row('NCCL_LAUNCH_MODE', values=('PARALLEL', 'GROUP')),
    row('NCCL_LAUNCH_ORDER_IMPLICIT', kind='int'),
    row('NCCL_LAUNCH_RACE_FATAL', kind='int'),
    row('NCCL_LEGACY_CUDA_REGISTER', values=ZERO_ONE),
    row('NCCL_LL128_BUFFSIZE', kind='int'),
    row('NCCL_LL128_C2C', values=ZERO_ONE, also=('c2c',)),
    row('NCCL_LL128_NTHREADS', kind='int'),
    row('NCCL_LL_BUFFSIZE', kind='int'),
    row('NCCL_LOCAL_REGISTER', values=ZERO_ONE),
    row('NCCL_LSA_TEAM_SIZE', kind='int'),
    row('NCCL_MAX_CTAS', kind='int'),
    row('NCCL_MAX_NCHANNELS', kind='int'),
    row('NCCL_MAX_NRINGS', kind='int', renamed_to='NCCL_MAX_NCHANNELS'),
    row('NCCL_MAX_P2P_NCHANNELS'),
    # launch attributes of this rank's kernels
    row('NCCL_MEM_SYNC_DOMAIN', values=ZERO_ONE, also=('sm90_plus',), agree='speed'),
    row('NCCL_MIN_CTAS', kind='int'),
    row('NCCL_MIN_NCHANNELS', kind='int'),
    row('NCCL_MIN_NRINGS', kind='int', renamed_to='NCCL_MIN_NCHANNELS'),
    row('NCCL_MIN_P2P_NCHANNELS', kind='int'),
    row('NCCL_MLOPART_RDMA_ENABLE', kind='int'),
    row('NCCL_MNNVL_CLIQUE_ID', kind='int', also=MNNVL, agree='per_rank'),  # one per NVLink domain by design
    row('NCCL_MNNVL_CROSS_CLIQUE', values=ZERO_ONE, also=MNNVL),
    row('NCCL_MNNVL_ENABLE', values=('0', '1', '2'), also=MNNVL),
    row('NCCL_MNNVL_RAIL_PER_HOST', kind='int', also=MNNVL),
    row('NCCL_MNNVL_SCATTER_NETS_ENABLE', values=ZERO_ONE, also=MNNVL),
    row('NCCL_MNNVL_UUID', kind='int', also=MNNVL, agree='per_rank'),
    row('NCCL_MULTI_RANK_GPU_ENABLE', values=ZERO_ONE),
    row('NCCL_MULTI_SEGMENT_REGISTER', kind='int'),
    row('NCCL_NCHANNELS_PER_NET_PEER', kind='int', also=MULTI_NODE),
    row('NCCL_NET', also=MULTI_NODE),
    row('NCCL_NETDEVS_POLICY', values=('AUTO', 'ALL', 'MAX:<n>'), also=MULTI_NODE),
    row('NCCL_NET_DISABLE_INTRA', values=ZERO_ONE, also=MULTI_NODE),
    row('NCCL_NET_FORCE_FLUSH', values=ZERO_ONE, also=GDR),
    row('NCCL_NET_FORCE_MERGE', also=MULTI_NODE),
    row('NCCL_NET_GDR_C2C', values=ZERO_ONE, also=('c2c', 'gpudirect_rdma')),
    row('NCCL_NET_GDR_LEVEL', values=('LOC', 'PIX', 'PXB', 'PHB', 'SYS', '0', '1', '2', '3', '4', '5'), also=GDR),
    row('NCCL_NET_GDR_MLOPART', values=ZERO_ONE, also=GDR),
    row('NCCL_NET_GDR_READ', values=ZERO_ONE, also=GDR),
    row('NCCL_NET_MERGE_LEVEL', values=('LOC', 'PORT', 'PIX', 'PXB', 'P2C', 'PXN', 'PHB', 'SYS'), also=MULTI_NODE),
    row('NCCL_NET_MERGE_POLICY', values=('ALL', 'RAIL'), also=MULTI_NODE),
    row('NCCL_NET_OPTIONAL_RECV_COMPLETION', kind='int', also=MULTI_NODE),
    row('NCCL_NET_OVERHEAD', kind='int', also=MULTI_NODE),
    row('NCCL_NET_PLUGIN', also=MULTI_NODE),
    row('NCCL_NET_PLUGIN_REF_COUNT', kind='int', also=MULTI_NODE),
    row('NCCL_NET_SHARED_BUFFERS', values=ZERO_ONE, also=MULTI_NODE),
    row('NCCL_NET_SHARED_COMMS', values=ZERO_ONE, also=MULTI_NODE),
    row('NCCL_NO_CACHE'),
    row('NCCL_NSOCKS_PERTHREAD', kind='int', also=MULTI_NODE),
    row('NCCL_NTHREADS', values=('64', '128', '256', '512')),
    row('NCCL_NUM_RMA_CTX'),
    row('NCCL_NVB_DISABLE', values=ZERO_ONE, also=('nvlink',)),
    row('NCCL_NVB_PRECONNECT', values=ZERO_ONE, also=('nvlink',)),
    row('NCCL_NVLINK_UTIL_CENTRIC_SCHED_ENABLE', values=ZERO_ONE, also=('nvlink',)),
    row('NCCL_NVLSTREE_MAX_CHUNKSIZE', kind='int', also=NVLS + MULTI_NODE),
    row('NCCL_NVLS_CHUNKSIZE', kind='int', also=NVLS),
    row('NCCL_NVLS_ENABLE', values=ZERO_ONE, also=NVLS),
    row('NCCL_NVLS_NCHANNELS', kind='int', also=NVLS),
    row('NCCL_NVTX_DISABLE', values=ZERO_ONE, agree='logging'),
    row('NCCL_OOB_NET_ENABLE', values=ZERO_ONE, also=MULTI_NODE),
    row('NCCL_OOB_NET_IFNAME', also=MULTI_NODE),
    row('NCCL_P2P_DIRECT_DISABLE', values=ZERO_ONE),
    row('NCCL_P2P_DISABLE', values=ZERO_ONE),
    row('NCCL_P2P_EPOCH_ENABLE', kind='int'),
    row('NCCL_P2P_LEVEL', values=('LOC', 'NVL', 'PIX', 'PXB', 'PHB', 'SYS', '0', '1', '2', '3', '4', '5')),
    row('NCCL_P2P_LL_THRESHOLD', kind='int'),
    row('NCCL_P2P_MAX_PEERS'),
    row('NCCL_P2P_NET_CHUNKSIZE', kind='int', also=MULTI_NODE),
    row('NCCL_P2P_NVL_CHUNKSIZE', kind='int', also=('nvlink',)),
    row('NCCL_P2P_PCI_CHUNKSIZE', kind='int'),
    row('NCCL_P2P_PER_CHANNEL_NET_BW', kind='int'),
    row('NCCL_P2P_PXN_LEVEL', values=('0', '1', '2'), also=MULTI_NODE),
    row('NCCL_P2P_READ_ENABLE', values=ZERO_ONE, also=('nvlink',)),
    row('NCCL_P2P_SCHEDULE_GROUP_SIZE'),
    row('NCCL_P2P_USE_CUDA_MEMCPY', values=ZERO_ONE),
    row('NCCL_PARAM_DUMP_ALL', agree='logging'),
    row('NCCL_PAT_ENABLE', values=('0', '1', '2'), also=MULTI_NODE),
    row('NCCL_PROFILER_PLUGIN', agree='logging'),
    row('NCCL_PROGRESS_APPENDOP_FREQ', kind='int'),
    row('NCCL_PROTO'),
    row('NCCL_PROXY_APPEND_BATCH_SIZE', kind='int'),
    row('NCCL_PROXY_CPUSET', agree='speed'),
    row('NCCL_PROXY_DUMP_SIGNAL', kind='int', agree='logging'),
    row('NCCL_PXN_C2C', values=ZERO_ONE, also=('c2c', 'multi_node')),
    row('NCCL_PXN_DISABLE', values=ZERO_ONE, also=MULTI_NODE),
    row('NCCL_RAS_ADDR', agree='logging'),  # RAS: a health monitor on its own sockets, beside the collectives
    row('NCCL_RAS_ENABLE', values=ZERO_ONE, agree='logging'),
    row('NCCL_RAS_TIMEOUT_FACTOR', kind='int', agree='logging'),
    row('NCCL_REPORT_CONNECT_PROGRESS', kind='int', agree='logging'),
    row('NCCL_RMA_DISABLE', values=ZERO_ONE),
    row('NCCL_RMA_PLUGIN'),
    row('NCCL_RMA_PLUGIN_REF_COUNT', kind='int'),
    row('NCCL_RMA_PROXY_DUMP_SIGNAL', kind='int', agree='logging'),
    row('NCCL_RMA_PROXY_QUEUE_SIZE', kind='int'),
    row('NCCL_RUNTIME_CONNECT', values=ZERO_ONE),
    row('NCCL_SET_CPU_STACK_SIZE', kind='int', agree='speed'),
    row('NCCL_SET_STACK_SIZE', values=ZERO_ONE, agree='speed'),
    row('NCCL_SET_THREAD_NAME', values=ZERO_ONE, agree='logging'),
    row('NCCL_SHADOW_MEMPOOL_MAX_SIZE'),
    row('NCCL_SHM_DISABLE', values=ZERO_ONE),
    row('NCCL_SHM_LOCALITY', values=('1', '2')),
    row('NCCL_SHM_MEMCPY_MODE', values=('1', '2', '3'), removed_in='NCCL 2.30'),
    row('NCCL_SHM_USE_CUDA_MEMCPY', values=ZERO_ONE, removed_in='NCCL 2.30'),
    row('NCCL_SINGLE_PROC_MEM_REG_ENABLE', values=ZERO_ONE),
    row('NCCL_SOCKET_FAMILY', values=('AF_INET', 'AF_INET6')),
    row('NCCL_SOCKET_IFNAME'),
    row('NCCL_SOCKET_INLINE', kind='int', also=MULTI_NODE),
    row('NCCL_SOCKET_MAGIC', also=MULTI_NODE),
    row('NCCL_SOCKET_MIN_TASKSIZE', kind='int', also=MULTI_NODE),
    row('NCCL_SOCKET_NTHREADS', kind='int', also=MULTI_NODE),
    row('NCCL_SOCKET_POLL_TIMEOUT_MSEC', kind='int'),
    row('NCCL_SOCKET_RCVBUF', kind='int', also=MULTI_NODE, agree='speed'),
    row('NCCL_SOCKET_RETRY_CNT', kind='int'),
    row('NCCL_SOCKET_RETRY_SLEEP_MSEC', kind='int'),
    # the kernel's socket buffers, each side its own
    row('NCCL_SOCKET_SNDBUF', kind='int', also=MULTI_NODE, agree='speed'),
    row('NCCL_SYM_CE_THRESHOLD', kind='int'),
    row('NCCL_SYM_CTAS', kind='int'),
    row('NCCL_SYM_GIN_KERNELS_ENABLE', values=ZERO_ONE, also=GIN),
    row('NCCL_SYM_KERNEL'),
    row('NCCL_SYM_NOWIN_ENABLE', kind='int'),
    row('NCCL_SYM_REUSE_SYSMEM_HANDLES', kind='int'),
    row('NCCL_SYM_RS_GIN_CHUNK_SIZE', kind='int'),
    row('NCCL_SYM_TMA_ENABLE', values=ZERO_ONE, also=('sm90_plus',)),
    row('NCCL_THREAD_THRESHOLDS'),
    row('NCCL_TOPO_DUMP_FILE', agree='logging'),
    row('NCCL_TOPO_DUMP_FILE_RANK', kind='int', agree='logging'),
    row('NCCL_TOPO_FILE'),
    row('NCCL_TOPO_SPLIT_MLOPART', kind='int'),
    row('NCCL_TUNER_PLUGIN'),
    # paces this rank's connections to the root
    row('NCCL_UID_STAGGER_RATE', kind='int', also=MULTI_NODE, agree='speed'),
    row('NCCL_UID_STAGGER_THRESHOLD', kind='int', also=MULTI_NODE, agree='speed'),
    row('NCCL_UNPACK_DOUBLE_NCHANNELS', kind='int'),
    row('NCCL_WARN_ENABLE_DEBUG_INFO', agree='logging'),
    row('NCCL_WIN_ENABLE', values=ZERO_ONE),
    row('NCCL_WIN_STRIDE', kind='int'),
    row('NCCL_WORK_ARGS_BYTES'),
    row('NCCL_WORK_FIFO_BYTES', kind='int', agree='speed'),  # the queue between this rank's host and its own kernels
)

# source: older NCCL env.html versions (docs.nvidia.com/deeplearning/nccl/archives/...)
#         + NVIDIA/nccl git tags 2.3.5..2.30.7.
#         Names once documented/read that NCCL 2.29.7 / 2.30.7 no longer read.
# agree: as when a release read them (an older NCCL build may still be loaded): collective by default.
row = rows(library='', hardware=GPUS, agree='collective')  # NCCL names no current release reads
NCCL_REMOVED = (
    row('NCCL_CHECKS_DISABLE', removed_in='NCCL <=2.3.5', agree='logging'),
    row('NCCL_SINGLE_RING_THRESHOLD', removed_in='NCCL <=2.3.5'),
    row('NCCL_IB_CUDA_SUPPORT', removed_in='NCCL 2.4.2', replaced_by='NCCL_NET_GDR_LEVEL'),
    row('NCCL_IB_GDR_LEVEL', renamed_to='NCCL_NET_GDR_LEVEL', removed_in='NCCL 2.4.2'),
    row('NCCL_RINGS', removed_in='NCCL 2.5.6'),
    row('NCCL_LL_THRESHOLD', removed_in='NCCL 2.5.6', replaced_by='NCCL_PROTO'),
    row('NCCL_TREE_THRESHOLD', removed_in='NCCL 2.5.6', replaced_by='NCCL_ALGO'),
    row('NCCL_THREAD_THRESHOLD', removed_in='NCCL 2.5.6'),
    row('NCCL_WORK_FIFO_DEPTH', renamed_to='NCCL_WORK_FIFO_BYTES', removed_in='NCCL 2.22.3', agree='speed'),
    row('NCCL_PROXY_PROFILE', removed_in='NCCL 2.23.4', replaced_by='NCCL_PROFILER_PLUGIN', agree='logging'),
    row('NCCL_AGG_CHANNEL_SIZE', removed_in='NCCL 2.20.3'),
    row('NCCL_CUDA_PATH', removed_in='NCCL 2.21.5', agree='speed'),
    row('NCCL_MNNVL', renamed_to='NCCL_MNNVL_ENABLE', removed_in='NCCL 2.21.5'),
)

# source: https://docs.nvidia.com/cuda/cuda-programming-guide/05-appendices/environment-variables.html
#         (CUDA driver/runtime); MPS: https://docs.nvidia.com/deploy/mps/index.html ;
#         Megatron: NVIDIA/Megatron-LM megatron/training/arguments.py
# agree: speed by default: the driver's knobs act on the rank's own device (launch queues, JIT and its cache).
row = rows(library='CUDA driver', hardware=GPU, agree='speed')  # the CUDA driver and runtime
CUDA = (
    # launchers give each rank its own device
    row('CUDA_VISIBLE_DEVICES', 'CUDA driver (+ torch.cuda NVML path)', agree='per_rank'),
    # which GPU an index names: ranks that differ can land on one GPU
    row('CUDA_DEVICE_ORDER', values=('FASTEST_FIRST', 'PCI_BUS_ID'), agree='collective'),
    row('CUDA_MANAGED_FORCE_DEVICE_ALLOC', values=ZERO_ONE),
    row('CUDA_LAUNCH_BLOCKING', 'CUDA driver (+ c10_cuda / NCCL for messages)', values=ZERO_ONE),
    row('CUDA_DEVICE_MAX_CONNECTIONS', 'CUDA driver; checked by Megatron-LM / TransformerEngine', kind='int',
        also=('pre_blackwell',)),
    row('CUDA_DEVICE_MAX_COPY_CONNECTIONS', kind='int'),
    row('CUDA_MODULE_LOADING', 'CUDA driver/runtime', values=('DEFAULT', 'LAZY', 'EAGER')),
    row('CUDA_MODULE_DATA_LOADING', 'CUDA driver/runtime', values=('DEFAULT', 'LAZY', 'EAGER')),
    row('CUDA_CACHE_DISABLE', 'CUDA driver (JIT cache)', values=ZERO_ONE),
    row('CUDA_CACHE_PATH', 'CUDA driver (JIT cache)'),
    row('CUDA_CACHE_MAXSIZE', 'CUDA driver (JIT cache)', kind='int'),
    row('CUDA_FORCE_PTX_JIT', values=ZERO_ONE),
    row('CUDA_DISABLE_PTX_JIT', values=ZERO_ONE),
    row('CUDA_FORCE_JIT', values=ZERO_ONE),
    row('CUDA_DISABLE_JIT', values=ZERO_ONE),
    row('CUDA_FORCE_PRELOAD_LIBRARIES', values=ZERO_ONE),
    row('CUDA_AUTO_BOOST', values=ZERO_ONE),
    row('CUDA_SCALE_LAUNCH_QUEUES', values=('0.25x', '0.5x', '2x', '4x')),
    row('CUDA_GRAPHS_USE_NODE_PRIORITY', values=ZERO_ONE),
    row('CUDA_DEVICE_WAITS_ON_EXCEPTION', values=ZERO_ONE, agree='logging'),
    row('CUDA_ENABLE_COREDUMP_ON_EXCEPTION', values=ZERO_ONE, agree='logging'),
    row('CUDA_ENABLE_CPU_COREDUMP_ON_EXCEPTION', values=ZERO_ONE, agree='logging'),
    row('CUDA_ENABLE_LIGHTWEIGHT_COREDUMP', values=ZERO_ONE, agree='logging'),
    row('CUDA_ENABLE_USER_TRIGGERED_COREDUMP', values=ZERO_ONE, agree='logging'),
    row('CUDA_COREDUMP_FILE', agree='logging'),
    row('CUDA_COREDUMP_PIPE', agree='logging'),
    row('CUDA_COREDUMP_GENERATION_FLAGS', agree='logging'),
    row('CUDA_LOG_FILE', 'CUDA runtime/driver error-log management', agree='logging'),
    row('NVIDIA_TF32_OVERRIDE', 'cuBLAS / cuDNN', values=('0',), also=('sm80_plus',), agree='numerics'),
    row('CUDA_MPS_PIPE_DIRECTORY', 'CUDA driver (MPS client) / nvidia-cuda-mps-control', also=('mps',)),
    row('CUDA_MPS_LOG_DIRECTORY', 'nvidia-cuda-mps-control daemon', also=('mps',), agree='logging'),
    row('CUDA_MPS_ACTIVE_THREAD_PERCENTAGE', 'CUDA driver (MPS client)', kind='int', also=('mps',)),
    row('CUDA_MPS_PINNED_DEVICE_MEM_LIMIT', 'CUDA driver (MPS client)', also=('mps',)),
    row('CUDA_MPS_ENABLE_PER_CTX_DEVICE_MULTIPROCESSOR_PARTITIONING', 'CUDA driver (MPS)', values=ZERO_ONE,
        also=('mps',)),
    row('CUDA_MPS_CLIENT_PRIORITY', 'CUDA driver (MPS client)', values=ZERO_ONE, also=('mps',)),
    row('CUDA_HOME', 'torch.utils.cpp_extension / Triton / torch._inductor (python)'),
    row('CUDA_PATH', 'torch/__init__.py and torch.utils.cpp_extension (the CUDA toolkit, mostly on Windows)',
        hardware=()),
)

# source: https://docs.nvidia.com/cuda/cublas/index.html + strings of libcublas.so.13 / libcublasLt.so.13
#         (nvidia-cublas 13.1.1.3, the version pinned via cuda-toolkit[cublas]==13.0.3 by torch 2.13.0+cu130)
# agree: numerics by default: they choose kernels, workspaces and emulation, and another kernel gives other numbers.
row = rows(library='cuBLASLt', hardware=GPU, agree='numerics')  # cuBLAS and cuBLASLt
CUBLAS = (
    row('CUBLAS_WORKSPACE_CONFIG',
        'cuBLAS (documented) and torch (libtorch_cuda parses it to size its cuBLAS workspaces)'),
    row('CUBLAS_LOGINFO_DBG', 'cuBLAS', values=ZERO_ONE, agree='logging'),
    row('CUBLAS_LOGDEST_DBG', 'cuBLAS', agree='logging'),
    row('CUBLASLT_LOG_LEVEL', values=('0', '1', '2', '3', '4', '5'), agree='logging'),
    row('CUBLASLT_LOG_MASK', kind='int', agree='logging'),
    row('CUBLASLT_LOG_FILE', agree='logging'),
    # caches and the heuristics' own CPU code: the same kernels, sooner
    row('CUBLASLT_HEURISTICS_CACHE_CAPACITY', kind='int', agree='speed'),
    row('CUBLASLT_DISABLE_CPU_INSTRUCTIONS_MASK', kind='int', agree='speed'),
    row('CUBLASLT_HEURISTICS_LUT_FILE'),
    row('CUBLASLT_NVTX_LEVEL', kind='int', agree='logging'),
    row('CUBLAS_NVTX_LEVEL', 'cuBLAS', kind='int', agree='logging'),
    row('CUBLAS_EMULATE_SINGLE_PRECISION', 'cuBLAS / cuBLASLt', values=ZERO_ONE, also=('sm100_plus',)),
    row('CUBLAS_EMULATE_DOUBLE_PRECISION', 'cuBLAS / cuBLASLt', values=ZERO_ONE),
    row('CUBLAS_EMULATION_STRATEGY', 'cuBLAS / cuBLASLt', values=('default', 'performant', 'eager')),
    row('CUBLAS_FIXEDPOINT_EMULATION_MANTISSA_BIT_COUNT', 'cuBLAS / cuBLASLt', kind='int'),
    row('CUBLAS_AUTOTUNING_CACHE_CAPACITY', kind='int', agree='speed'),
    row('CUBLAS_FORCE_XMMA_KERNEL_INIT'),
)

# source: https://gcc.gnu.org/onlinedocs/libgomp/Environment-Variables.html ; torch 2.13 wheels bundle
#         torch/lib/libgomp.so.1 built from GCC 8.5 (OpenMP 4.5, _OPENMP=201511); names confirmed with `strings`
#         and OMP_DISPLAY_ENV=true.
# agree: speed by default: threads, their placement and waiting (the rule: threads warn).
row = rows(library='libgomp', agree='speed')  # GNU libgomp (bundled with torch wheels)
OPENMP_GNU = (
    row('OMP_NUM_THREADS', 'libgomp (bundled) + torch ATen (intra-op default) + torchrun', kind='int'),
    row('OMP_PROC_BIND', values=('true', 'false', 'master', 'close', 'spread')),
    row('OMP_PLACES', values=('threads', 'cores', 'sockets', '<explicit list>')),
    row('OMP_DYNAMIC', values=('true', 'false')),
    row('OMP_SCHEDULE', values=('static', 'dynamic', 'guided', 'auto')),
    row('OMP_WAIT_POLICY', values=('ACTIVE', 'PASSIVE')),
    row('OMP_STACKSIZE'),
    row('OMP_THREAD_LIMIT', kind='int'),
    row('OMP_MAX_ACTIVE_LEVELS', kind='int'),
    row('OMP_NESTED', values=('true', 'false'), obsolete_since='OpenMP 5.0', replaced_by='OMP_MAX_ACTIVE_LEVELS'),
    row('OMP_CANCELLATION', values=('true', 'false')),
    row('OMP_DISPLAY_ENV', values=('true', 'false', 'verbose'), agree='logging'),
    row('OMP_DISPLAY_AFFINITY', values=('true', 'false'), agree='logging'),
    row('OMP_AFFINITY_FORMAT', agree='logging'),
    row('OMP_DEFAULT_DEVICE', kind='int'),
    row('OMP_MAX_TASK_PRIORITY', kind='int'),
    row('OMP_TARGET_OFFLOAD', '', values=('MANDATORY', 'DISABLED', 'DEFAULT')),
    row('GOMP_CPU_AFFINITY'),
    row('GOMP_SPINCOUNT'),
    row('GOMP_STACKSIZE', kind='int'),
    row('GOMP_DEBUG', values=ZERO_ONE, agree='logging'),
)

# source: Intel OpenMP runtime docs (KMP_*). Read only if libiomp5/libomp is loaded - not by the GNU libgomp
#         in torch wheels.
# Intel OpenMP / LLVM libomp (not loaded by torch wheels)
row = rows(library='Intel OpenMP / LLVM libomp', hardware=('intel_openmp',), agree='speed')  # as libgomp
INTEL_OPENMP = (
    row('KMP_AFFINITY', 'Intel OpenMP (libiomp5) / LLVM libomp'),
    row('KMP_BLOCKTIME', 'Intel OpenMP (libiomp5) / LLVM libomp'),
    row('KMP_HW_SUBSET'),
    row('KMP_SETTINGS', values=('true', 'false'), agree='logging'),
    row('KMP_LIBRARY', values=('serial', 'turnaround', 'throughput')),
    row('KMP_STACKSIZE'),
    row('KMP_WARNINGS', values=('true', 'false'), agree='logging'),
    row('KMP_TOPOLOGY_METHOD'),
    row('KMP_INIT_AT_FORK', values=('true', 'false')),
    # two OpenMP runtimes in one process: Intel warns of wrong results
    row('KMP_DUPLICATE_LIB_OK', values=('TRUE', 'FALSE'), agree='numerics'),
)

# source: https://www.intel.com/content/www/us/en/docs/onemkl/developer-guide-linux/current/onemkl-env-vars.html
#         + strings of torch 2.13 libtorch_cpu.so (oneMKL statically linked on x86_64)
# agree: speed by default (threads, memory); the switches that pick oneMKL's code path are numerics.
row = rows(library='oneMKL', hardware=('x86_64',), agree='speed')  # oneMKL (static in x86_64 torch wheels)
MKL = (
    row('MKL_NUM_THREADS', 'oneMKL (static in libtorch_cpu) + torch ATen (intra-op default)', kind='int'),
    row('MKL_DYNAMIC', values=('TRUE', 'FALSE')),
    row('MKL_DOMAIN_NUM_THREADS'),
    row('MKL_CBWR', agree='numerics'),  # oneMKL's code path, and so its numbers
    row('MKL_ENABLE_INSTRUCTIONS', agree='numerics'),
    row('MKL_VERBOSE', values=('0', '1', '2'), agree='logging'),
    row('MKL_VERBOSE_OUTPUT_FILE', agree='logging'),
    row('MKL_DISABLE_FAST_MM', values=('1',)),
    row('MKL_FAST_MEMORY_LIMIT', kind='int'),
    row('MKL_NUM_STRIPES', kind='int'),
    row('MKL_THREADING_LAYER', 'oneMKL single dynamic library (mkl_rt) only',
        values=('INTEL', 'SEQUENTIAL', 'GNU', 'TBB')),
    row('MKL_INTERFACE_LAYER', 'oneMKL single dynamic library (mkl_rt) only', values=('LP64', 'ILP64', 'GNU'),
        agree='numerics'),  # the integer width BLAS is called with
    row('MKL_DEBUG_CPU_TYPE', '', kind='int', removed_in='oneMKL 2020 Update 1', agree='numerics'),
    row('MKL_SERVICE_FORCE_INTEL', 'mkl-service python package (not torch)'),
)

# Google's GPUDirect-TCPX NCCL plugin (A3 High), as env/fabric=gcp_tcpx sets them. source:
# GoogleCloudPlatform/container-engine-accelerators gpudirect-tcpx (plugin v3.1.x) and Google's GKE guide for
# GPUDirect-TCPX (2024). The plugin reads more NCCL_GPUDIRECTTCPX_* names; only those a shipped preset sets are here.
row = rows(library='GPUDirect-TCPX NCCL plugin', hardware=('multi_node',), agree='collective')
TCPX_PLUGIN = (
    row('NCCL_GPUDIRECTTCPX_CTRL_DEV'),
    row('NCCL_GPUDIRECTTCPX_SOCKET_IFNAME'),
    row('NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX'),
)

# Names that circulate in copied start-up code and that no library of a torch job reads (torch, NCCL, CUDA,
# cuBLAS, OpenMP, oneMKL), with what to use instead. Such a name is in no group above.
# source: torch 2.13 (libraries, Python, headers), NVIDIA/nccl 2.3.5..2.30.7, the CUDA, cuBLAS and NCCL
#         documentation, and GitHub's code index, searched for each name. TVM_NUM_THREADS is read by Apache
#         TVM's runtime (apache/tvm src/runtime/threading_backend.cc, MaxConcurrency), and by nothing else.
NOT_READ = {
    "NCCL_MAX_RW_PAIRS": "read by no library: no NCCL release (2.3.5 to 2.30.7) reads it, nor torch 2.13",
    "GPU_DIRECT_FAST_PATH": "read by no library (not torch, NCCL, CUDA or cuBLAS)",
    "TF32_FLUSH_TO_ZERO": "read by no library; the real TF32 switches are NVIDIA_TF32_OVERRIDE (cuBLAS, cuDNN) and "
                          "env.torch.matmul_precision",
    "DISABLE_CUDA_AFFINITY": "read by no library; NCCL's own knob for CPU affinity is NCCL_IGNORE_CPU_AFFINITY",
    "TVM_NUM_THREADS": "read only by Apache TVM's runtime, not by torch, NCCL or CUDA: it does nothing in a torch job",
    "NUMA_BIND": "read by no library (not torch, NCCL or CUDA); bind with numactl or the launcher instead",
    "DD_BIDIRECTIONAL_INFERENCE": "read by no library (not torch, NCCL or CUDA)",
}


GROUPS = (TORCH_NCCL, TORCH_LEGACY_NCCL_PREFIX, TORCH_FR, TORCH_DISTRIBUTED, TORCH_GENERAL, NCCL, NCCL_REMOVED, CUDA,
          CUBLAS, OPENMP_GNU, INTEL_OPENMP, MKL, TCPX_PLUGIN)
del row  # each group's maker; the groups are the data
