"""The plan is pure: every decision the bootstrap makes, from plain inputs, without touching the process."""
from dataclasses import replace

import pytest

from bootstrap.core.plan import ThreadPlan, check_thread_count, make_plan, resolve_threads
from bootstrap.core.schema import load
from bootstrap.distributed.launcher import Launch, Launcher
from bootstrap.doors.errors import ConfigError
from bootstrap.variables.readers import ProcessState

FRESH = ProcessState(cuda_initialized=False, process_group_initialized=False)
SINGLE = Launch(Launcher.single)
TWO_RANKS = Launch(Launcher.torchrun, rank=1, local_rank=1, world_size=2, local_world_size=2, master_port=29500)


def plan(preset=None, *, environ=None, env_set=None, explicit=(), cpus=8, machine_cpus=None, launch=SINGLE,
         launcher_cpus=None, cpus_are_own=False):
    return make_plan(load(preset or {}), environ_now=environ or {}, env_set=env_set or {},
                     explicit_vars=explicit, state=FRESH, cpus=cpus, machine_cpus=machine_cpus or cpus, launch=launch,
                     launcher_cpus=launcher_cpus, cpus_are_own=cpus_are_own)


# -- resolve_threads / check_thread_count ------------------------------------------------------
@pytest.mark.parametrize("value, cpus, ranks, omp, expected", [
    (3, 8, 1, None, 3),  # an explicit count wins
    (3, 8, 4, "6", 3),  # ...over the user's OMP_NUM_THREADS and the ranks on the node
    ("auto", 8, 1, None, 8),  # auto: the usable CPUs
    ("auto", 8, 3, None, 2),  # ...divided among the ranks on this node, rounded down
    ("auto", 2, 4, None, 1),  # ...never below one
    ("auto", 8, 2, "6", 6),  # the user's OMP_NUM_THREADS beats the division
    ("auto", 8, 2, "0", 4),  # a value that is no count is ignored
    ("auto", 8, 2, "two", 4),
])
def test_resolve_threads(value, cpus, ranks, omp, expected):
    assert resolve_threads(value, cpus, ranks, omp) == expected


def test_a_thread_count_far_beyond_the_machine_is_refused_naming_key_and_cpus():
    assert check_thread_count(16, "env.threads.intra_op", machine_cpus=2) == 16
    with pytest.raises(ConfigError, match=r"env.threads.intra_op=17 is far beyond this machine's 2 CPUs"):
        check_thread_count(17, "env.threads.intra_op", machine_cpus=2)


# -- make_plan -----------------------------------------------------------------------------------
def test_one_process_on_auto_exports_no_thread_variables():
    # Lightning and torchrun set OMP_NUM_THREADS where it is unset: exporting ours would hide that.
    p = plan(cpus=4)
    assert (p.threads, p.distributed, p.create_group, dict(p.mesh)) == (ThreadPlan(4, 4, False), False, False, {})
    assert {d.name for d in p.vars} == {"PYTHONHASHSEED"}


def test_ranks_on_a_node_share_its_cpus_and_tell_their_children():
    p = plan(cpus=8, launch=TWO_RANKS)
    assert p.threads == ThreadPlan(4, 4, True)
    assert {d.name: d.value for d in p.vars if d.name.endswith("_NUM_THREADS")} == \
        {"OMP_NUM_THREADS": "4", "MKL_NUM_THREADS": "4"}
    assert (p.create_group, p.distributed, dict(p.mesh)) == (True, True, {"dp": 2})


def test_an_omp_count_a_parent_bootstrap_exported_does_not_decide_the_threads():
    inherited = {"OMP_NUM_THREADS": "8", "HYDRA_TRAIN_BOOTSTRAP_EXPORTED": "OMP_NUM_THREADS"}
    assert plan(cpus=8, launch=TWO_RANKS, environ=inherited).threads.intra_op == 4
    assert plan(cpus=8, launch=TWO_RANKS, environ={"OMP_NUM_THREADS": "8"}).threads.intra_op == 8  # the user's


def test_a_framework_that_starts_its_ranks_makes_the_group():
    lightning = Launch(Launcher.lightning, rank=1, local_rank=1, world_size=2, local_world_size=2)
    p = plan({"distributed": {"init": "always"}}, launch=lightning)
    assert (p.create_group, p.distributed) == (False, True)
    with pytest.raises(ConfigError, match="makes the process group itself"):
        replace(p, create_group=True)


