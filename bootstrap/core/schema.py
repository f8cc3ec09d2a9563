"""The preset schema: what a file in the ``env`` config group may contain.

Each field carries one comment saying what it does. The dataclasses are registered
in Hydra's ConfigStore as ``bootstrap/schema/env``; every shipped preset lists it in
its defaults, so a typo (``env.threds``) or a wrong type fails at compose time with
Hydra's own error naming the key. What OmegaConf cannot express (positive ints,
"int or ``auto``", specifier syntax) is checked by :func:`validate`.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import json
import typing
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple, Union, cast

from bootstrap.doors import inbound, outbound
from bootstrap.doors.errors import PRESET_KEY, ConfigError
from bootstrap.variables.lint import LintPolicy  # the lint's own enum: variables/ sits below core/

AUTO = "auto"
MAX_FR_BUFFER = 10**6  # entries of some KiB each (sizes, a stack): beyond this the recorder costs real memory
MAX_TIMEOUT_S = 365 * 24 * 3600  # a year: more is no timeout at all, and overflows timedelta at ~10**14 s

# The enums mix in str so that a task can pass them straight to torch:
# torch.device(cfg.env.device).


class OnMismatch(str, enum.Enum):
    error = "error"  # stop the job before the task runs
    warn = "warn"  # log the failed checks and run the task anyway


class Device(str, enum.Enum):
    cpu = "cpu"
    cuda = "cuda"


class Backend(str, enum.Enum):
    gloo = "gloo"
    nccl = "nccl"


class MatmulPrecision(str, enum.Enum):
    highest = "highest"  # full fp32 matmuls (torch's default)
    high = "high"  # TF32 on Ampere and newer
    medium = "medium"  # bf16-based fp32 matmuls where supported


@dataclass
class Requires:
    python: Optional[str] = None  # SpecifierSet for the interpreter, e.g. ">=3.10"
    torch: Optional[str] = None  # SpecifierSet for torch.__version__
    cuda: Optional[str] = None  # SpecifierSet for torch.version.cuda (the CUDA torch was built with)
    nccl: Optional[str] = None  # SpecifierSet for torch.cuda.nccl.version()
    compute_capability: Optional[str] = None  # minimum over visible GPUs, e.g. "9.0"
    gpus: Optional[int] = None  # minimum number of visible GPUs


@dataclass
class Threads:
    # A positive int, or "auto": the CPUs this process may use (sched_getaffinity)
    # divided by the ranks on this node. OmegaConf 2.3 has no Literal type, so
    # "auto" vs a typo such as "abc" is told apart by validate().
    intra_op: Union[int, str] = AUTO  # torch.set_num_threads
    inter_op: Union[int, str] = AUTO  # torch.set_num_interop_threads (once per process)


@dataclass
class TorchSettings:  # one row each in bootstrap.doors.torch_settings
    matmul_precision: MatmulPrecision = MatmulPrecision.highest  # torch.set_float32_matmul_precision
    cudnn_allow_tf32: bool = True  # torch.backends.cudnn.allow_tf32 (torch's default is True)
    cudnn_benchmark: bool = False  # torch.backends.cudnn.benchmark: autotune conv kernels
    deterministic: bool = False  # use_deterministic_algorithms + cudnn.deterministic + CUBLAS_WORKSPACE_CONFIG
    detect_anomaly: bool = False  # torch.autograd.set_detect_anomaly: name the op whose backward made a NaN; slow


class DistributedInit(str, enum.Enum):
    auto = "auto"  # create a process group when the world has more than one rank
    always = "always"  # also for a single process (a 1-rank group)
    never = "never"  # leave torch.distributed alone


class AgreePolicy(str, enum.Enum):
    error = "error"  # ranks that differ in what collectives depend on stop; other differences warn
    warn = "warn"  # every difference warns and is recorded
    off = "off"  # no comparison


class SeedOffset(str, enum.Enum):
    none = "none"  # every rank's data stream starts from env.seed
    rank = "rank"  # rank r's data stream starts from env.seed + r


@dataclass
class FlightRecorder:
    enabled: bool = True  # keep each rank's recent collectives (torch's flight recorder), to diagnose a hang
    buffer_size: int = 2000  # collectives kept per rank (TORCH_FR_BUFFER_SIZE)
    dump_dir: Optional[str] = None  # where each rank's dump goes on a failure or SIGTERM; null: the job's output dir


@dataclass
class Distributed:
    backend: Backend = Backend.gloo  # torch.distributed backend
    init: DistributedInit = DistributedInit.auto  # when to create the process group
    timeout_s: int = 600  # collective and start-up timeout, passed to init_process_group
    agree: AgreePolicy = AgreePolicy.error  # compare the ranks' versions, preset and variables at start
    # Named parallel dimensions for init_device_mesh; one -1 is inferred from the world size.
    mesh: Dict[str, int] = field(default_factory=lambda: {"dp": -1})
    master_addr: Optional[str] = None  # rendezvous host for SLURM/submitit; null: the job's first node
    master_port: Optional[int] = None  # rendezvous port for SLURM/submitit; null: derived from the job id
    flight_recorder: FlightRecorder = field(default_factory=FlightRecorder)  # see bootstrap.distributed.flightrec


class PreflightMode(str, enum.Enum):
    error = "error"  # a slow or faulty rank stops every rank before training
    warn = "warn"  # the finding is logged and recorded; the job trains
    off = "off"  # no check


class Network(str, enum.Enum):  # the network NCCL must pick (its "Using network" line), read from its own log
    ib = "ib"  # InfiniBand (NCCL's IB transport, or a plugin's IBext)
    roce = "roce"  # RoCE: NCCL's IB transport over Ethernet (its devices' link layer is RoCE)
    efa = "efa"  # AWS EFA through the aws-ofi-nccl plugin (Libfabric)
    socket = "socket"  # TCP sockets
    fastrak = "fastrak"  # Google's GPUDirect-TCPXO plugin (A3 Mega): "Using network FasTrak"
    tcpx = "tcpx"  # Google's GPUDirect-TCPX plugin (A3 High): "Using network GPUDirectTCPX_v7"
    any = "any"  # record the network without expecting one


@dataclass
class Preflight:  # see bootstrap.preflight: every rank proves it computes right and fast before training
    mode: PreflightMode = PreflightMode.warn  # what a slow or faulty rank does
    min_tflops: Optional[float] = None  # floor for each rank's matmul TFLOP/s; null: none
    min_busbw_gbps: Optional[float] = None  # floor for the world's all_reduce bus bandwidth (GB/s); null: none
    min_node_busbw_gbps: Optional[float] = None  # floor for the bus bandwidth within each node (GB/s); null: none
    max_skew: float = 2.0  # a rank slower than this many times the other ranks' median is named
    seconds: float = 5.0  # the check's time budget (at most distributed.timeout_s)
    sizes_mb: List[float] = field(default_factory=lambda: [1.0])  # the all_reduce's message sizes, in MB
    network: Optional[Network] = None  # NCCL only: the network expected; null: NCCL's log is not read


class WatchMode(str, enum.Enum):
    error = "error"  # a finding stops every rank, as a preflight finding does
    warn = "warn"  # the finding is logged and recorded; the job trains on
    off = "off"  # nothing watched


@dataclass
class Watch:  # see bootstrap.watch: while the job trains, a slow rank, node or link is named (docs/watch.md)
    mode: WatchMode = WatchMode.warn  # what a finding does
    window_s: float = 60.0  # the seconds of one window: each rank's figures are compared once a window
    threshold: float = 0.75  # a score (0 to 1) under this is suspect: NVRx's default
    consecutive: int = 3  # windows in a row under the threshold before a finding
    links: bool = True  # the first rank of each node times its link to the next node once a window


class FabricName(str, enum.Enum):  # the cluster's fabric (conf/env/fabric/*.yaml, docs/fabrics.md)
    none = "none"  # nothing set, nothing checked beyond preflight.network (the default)
    socket = "socket"  # TCP sockets, on purpose
    ib = "ib"  # InfiniBand
    roce = "roce"  # RoCE
    aws_efa = "aws_efa"  # AWS EFA through aws-ofi-nccl
    gcp_tcpxo = "gcp_tcpxo"  # Google A3 Mega: GPUDirect-TCPXO (FasTrak)
    gcp_tcpx = "gcp_tcpx"  # Google A3 High: GPUDirect-TCPX


@dataclass
class Fabric:  # see docs/fabrics.md: set little, and prove from NCCL's log that the network is the one expected
    name: FabricName = FabricName.none  # the fabric's preset (env/fabric=NAME)
    vars: Dict[str, Any] = field(default_factory=dict)  # what the fabric still needs; the preset's vars win
    network: Optional[Network] = None  # the network NCCL must choose; null: preflight.network alone decides
    min_busbw_gbps: Optional[float] = None  # floor for the world's all_reduce when the job spans nodes (published)
    gdr: bool = False  # GPUDirect RDMA expected: "/GDRDMA" on NCCL's NET channel lines
    profile: Optional[str] = None  # gcp_tcpxo: the plugin's nccl-env-profile.sh, run once in a subshell
class OnBad(str, enum.Enum):
    stop = "stop"  # the job stops, naming the bad nodes (as the preflight does without env.nodes)
    requeue = "requeue"  # under sbatch: exclude them from the job and requeue it (SLURM places it elsewhere)


@dataclass
class Nodes:  # see bootstrap.core.nodes: the nodes a finding names, observed, kept out on evidence and retried
    exclude_file: Optional[str] = None  # the shared ledger: every observation is added, each job start reads it; null: none
    exclude_ttl_h: float = 24.0  # hours an observation counts as evidence after it was made
    min_observations: int = 2  # occasions (jobs, attempts) of soft evidence that exclude a node; hard evidence: one
    systemic_fraction: float = 0.5  # more than this fraction of a job's nodes named at once: systemic, none excluded
    max_per_job: int = 2  # nodes whose evidence one job may count; the rest is recorded and does not count
    ignore: List[str] = field(default_factory=list)  # nodes to run on even when the evidence excludes them
    on_bad: OnBad = OnBad.stop  # what a stopping finding that names a node does
    max_requeues: int = 2  # on_bad=requeue: requeues of one job (SLURM_RESTART_COUNT) before it stops
    drain: bool = False  # also run the printed `scontrol update NodeName=... State=DRAIN` (needs an administrator)


@dataclass
class Provenance:  # see bootstrap.provenance: the code and packages each job ran with (docs/report.md#provenance)
    enabled: bool = True  # git, packages, container and driver, collected in a thread after the start; false: host only
    seconds: float = 10.0  # the collection's budget (git: 3/4 of it); the job's end waits no longer (<= timeout_s)


@dataclass
class EnvConfig:
    auto: bool = False  # true only in env=auto: pick the real preset from the hardware at job start
    requires: Requires = field(default_factory=Requires)  # what the machine must provide
    on_mismatch: OnMismatch = OnMismatch.error  # what a failed requirement does
    threads: Threads = field(default_factory=Threads)  # CPU thread pools
    vars: Dict[str, Any] = field(default_factory=dict)  # environment variables; null drops a preset's entry
    lint: LintPolicy = LintPolicy.warn  # is each variable read by anything here? (bootstrap.variables.lint)
    torch: TorchSettings = field(default_factory=TorchSettings)  # numerics knobs applied through torch's API
    device: Device = Device.cpu  # where the task should put its model
    distributed: Distributed = field(default_factory=Distributed)
    # Seeds random, numpy (if installed) and torch; exported as PYTHONHASHSEED. null: the app seeds itself.
    seed: Optional[int] = 0
    seed_offset: SeedOffset = SeedOffset.rank  # how each rank's data seed differs (see bootstrap.distributed.seeding)
    preflight: Preflight = field(default_factory=Preflight)  # a short measurement on every rank before training
    watch: Watch = field(default_factory=Watch)  # while training: each rank's own work compared, once a window
    provenance: Provenance = field(default_factory=Provenance)  # the job's git state, packages, host, container
    fabric: Fabric = field(default_factory=Fabric)  # the cluster's network (env/fabric=NAME): docs/fabrics.md
    nodes: Nodes = field(default_factory=Nodes)  # bad nodes: recorded, kept out (a shared list), retried elsewhere


def is_timeout(value: Any) -> bool:
    """A value ``distributed.timeout_s`` takes: a whole number of seconds, positive, at most a year."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_TIMEOUT_S


