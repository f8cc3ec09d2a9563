"""This rank's start-up from a mapping of its variables: the launch detected and the plan made, the one function the job (with ``os.environ``) and ``bootstrap dryrun`` (with each rank's variables) share. Pure.

The job calls :func:`plan_rank` with ``os.environ`` and what this machine says (its CPUs, what torch has
read, what submitit reports); the dry run calls it with the variables a launcher would give each rank and
the target's figures (``--cpus-per-node``). Nothing here reads ``os.environ`` or asks a framework: the
caller hands in what it asked (:class:`Machine`, ``asked_job``), so that a dry run of 16,384 ranks touches
neither this process's environment nor a subprocess. What a rank's environment holds once its plan is
applied (:func:`environ_after`) and the facts its fingerprint is made of (:func:`agreement_facts`) are
shared the same way.
"""

from __future__ import annotations

from typing import Any, Callable, Collection, Dict, Mapping, MutableMapping, Optional

from bootstrap.core.comparison import Facts
from bootstrap.core.plan import Plan, make_plan
from bootstrap.core.schema import EnvConfig
from bootstrap.distributed import launcher
from bootstrap.distributed.frameworks import SubmititJob
from bootstrap.doors.errors import ConfigError
from bootstrap.doors.lean import lean_dataclass
from bootstrap.variables import environ as variables
from bootstrap.variables.readers import ProcessState

FRESH = ProcessState(cuda_initialized=False, process_group_initialized=False)  # a process at its job's start
ASK = object()  # asked_job's default: ask the running frameworks (the job); a dry run hands in each rank's answer


@lean_dataclass(frozen=True)
class Machine:
    """What the rank's machine gives its start-up: the job reads it here, a dry run takes the target's."""

    cpus: int  # the CPUs this process may run on
    machine_cpus: int  # the node's CPUs
    launcher_cpus: Optional[int] = None  # the CPUs of the process that started it (None: the same)
    state: ProcessState = FRESH  # what torch has read already (readers.current_state)


def detect_launch(preset: EnvConfig, environ: Mapping[str, str], key: str = "env", asked_job: Any = ASK,
                  group_exists: Optional[bool] = None) -> launcher.Launch:
    """How the process whose variables are ``environ`` was started (the launcher rows); a refusal names
    ``<key>.distributed``. ``asked_job``: what submitit reports for it (:data:`ASK`: ask submitit here)."""
    dist = preset.distributed
    try:
        if asked_job is ASK:
            return launcher.detect_running(environ, dist.master_addr, dist.master_port, group_exists=group_exists)
        job: Optional[SubmititJob] = asked_job
        return launcher.detect(environ, job, dist.master_addr, dist.master_port, group_exists)
    except ConfigError as error:
        raise ConfigError(f"{key}.distributed: {error}") from None


def plan_rank(preset: EnvConfig, environ_now: Mapping[str, str], machine: Machine, launch: launcher.Launch, *,
              env_set: Mapping[str, Any] = {}, explicit_vars: Collection[str] = (),  # noqa: B006 - read only
              output_dir: Optional[str] = None, fabric_vars: Mapping[str, str] = {},  # noqa: B006 - read only
              own_cpus: Callable[[launcher.Launch], Optional[int]] = lambda launch: launch.row.own_cpus(),
              by_process: Callable[[launcher.Launch], Mapping[str, str]] = lambda launch: {}) -> Plan:
    """The plan of the rank that ``launch`` describes (see :func:`detect_launch`), whose environment is
    ``environ_now``. ``own_cpus``: the CPUs its engine gave it alone (Ray's; None: shared);
    ``by_process``: the variables its process set for itself (``process_vars.set_by_process``);
    ``fabric_vars``: what the fabric's profile script exported (``core.fabric.prepare``)."""
    own = own_cpus(launch)
    return make_plan(preset, environ_now=environ_now, env_set=env_set, by_process=by_process(launch),
                     explicit_vars=explicit_vars, state=machine.state, cpus=own or machine.cpus,
                     machine_cpus=machine.machine_cpus, launcher_cpus=machine.launcher_cpus,
                     cpus_are_own=own is not None, launch=launch, output_dir=output_dir,
                     fabric_vars=fabric_vars)


def environ_after(plan: Plan, environ_now: Mapping[str, str], key: Any = None) -> Dict[str, str]:
    """The rank's environment once its plan is applied and the rendezvous exported, as the job does it to
    ``os.environ`` before the ranks compare fingerprints: here, on a copy. ``key``: the export marker's
    key (None: this user's, as the job's)."""
    from bootstrap.distributed.group import export_rendezvous

    after: MutableMapping[str, str] = dict(environ_now)
    if key is None:
        variables.apply_vars(plan.vars, after)
    else:
        variables.apply_vars(plan.vars, after, key)
    if plan.distributed:
        export_rendezvous(plan.launch, after)
    return dict(after)


def agreement_facts(versions: Mapping[str, Optional[str]], preset_name: str, preset_digest: str, plan: Plan,
                    intra_op: int, inter_op: int, debug_level: Optional[str]) -> Facts:
    """What the rank's fingerprint is made of (``comparison.fingerprint``), once its plan is applied."""
    return Facts(versions=dict(versions), preset=preset_name, preset_digest=preset_digest,
                 device_type=plan.device_type, intra_op=intra_op, inter_op=inter_op, torch=plan.torch,
                 debug_level=debug_level)