def test_a_plan_checks_its_mesh_against_the_world_when_built():
    p = plan(launch=TWO_RANKS)
    with pytest.raises(ConfigError, match=r"does not fill WORLD_SIZE\(2\)"):
        replace(p, mesh={"dp": 3})


@pytest.mark.parametrize("launch, device_type, cuda_visible, expected", [
    (SINGLE, "cpu", True, "cpu"),
    (SINGLE, "cuda", True, "cuda"),
    (TWO_RANKS, "cuda", True, "cuda:1"),  # each rank its local GPU
    (TWO_RANKS, "cuda", False, "cpu"),  # asked for, absent (on_mismatch=warn): the CPU
])
def test_the_device_each_rank_gets(launch, device_type, cuda_visible, expected):
    p = plan({"device": device_type, "distributed": {"backend": "nccl"}}, launch=launch)
    assert p.device(cuda_visible) == expected
    assert p.backend_for(expected) == ("nccl" if expected.startswith("cuda") else "gloo")


def test_seeds_follow_the_pipeline_stage_and_the_rank():
    four = Launch(Launcher.torchrun, rank=3, local_rank=3, world_size=4, local_world_size=4, master_port=29500)
    p = plan({"seed": 7, "distributed": {"mesh": {"pp": 2, "dp": -1}}}, launch=four)
    assert (p.seed, p.global_seed, p.data_seed) == (7, 107, 10)  # pp coordinate 1; data: seed + rank
    p = plan({"seed": None}, launch=four)
    assert (p.seed, p.global_seed, p.data_seed) == (None, None, None)
    assert "PYTHONHASHSEED" not in {d.name for d in p.vars}


def test_determinism_adds_the_cublas_workspace_and_a_preset_value_wins_over_a_derived_one():
    p = plan({"torch": {"deterministic": True}, "vars": {"PYTHONHASHSEED": 5}})
    values = {d.name: d.value for d in p.vars}
    assert values["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8" and values["PYTHONHASHSEED"] == "5"


def test_the_plan_gives_each_torch_setting_its_value_once_and_benchmark_is_off_in_deterministic_mode():
    chosen = {"matmul_precision": "high", "cudnn_benchmark": True, "detect_anomaly": True}
    p = plan({"torch": chosen})
    assert {name: p.torch[name] for name in chosen} == chosen and type(p.torch["matmul_precision"]) is str
    assert plan({"torch": {**chosen, "deterministic": True}}).torch["cudnn_benchmark"] is False


def test_cpus_are_shared_by_the_ranks_on_a_node_unless_each_rank_has_its_own():
    def ranks(launcher, n=2):
        return Launch(launcher, rank=1, local_rank=1, world_size=n, local_world_size=n, master_addr="127.0.0.1",
                      master_port=29500)

    def intra(launcher, cpus, launcher_cpus, n=2, **kw):
        return plan(cpus=cpus, machine_cpus=64, launch=ranks(launcher, n), launcher_cpus=launcher_cpus,
                    **kw).threads.intra_op

    assert intra(Launcher.torchrun, 8, 8) == 4  # torchrun under taskset: both ranks see the agent's 8
    assert intra(Launcher.mpi, 8, 16) == 8  # mpirun bound this rank to 8 of its 16: they are its own
    assert intra(Launcher.mpi, 16, 16) == 8  # --bind-to none: shared
    assert intra(Launcher.mpi, 16, 16, n=4) == 4  # ... by 4 ranks
    assert intra(Launcher.mpi, 16, 32, n=4) == 8  # 4 ranks bound to 2 sockets of 16: 2 ranks per socket
    assert intra(Launcher.slurm, 4, 16, n=4) == 4  # srun --cpu-bind=cores: 4 cores each
    assert intra(Launcher.mpi, 1, 2, n=3) == 1  # more ranks than CPUs: never 0
    assert intra(Launcher.torchrun, 8, 4) == 4  # a rank that widened its own affinity: still shared by 2
    assert plan(cpus=8, launch=ranks(Launcher.torchrun)).threads.intra_op == 4  # the launcher unknown: shared
    assert intra(Launcher.ray, 3, 64, cpus_are_own=True) == 3  # what Ray assigned this worker
    assert intra(Launcher.ray, 64, 64) == 32  # Ray said nothing: the node's CPUs are shared