def validate(preset: EnvConfig) -> EnvConfig:
    """Check what the type system could not; raise ConfigError naming ``env.field``."""
    # Here, not at module level: every Hydra app in the environment imports this module (the plugin scan).
    from bootstrap.core import section_checks
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    for name in ("intra_op", "inter_op"):
        value = getattr(preset.threads, name)
        if value != AUTO and not (isinstance(value, int) and not isinstance(value, bool) and value > 0):
            raise ConfigError(
                f"{PRESET_KEY}.threads.{name}={value!r} is not a thread count. "
                f"Use a positive integer ({PRESET_KEY}.threads.{name}=2) or {PRESET_KEY}.threads.{name}=auto."
            )
    if preset.seed is not None and not 0 <= preset.seed < 2**32:
        raise ConfigError(
            f"{PRESET_KEY}.seed={preset.seed} is out of range. Use an integer in [0, 2**32), e.g. {PRESET_KEY}.seed=0."
        )
    dist = preset.distributed
    if not is_timeout(dist.timeout_s):
        raise ConfigError(f"{PRESET_KEY}.distributed.timeout_s={dist.timeout_s} must be positive and at most "
                          f"{MAX_TIMEOUT_S} (a year), e.g. {PRESET_KEY}.distributed.timeout_s=600.")
    bad_dims = {name: size for name, size in dist.mesh.items()
                if isinstance(size, bool) or not isinstance(size, int) or (size != -1 and size < 1)}
    if bad_dims:
        raise ConfigError(f"{PRESET_KEY}.distributed.mesh: sizes must be positive or -1 (inferred), got {bad_dims}. "
                          f"E.g. {PRESET_KEY}.distributed.mesh={{dp: -1}}.")
    recorder = dist.flight_recorder
    if recorder.enabled and not 0 < recorder.buffer_size <= MAX_FR_BUFFER:
        raise ConfigError(f"{PRESET_KEY}.distributed.flight_recorder.buffer_size={recorder.buffer_size} must be a "
                          f"count of collectives in [1, {MAX_FR_BUFFER}], e.g. 2000; or set "
                          f"{PRESET_KEY}.distributed.flight_recorder.enabled=false.")
    seconds = preset.provenance.seconds
    if isinstance(seconds, bool) or not 0 < seconds <= dist.timeout_s:
        raise ConfigError(f"{PRESET_KEY}.provenance.seconds={seconds} must be positive and at most "
                          f"{PRESET_KEY}.distributed.timeout_s ({dist.timeout_s}), e.g. "
                          f"{PRESET_KEY}.provenance.seconds=10; or set {PRESET_KEY}.provenance.enabled=false.")
    if dist.master_port is not None and not 0 < dist.master_port < 65536:
        raise ConfigError(f"{PRESET_KEY}.distributed.master_port={dist.master_port} is not a TCP port (1-65535).")
    section_checks.preflight(preset.preflight, dist.timeout_s, preset.device.value)
    section_checks.nodes(preset.nodes)
    section_checks.watch(preset.watch)
    req = preset.requires
    for name in ("python", "torch", "cuda", "nccl"):
        spec = getattr(req, name)
        if spec is None:
            continue
        try:
            SpecifierSet(spec)
        except InvalidSpecifier:
            raise ConfigError(
                f"{PRESET_KEY}.requires.{name}={spec!r} is not a version specifier. "
                f"Use packaging's syntax, e.g. {PRESET_KEY}.requires.{name}='>=2.1', or null for no requirement."
            ) from None
    if req.compute_capability is not None:
        try:
            Version(req.compute_capability)
        except InvalidVersion:
            raise ConfigError(
                f"{PRESET_KEY}.requires.compute_capability={req.compute_capability!r} is not a version. "
                f"Give the minimum as major.minor, e.g. {PRESET_KEY}.requires.compute_capability='8.0'."
            ) from None
    if req.gpus is not None and req.gpus < 0:
        raise ConfigError(f"{PRESET_KEY}.requires.gpus={req.gpus} is negative. Use a minimum count such as 1, or null.")
    return preset


