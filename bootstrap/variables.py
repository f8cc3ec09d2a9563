"""Known environment variables: who reads each one, its valid values, the torch releases that read
the name, and the hardware it matters on. Pure data, imported only when a preset sets variables
(:mod:`bootstrap.lint`).

When each variable is read is not restated here: that is :data:`bootstrap.readers.READERS`, whose
rows are proven against torch by experiment (``tests/test_readers.py``). This table extends it
with what the lint needs, name by name.

Built from torch 2.13.0's own binaries, Python sources and shipped headers (the CPU build and the
``+cu130`` wheel), NVIDIA/nccl's source at every release tag 2.3.5 to 2.30.7 (torch 2.13 pins NCCL
2.29.7), and the vendors' documentation pages named at each group. A name in a known namespace
(:data:`NAMESPACES`) that is in no group here, and not among torch's other names
(:mod:`bootstrap.torch_names`), is read by no known release.
"""

from typing import NamedTuple, Optional, Tuple


class V(NamedTuple):
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


BOOL = ('0', '1', 'y', 'yes', 't', 'true', 'n', 'no', 'f', 'false')  # c10d's getCvarBool, case-insensitive

# The hardware tags. The lint judges the first group when it can know them (bootstrap.lint.Machine);
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


# source: torch 2.13 torch/include/torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp + strings of libtorch_cuda.so (torch-2.13.0+cu130)
#         https://docs.pytorch.org/docs/stable/torch_nccl_environment_variables.html ; pytorch PR #114077 (2.2 renames)
#         Boolean parsing (c10d getCvarBool, Utils.hpp): y/yes/t/true/1 and n/no/f/false/0, case-insensitive; anything else raises.
#         When both a new and a legacy name are set, the first (new) name wins and the legacy one triggers a deprecation warning.
# torch's ProcessGroupNCCL
TORCH_NCCL = (
    V('TORCH_NCCL_ASYNC_ERROR_HANDLING', 'torch.distributed ProcessGroupNCCL (libtorch_cuda)', values=('0', '1', '2', '3'), hardware=('nvidia_gpu', 'multi_gpu')),
    V('TORCH_NCCL_BLOCKING_WAIT', 'torch.distributed ProcessGroupNCCL (libtorch_cuda)', values=BOOL, hardware=('nvidia_gpu', 'multi_gpu')),
    V('TORCH_NCCL_DESYNC_DEBUG', 'torch.distributed ProcessGroupNCCL (libtorch_cuda)', values=BOOL, hardware=('nvidia_gpu', 'multi_gpu')),
    V('TORCH_NCCL_ENABLE_TIMING', 'torch.distributed ProcessGroupNCCL (libtorch_cuda)', values=BOOL, hardware=('nvidia_gpu', 'multi_gpu')),
    V('TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK', 'torch.distributed ProcessGroupNCCL (libtorch_cuda)', values=BOOL, hardware=('nvidia_gpu', 'multi_gpu')),
    V('TORCH_ENABLE_NCCL_HEALTH_CHECK', 'torch.distributed ProcessGroupNCCL (libtorch_cuda)', values=BOOL, removed_in='2.3', replaced_by='init_process_group(device_id=...) eager init', hardware=('nvidia_gpu', 'multi_gpu')),
    V('TORCH_NCCL_AVOID_RECORD_STREAMS', 'torch.distributed ProcessGroupNCCL (libtorch_cuda)', values=BOOL, obsolete_since='2.8', replaced_by='default behaviour (CPU-side tensor stashing, no recordStream)', hardware=('nvidia_gpu', 'multi_gpu')),
    V('TORCH_NCCL_DUMP_ON_TIMEOUT', 'torch.distributed ProcessGroupNCCL (libtorch_cuda)', values=BOOL, hardware=('nvidia_gpu', 'multi_gpu')),
    V('TORCH_NCCL_ENABLE_MONITORING', 'torch.distributed ProcessGroupNCCL (libtorch_cuda)', values=BOOL, hardware=('nvidia_gpu', 'multi_gpu')),
    V('TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC', 'torch.distributed ProcessGroupNCCL (libtorch_cuda)', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC', 'torch.distributed ProcessGroupNCCL (libtorch_cuda)', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('TORCH_NCCL_COORD_CHECK_MILSEC', 'torch.distributed ProcessGroupNCCL (libtorch_cuda)', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('TORCH_NCCL_LOG_CPP_STACK_ON_UNCLEAN_SHUTDOWN', 'torch.distributed ProcessGroupNCCL (libtorch_cuda)', values=BOOL, hardware=('nvidia_gpu', 'multi_gpu')),
    V('TORCH_NCCL_RETHROW_CUDA_ERRORS', 'torch.distributed ProcessGroupNCCL (libtorch_cuda)', values=BOOL, hardware=('nvidia_gpu', 'multi_gpu')),
    V('TORCH_NCCL_PROPAGATE_ERROR', 'torch.distributed ProcessGroupNCCL (libtorch_cuda)', values=BOOL, hardware=('nvidia_gpu', 'multi_gpu')),
    V('TORCH_NCCL_NAN_CHECK', 'torch.distributed ProcessGroupNCCL (libtorch_cuda)', values=BOOL, hardware=('nvidia_gpu', 'multi_gpu')),
    V('TORCH_NCCL_CUDA_EVENT_CACHE', 'torch.distributed ProcessGroupNCCL (libtorch_cuda)', values=BOOL, hardware=('nvidia_gpu', 'multi_gpu')),
    V('TORCH_NCCL_HIGH_PRIORITY', 'torch.distributed ProcessGroupNCCL (libtorch_cuda)', values=BOOL, hardware=('nvidia_gpu', 'multi_gpu')),
    V('TORCH_NCCL_BCAST_UNIQUEID', 'torch.distributed ProcessGroupNCCL (libtorch_cuda)', values=BOOL, hardware=('nvidia_gpu', 'multi_gpu')),
    V('TORCH_NCCL_RANKS_PER_ROOT', 'torch.distributed ProcessGroupNCCL (libtorch_cuda)', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('TORCH_NCCL_SHOW_EAGER_INIT_P2P_SERIALIZATION_WARNING', 'torch.distributed ProcessGroupNCCL (libtorch_cuda)', values=BOOL, hardware=('nvidia_gpu', 'multi_gpu')),
    V('TORCH_NCCL_EXTRA_DUMP_ON_EXEC', 'torch.distributed ProcessGroupNCCL (libtorch_cuda)', values=BOOL, hardware=('nvidia_gpu', 'multi_gpu')),
    V('TORCH_NCCL_USE_COMM_NONBLOCKING', 'torch.distributed ProcessGroupNCCL (libtorch_cuda)', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu')),
    V('TORCH_NCCL_NONBLOCKING_TIMEOUT', 'torch.distributed NCCLUtils (libtorch_cuda)', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('TORCH_NCCL_ABORT_IN_DESTROY_PG', 'torch.distributed ProcessGroupNCCL (libtorch_cuda)', values=BOOL, removed_in='2.4', replaced_by='default behaviour', hardware=('nvidia_gpu', 'multi_gpu')),
    V('TORCH_NCCL_DEBUG_INFO_PIPE_FILE', 'torch.distributed ProcessGroupNCCL (libtorch_cuda)', hardware=('nvidia_gpu', 'multi_gpu')),
    V('TORCH_NCCL_TRACE_BUFFER_SIZE', 'torch.distributed FlightRecorder (libtorch_cpu); also torch.distributed ProcessGroupNCCL (libtorch_cuda)', kind='count', renamed_to='TORCH_FR_BUFFER_SIZE', renamed_in='2.8'),
    V('TORCH_NCCL_TRACE_CPP_STACK', 'torch.distributed FlightRecorder (libtorch_cpu)', values=BOOL, renamed_to='TORCH_FR_CPP_STACK'),
    V('TORCH_NCCL_DEBUG_INFO_TEMP_FILE', 'torch.distributed FlightRecorder (libtorch_cpu)', renamed_to='TORCH_FR_DUMP_TEMP_FILE'),
)

# source: ProcessGroupNCCL.hpp in torch 2.13 (legacy names listed as second element of the cvar vectors); pytorch PR #114077
#         These NCCL_* names are read by *torch*, not by NCCL.
# names torch renamed in 2.2 (PR #114077); torch, not NCCL, reads them
TORCH_LEGACY_NCCL_PREFIX = (
    V('NCCL_BLOCKING_WAIT', 'torch.distributed ProcessGroupNCCL (libtorch_cuda)', values=BOOL, renamed_to='TORCH_NCCL_BLOCKING_WAIT', renamed_in='2.2', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_ASYNC_ERROR_HANDLING', 'torch.distributed ProcessGroupNCCL (libtorch_cuda)', values=('0', '1', '2', '3'), renamed_to='TORCH_NCCL_ASYNC_ERROR_HANDLING', renamed_in='2.2', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_DESYNC_DEBUG', 'torch.distributed ProcessGroupNCCL (libtorch_cuda)', values=BOOL, renamed_to='TORCH_NCCL_DESYNC_DEBUG', renamed_in='2.2', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_ENABLE_TIMING', 'torch.distributed ProcessGroupNCCL (libtorch_cuda)', values=BOOL, renamed_to='TORCH_NCCL_ENABLE_TIMING', renamed_in='2.2', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK', 'torch.distributed ProcessGroupNCCL (libtorch_cuda)', values=BOOL, renamed_to='TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK', renamed_in='2.2', hardware=('nvidia_gpu', 'multi_gpu')),
    V('ENABLE_NCCL_HEALTH_CHECK', 'torch.distributed ProcessGroupNCCL (libtorch_cuda)', values=BOOL, renamed_to='TORCH_ENABLE_NCCL_HEALTH_CHECK', renamed_in='2.2', removed_in='2.3', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_AVOID_RECORD_STREAMS', 'torch.distributed ProcessGroupNCCL (libtorch_cuda)', renamed_to='TORCH_NCCL_AVOID_RECORD_STREAMS', hardware=('nvidia_gpu', 'multi_gpu')),
)

# source: torch 2.13 FlightRecorder.hpp (shipped header) and libtorch_cpu.so strings; pytorch PR #152563 (TORCH_FR_* names)
# torch's flight recorder
TORCH_FR = (
    V('TORCH_FR_BUFFER_SIZE', 'torch.distributed FlightRecorder (libtorch_cpu)', kind='count'),
    V('TORCH_FR_CPP_STACK', 'torch.distributed FlightRecorder (libtorch_cpu)', values=BOOL),
    V('TORCH_FR_DUMP_TEMP_FILE', 'torch.distributed FlightRecorder (libtorch_cpu)'),
    V('TORCH_FR_DUMP_DYNAMIC_FILE_NAME', 'torch.distributed FlightRecorder (libtorch_cpu)', values=BOOL),
    V('TORCH_INCLUDE_STACK_TRACE', 'torch.distributed ProcessGroupNCCL (libtorch_cuda)', values=BOOL, hardware=('nvidia_gpu', 'multi_gpu')),
    V('TORCH_INCLUDE_ONLY_ACTIVE', 'torch.distributed ProcessGroupNCCL (libtorch_cuda)', values=BOOL, hardware=('nvidia_gpu', 'multi_gpu')),
    V('TORCH_SYMBOLIZE_MODE', 'torch (libtorch_cpu, C++ stack symbolizer)', values=('dladdr', 'addr2line', 'fast')),
)

# source: torch 2.13 python sources (torch/distributed/...) and libtorch_cpu.so strings; https://docs.pytorch.org/docs/stable/distributed.html
# torch.distributed
TORCH_DISTRIBUTED = (
    V('TORCH_DISTRIBUTED_DEBUG', 'torch.distributed (c10d) (python + libtorch_cpu)', values=('OFF', 'INFO', 'DETAIL')),
    V('TORCH_DISTRIBUTED_USE_TORCHCOMMS', 'torch.distributed (c10d) (python, torch.distributed.config)', values=('0', '1')),
    V('TORCH_DISTRIBUTED_COMPILE_ON_ONE_RANK', 'torch.distributed (c10d) (python, torch.distributed.config)'),
    V('TORCH_DIST_INIT_BARRIER', 'torch.distributed (c10d) (python)', values=('0', '1')),
    V('TORCH_GLOO_LAZY_INIT', 'torch.distributed ProcessGroupGloo (libtorch_cpu)', values=BOOL),
    V('GLOO_SOCKET_IFNAME', 'torch.distributed ProcessGroupGloo (libtorch_cpu)'),
    V('GLOO_DEVICE_TRANSPORT', 'torch.distributed ProcessGroupGloo (libtorch_cpu)'),
    V('TORCH_SYMMMEM', 'torch.distributed symmetric memory (libtorch_cuda / libtorch_nvshmem)', values=('CUDA', 'NVSHMEM', 'NCCL'), hardware=('nvidia_gpu', 'multi_gpu')),
    V('TORCH_SYMMMEM_NBLOCKS', 'torch.distributed symmetric memory', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('TORCH_SYMMMEM_IMPLICIT_POOL', 'torch.distributed._symmetric_memory (python)', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu')),
    V('TORCH_SYMM_MEM_ALLOW_OVERLAPPING_DEVICES', 'torch.distributed symmetric memory', hardware=('nvidia_gpu', 'multi_gpu')),
    V('TORCH_SYMM_MEM_DISABLE_MULTICAST', 'torch.distributed symmetric memory', hardware=('nvidia_gpu', 'multi_gpu', 'nvswitch')),
    V('TORCH_SYMM_MEM_ENABLE_NATIVE_ASYNC_TP', 'torch.distributed._symmetric_memory (python)', hardware=('nvidia_gpu', 'multi_gpu')),
    V('USE_LIBUV', 'torch.distributed TCPStore rendezvous (python)', values=('0', '1')),
    V('MASTER_ADDR', 'torch.distributed env:// rendezvous'),
    V('MASTER_PORT', 'torch.distributed env:// rendezvous', kind='int'),
    V('RANK', 'torch.distributed env:// rendezvous', kind='int'),
    V('WORLD_SIZE', 'torch.distributed env:// rendezvous', kind='int'),
    V('LOCAL_RANK', 'torch.distributed (get_node_local_rank, DeviceMesh) - set by torchrun', kind='int'),
    V('LOCAL_WORLD_SIZE', 'set by torchrun; read by torch.distributed helpers', kind='int'),
    V('TORCHELASTIC_USE_AGENT_STORE', 'torch.distributed rendezvous (set by torchrun)', values=('True', 'False')),
    V('TORCHELASTIC_ERROR_FILE', 'torch.distributed.elastic (@record)'),
    V('TORCHELASTIC_ENABLE_FILE_TIMER', 'torch.distributed.elastic agent', values=('0', '1')),
    V('TORCHELASTIC_HEALTH_CHECK_PORT', 'torch.distributed.elastic agent', kind='int'),
    V('TORCHELASTIC_SIGNALS_TO_HANDLE', 'torch.distributed.elastic'),
    V('TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE', 'torchrun'),
    V('TORCH_ELASTIC_SHUTDOWN_TIMEOUT', 'torchrun / elastic launcher', kind='int'),
    V('TORCH_ELASTIC_WORKER_IDENTICAL', 'torch.distributed.elastic agent', values=('0', '1')),
    V('TORCH_DISABLE_SHARE_RDZV_TCP_STORE', 'torch.distributed.elastic dynamic rendezvous', values=('0', '1')),
    V('OMP_NUM_THREADS', 'torchrun', kind='int'),
)

# source: torch 2.13 python sources, libc10/libc10_cuda/libtorch_cpu/libtorch_cuda strings;
#         https://docs.pytorch.org/docs/stable/cuda_environment_variables.html ; https://docs.pytorch.org/docs/stable/logging.html
# torch
TORCH_GENERAL = (
    V('TORCH_SHOW_CPP_STACKTRACES', 'torch (libtorch_cpu)', values=('0', '1')),
    V('TORCH_CPP_LOG_LEVEL', 'c10 (libc10)', values=('INFO', 'WARNING', 'ERROR', 'FATAL', '0', '1', '2', '3')),
    V('TORCH_LOGS', 'torch._logging (python)'),
    V('TORCH_LOGS_OUT', 'torch._logging (python)'),
    V('TORCH_LOGS_FORMAT', 'torch._logging (python)'),
    V('TORCH_TRACE', 'torch._logging (python)'),
    V('TORCH_COMPILE_DEBUG', 'torch._dynamo / torch._inductor (python)', values=('0', '1')),
    V('TORCH_COMPILE_DEBUG_DIR', 'torch._dynamo (python)'),
    V('TORCH_COMPILE_DISABLE', 'torch._dynamo (python)', values=('0', '1')),
    V('TORCHDYNAMO_DISABLE', 'torch._dynamo (python)', values=('0', '1')),
    V('TORCHDYNAMO_VERBOSE', 'torch._dynamo (python)', values=('0', '1')),
    V('TORCHDYNAMO_SUPPRESS_ERRORS', 'torch._dynamo (python)', values=('0', '1')),
    V('TORCHDYNAMO_REPRO_AFTER', 'torch._dynamo (python)', values=('dynamo', 'aot')),
    V('TORCHDYNAMO_REPRO_LEVEL', 'torch._dynamo (python)', values=('1', '2', '3', '4')),
    V('TORCHINDUCTOR_*', 'torch._inductor (python)'),
    V('TORCHINDUCTOR_CACHE_DIR', 'torch._inductor (python)'),
    V('TORCHINDUCTOR_FX_GRAPH_CACHE', 'torch._inductor (python)', values=('0', '1')),
    V('TORCHINDUCTOR_MAX_AUTOTUNE', 'torch._inductor (python)', values=('0', '1')),
    V('TORCHINDUCTOR_COMPILE_THREADS', 'torch._inductor (python)', kind='int'),
    V('TORCH_COMPILE_FORCE_DISABLE_CACHES', 'torch._inductor (python)', values=('0', '1')),
    V('PYTORCH_CUDA_ALLOC_CONF', 'c10 caching allocator config (libc10 / libc10_cuda)', hardware=('nvidia_gpu',)),
    V('PYTORCH_ALLOC_CONF', 'c10 caching allocator config (libc10)'),
    V('PYTORCH_HIP_ALLOC_CONF', 'c10 caching allocator config (ROCm builds)', hardware=('rocm',)),
    V('PYTORCH_NO_CUDA_MEMORY_CACHING', 'c10 CUDA caching allocator (libc10_cuda)', values=('0', '1'), hardware=('nvidia_gpu',)),
    V('PYTORCH_NO_HIP_MEMORY_CACHING', 'c10 caching allocator (ROCm)', values=('0', '1'), hardware=('rocm',)),
    V('PYTORCH_NVML_BASED_CUDA_CHECK', 'torch.cuda (python)', values=('0', '1'), hardware=('nvidia_gpu',)),
    V('PYTORCH_USE_CUDA_DSA', 'c10 CUDA device-side assertions (libc10_cuda)', values=('0', '1'), hardware=('nvidia_gpu',)),
    V('PYTORCH_CUDA_DSA_STACKTRACING', 'c10 CUDA device-side assertions', values=('0', '1'), hardware=('nvidia_gpu',)),
    V('TORCH_CUDA_EXPANDABLE_SEGMENTS_IPC', 'c10 CUDA caching allocator', values=('0', '1'), hardware=('nvidia_gpu',)),
    V('TORCH_CUDNN_V8_API_LRU_CACHE_LIMIT', 'ATen cuDNN (libtorch_cuda)', kind='int', hardware=('nvidia_gpu',)),
    V('TORCH_CUDNN_V8_API_DISABLED', 'ATen cuDNN', values=('0', '1'), hardware=('nvidia_gpu',)),
    V('TORCH_CUDNN_V8_API_DEBUG', 'ATen cuDNN', values=('0', '1'), hardware=('nvidia_gpu',)),
    V('TORCH_ALLOW_TF32_CUBLAS_OVERRIDE', 'ATen Context (libtorch_cpu)', values=('0', '1'), hardware=('nvidia_gpu', 'sm80_plus')),
    V('TORCH_BLAS_PREFER_CUBLASLT', 'ATen Context', values=('0', '1'), hardware=('nvidia_gpu',)),
    V('TORCH_LINALG_PREFER_CUSOLVER', 'ATen Context', values=('0', '1'), hardware=('nvidia_gpu',)),
    V('TORCH_CUBLASLT_UNIFIED_WORKSPACE', 'ATen CUDA BLAS (libtorch_cuda)', values=('0', '1'), hardware=('nvidia_gpu',)),
    V('TORCH_CUBLAS_WORKSPACE_CACHE', 'ATen CUDA BLAS', values=('0', '1'), hardware=('nvidia_gpu',)),
    V('CUBLASLT_WORKSPACE_SIZE', 'ATen CUDA BLAS (libtorch_cuda) - torch, not cuBLAS', kind='int', hardware=('nvidia_gpu',)),
    V('PYTORCH_TUNABLEOP_ENABLED', 'ATen TunableOp (libtorch_cuda)', values=('0', '1'), hardware=('nvidia_gpu',)),
    V('PYTORCH_KERNEL_CACHE_PATH', 'torch JIT fuser (libtorch_cuda)', hardware=('nvidia_gpu',)),
    V('TORCH_FORCE_WEIGHTS_ONLY_LOAD', 'torch.serialization (python)', values=('1', 'y', 'yes', 'true')),
    V('TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD', 'torch.serialization (python)', values=('1', 'y', 'yes', 'true')),
    V('TORCH_DEVICE_BACKEND_AUTOLOAD', 'torch (python)', values=('0', '1')),
    V('TORCH_USE_RTLD_GLOBAL', 'torch (python)'),
    V('TORCH_HOME', 'torch.hub (python)'),
    V('TORCH_EXTENSIONS_DIR', 'torch.utils.cpp_extension (python)'),
    V('TORCH_CUDA_ARCH_LIST', 'torch.utils.cpp_extension (python)', hardware=('nvidia_gpu',)),
    V('TORCH_NUM_THREADS', ''),
    V('PYTORCH_ENABLE_MPS_FALLBACK', 'torch (MPS backend, macOS wheels)', values=('0', '1'), hardware=('mps',)),
    V('PYTORCH_MPS_HIGH_WATERMARK_RATIO', 'torch (MPS allocator, macOS wheels)', hardware=('mps',)),
    V('PYTORCH_MPS_LOW_WATERMARK_RATIO', 'torch (MPS allocator, macOS wheels)', hardware=('mps',)),
)

# source: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html (documented=True entries)
#         + NVIDIA/nccl source: every NCCL_PARAM(...)/ncclGetEnv("NCCL_...") at tags v2.29.7-1 (pinned by torch 2.13) and v2.30.7-1,
#           cross-checked against `strings libnccl.so.2` of nvidia-nccl-cu13==2.29.7.
#         when: NCCL reads its environment at ncclInitEnv / first communicator creation and caches it for the process.
#         Note: /etc/nccl.conf and NCCL_CONF_FILE (or ~/.nccl.conf before 2.23) can also set these.
# NCCL (every name NCCL 2.29.7, which torch 2.13 pins, or 2.30.7 reads)
NCCL = (
    V('NCCL_ALGO', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_ALLGATHERV_ENABLE', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_ALLOC_P2P_NET_LL_BUFFERS', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node')),
    V('NCCL_BUFFSIZE', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_CGA_CLUSTER_SIZE', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'sm90_plus')),
    V('NCCL_CHECK_MODE', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_CHECK_POINTERS', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_CHUNK_SIZE', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_COLLNET_ENABLE', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband', 'ib_sharp')),
    V('NCCL_COLLNET_NODE_THRESHOLD', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband', 'ib_sharp')),
    V('NCCL_COMM_BLOCKING', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_COMM_ID', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_COMM_SHRINK_SHARE_RESOURCES', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_COMM_SPLIT_SHARE_RESOURCES', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_CONF_FILE', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_CONNECT_ROUND_MAX_PEERS', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_CREATE_THREAD_CONTEXT', 'NCCL', kind='int', removed_in='NCCL 2.30', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_CROSS_NIC', 'NCCL', values=('0', '1', '2'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node')),
    V('NCCL_CTA_POLICY', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_CUMEM_ENABLE', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu',)),
    V('NCCL_CUMEM_HOST_ENABLE', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu',)),
    V('NCCL_DEBUG', 'NCCL', values=('VERSION', 'WARN', 'INFO', 'ABORT', 'TRACE'), hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_DEBUG_FILE', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_DEBUG_SUBSYS', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_DEBUG_TIMESTAMP_FORMAT', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_DEBUG_TIMESTAMP_LEVELS', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_DEV_API_JIT', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_DISABLE_MEM_MANAGER', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_DMABUF_ENABLE', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'gpudirect_rdma')),
    V('NCCL_ELASTIC_BUFFER_REGISTER', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_ENABLE_VERSION_CHECK', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_ENV_PLUGIN', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_GDAKI_USE_RELIABLE_DB', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband', 'gpudirect_rdma', 'gin')),
    V('NCCL_GDRCOPY_ENABLE', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'gpudirect_rdma')),
    V('NCCL_GDRCOPY_FIFO_ENABLE', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'gpudirect_rdma')),
    V('NCCL_GDRCOPY_FLUSH_ENABLE', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'gpudirect_rdma')),
    V('NCCL_GDRCOPY_SYNC_ENABLE', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'gpudirect_rdma')),
    V('NCCL_GDR_FLUSH_DISABLE', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'gpudirect_rdma')),
    V('NCCL_GIN_COUNTER_POOL_SIZE', 'NCCL', kind='int', removed_in='NCCL 2.30', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband', 'gpudirect_rdma', 'gin')),
    V('NCCL_GIN_ENABLE', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband', 'gpudirect_rdma', 'gin')),
    V('NCCL_GIN_ERROR_QUERY_SEC', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband', 'gpudirect_rdma', 'gin')),
    V('NCCL_GIN_EXCLUSIVE_CONTEXTS', 'NCCL', kind='int', removed_in='NCCL 2.30', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband', 'gpudirect_rdma', 'gin')),
    V('NCCL_GIN_GDAKI_MAX_DEST_RD_ATOMIC', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband', 'gpudirect_rdma', 'gin')),
    V('NCCL_GIN_GDAKI_MAX_QP_RD_ATOMIC', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband', 'gpudirect_rdma', 'gin')),
    V('NCCL_GIN_GDAKI_NIC_HANDLER', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband', 'gpudirect_rdma', 'gin')),
    V('NCCL_GIN_GDAKI_QP_DEPTH', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband', 'gpudirect_rdma', 'gin')),
    V('NCCL_GIN_IB_TC', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband', 'gpudirect_rdma', 'gin')),
    V('NCCL_GIN_NCONNECTIONS', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband', 'gpudirect_rdma', 'gin')),
    V('NCCL_GIN_NCONTEXTS', 'NCCL', kind='int', removed_in='NCCL 2.30', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband', 'gpudirect_rdma', 'gin')),
    V('NCCL_GIN_PLUGIN', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband', 'gpudirect_rdma', 'gin')),
    V('NCCL_GIN_PLUGIN_REF_COUNT', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband', 'gpudirect_rdma', 'gin')),
    V('NCCL_GIN_PROXY_QUEUE_SIZE', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband', 'gpudirect_rdma', 'gin')),
    V('NCCL_GIN_SIGNAL_POOL_SIZE', 'NCCL', kind='int', removed_in='NCCL 2.30', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband', 'gpudirect_rdma', 'gin')),
    V('NCCL_GIN_TYPE', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband', 'gpudirect_rdma', 'gin')),
    V('NCCL_GRAPH_DUMP_FILE', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_GRAPH_DUMP_FILE_RANK', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_GRAPH_FILE', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_GRAPH_HELPER_DISABLE', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_GRAPH_MIXING_SUPPORT', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_GRAPH_REGISTER', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_GRAPH_STREAM_ORDERING', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_GROUP_CUDA_STREAM', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_HOSTID', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_IBVERBS_LIB', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_ADAPTIVE_ROUTING', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_ADDR_FAMILY', 'NCCL', values=('AF_INET', 'AF_INET6'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband', 'roce')),
    V('NCCL_IB_ADDR_RANGE', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband', 'roce')),
    V('NCCL_IB_AR_THRESHOLD', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_DATA_DIRECT', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_DEVICE_PCI_ORDER', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_DISABLE', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_ECE_ENABLE', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_FIFO_TC', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_GID_INDEX', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband', 'roce')),
    V('NCCL_IB_HCA', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_MERGE_NICS', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_MERGE_VFS', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_MQP_RETRY_ALL', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_MQP_RETRY_CNT', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_MQP_RETRY_SLEEP_MSEC', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_OOO_RQ', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_PCI_RELAXED_ORDERING', 'NCCL', values=('0', '1', '2'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_PKEY', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_PREPOST_RECEIVE_WORK_REQUESTS', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_QPS_PER_CONNECTION', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_QUERY_PORT_SPEED', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_RECEIVER_SIDE_MATCHING_SCHEME', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_RESILIENCY_PORT_FAILOVER', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_RESILIENCY_PORT_FAILOVER_MAX_ATTEMPTS', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_RESILIENCY_PORT_FAILOVER_PROBE_DELAY', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_RESILIENCY_PORT_RECOVERY', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_RESILIENCY_PORT_RECOVERY_ACK_TIMEOUT', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_RESILIENCY_PORT_RECOVERY_ALIVE_MSG_BATCH_INTERVAL', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_RESILIENCY_PORT_RECOVERY_ALIVE_MSG_BATCH_SIZE', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_RESILIENCY_PORT_RECOVERY_ALIVE_MSG_SEQUENCE_SIZE', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_RESILIENCY_PORT_RECOVERY_ALIVE_MSG_TIMEOUT', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_RESILIENCY_PORT_RECOVERY_ATTEMPTS_MAX', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_RESILIENCY_PORT_RECOVERY_START_DELAY', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_RETRY_CNT', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_RETURN_ASYNC_EVENTS', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_ROCE_VERSION_NUM', 'NCCL', values=('1', '2'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband', 'roce')),
    V('NCCL_IB_ROUTABLE_FLID_GID_INDEX', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_SL', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_SPLIT_DATA_ON_QPS', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_SUBNET_AWARE_ROUTING', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_SUBNET_PREFIX_LEN', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_TC', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_TIMEOUT', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_USE_INLINE', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IB_WARN_RAIL_LOCAL', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband')),
    V('NCCL_IGNORE_COLLNET_MISMATCH', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_IGNORE_CPU_AFFINITY', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_IGNORE_DISABLED_P2P', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_IGNORE_NET_MISMATCH', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_IPC_USE_ABSTRACT_SOCKET', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_L1_SHARED_MEMORY_CARVEOUT', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_LAUNCH_MODE', 'NCCL', values=('PARALLEL', 'GROUP'), hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_LAUNCH_ORDER_IMPLICIT', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_LAUNCH_RACE_FATAL', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_LEGACY_CUDA_REGISTER', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_LL128_BUFFSIZE', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_LL128_C2C', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'c2c')),
    V('NCCL_LL128_NTHREADS', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_LL_BUFFSIZE', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_LOCAL_REGISTER', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_LSA_TEAM_SIZE', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_MAX_CTAS', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_MAX_NCHANNELS', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_MAX_NRINGS', 'NCCL', kind='int', renamed_to='NCCL_MAX_NCHANNELS', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_MAX_P2P_NCHANNELS', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_MEM_SYNC_DOMAIN', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'sm90_plus')),
    V('NCCL_MIN_CTAS', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_MIN_NCHANNELS', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_MIN_NRINGS', 'NCCL', kind='int', renamed_to='NCCL_MIN_NCHANNELS', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_MIN_P2P_NCHANNELS', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_MLOPART_RDMA_ENABLE', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_MNNVL_CLIQUE_ID', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'mnnvl')),
    V('NCCL_MNNVL_CROSS_CLIQUE', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'mnnvl')),
    V('NCCL_MNNVL_ENABLE', 'NCCL', values=('0', '1', '2'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'mnnvl')),
    V('NCCL_MNNVL_RAIL_PER_HOST', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'mnnvl')),
    V('NCCL_MNNVL_SCATTER_NETS_ENABLE', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'mnnvl')),
    V('NCCL_MNNVL_UUID', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'mnnvl')),
    V('NCCL_MULTI_RANK_GPU_ENABLE', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_MULTI_SEGMENT_REGISTER', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_NCHANNELS_PER_NET_PEER', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node')),
    V('NCCL_NET', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node')),
    V('NCCL_NETDEVS_POLICY', 'NCCL', values=('AUTO', 'ALL', 'MAX:<n>'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node')),
    V('NCCL_NET_DISABLE_INTRA', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node')),
    V('NCCL_NET_FORCE_FLUSH', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'gpudirect_rdma')),
    V('NCCL_NET_FORCE_MERGE', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node')),
    V('NCCL_NET_GDR_C2C', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'c2c', 'gpudirect_rdma')),
    V('NCCL_NET_GDR_LEVEL', 'NCCL', values=('LOC', 'PIX', 'PXB', 'PHB', 'SYS', '0', '1', '2', '3', '4', '5'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'gpudirect_rdma')),
    V('NCCL_NET_GDR_MLOPART', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'gpudirect_rdma')),
    V('NCCL_NET_GDR_READ', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'gpudirect_rdma')),
    V('NCCL_NET_MERGE_LEVEL', 'NCCL', values=('LOC', 'PORT', 'PIX', 'PXB', 'P2C', 'PXN', 'PHB', 'SYS'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node')),
    V('NCCL_NET_MERGE_POLICY', 'NCCL', values=('ALL', 'RAIL'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node')),
    V('NCCL_NET_OPTIONAL_RECV_COMPLETION', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node')),
    V('NCCL_NET_OVERHEAD', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node')),
    V('NCCL_NET_PLUGIN', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node')),
    V('NCCL_NET_PLUGIN_REF_COUNT', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node')),
    V('NCCL_NET_SHARED_BUFFERS', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node')),
    V('NCCL_NET_SHARED_COMMS', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node')),
    V('NCCL_NO_CACHE', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_NSOCKS_PERTHREAD', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node')),
    V('NCCL_NTHREADS', 'NCCL', values=('64', '128', '256', '512'), hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_NUM_RMA_CTX', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_NVB_DISABLE', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'nvlink')),
    V('NCCL_NVB_PRECONNECT', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'nvlink')),
    V('NCCL_NVLINK_UTIL_CENTRIC_SCHED_ENABLE', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'nvlink')),
    V('NCCL_NVLSTREE_MAX_CHUNKSIZE', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'nvswitch', 'sm90_plus', 'multi_node')),
    V('NCCL_NVLS_CHUNKSIZE', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'nvswitch', 'sm90_plus')),
    V('NCCL_NVLS_ENABLE', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'nvswitch', 'sm90_plus')),
    V('NCCL_NVLS_NCHANNELS', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'nvswitch', 'sm90_plus')),
    V('NCCL_NVTX_DISABLE', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_OOB_NET_ENABLE', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node')),
    V('NCCL_OOB_NET_IFNAME', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node')),
    V('NCCL_P2P_DIRECT_DISABLE', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_P2P_DISABLE', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_P2P_EPOCH_ENABLE', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_P2P_LEVEL', 'NCCL', values=('LOC', 'NVL', 'PIX', 'PXB', 'PHB', 'SYS', '0', '1', '2', '3', '4', '5'), hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_P2P_LL_THRESHOLD', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_P2P_MAX_PEERS', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_P2P_NET_CHUNKSIZE', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node')),
    V('NCCL_P2P_NVL_CHUNKSIZE', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'nvlink')),
    V('NCCL_P2P_PCI_CHUNKSIZE', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_P2P_PER_CHANNEL_NET_BW', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_P2P_PXN_LEVEL', 'NCCL', values=('0', '1', '2'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node')),
    V('NCCL_P2P_READ_ENABLE', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'nvlink')),
    V('NCCL_P2P_SCHEDULE_GROUP_SIZE', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_P2P_USE_CUDA_MEMCPY', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_PARAM_DUMP_ALL', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_PAT_ENABLE', 'NCCL', values=('0', '1', '2'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node')),
    V('NCCL_PROFILER_PLUGIN', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_PROGRESS_APPENDOP_FREQ', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_PROTO', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_PROXY_APPEND_BATCH_SIZE', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_PROXY_CPUSET', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_PROXY_DUMP_SIGNAL', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_PXN_C2C', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'c2c', 'multi_node')),
    V('NCCL_PXN_DISABLE', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node')),
    V('NCCL_RAS_ADDR', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_RAS_ENABLE', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_RAS_TIMEOUT_FACTOR', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_REPORT_CONNECT_PROGRESS', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_RMA_DISABLE', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_RMA_PLUGIN', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_RMA_PLUGIN_REF_COUNT', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_RMA_PROXY_DUMP_SIGNAL', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_RMA_PROXY_QUEUE_SIZE', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_RUNTIME_CONNECT', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_SET_CPU_STACK_SIZE', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_SET_STACK_SIZE', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_SET_THREAD_NAME', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_SHADOW_MEMPOOL_MAX_SIZE', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_SHM_DISABLE', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_SHM_LOCALITY', 'NCCL', values=('1', '2'), hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_SHM_MEMCPY_MODE', 'NCCL', values=('1', '2', '3'), removed_in='NCCL 2.30', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_SHM_USE_CUDA_MEMCPY', 'NCCL', values=('0', '1'), removed_in='NCCL 2.30', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_SINGLE_PROC_MEM_REG_ENABLE', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_SOCKET_FAMILY', 'NCCL', values=('AF_INET', 'AF_INET6'), hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_SOCKET_IFNAME', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_SOCKET_INLINE', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node')),
    V('NCCL_SOCKET_MAGIC', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node')),
    V('NCCL_SOCKET_MIN_TASKSIZE', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node')),
    V('NCCL_SOCKET_NTHREADS', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node')),
    V('NCCL_SOCKET_POLL_TIMEOUT_MSEC', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_SOCKET_RCVBUF', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node')),
    V('NCCL_SOCKET_RETRY_CNT', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_SOCKET_RETRY_SLEEP_MSEC', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_SOCKET_SNDBUF', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node')),
    V('NCCL_SYM_CE_THRESHOLD', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_SYM_CTAS', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_SYM_GIN_KERNELS_ENABLE', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'multi_node', 'infiniband', 'gpudirect_rdma', 'gin')),
    V('NCCL_SYM_KERNEL', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_SYM_NOWIN_ENABLE', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_SYM_REUSE_SYSMEM_HANDLES', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_SYM_RS_GIN_CHUNK_SIZE', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_SYM_TMA_ENABLE', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu', 'sm90_plus')),
    V('NCCL_THREAD_THRESHOLDS', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_TOPO_DUMP_FILE', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_TOPO_DUMP_FILE_RANK', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_TOPO_FILE', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_TOPO_SPLIT_MLOPART', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_TUNER_PLUGIN', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_UID_STAGGER_RATE', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node')),
    V('NCCL_UID_STAGGER_THRESHOLD', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu', 'multi_node')),
    V('NCCL_UNPACK_DOUBLE_NCHANNELS', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_WARN_ENABLE_DEBUG_INFO', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_WIN_ENABLE', 'NCCL', values=('0', '1'), hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_WIN_STRIDE', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_WORK_ARGS_BYTES', 'NCCL', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_WORK_FIFO_BYTES', 'NCCL', kind='int', hardware=('nvidia_gpu', 'multi_gpu')),
)

# source: older NCCL env.html versions (docs.nvidia.com/deeplearning/nccl/archives/...) + NVIDIA/nccl git tags 2.3.5..2.30.7
#         Names once documented/read that NCCL 2.29.7 / 2.30.7 no longer read.
# NCCL names no current release reads
NCCL_REMOVED = (
    V('NCCL_CHECKS_DISABLE', '', removed_in='NCCL <=2.3.5', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_SINGLE_RING_THRESHOLD', '', removed_in='NCCL <=2.3.5', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_IB_CUDA_SUPPORT', '', removed_in='NCCL 2.4.2', replaced_by='NCCL_NET_GDR_LEVEL', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_IB_GDR_LEVEL', '', renamed_to='NCCL_NET_GDR_LEVEL', removed_in='NCCL 2.4.2', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_RINGS', '', removed_in='NCCL 2.5.6', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_LL_THRESHOLD', '', removed_in='NCCL 2.5.6', replaced_by='NCCL_PROTO', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_TREE_THRESHOLD', '', removed_in='NCCL 2.5.6', replaced_by='NCCL_ALGO', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_THREAD_THRESHOLD', '', removed_in='NCCL 2.5.6', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_WORK_FIFO_DEPTH', '', renamed_to='NCCL_WORK_FIFO_BYTES', removed_in='NCCL 2.22.3', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_PROXY_PROFILE', '', removed_in='NCCL 2.23.4', replaced_by='NCCL_PROFILER_PLUGIN', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_AGG_CHANNEL_SIZE', '', removed_in='NCCL 2.20.3', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_CUDA_PATH', '', removed_in='NCCL 2.21.5', hardware=('nvidia_gpu', 'multi_gpu')),
    V('NCCL_MNNVL', '', renamed_to='NCCL_MNNVL_ENABLE', removed_in='NCCL 2.21.5', hardware=('nvidia_gpu', 'multi_gpu')),
)

# source: https://docs.nvidia.com/cuda/cuda-programming-guide/05-appendices/environment-variables.html (CUDA driver/runtime)
#         MPS: https://docs.nvidia.com/deploy/mps/index.html ; Megatron: NVIDIA/Megatron-LM megatron/training/arguments.py
# the CUDA driver and runtime
CUDA = (
    V('CUDA_VISIBLE_DEVICES', 'CUDA driver (+ torch.cuda NVML path)', hardware=('nvidia_gpu',)),
    V('CUDA_DEVICE_ORDER', 'CUDA driver', values=('FASTEST_FIRST', 'PCI_BUS_ID'), hardware=('nvidia_gpu',)),
    V('CUDA_MANAGED_FORCE_DEVICE_ALLOC', 'CUDA driver', values=('0', '1'), hardware=('nvidia_gpu',)),
    V('CUDA_LAUNCH_BLOCKING', 'CUDA driver (+ c10_cuda / NCCL for messages)', values=('0', '1'), hardware=('nvidia_gpu',)),
    V('CUDA_DEVICE_MAX_CONNECTIONS', 'CUDA driver; checked by Megatron-LM / TransformerEngine', kind='int', hardware=('nvidia_gpu', 'pre_blackwell')),
    V('CUDA_DEVICE_MAX_COPY_CONNECTIONS', 'CUDA driver', kind='int', hardware=('nvidia_gpu',)),
    V('CUDA_MODULE_LOADING', 'CUDA driver/runtime', values=('DEFAULT', 'LAZY', 'EAGER'), hardware=('nvidia_gpu',)),
    V('CUDA_MODULE_DATA_LOADING', 'CUDA driver/runtime', values=('DEFAULT', 'LAZY', 'EAGER'), hardware=('nvidia_gpu',)),
    V('CUDA_CACHE_DISABLE', 'CUDA driver (JIT cache)', values=('0', '1'), hardware=('nvidia_gpu',)),
    V('CUDA_CACHE_PATH', 'CUDA driver (JIT cache)', hardware=('nvidia_gpu',)),
    V('CUDA_CACHE_MAXSIZE', 'CUDA driver (JIT cache)', kind='int', hardware=('nvidia_gpu',)),
    V('CUDA_FORCE_PTX_JIT', 'CUDA driver', values=('0', '1'), hardware=('nvidia_gpu',)),
    V('CUDA_DISABLE_PTX_JIT', 'CUDA driver', values=('0', '1'), hardware=('nvidia_gpu',)),
    V('CUDA_FORCE_JIT', 'CUDA driver', values=('0', '1'), hardware=('nvidia_gpu',)),
    V('CUDA_DISABLE_JIT', 'CUDA driver', values=('0', '1'), hardware=('nvidia_gpu',)),
    V('CUDA_FORCE_PRELOAD_LIBRARIES', 'CUDA driver', values=('0', '1'), hardware=('nvidia_gpu',)),
    V('CUDA_AUTO_BOOST', 'CUDA driver', values=('0', '1'), hardware=('nvidia_gpu',)),
    V('CUDA_SCALE_LAUNCH_QUEUES', 'CUDA driver', values=('0.25x', '0.5x', '2x', '4x'), hardware=('nvidia_gpu',)),
    V('CUDA_GRAPHS_USE_NODE_PRIORITY', 'CUDA driver', values=('0', '1'), hardware=('nvidia_gpu',)),
    V('CUDA_DEVICE_WAITS_ON_EXCEPTION', 'CUDA driver', values=('0', '1'), hardware=('nvidia_gpu',)),
    V('CUDA_ENABLE_COREDUMP_ON_EXCEPTION', 'CUDA driver', values=('0', '1'), hardware=('nvidia_gpu',)),
    V('CUDA_ENABLE_CPU_COREDUMP_ON_EXCEPTION', 'CUDA driver', values=('0', '1'), hardware=('nvidia_gpu',)),
    V('CUDA_ENABLE_LIGHTWEIGHT_COREDUMP', 'CUDA driver', values=('0', '1'), hardware=('nvidia_gpu',)),
    V('CUDA_ENABLE_USER_TRIGGERED_COREDUMP', 'CUDA driver', values=('0', '1'), hardware=('nvidia_gpu',)),
    V('CUDA_COREDUMP_FILE', 'CUDA driver', hardware=('nvidia_gpu',)),
    V('CUDA_COREDUMP_PIPE', 'CUDA driver', hardware=('nvidia_gpu',)),
    V('CUDA_COREDUMP_GENERATION_FLAGS', 'CUDA driver', hardware=('nvidia_gpu',)),
    V('CUDA_LOG_FILE', 'CUDA runtime/driver error-log management', hardware=('nvidia_gpu',)),
    V('NVIDIA_TF32_OVERRIDE', 'cuBLAS / cuDNN', values=('0',), hardware=('nvidia_gpu', 'sm80_plus')),
    V('CUDA_MPS_PIPE_DIRECTORY', 'CUDA driver (MPS client) / nvidia-cuda-mps-control', hardware=('nvidia_gpu', 'mps')),
    V('CUDA_MPS_LOG_DIRECTORY', 'nvidia-cuda-mps-control daemon', hardware=('nvidia_gpu', 'mps')),
    V('CUDA_MPS_ACTIVE_THREAD_PERCENTAGE', 'CUDA driver (MPS client)', kind='int', hardware=('nvidia_gpu', 'mps')),
    V('CUDA_MPS_PINNED_DEVICE_MEM_LIMIT', 'CUDA driver (MPS client)', hardware=('nvidia_gpu', 'mps')),
    V('CUDA_MPS_ENABLE_PER_CTX_DEVICE_MULTIPROCESSOR_PARTITIONING', 'CUDA driver (MPS)', values=('0', '1'), hardware=('nvidia_gpu', 'mps')),
    V('CUDA_MPS_CLIENT_PRIORITY', 'CUDA driver (MPS client)', values=('0', '1'), hardware=('nvidia_gpu', 'mps')),
    V('CUDA_HOME', 'torch.utils.cpp_extension / Triton / torch._inductor (python)', hardware=('nvidia_gpu',)),
    V('CUDA_PATH', 'torch/__init__.py and torch.utils.cpp_extension (the CUDA toolkit, mostly on Windows)'),
)

# source: https://docs.nvidia.com/cuda/cublas/index.html + strings of libcublas.so.13 / libcublasLt.so.13 (nvidia-cublas 13.1.1.3,
#         the version pinned via cuda-toolkit[cublas]==13.0.3 by torch 2.13.0+cu130)
# cuBLAS and cuBLASLt
CUBLAS = (
    V('CUBLAS_WORKSPACE_CONFIG', 'cuBLAS (documented) and torch (libtorch_cuda parses it to size its cuBLAS workspaces)', hardware=('nvidia_gpu',)),
    V('CUBLAS_LOGINFO_DBG', 'cuBLAS', values=('0', '1'), hardware=('nvidia_gpu',)),
    V('CUBLAS_LOGDEST_DBG', 'cuBLAS', hardware=('nvidia_gpu',)),
    V('CUBLASLT_LOG_LEVEL', 'cuBLASLt', values=('0', '1', '2', '3', '4', '5'), hardware=('nvidia_gpu',)),
    V('CUBLASLT_LOG_MASK', 'cuBLASLt', kind='int', hardware=('nvidia_gpu',)),
    V('CUBLASLT_LOG_FILE', 'cuBLASLt', hardware=('nvidia_gpu',)),
    V('CUBLASLT_HEURISTICS_CACHE_CAPACITY', 'cuBLASLt', kind='int', hardware=('nvidia_gpu',)),
    V('CUBLASLT_DISABLE_CPU_INSTRUCTIONS_MASK', 'cuBLASLt', kind='int', hardware=('nvidia_gpu',)),
    V('CUBLASLT_HEURISTICS_LUT_FILE', 'cuBLASLt', hardware=('nvidia_gpu',)),
    V('CUBLASLT_NVTX_LEVEL', 'cuBLASLt', kind='int', hardware=('nvidia_gpu',)),
    V('CUBLAS_NVTX_LEVEL', 'cuBLAS', kind='int', hardware=('nvidia_gpu',)),
    V('CUBLAS_EMULATE_SINGLE_PRECISION', 'cuBLAS / cuBLASLt', values=('0', '1'), hardware=('nvidia_gpu', 'sm100_plus')),
    V('CUBLAS_EMULATE_DOUBLE_PRECISION', 'cuBLAS / cuBLASLt', values=('0', '1'), hardware=('nvidia_gpu',)),
    V('CUBLAS_EMULATION_STRATEGY', 'cuBLAS / cuBLASLt', values=('default', 'performant', 'eager'), hardware=('nvidia_gpu',)),
    V('CUBLAS_FIXEDPOINT_EMULATION_MANTISSA_BIT_COUNT', 'cuBLAS / cuBLASLt', kind='int', hardware=('nvidia_gpu',)),
    V('CUBLAS_AUTOTUNING_CACHE_CAPACITY', 'cuBLASLt', kind='int', hardware=('nvidia_gpu',)),
    V('CUBLAS_FORCE_XMMA_KERNEL_INIT', 'cuBLASLt', hardware=('nvidia_gpu',)),
)

# source: https://gcc.gnu.org/onlinedocs/libgomp/Environment-Variables.html ; torch 2.13 wheels bundle torch/lib/libgomp.so.1
#         built from GCC 8.5 (OpenMP 4.5, _OPENMP=201511); names confirmed with `strings` and OMP_DISPLAY_ENV=true.
# GNU libgomp (bundled with torch wheels)
OPENMP_GNU = (
    V('OMP_NUM_THREADS', 'libgomp (bundled) + torch ATen (intra-op default) + torchrun', kind='int'),
    V('OMP_PROC_BIND', 'libgomp', values=('true', 'false', 'master', 'close', 'spread')),
    V('OMP_PLACES', 'libgomp', values=('threads', 'cores', 'sockets', '<explicit list>')),
    V('OMP_DYNAMIC', 'libgomp', values=('true', 'false')),
    V('OMP_SCHEDULE', 'libgomp', values=('static', 'dynamic', 'guided', 'auto')),
    V('OMP_WAIT_POLICY', 'libgomp', values=('ACTIVE', 'PASSIVE')),
    V('OMP_STACKSIZE', 'libgomp'),
    V('OMP_THREAD_LIMIT', 'libgomp', kind='int'),
    V('OMP_MAX_ACTIVE_LEVELS', 'libgomp', kind='int'),
    V('OMP_NESTED', 'libgomp', values=('true', 'false'), obsolete_since='OpenMP 5.0', replaced_by='OMP_MAX_ACTIVE_LEVELS'),
    V('OMP_CANCELLATION', 'libgomp', values=('true', 'false')),
    V('OMP_DISPLAY_ENV', 'libgomp', values=('true', 'false', 'verbose')),
    V('OMP_DISPLAY_AFFINITY', 'libgomp', values=('true', 'false')),
    V('OMP_AFFINITY_FORMAT', 'libgomp'),
    V('OMP_DEFAULT_DEVICE', 'libgomp', kind='int'),
    V('OMP_MAX_TASK_PRIORITY', 'libgomp', kind='int'),
    V('OMP_TARGET_OFFLOAD', '', values=('MANDATORY', 'DISABLED', 'DEFAULT')),
    V('GOMP_CPU_AFFINITY', 'libgomp'),
    V('GOMP_SPINCOUNT', 'libgomp'),
    V('GOMP_STACKSIZE', 'libgomp', kind='int'),
    V('GOMP_DEBUG', 'libgomp', values=('0', '1')),
)

# source: Intel OpenMP runtime docs (KMP_*). Read only if libiomp5/libomp is loaded - not by the GNU libgomp in torch wheels.
# Intel OpenMP / LLVM libomp (not loaded by torch wheels)
INTEL_OPENMP = (
    V('KMP_AFFINITY', 'Intel OpenMP (libiomp5) / LLVM libomp', hardware=('intel_openmp',)),
    V('KMP_BLOCKTIME', 'Intel OpenMP (libiomp5) / LLVM libomp', hardware=('intel_openmp',)),
    V('KMP_HW_SUBSET', 'Intel OpenMP / LLVM libomp', hardware=('intel_openmp',)),
    V('KMP_SETTINGS', 'Intel OpenMP / LLVM libomp', values=('true', 'false'), hardware=('intel_openmp',)),
    V('KMP_LIBRARY', 'Intel OpenMP / LLVM libomp', values=('serial', 'turnaround', 'throughput'), hardware=('intel_openmp',)),
    V('KMP_STACKSIZE', 'Intel OpenMP / LLVM libomp', hardware=('intel_openmp',)),
    V('KMP_WARNINGS', 'Intel OpenMP / LLVM libomp', values=('true', 'false'), hardware=('intel_openmp',)),
    V('KMP_TOPOLOGY_METHOD', 'Intel OpenMP / LLVM libomp', hardware=('intel_openmp',)),
    V('KMP_INIT_AT_FORK', 'Intel OpenMP / LLVM libomp', values=('true', 'false'), hardware=('intel_openmp',)),
    V('KMP_DUPLICATE_LIB_OK', 'Intel OpenMP / LLVM libomp', values=('TRUE', 'FALSE'), hardware=('intel_openmp',)),
)

# source: https://www.intel.com/content/www/us/en/docs/onemkl/developer-guide-linux/current/onemkl-env-vars.html
#         + strings of torch 2.13 libtorch_cpu.so (oneMKL statically linked on x86_64)
# oneMKL (static in x86_64 torch wheels)
MKL = (
    V('MKL_NUM_THREADS', 'oneMKL (static in libtorch_cpu) + torch ATen (intra-op default)', kind='int', hardware=('x86_64',)),
    V('MKL_DYNAMIC', 'oneMKL', values=('TRUE', 'FALSE'), hardware=('x86_64',)),
    V('MKL_DOMAIN_NUM_THREADS', 'oneMKL', hardware=('x86_64',)),
    V('MKL_CBWR', 'oneMKL', hardware=('x86_64',)),
    V('MKL_ENABLE_INSTRUCTIONS', 'oneMKL', hardware=('x86_64',)),
    V('MKL_VERBOSE', 'oneMKL', values=('0', '1', '2'), hardware=('x86_64',)),
    V('MKL_VERBOSE_OUTPUT_FILE', 'oneMKL', hardware=('x86_64',)),
    V('MKL_DISABLE_FAST_MM', 'oneMKL', values=('1',), hardware=('x86_64',)),
    V('MKL_FAST_MEMORY_LIMIT', 'oneMKL', kind='int', hardware=('x86_64',)),
    V('MKL_NUM_STRIPES', 'oneMKL', kind='int', hardware=('x86_64',)),
    V('MKL_THREADING_LAYER', 'oneMKL single dynamic library (mkl_rt) only', values=('INTEL', 'SEQUENTIAL', 'GNU', 'TBB'), hardware=('x86_64',)),
    V('MKL_INTERFACE_LAYER', 'oneMKL single dynamic library (mkl_rt) only', values=('LP64', 'ILP64', 'GNU'), hardware=('x86_64',)),
    V('MKL_DEBUG_CPU_TYPE', '', kind='int', removed_in='oneMKL 2020 Update 1', hardware=('x86_64',)),
    V('MKL_SERVICE_FORCE_INTEL', 'mkl-service python package (not torch)', hardware=('x86_64',)),
)

# source: apache/tvm src/runtime/threading_backend.cc
# other projects' runtimes
OTHER_LIBS = (
    V('TVM_NUM_THREADS', 'Apache TVM runtime (threading_backend.cc MaxConcurrency)', kind='int'),
)

# Names that circulate in copied start-up code but that no library reads, with what to use instead.
# source: torch 2.13 (libraries, Python, headers), NVIDIA/nccl 2.3.5..2.30.7, the CUDA, cuBLAS and NCCL
#         documentation, and GitHub's code index, searched for each name.
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
          CUBLAS, OPENMP_GNU, INTEL_OPENMP, MKL, OTHER_LIBS)
