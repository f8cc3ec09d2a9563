"""Bad nodes on a real SLURM 22.05 (issue 39): an ``sbatch --requeue -N3`` job (of 4 nodes) with one node's link
shaped slow names the node, writes bad_nodes.jsonl and exclude.txt, excludes the node from itself and requeues; the next
attempt trains on the others. With every allocation bad, the loop stops at ``env.nodes.max_requeues``."""

import json
import re
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import STUB, clean_env

# the ranks' speeds are judged against each other: no other test meanwhile
pytestmark = pytest.mark.usefixtures("judged_cores")

# 4 nodes, 3 a job: with -N2-3 SLURM 22.05 allocated 2 of 3 idle nodes (the range's least, with --spread-job too),
# so the slow node never took part; with -N3 of 4, the node excluded leaves 3 for the next attempt.
CLUSTER_NODES = 4
SLOW_MBIT = 50  # design.md section 8: one node's link at 50 Mbit/s
TRAIN = ("train.steps=20", "train.hidden=64", "train.log_every=10")
# max_skew=10: the shaped link measured 30x to 270x slower than the others; a healthy one up to 4.8x under this
# machine's load (a healthy node1 was named once at max_skew=3, and the job excluded it too).
CHECK = ("env.preflight.mode=error", "env.preflight.max_skew=10", "env.nodes.on_bad=requeue",
         "env.threads.intra_op=1", "env.distributed.timeout_s=120")