FREE_FORM = ("vars", "distributed.mesh")  # maps whose keys are the user's: variable names, mesh dimensions


@functools.lru_cache(maxsize=None)
def _fields(cls: type) -> Tuple[Dict[str, Any], List[str]]:
    """A schema dataclass's field types and names, in order (its annotations are text: evaluated once)."""
    return typing.get_type_hints(cls), [f.name for f in dataclasses.fields(cls)]


def unknown_key(tree: Any, cls: Optional[type] = None, path: str = "") -> Optional[Tuple[str, List[str]]]:
    """The first key of ``tree`` (a preset as plain data) that the schema does not know, as its dotted path, with
    the keys known where it sits; None when every key is known. The free-form maps (:data:`FREE_FORM`) hold any."""
    cls = cls or EnvConfig
    if not isinstance(tree, dict) or path in FREE_FORM:
        return None
    hints, known = _fields(cls)
    for key, value in tree.items():
        where = f"{path}.{key}" if path else str(key)
        if key not in hints:
            return where, known
        if dataclasses.is_dataclass(hints[key]):
            found = unknown_key(value, hints[key], where)
            if found:
                return found
    return None


def check_keys(tree: Any) -> None:
    """Refuse a key the schema does not know, naming it and the nearest known one. Hydra refuses such a key
    when it merges in struct mode, but its own hint (``+env.threds.intra_op=1``) adds it outside struct
    mode, and the job would then run with the typo ignored: so the final config is checked too."""
    found = unknown_key(tree)
    if found is not None:
        raise ConfigError(no_such_setting(*found, "so the job would ignore it (a key added with '+' is taken "
                                                   "whatever its name)"))


