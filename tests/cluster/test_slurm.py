"""A real SLURM 22.05 places the real train_stub.py on the cluster's nodes: srun, sbatch, an array job, and
Hydra's submitit_slurm launcher. Each rank's report says it came from SLURM, with SLURM's own ranks, world
size and job id, on its node's host."""

import json
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import STUB, clean_env

TRAIN = ("train.steps=20", "train.hidden=64", "train.log_every=10")


def reports(run_dir: Path, world: int) -> list:
    """Every rank's ``bootstrap.rank<N>.json`` (rank 0's too, in a world of several), in rank order."""
    names = [f"bootstrap.rank{r}.json" for r in range(world)]
    missing = [name for name in names if not (run_dir / name).exists()]
    assert not missing, f"{missing} not in {run_dir}: {sorted(p.name for p in run_dir.glob('*'))}"
    return [json.loads((run_dir / name).read_text()) for name in names]


def host_of(report: dict) -> str:
    return report["provenance"]["host"]


def check_one_rank_per_node(found: list, job_id: str) -> None:
    assert [r["distributed"]["launcher"] for r in found] == ["slurm"] * 3
    assert [r["distributed"]["rank"] for r in found] == [0, 1, 2]
    assert {r["distributed"]["world_size"] for r in found} == {3}
    assert [r["distributed"]["node_rank"] for r in found] == [0, 1, 2]
    assert {r["distributed"]["local_world_size"] for r in found} == {1}
    assert [host_of(r) for r in found] == ["node1", "node2", "node3"]
    assert {r["distributed"]["job_id"] for r in found} == {job_id}
    assert {r["distributed"]["master_addr"] for r in found} == {"node1"}
    assert {r["job"]["status"] for r in found} == {"completed"}


def test_srun_places_one_rank_per_node_each_with_its_host(slurm, tmp_path):
    run_dir = tmp_path / "run"
    ran = slurm.command(["srun", "-N3", "--ntasks-per-node=1", sys.executable, str(STUB),
                         f"hydra.run.dir={run_dir}", *TRAIN], env=clean_env(), cwd=tmp_path, timeout=240)
    found = reports(run_dir, 3)
    job = found[0]["distributed"]["job_id"]
    assert job.endswith(".0"), job  # the allocation's first step
    check_one_rank_per_node(found, job)
    assert ran.stdout.count("Error") == 0, ran.stdout + ran.stderr
    # the start, phase by phase (issue 49): each rank's own from its node's slurmstepd, and rank 0's gathered at the
    # first step, each phase's slowest rank named with its node
    for report in found:
        names = [phase["name"] for phase in report["timings"]["phases"]]
        assert names[0] == "launcher" and names[-3:] == ["task", "first_batch", "first_step"], names
    gathered = found[0]["timings"]["world_phases"]
    assert gathered and all(phase["ranks"] == 3 for phase in gathered)
    assert all(phase["slowest_host"] == host_of(found[phase["slowest_rank"]]) for phase in gathered), gathered


@pytest.mark.slow  # about 60 s on 2 busy cores: the scheduler's polls, then the job
def test_sbatch_script_that_runs_srun(slurm, tmp_path):
    run_dir = tmp_path / "run"
    script = tmp_path / "job.sh"
    script.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        #SBATCH --nodes=3 --ntasks-per-node=1 --output={tmp_path}/slurm-%j.out
        srun {sys.executable} {STUB} hydra.run.dir={run_dir} {' '.join(TRAIN)}
        """))
    job = slurm.sbatch([str(script)], env=clean_env(), cwd=tmp_path)
    slurm.wait_jobs([job], timeout=240)
    assert slurm.job_states(job) in ([], ["COMPLETED"]), slurm.job_states(job)
    check_one_rank_per_node(reports(run_dir, 3), f"{job}.0")


def test_an_array_job_runs_each_task_as_a_job_of_its_own(slurm, tmp_path):
    script = tmp_path / "array.sh"
    script.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        #SBATCH --array=0-2 --ntasks=1 --output={tmp_path}/slurm-%A_%a.out
        exec {sys.executable} {STUB} hydra.run.dir={tmp_path}/task$SLURM_ARRAY_TASK_ID {' '.join(TRAIN)}
        """))
    job = slurm.sbatch([str(script)], env=clean_env(), cwd=tmp_path)
    slurm.wait_jobs([job], timeout=240)
    found = [json.loads((tmp_path / f"task{t}" / "bootstrap.json").read_text()) for t in range(3)]
    # a batch script is one process (no srun step): the single-process row, with the array task's job id
    assert [r["distributed"]["job_id"] for r in found] == [f"{job}_{t}" for t in range(3)]
    assert {r["distributed"]["world_size"] for r in found} == {1}
    assert {r["job"]["status"] for r in found} == {"completed"}
    assert {host_of(r) for r in found} <= {"node1", "node2", "node3"}


@pytest.mark.slow  # about 60 s on 2 busy cores: the scheduler's polls, then the job
def test_hydra_submitit_slurm_launcher_submits_a_sweep_to_this_slurmctld(slurm, tmp_path):
    """The sweep also avoids the nodes the bad-node ledger excludes, through the launcher's own ``exclude`` option
    and ``${bootstrap_exclude:FILE}`` (issue 47): node3, excluded by hard evidence, is left out of every job's
    ``sbatch --exclude``; node2, with one soft observation, is not."""
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher", reason="the submitit extra")
    from datetime import datetime, timedelta, timezone

    now, form = datetime.now(timezone.utc), "%Y-%m-%dT%H:%M:%SZ"
    ledger = tmp_path / "bad_nodes.jsonl"
    ledger.write_text("".join(json.dumps({"node": node, "reason": reason, "observed_at": now.strftime(form),
                                          "valid_until": (now + timedelta(hours=1)).strftime(form), "job_id": job})
                              + "\n" for node, reason, job in (("node3", "faulty", "1"), ("node2", "slow", "2"))))
    sweep_dir = tmp_path / "sweep"
    ran = slurm.command(
        [sys.executable, str(STUB), "-m", "hydra/launcher=submitit_slurm", f"hydra.sweep.dir={sweep_dir}",
         f"hydra.launcher.submitit_folder={tmp_path}/submitit/%j", "hydra.launcher.timeout_min=5",
         "hydra.launcher.nodes=1", "hydra.launcher.tasks_per_node=1", "hydra.launcher.cpus_per_task=1",
         f"hydra.launcher.exclude=${{bootstrap_exclude:{ledger}}}", "train.lr=0.001,0.002", *TRAIN],
        env=clean_env(), cwd=tmp_path, timeout=300)
    found = [json.loads((sweep_dir / str(n) / "bootstrap.json").read_text()) for n in range(2)]
    assert [r["distributed"]["launcher"] for r in found] == ["submitit"] * 2
    ids = [r["distributed"]["job_id"] for r in found]
    assert all(ids) and len(set(ids)) == 2, ids
    assert {r["job"]["status"] for r in found} == {"completed"}
    assert {host_of(r) for r in found} <= {"node1", "node2"}
    assert (sweep_dir / "sweep_summary.md").exists(), ran.stdout + ran.stderr
    submitted = [path.read_text() for path in (tmp_path / "submitit").rglob("*_submission.sh")]
    assert submitted and all("#SBATCH --exclude=node3\n" in text for text in submitted), submitted