def _script(tmp_path: Path, *overrides: str) -> Path:
    """A batch script that logs each attempt's start, then runs the stub on every node of the allocation."""
    script = tmp_path / "job.sh"
    script.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        #SBATCH --requeue -N3 --ntasks-per-node=1 --open-mode=append --output={tmp_path}/slurm-%j.out
        attempt=${{SLURM_RESTART_COUNT:-0}}
        echo "$attempt $(date +%s.%N) $SLURM_JOB_NODELIST" >> {tmp_path}/attempts.log
        srun {sys.executable} {STUB} hydra.run.dir={tmp_path}/attempt$attempt {' '.join(CHECK)} \\
            env.nodes.exclude_file={tmp_path}/shared/bad_nodes.jsonl {' '.join(overrides)} {' '.join(TRAIN)}
        """))
    (tmp_path / "shared").mkdir()
    return script


def _attempts(tmp_path: Path) -> list:
    return [line.split() for line in (tmp_path / "attempts.log").read_text().splitlines()]


def _rank0(run_dir: Path) -> dict:
    return json.loads((run_dir / "bootstrap.rank0.json").read_text())


def test_a_slow_link_requeues_the_job_without_its_node_and_the_next_attempt_trains(cluster, slurm, tmp_path):
    node3 = cluster.node("node3")
    cluster.shape(node3, SLOW_MBIT)
    try:
        job = slurm.sbatch([str(_script(tmp_path))], env=clean_env(), cwd=tmp_path)
        slurm.wait_jobs([job], timeout=300)
    finally:
        cluster.unshape(node3)
    log = (tmp_path / f"slurm-{job}.out").read_text()
    attempts = _attempts(tmp_path)
    assert [a[0] for a in attempts] == ["0", "1"], log + slurm.logs()
    assert attempts[0][2] == "node[1-3]" and attempts[1][2] == "node[1-2,4]", attempts
    first = _rank0(tmp_path / "attempt0")
    check = first["preflight"]
    assert first["job"]["status"] == "check_failed", log
    assert [(b["node"], b["reason"]) for b in check["bad_nodes"]] == [("node3", "slow_link")], check["findings"]
    assert check["on_bad"] == "requeued excluding node3" and check["restart_count"] == 0
    record = [json.loads(line) for line in (tmp_path / "attempt0" / "bad_nodes.jsonl").read_text().splitlines()]
    assert [(r["node"], r["reason"], r["job_id"]) for r in record] == [("node3", "slow_link", str(job))]
    assert (tmp_path / "attempt0" / "exclude.txt").read_text() == "node3\n"
    shared = [json.loads(line)["node"] for line in (tmp_path / "shared" / "bad_nodes.jsonl").read_text().splitlines()]
    assert shared == ["node3"]
    said = [line for line in log.splitlines() if line.startswith("bootstrap: scontrol ")]
    assert said == [f"bootstrap: scontrol requeuehold {job}",
                    f"bootstrap: scontrol update JobId={job} ExcNodeList=node3",
                    f"bootstrap: scontrol release {job}"], log
    assert "scontrol update NodeName=node3 State=DRAIN" in log  # printed for an administrator, not run
    second = [json.loads((tmp_path / "attempt1" / f"bootstrap.rank{rank}.json").read_text()) for rank in range(3)]
    assert {r["job"]["status"] for r in second} == {"completed"}, log
    assert [r["provenance"]["host"] for r in second] == ["node1", "node2", "node4"]
    assert second[0]["preflight"]["restart_count"] == 1 and second[0]["preflight"]["bad_nodes"] == []
    assert re.search(r"ExcNodeList=node3\b", slurm.command(["scontrol", "show", "job", "-o", str(job)]).stdout)
    recovered = second[0]["timings"]["started_ns"] / 1e9 - float(attempts[0][1])
    print(f"time from the first start to the healthy attempt's start: {recovered:.1f} s")
    (tmp_path.parent / "bad_nodes_recovery_s.txt").write_text(f"{recovered:.1f}\n")


def test_the_requeue_loop_stops_at_max_requeues_naming_every_node_it_excluded(cluster, slurm, tmp_path):
    node3 = cluster.node("node3")
    cluster.shape(node3, SLOW_MBIT)
    try:
        job = slurm.sbatch([str(_script(tmp_path, "env.nodes.max_requeues=0"))], env=clean_env(), cwd=tmp_path)
        slurm.wait_jobs([job], timeout=300)
    finally:
        cluster.unshape(node3)
    log = (tmp_path / f"slurm-{job}.out").read_text()
    assert [a[0] for a in _attempts(tmp_path)] == ["0"], log
    check = _rank0(tmp_path / "attempt0")["preflight"]
    assert check["on_bad"] == "stopped: max_requeues reached, excluded node3", log
    assert "env.nodes.max_requeues=0 reached (SLURM_RESTART_COUNT=0)" in log and "--exclude=node3" in log
    assert f"scontrol requeuehold {job}" not in log


def test_torchrun_elastic_does_not_go_on_without_an_excluded_node(cluster, tmp_path):
    """torchrun --nnodes=2:3 with node3 in the exclusion file: node3's worker stops at start, naming the entry,
    on every restart; its agent uses up --max-restarts and closes the rendezvous, and the two healthy agents stop
    too (RendezvousClosedError), though 2 nodes meet the minimum. What torchrun cannot do: go on without a node
    whose agent failed. (docs/preflight.md#bad-nodes)"""
    import subprocess
    from datetime import datetime, timedelta, timezone

    now, form = datetime.now(timezone.utc), "%Y-%m-%dT%H:%M:%SZ"
    shared = tmp_path / "bad_nodes.jsonl"
    shared.write_text(json.dumps({"node": "node3", "reason": "slow", "observed_at": now.strftime(form),
                                  "valid_until": (now + timedelta(hours=1)).strftime(form)}) + "\n")
    agents = []
    for node in cluster.nodes[:3]:
        command = [sys.executable, "-m", "torch.distributed.run", "--nnodes=2:3", "--nproc_per_node=1",
                   "--max-restarts=1", "--rdzv_backend=c10d", f"--rdzv_endpoint={cluster.nodes[0].address}:29511",
                   "--rdzv_id=badnodes", "--monitor-interval=1", str(STUB), f"hydra.run.dir={tmp_path}/run",
                   "train.steps=5", f"env.nodes.exclude_file={shared}", "env.distributed.timeout_s=20",
                   "env.threads.intra_op=1"]
        with open(tmp_path / f"{node.name}.log", "w") as out:
            agents.append(cluster.popen(node, command, env=clean_env(), stdout=out, stderr=subprocess.STDOUT,
                                        cwd=tmp_path))
    codes = [agent.wait(timeout=300) for agent in agents]
    logs = {n: (tmp_path / f"node{n}.log").read_text() for n in (1, 2, 3)}
    assert codes == [1, 1, 1], logs
    assert logs[3].count("Error: env.nodes.exclude_file lists this host node3: slow at") >= 1, logs[3][-3000:]
    assert "RendezvousClosedError" in logs[1] + logs[2], logs[1][-3000:]
    assert "trained" not in logs[1] + logs[2]