def no_such_setting(where: str, known: List[str], why: str) -> str:
    """The line for a key the preset does not have (``unknown_key``'s ``where`` and ``known``), naming the nearest."""
    import difflib

    parent, _, key = where.rpartition(".")
    under = f"{PRESET_KEY}.{parent}" if parent else PRESET_KEY
    nearest = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    hint = f" Did you mean {under}.{nearest[0]}?" if nearest else ""
    return (f"{PRESET_KEY}.{outbound.shown(where)}: the preset has no such setting, {why}.{hint} The settings under "
            f"{under} are: {', '.join(known)}.")


def with_fabric(preset: EnvConfig) -> EnvConfig:
    """``preset`` with its fabric's variables beneath its own, and the fabric's network where it expects none
    (docs/fabrics.md; the rest of the fabric's work is bootstrap.core.fabric's)."""
    fabric = preset.fabric
    if not fabric.vars and fabric.network is None:
        return preset
    preflight = preset.preflight
    if fabric.network is not None and preflight.network in (None, Network.any):
        preflight = dataclasses.replace(preflight, network=fabric.network)
    return dataclasses.replace(preset, vars={**fabric.vars, **preset.vars}, preflight=preflight)


def load(env_cfg: Any) -> EnvConfig:
    """Turn a DictConfig, a dict or an EnvConfig into a validated EnvConfig, its fabric's variables and network
    merged in (:func:`with_fabric`); ConfigError names ``env.<field>``."""
    if isinstance(env_cfg, EnvConfig):
        return with_fabric(validate(env_cfg))
    from omegaconf import DictConfig, OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    path = env_cfg._get_full_key(None) if isinstance(env_cfg, DictConfig) else ""
    try:
        check_keys(OmegaConf.to_container(env_cfg, resolve=False) if isinstance(env_cfg, DictConfig) else env_cfg)
        if not (isinstance(env_cfg, DictConfig) and OmegaConf.get_type(env_cfg) is EnvConfig):
            # Hydra already typed a preset that lists the schema; anything else is typed here.
            env_cfg = OmegaConf.merge(OmegaConf.structured(EnvConfig), env_cfg)
        preset = cast(EnvConfig, OmegaConf.to_object(env_cfg))  # a structured EnvConfig's object: an EnvConfig
    except OmegaConfBaseException as e:
        full_key = getattr(e, "full_key", None) or ""
        # A node cut from a whole job config (Hydra typed it in place) names its path there: drop it.
        rest = full_key[len(path):].lstrip(".") if path and full_key.startswith(path) else full_key
        where = f"{PRESET_KEY}.{rest}" if rest else PRESET_KEY
        raise ConfigError(f"{where}: {inbound.first_line(e)}") from None
    return with_fabric(validate(preset))


def digest(preset: EnvConfig) -> str:
    """sha256 of a validated preset, secret values masked: two ranks, or two runs, with the same digest ran the
    same preset. A secret is compared by the rank agreement, never hashed here:
    a long-lived report must not let anyone test a guess at it."""
    from bootstrap.doors.masking import masked

    content = dataclasses.asdict(preset)
    content["vars"] = {name: masked(name, value) for name, value in (content.get("vars") or {}).items()}
    text = json.dumps(content, sort_keys=True, default=lambda v: v.value if isinstance(v, enum.Enum) else str(v))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16]
