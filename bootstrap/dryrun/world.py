"""``bootstrap dryrun``'s work: every rank's start-up planned with the job's own function (``startup``), from the variables its launcher would give it, then checked across ranks; a sample of the per-rank plans kept in the report's own shapes.

Nothing here reads or writes this process's environment or starts a process: each rank's variables are a
mapping (:mod:`bootstrap.distributed.rankvars`), submitit's answer is made from them, and the target's figures
(CPUs, GPUs) are the ones asked. Memory stays bounded: a rank's plan is dropped once tallied
(:class:`bootstrap.dryrun.checks.Tally`), and only the sample (:func:`sample_ranks`) is kept whole.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Set, Tuple

from bootstrap.core import comparison, report, schema, startup, verdict
from bootstrap.dryrun.checks import Finding, Tally, mesh_findings, nodelist_findings
from bootstrap.core.plan import Plan
from bootstrap.core.versions import Found
from bootstrap.distributed import mesh as meshes
from bootstrap.distributed import rankvars
from bootstrap.distributed.launcher import LAUNCHERS, Launch
from bootstrap.doors import inbound
from bootstrap.doors.errors import PRESET_KEY, BootstrapError, ConfigError
from bootstrap.doors.lean import lean_dataclass
from bootstrap.doors.statuses import JobStatus

MAX_ENTRIES = 1024  # every rank's entry up to this world size; beyond it, the sample (sample_ranks)
MAX_REFUSED_KEPT = 64  # entries kept of refused ranks beyond the sample
RUN_DIR = "<run_dir>"  # the job's output directory, which the job's Hydra names: a placeholder in the plan
ENTRY_FIELDS = ("distributed", "threads", "vars", "seed")  # the report's own sections each entry holds


@lean_dataclass(frozen=True)
class Asked:
    """The world the dry run was asked to plan (the command's flags, read and checked)."""

    world: int
    nodes: int
    per_node: int
    launcher: str
    hosts: Tuple[str, ...]
    nodelist: Optional[str] = None  # as given
    nodelist_hosts: Optional[int] = None  # how many hosts it names
    cpus_per_node: Optional[int] = None
    gpus_per_node: Optional[int] = None


def sample_ranks(world: int, per_node: int) -> Set[int]:
    """Every rank up to :data:`MAX_ENTRIES`; beyond, the first node's ranks, the last node's, the first rank of
    the second node, and each node's first rank at an even stride: at most :data:`MAX_ENTRIES` in all."""
    if world <= MAX_ENTRIES:
        return set(range(world))
    head = set(range(min(per_node, 256))) | set(range(max(0, world - min(per_node, 256)), world))
    nodes = world // per_node
    budget = MAX_ENTRIES - len(head) - 1
    stride = max(1, -(-nodes // budget))  # at most budget nodes' first ranks
    return head | {min(per_node, world - 1)} | {node * per_node for node in range(0, nodes, stride)}


def debug_level(environ: Mapping[str, str]) -> str:
    """torch.distributed.get_debug_level() in a rank whose environment is ``environ`` (torch reads
    TORCH_DISTRIBUTED_DEBUG; the job re-reads it once its variables are set)."""
    value = environ.get("TORCH_DISTRIBUTED_DEBUG", "OFF").upper()
    return value if value in ("OFF", "INFO", "DETAIL") else "OFF"


@lean_dataclass
class Outcome:
    """What the dry run found: the summary's facts, the findings, the kept entries."""

    world: int
    nodes: int
    per_node: int
    launcher: str
    nodelist: str
    mesh: Dict[str, int]
    findings: List[Finding]
    entries: List[Dict[str, Any]]
    target_checks: List[str]
    scale: Dict[str, Any]
    sampled: bool
    rows: Dict[str, int]  # launcher row -> ranks it detected
    fingerprints: Dict[str, Dict[str, Any]]  # digest -> the ranks that have it and the fingerprint itself
    warnings: List[str] = dataclasses.field(default_factory=list)  # the job's warnings: an unreadable exclusion file


def _listed(preset: schema.EnvConfig, key: str, asked: Asked, layout: Any, base: Mapping[str, str],
            warnings: List[str]) -> Dict[int, Any]:
    """Each node of ``--nodelist`` that ``env.nodes.exclude_file`` lists, as the job's own start refuses a rank there
    (``verdict.listed``, the one source): node index -> the refusal. Only named nodes are asked: placeholders
    (no --nodelist) are checked on the target (:func:`target_checks`)."""
    if preset.nodes.exclude_file is None or asked.nodelist is None:
        return {}
    found = {}
    for node, host in enumerate(asked.hosts):
        refusal = verdict.listed(preset, key, warnings if node == 0 else [], host,
                                 {**base, **rankvars.rank_vars(layout, node * asked.per_node)}, here=False)
        if refusal is not None:
            found[node] = refusal
    return found


def plan_world(session_args: Mapping[str, Any], asked: Asked, shell: Mapping[str, str], found: Found,
               build_mesh: Any = None) -> Outcome:
    """Plan every rank of ``asked`` under the composed job's preset (``session_args``: ``jobconfig.session_args``).
    ``shell``: the environment the ranks inherit (this shell's, less any launcher's variables); ``found``: the
    versions the fingerprints carry; ``build_mesh(shape, world, ranks) -> {rank: coordinates}``: the real
    DeviceMesh for the sampled ranks (None: not built)."""
    env_cfg = session_args["env_cfg"]
    per_rank = _interpolated(env_cfg)  # ${oc.env:...}: each rank's Hydra resolves it from the rank's environment
    key, name = session_args.get("key", "env"), session_args.get("name") or "custom"
    layout = rankvars.Layout(asked.launcher, asked.nodes, asked.per_node, asked.hosts)
    base = {**rankvars.base_environ(shell), **rankvars.launcher_defaults(layout, shell)}
    resolving: Dict[str, Mapping[str, str]] = {"environ": {**base, **rankvars.rank_vars(layout, 0)}}
    with _rank_env_resolver(resolving) if per_rank else contextlib.nullcontext():
        preset = schema.load(env_cfg)  # rank 0's, and every rank's where nothing in it depends on the rank
    if preset.auto:
        raise ConfigError(f"{key}=auto picks its preset from the hardware it starts on, which a dry run does not have: "
                          f"name the target's preset ({key}=h100).")
    digest = schema.digest(preset)
    env_set = {k: str(v) for k, v in dict(session_args.get("env_set") or {}).items()}
    explicit = frozenset(session_args.get("explicit_vars") or ())
    cpus = asked.cpus_per_node or 1
    machine = startup.Machine(cpus=cpus, machine_cpus=cpus)
    maker = layout.maker
    own: Any = lambda launch: maker.worker_cpus  # noqa: E731 - the engine's CPUs for each worker, or None
    tally = Tally(asked.world, asked.nodes, asked.per_node, preset.seed,
                  preset.seed_offset is schema.SeedOffset.rank, asked.cpus_per_node, asked.gpus_per_node,
                  preset.device is schema.Device.cuda, threads_auto=preset.threads.intra_op == "auto")
    versions = {"python": found.python, "torch": found.torch, "cuda": found.cuda, "cudnn": found.cudnn,
                "nccl": found.nccl, "hip": found.hip, "bootstrap": found.bootstrap}
    sample, entries = sample_ranks(asked.world, asked.per_node), []
    job = report.JobInfo(name, list(session_args.get("job_overrides") or ()), None, None, digest)
    rank0_after: Optional[Dict[str, str]] = None
    refused_kept = 0
    rows: Dict[str, int] = {}
    store: Optional[str] = None
    from bootstrap.variables import exportkey

    export_key = exportkey.load_or_create()  # the user's key, as each rank's job loads it: read once here
    lint_stop = verdict.lint_refusal(preset)  # the same on every rank, unless each resolves its own preset
    warnings: List[str] = []
    listed = _listed(preset, key, asked, layout, base, warnings)  # node -> the job's refusal there
    with _rank_env_resolver(resolving) if per_rank else contextlib.nullcontext():
        for rank in range(asked.world):
            single_first = maker.rank0_is_the_users and rank == 0
            environ = {**(rank0_after if rank0_after is not None and rank > 0 else base),
                       **rankvars.rank_vars(layout, rank)}
            try:
                if per_rank:  # this rank's own preset: its Hydra resolves ${oc.env:...} from its environment
                    resolving["environ"] = environ
                    preset = schema.load(env_cfg)
                    digest = schema.digest(preset)
                    job = report.JobInfo(name, job.overrides, None, None, digest)
                launch = startup.detect_launch(preset, environ, key, rankvars.submitit_answer(environ, layout.hosts),
                                               group_exists=maker.group_exists)
                environ_now = {**environ, **env_set}
                plan = startup.plan_rank(preset, environ_now, machine, launch, env_set=env_set,
                                         explicit_vars=explicit, output_dir=RUN_DIR, own_cpus=own)
                stop = (verdict.lint_refusal(preset) if per_rank else lint_stop) or \
                    next(iter(verdict.late_refusals(plan, environ_now)), None) or \
                    listed.get(rank // asked.per_node)  # the job's own verdict at its start (before_apply's parts)
                if stop is not None:
                    raise stop.exception()
            except BootstrapError as error:
                message = str(error).replace(PRESET_KEY, key)
                tally.refuse(rank, message)
                if rank in sample or refused_kept < MAX_REFUSED_KEPT:  # bounded, whatever the world
                    refused_kept += rank not in sample
                    entries.append({"rank": rank, "refused": message})
                continue
            rows[launch.launcher.value] = rows.get(launch.launcher.value, 0) + 1
            after = startup.environ_after(plan, environ_now, export_key)
            if single_first:
                rank0_after = after
            prints = comparison.fingerprint(startup.agreement_facts(
                versions, name, digest, plan, plan.threads.intra_op, plan.threads.inter_op, debug_level(after)), after)
            tally.add(rank, launch, plan, prints, _compared(prints, plan, layout), single_first)
            if store is None and rank == min(1, asked.world - 1):
                store = _store(launch, plan, environ_now)
            if rank in sample:
                entries.append(_entry(job, plan, found, prints))
    findings = nodelist_findings(asked.nodelist_hosts, asked.nodes, asked.nodelist)
    findings += tally.findings()
    shape = tally.mesh or {}
    findings += mesh_findings(shape, asked.per_node, asked.nodes)
    if build_mesh is not None and shape and not tally.refused:
        findings += _real_mesh(build_mesh, shape, asked, entries)
    findings = [Finding(f.kind, f.ranks, f.what.replace(PRESET_KEY, key), f.fix.replace(PRESET_KEY, key))
                for f in findings]  # the preset's place in this app's config
    return Outcome(world=asked.world, nodes=asked.nodes, per_node=asked.per_node, launcher=asked.launcher,
                   nodelist=layout.nodelist, mesh=shape, findings=findings, entries=entries, warnings=warnings,
                   target_checks=target_checks(preset, key), scale=scale(preset, asked, store),
                   sampled=asked.world > MAX_ENTRIES, rows=rows,
                   fingerprints={digest: {"ranks": spans.text(asked.world), "fingerprint": prints}
                                 for digest, (prints, spans) in tally.full_prints.items()})


def _interpolated(env_cfg: Any) -> bool:
    """Does the preset hold an interpolation (``${oc.env:SLURM_LOCALID}``), which each rank resolves itself?"""
    from omegaconf import DictConfig, OmegaConf

    if not isinstance(env_cfg, DictConfig):
        return False
    return "${" in json.dumps(OmegaConf.to_container(env_cfg, resolve=False), default=str)


_UNSET = object()


@contextlib.contextmanager
def _rank_env_resolver(resolving: Dict[str, Mapping[str, str]]) -> Iterator[None]:
    """``oc.env`` reads the rank's environment (``resolving["environ"]``) instead of this process's, as the rank's
    own Hydra would; OmegaConf's own resolver is put back after."""
    from omegaconf import OmegaConf
    from omegaconf.resolvers import oc

    def env(key: str, default: Any = _UNSET) -> Optional[str]:  # omegaconf.resolvers.oc.env, on the rank's mapping
        value = resolving["environ"].get(key)
        if value is not None:
            return value
        if default is _UNSET:
            raise KeyError(f"Environment variable '{key}' not found")
        return str(default) if default is not None else None

    OmegaConf.register_new_resolver("oc.env", env, replace=True)
    try:
        yield
    finally:
        OmegaConf.register_new_resolver("oc.env", oc.env, replace=True)


def _compared(prints: Dict[str, str], plan: Plan, layout: rankvars.Layout) -> Dict[str, str]:
    """The part of a fingerprint the ranks compare: all of it, except where a framework starts the ranks from rank
    0's process (Lightning), which compares without the threads and the variables its plan decided
    (``agreement.compare_with_report``)."""
    if not layout.maker.rank0_is_the_users:
        return prints
    planned = {f"var.{decision.name}" for decision in plan.vars if decision.source != "process"}
    return {k: v for k, v in prints.items() if k not in planned and not k.startswith("threads.")}


def _entry(job: report.JobInfo, plan: Plan, found: Found, prints: Dict[str, str]) -> Dict[str, Any]:
    """One rank's prediction in the report's own field names and shapes (``report.build``, as a preview)."""
    device = plan.device(cuda_visible=plan.device_type == "cuda")
    built = report.build(job, plan, device, found, [], None, [], 0.0, JobStatus.PREVIEW).to_json()
    entry = {field: built[field] for field in ENTRY_FIELDS}
    entry["distributed"] = {k: v for k, v in entry["distributed"].items()
                            if k in ("launcher", "rank", "local_rank", "world_size", "local_world_size", "node_rank",
                                     "master_addr", "master_port", "job_id")}
    entry["distributed"]["mesh"] = dict(plan.mesh) or None
    entry["distributed"]["agreement"] = {"digest": comparison.digest(prints)}  # the fingerprint: in the summary
    entry["mesh_coordinates"] = {dim: meshes.coordinate(plan.launch.rank, plan.mesh, dim) for dim in plan.mesh}
    entry["device"] = device
    return entry


def _real_mesh(build_mesh: Any, shape: Dict[str, int], asked: Asked, entries: List[Dict[str, Any]]) -> List[Finding]:
    """torch's own DeviceMesh at this size, for rank 0, the last rank and the first of the second node: what
    torch would raise, and its coordinates against the plan's."""
    ranks = sorted({0, asked.world - 1, min(asked.per_node, asked.world - 1)})
    try:
        real = build_mesh(shape, asked.world, ranks)
    except Exception as error:  # noqa: BLE001 - torch's own refusal is the finding
        first = inbound.first_line(error) if str(error) else type(error).__name__
        return [Finding("mesh", f"ranks {', '.join(map(str, ranks))}", f"torch's DeviceMesh {shape} over "
                        f"{asked.world} ranks raises: {type(error).__name__}: {first[:300]}",
                        f"change {PRESET_KEY}.distributed.mesh.")]
    out = []
    for rank in ranks:
        planned = {dim: meshes.coordinate(rank, shape, dim) for dim in shape}
        if real[rank] != planned:
            wrong = [dim for dim in shape if real[rank].get(dim) != planned[dim]]
            out.append(Finding("mesh", f"rank {rank}", f"torch places it at {real[rank]}, the plan at {planned} "
                               f"(dimension {', '.join(wrong)}).", "report it: seeds follow the plan's coordinates."))
    for entry in entries:
        if entry.get("distributed", {}).get("rank") in real:
            entry["mesh_coordinates_torch"] = real[entry["distributed"]["rank"]]
    return out


def _store(launch: Launch, plan: Plan, environ: Mapping[str, str]) -> str:
    if launch.world_size <= 1:
        return "none (one process)"
    if launch.row.agent_store(environ):
        return f"{launch.launcher.value}'s agent store"
    if launch.row.framework_makes_group and not launch.row.group_before_job:
        return "none: rank 0's report in the run directory"
    if launch.row.group_before_job:
        return f"the process group's store ({launch.launcher.value} made it)"
    return f"rank 0's TCPStore at MASTER_ADDR:MASTER_PORT ({launch.master_addr}:{launch.master_port})"


def target_checks(preset: schema.EnvConfig, key: str) -> List[str]:
    """What only the target's hardware can show: checked when the job starts there, not failed here."""
    req = preset.requires
    wanted = [f"{name} {getattr(req, name)}" for name in ("python", "torch", "cuda", "nccl")
              if getattr(req, name) is not None]
    if req.compute_capability is not None:
        wanted.append(f"compute capability >= {req.compute_capability}")
    if req.gpus is not None:
        wanted.append(f"at least {req.gpus} GPUs visible")
    if preset.device is schema.Device.cuda:
        wanted.append("CUDA present (device=cuda)")
    if preset.preflight.network is not None:
        wanted.append(f"NCCL's network is {preset.preflight.network.value} ({key}.preflight.network)")
    floors = [(f, getattr(preset.preflight, f)) for f in ("min_tflops", "min_busbw_gbps", "min_node_busbw_gbps")]
    wanted += [f"preflight {f} >= {v:g}" for f, v in floors if v is not None]
    if preset.nodes.exclude_file is not None:
        wanted.append(f"each node's host not listed in {key}.nodes.exclude_file (named here with --nodelist)")
    return wanted


# A flight-recorder entry as torch 2.13 pickles it (``_dump_fr_trace`` with stack traces, gloo, all_reduce from a
# shallow Python stack): measured 127 bytes an entry at 100, 1,000 and 2,000 entries. Deeper stacks add their frames.
FR_ENTRY_BYTES = 127


def scale(preset: schema.EnvConfig, asked: Asked, store: Optional[str]) -> Dict[str, Any]:
    """What this N costs the job's start, and which figures grow with N (the preflight's steps as
    ``bootstrap.preflight.check`` takes them: a header gathered from every rank, then every rank's record)."""
    from bootstrap.preflight.figures import HEADER_BYTES, LAYOUT
    from bootstrap.watch.exchange import per_window

    world, nodes = asked.world, asked.nodes
    recorder = preset.distributed.flight_recorder
    dump = recorder.buffer_size * FR_ENTRY_BYTES if recorder.enabled else 0
    node_groups = nodes if asked.per_node > 1 and nodes > 1 else 0
    # the world's group, the headers' gather, an all_reduce per size, each node's group and all_reduce, the records'
    collectives = 2 + len(preset.preflight.sizes_mb) + node_groups + (1 if node_groups else 0) + 1
    phases = predicted_phases(store, world, collectives if preflight_runs(preset, world) else 0)
    ops = sum(phase.get("store_ops_per_rank", 0) for phase in phases)
    return {
        "store": store or "none",
        "store_ops_per_rank": ops,
        "store_ops_total": ops * world + sum(phase["store_ops_rank0"] - phase["store_ops_per_rank"]
                                             for phase in phases if "store_ops_rank0" in phase),  # rank 0's reads
        "phases": phases,
        "store_ops_more_when_ranks_differ": "2 on each differing rank; each rank reads at most 16 records",
        "preflight_gather_bytes_per_rank": (HEADER_BYTES + LAYOUT.size) * world,
        "preflight_collectives": collectives,
        "preflight_collectives_note": "besides the per-link measurement between nodes (docs/preflight.md)",
        "preflight_budget_s": preset.preflight.seconds,
        "flight_recorder_dump_bytes_per_rank": dump,
        "flight_recorder_dump_bytes_total": dump * world,
        **({f"watch_{name}": value for name, value in per_window(world, nodes, preset.watch.links).items()}
           if preset.watch.mode.value != "off" else {}),
        "watch_window_s": preset.watch.window_s,
        "grows_with_n": ["store_ops_total", "preflight_gather_bytes_per_rank", "flight_recorder_dump_bytes_total",
                         "watch_store_ops", "watch_rank0_reads_bytes",
                         *(["preflight_collectives (one group per node)"] if node_groups else [])],
    }


def preflight_runs(preset: schema.EnvConfig, world: int) -> bool:
    """Does the preflight check measure at this world size (``bootstrap.preflight.request.skipped_because``)?"""
    return preset.preflight.mode.value != "off" and world > 1


def predicted_phases(store: Optional[str], world: int, collectives: int) -> List[Dict[str, Any]]:
    """The start's phases whose cost depends on N, as a real run's report counts them (``timings.phases[]``'s
    ``store_ops``): the run directory through torchrun's agent store (in the callback's phase), the agreement
    (:mod:`bootstrap.distributed.agree_store`: 5 operations a rank), the preflight's collectives, and the phases'
    own exchange at the first step (:func:`bootstrap.distributed.phase_exchange.operations`: 1 a rank, and rank
    0 reads every record)."""
    from bootstrap.distributed import phase_exchange

    out: List[Dict[str, Any]] = []
    if store and "agent" in store:
        out.append({"name": "callback", "store_ops_per_rank": 1})
    if store and not store.startswith("none"):  # rank 0's report (Lightning) or one process: no store's comparison
        out.append({"name": "agreement", "store_ops_per_rank": 5})
    if collectives:
        out.append({"name": "preflight", "collectives": collectives})
    if world > 1:  # through the store of the group in use at the first step, whoever made it
        out.append({"name": "first_step", "store_ops_per_rank": phase_exchange.operations(1, world),
                    "store_ops_rank0": phase_exchange.operations(0, world)})
    return out


def entries_by_rank(entries: Iterable[Dict[str, Any]]) -> Dict[int, Dict[str, Any]]:
    return {entry["distributed"]["rank"]: entry for entry in entries if "distributed" in entry}


# What a real run decides for itself and a dry run cannot know: the rendezvous's address, port and id.
CHOSEN_AT_RUN_TIME = ("master_addr", "master_port", "job_id")
COMPARED_VAR_FIELDS = ("value", "source", "effective", "withheld")


def compare(predicted: Mapping[str, Any], real: Mapping[str, Any], run_dir: str,
            fingerprints: Mapping[str, Mapping[str, Any]]) -> List[str]:
    """Where a dry run's entry for a rank differs from that rank's real report (``bootstrap.json``), field by field:
    launcher row, ranks, node, mesh, threads, variables, seeds and the fingerprint, key by key (``fingerprints``:
    the dry run's summary's, by digest). ``run_dir``: the real job's directory, which the dry run writes as
    :data:`RUN_DIR`. Left out: what the real run chose (:data:`CHOSEN_AT_RUN_TIME`) and the variables the app's own
    imports set in its process (source ``process``: ``import lightning`` sets one), which a dry run that imports
    no app cannot see. Empty: the prediction holds."""
    def text(value: Any) -> Any:
        return value.replace(RUN_DIR, run_dir) if isinstance(value, str) else value

    out: List[str] = []
    ours, theirs = predicted["distributed"], real["distributed"]
    # rank 0 of a world its framework made from rank 0's own process after the start (Lightning): planned as one
    # process, as it starts; its report says the world it became (bootstrap.core.joined), which no plan predicts
    joined = ours.get("launcher") == "single" and theirs.get("rank") == 0 and (theirs.get("world_size") or 1) > 1 \
        and theirs.get("launcher") in {row.name for row in LAUNCHERS if row.started_by_rank0}
    for name in ("launcher", "rank", "local_rank", "world_size", "local_world_size", "node_rank"):
        if ours.get(name) != theirs.get(name) and not joined:
            out.append(f"distributed.{name}: predicted {ours.get(name)!r}, ran {theirs.get(name)!r}")
    if theirs.get("mesh") is not None and ours.get("mesh") != theirs["mesh"]:
        out.append(f"distributed.mesh: predicted {ours.get('mesh')}, ran {theirs['mesh']}")
    for name in ("intra_op", "inter_op", "requested"):
        if predicted["threads"].get(name) != real["threads"].get(name):
            out.append(f"threads.{name}: predicted {predicted['threads'].get(name)}, ran {real['threads'].get(name)}")
    for name in ("value", "global_seed", "data_seed"):
        if predicted["seed"].get(name) != real["seed"].get(name):
            out.append(f"seed.{name}: predicted {predicted['seed'].get(name)}, ran {real['seed'].get(name)}")
    apps = {name for name, var in real["vars"].items() if var.get("source") == "process"}
    for name in sorted((predicted["vars"].keys() | real["vars"].keys()) - apps):
        mine, run = predicted["vars"].get(name), real["vars"].get(name)
        if mine is None or run is None:
            out.append(f"vars.{name}: {'not predicted' if mine is None else 'predicted, not in the report'}")
            continue
        for field in COMPARED_VAR_FIELDS:
            if text(mine.get(field)) != run.get(field):
                out.append(f"vars.{name}.{field}: predicted {text(mine.get(field))!r}, ran {run.get(field)!r}")
    real_prints = (theirs.get("agreement") or {}).get("fingerprint") or {}
    kept = fingerprints.get(ours.get("agreement", {}).get("digest", ""), {}).get("fingerprint")
    if kept is None:
        out.append("fingerprint: not predicted")
    elif real_prints:
        expected = {key: text(value) for key, value in kept.items()}
        for key in sorted((expected.keys() | real_prints.keys()) - {f"var.{name}" for name in apps}):
            if expected.get(key) != real_prints.get(key):
                out.append(f"fingerprint {key}: predicted {expected.get(key)!r}, ran {real_prints.get(key)!r}")
    return out
