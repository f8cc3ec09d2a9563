"""Bad nodes on a real SLURM 22.05 (issues 39, 45 and 47): evidence before exclusion, by the scheduler's names.

An ``sbatch --requeue -N3`` job (of 4 nodes) with node3's link shaped slow, node3's kernel host name being
``node3.cluster.local`` while SLURM knows it as ``node3``: the first attempt observes node3 (soft evidence) and is
requeued excluding nothing; the second observes it again, and the two attempts' evidence excludes it, by SLURM's name,
from the job (``ExcNodeList=node3``); the third trains on the others. With every node named at once (a floor no node
meets) the fault is systemic and no node is excluded. A refused ``scontrol update`` never goes on to a release. With
every allocation bad, the loop stops at ``env.nodes.max_requeues``; torchrun elastic cannot go on without a node."""

import json
import re
import subprocess
import sys
import textwrap
from contextlib import contextmanager
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
# env.preflight.seconds=30: what is judged is the link's speed, not the budget; cpu_debug's 5 s ran out once while
# another install loaded this 2-core machine (the 1 MB all_reduce across the 50 Mbit/s link "did not finish").
CHECK = ("env.preflight.mode=error", "env.preflight.max_skew=10", "env.nodes.on_bad=requeue",
         "env.threads.intra_op=1", "env.distributed.timeout_s=120", "env.preflight.seconds=30")
KERNEL_NAME = "node3.cluster.local"  # node3's host name, as a site's DNS gives it; SLURM's NodeName stays node3


def _script(tmp_path: Path, *overrides: str, check=CHECK, ntasks: int = 1) -> Path:
    """A batch script that logs each attempt's start, then runs the stub on every node of the allocation."""
    script = tmp_path / "job.sh"
    script.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        #SBATCH --requeue -N3 --ntasks-per-node={ntasks} --open-mode=append --output={tmp_path}/slurm-%j.out
        attempt=${{SLURM_RESTART_COUNT:-0}}
        echo "$attempt $(date +%s.%N) $SLURM_JOB_NODELIST" >> {tmp_path}/attempts.log
        srun {sys.executable} {STUB} hydra.run.dir={tmp_path}/attempt$attempt {' '.join(check)} \\
            env.nodes.exclude_file={_ledger(tmp_path)} {' '.join(overrides)} {' '.join(TRAIN)}
        """))
    _ledger(tmp_path).parent.mkdir(exist_ok=True)
    return script


def _ledger(tmp_path: Path) -> Path:
    return tmp_path / "shared" / "bad_nodes.jsonl"


def _attempts(tmp_path: Path) -> list:
    return [line.split() for line in (tmp_path / "attempts.log").read_text().splitlines()]


def _rank0(run_dir: Path) -> dict:
    return json.loads((run_dir / "bootstrap.rank0.json").read_text())


@contextmanager
def _kernel_name(cluster, node_name: str, kernel: str):
    """``node_name``'s kernel host name set to ``kernel`` (its UTS namespace), which the cluster's /etc/hosts also
    gives its address (gloo finds a rank's address from its host name); put back after."""
    node = cluster.node(node_name)
    hosts = cluster.hosts_file.read_text()
    cluster.hosts_file.write_text(hosts.replace(f" {node_name}\n", f" {node_name} {kernel}\n"))  # the same file
    subprocess.run(["nsenter", f"--uts=/proc/{node.holder.pid}/ns/uts", "hostname", kernel], check=True, timeout=30)
    try:
        assert cluster.run(node, ["hostname"]).stdout.strip() == kernel
        yield
    finally:
        subprocess.run(["nsenter", f"--uts=/proc/{node.holder.pid}/ns/uts", "hostname", node_name], timeout=30)
        cluster.hosts_file.write_text(hosts)


def test_soft_evidence_retries_and_two_attempts_exclude_the_node_by_slurms_name(cluster, slurm, tmp_path):
    node3 = cluster.node("node3")
    with _kernel_name(cluster, "node3", KERNEL_NAME):
        cluster.shape(node3, SLOW_MBIT)
        try:
            job = slurm.sbatch([str(_script(tmp_path))], env=clean_env(), cwd=tmp_path)
            slurm.wait_jobs([job], timeout=540)
        finally:
            cluster.unshape(node3)
    log = (tmp_path / f"slurm-{job}.out").read_text()
    attempts = _attempts(tmp_path)
    assert [a[0] for a in attempts] == ["0", "1", "2"], log + slurm.logs()
    assert [a[2] for a in attempts] == ["node[1-3]", "node[1-3]", "node[1-2,4]"], attempts
    said = [line for line in log.splitlines() if line.startswith("bootstrap: scontrol ")]
    assert said == [f"bootstrap: scontrol requeuehold {job}", f"bootstrap: scontrol release {job}",
                    f"bootstrap: scontrol requeuehold {job}",
                    f"bootstrap: scontrol update JobId={job} ExcNodeList=node3",
                    f"bootstrap: scontrol release {job}"], log
    assert KERNEL_NAME not in "".join(said)

    # attempt 0: one soft observation of node3 (SLURM's name; its kernel's beside it in its report): no exclusion
    first = _rank0(tmp_path / "attempt0")
    check = first["preflight"]
    assert first["job"]["status"] == "check_failed", log
    assert [(b["node"], b["reason"], b["evidence"], b["excluded"]) for b in check["bad_nodes"]] == \
        [("node3", "slow_link", "soft", False)], check["findings"]
    assert check["on_bad"] == "requeued excluding nothing" and check["restart_count"] == 0
    assert not (tmp_path / "attempt0" / "exclude.txt").exists()
    on_node3 = json.loads((tmp_path / "attempt0" / "bootstrap.rank2.json").read_text())["provenance"]
    assert (on_node3["host"], on_node3["kernel_host"]) == ("node3", KERNEL_NAME)
    assert f"bootstrap: requeued job {job} (attempt 1 of at most 3) excluding nothing: no node meets the evidence " \
           "rule yet" in log

    # attempt 1: the second observation, from another attempt: node3 is excluded from the job by SLURM's name
    second = _rank0(tmp_path / "attempt1")["preflight"]
    assert [(b["node"], b["excluded"]) for b in second["bad_nodes"]] == [("node3", True)]
    assert second["on_bad"] == "requeued excluding node3" and second["restart_count"] == 1
    assert (tmp_path / "attempt1" / "exclude.txt").read_text() == "node3\n"
    assert f"bad nodes: node3 excluded: slow_link 2 times in 1 job ({job}) in the last 1 h" in log
    assert f"bootstrap: requeued job {job} (attempt 2 of at most 3) excluding node3" in log
    ledger = [json.loads(line) for line in _ledger(tmp_path).read_text().splitlines()]
    assert [(e["node"], e["job_id"], e["restart_count"]) for e in ledger] == [("node3", str(job), 0),
                                                                              ("node3", str(job), 1)]

    # attempt 2: on the other nodes, it trains
    third = [json.loads((tmp_path / "attempt2" / f"bootstrap.rank{rank}.json").read_text()) for rank in range(3)]
    assert {r["job"]["status"] for r in third} == {"completed"}, log
    assert [r["provenance"]["host"] for r in third] == ["node1", "node2", "node4"]
    assert third[0]["preflight"]["restart_count"] == 2 and third[0]["preflight"]["bad_nodes"] == []
    assert re.search(r"ExcNodeList=node3\b", slurm.command(["scontrol", "show", "job", "-o", str(job)]).stdout)
    recovered = third[0]["timings"]["started_ns"] / 1e9 - float(attempts[0][1])
    print(f"time from the first start to the healthy attempt's start: {recovered:.1f} s")
    (tmp_path.parent / "bad_nodes_recovery_s.txt").write_text(f"{recovered:.1f}\n")


def test_every_node_of_a_job_named_at_once_is_systemic_and_none_is_excluded_on_slurm(cluster, slurm, tmp_path):
    # every node's link throttled, and a floor on the bus bandwidth within each node that no node meets (2 ranks a
    # node: they all_reduce over the node's own loopback, which the shaping leaves alone): every node is named. At
    # 50 Mbit/s the 6 ranks' gloo mesh did not form within the check's 5 s: the links are throttled to 200 Mbit/s, and
    # the check has 30 s
    for node in cluster.nodes[:3]:
        cluster.shape(node, 4 * SLOW_MBIT)
    try:
        # the floor is what is judged: 6 ranks time-share this machine's 2 CPUs, so their matmuls are not (one
        # was once 3x the others' median here, a `slow` finding beside the floor's)
        check = ("env.preflight.mode=warn", "env.preflight.min_node_busbw_gbps=1000", "env.preflight.seconds=30",
                 "env.threads.intra_op=1", "env.distributed.timeout_s=120", "env.nodes.min_observations=1",
                 "env.preflight.max_skew=1000")
        job = slurm.sbatch([str(_script(tmp_path, check=check, ntasks=2))], env=clean_env(), cwd=tmp_path)
        slurm.wait_jobs([job], timeout=300)
    finally:
        for node in cluster.nodes[:3]:
            cluster.unshape(node)
    log = (tmp_path / f"slurm-{job}.out").read_text()
    reports = [json.loads((tmp_path / "attempt0" / f"bootstrap.rank{rank}.json").read_text()) for rank in range(6)]
    assert {r["job"]["status"] for r in reports} == {"completed"}, log
    systemic = ("systemic: 3 of 3 nodes slow at once: the network, a filesystem or the job itself, not a node: no "
                "node is excluded for it (env.nodes.systemic_fraction=0.5)")
    assert systemic in log and systemic in reports[0]["warnings"]
    check = reports[0]["preflight"]
    assert [f["kind"] for f in check["findings"]] == ["min_node_busbw_gbps"]
    assert [(b["node"], b["excluded"], b["note"]) for b in check["bad_nodes"]] == \
        [(f"node{i}", False, "systemic: 3 of 3 nodes at once") for i in (1, 2, 3)]
    assert check["on_bad"].startswith("recorded (systemic: 3 of 3 nodes")
    assert not (tmp_path / "attempt0" / "exclude.txt").exists()
    ledger = [json.loads(line) for line in _ledger(tmp_path).read_text().splitlines()]
    assert [(e["node"], e["counts"]) for e in ledger] == [(f"node{i}", False) for i in (1, 2, 3)]
    listed = subprocess.run([sys.executable, "-m", "bootstrap", "nodes", str(_ledger(tmp_path)), "--exclude-list"],
                            capture_output=True, text=True, env=clean_env(), timeout=60)
    assert listed.stdout == "\n", listed  # min_observations=1, and still none: none counts


def test_a_refused_exclusion_never_goes_on_to_a_release(slurm, tmp_path):
    # SLURM knows node3 as node3: an ExcNodeList naming its kernel's host is refused ("Invalid node name"), and the
    # job must stay held without the exclusion rather than run again anywhere (issue 45 section 2)
    job = slurm.sbatch(["-N1", "--wrap", "sleep 600", f"--output={tmp_path}/sleep.out"], env=clean_env(), cwd=tmp_path)
    slurm.wait_for(lambda: "RUNNING" in slurm.job_states(job), 120, "the sleeping job running")
    try:
        code = (f"from bootstrap.distributed import requeue\n"
                f"print(requeue.requeue(requeue.decide('{job}', ['{KERNEL_NAME}'], '', 0, 2, 'slow'), 30))")
        ran = slurm.command([sys.executable, "-c", code], env=clean_env(), cwd=tmp_path)
        said = ran.stdout.strip().splitlines()[-1]
        assert f"scontrol update JobId={job} ExcNodeList={KERNEL_NAME}: exit 1" in said, ran.stdout + ran.stderr
        assert f"the job is held without the exclusion; run `scontrol update JobId={job} ExcNodeList=" \
               f"{KERNEL_NAME} && scontrol release {job}`, or cancel it (scancel {job})" in said
        assert f"bootstrap: scontrol release {job}" not in ran.stderr
        shown = slurm.command(["scontrol", "show", "job", "-o", str(job)]).stdout
        # held (a priority of 0), as requeuehold left it: SLURM 22.05 says Reason=job_requeued_in_held_state
        assert "JobState=PENDING" in shown and " Priority=0 " in shown and "Restarts=1" in shown, shown
    finally:
        slurm.command(["scancel", str(job)], check=False)


def test_the_requeue_loop_stops_at_max_requeues_naming_every_node_it_excluded(cluster, slurm, tmp_path):
    node3 = cluster.node("node3")
    cluster.shape(node3, SLOW_MBIT)
    try:
        script = _script(tmp_path, "env.nodes.max_requeues=0", "env.nodes.min_observations=1")
        job = slurm.sbatch([str(script)], env=clean_env(), cwd=tmp_path)
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
    """torchrun --nnodes=2:3 with node3 excluded by hard evidence in the ledger: node3's worker stops at start, naming
    the evidence, on every restart; its agent uses up --max-restarts and closes the rendezvous, and the two healthy
    agents stop too (RendezvousClosedError), though 2 nodes meet the minimum. What torchrun cannot do: go on without
    a node whose agent failed. (docs/preflight.md#bad-nodes)"""
    from datetime import datetime, timedelta, timezone

    now, form = datetime.now(timezone.utc), "%Y-%m-%dT%H:%M:%SZ"
    shared = tmp_path / "bad_nodes.jsonl"
    shared.write_text(json.dumps({"node": "node3", "reason": "faulty", "observed_at": now.strftime(form),
                                  "valid_until": (now + timedelta(hours=1)).strftime(form), "job_id": "7"}) + "\n")
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
    assert logs[3].count("Error: env.nodes.exclude_file: this node node3 is excluded: faulty in job 7") >= 1, \
        logs[3][-3000:]
    assert "RendezvousClosedError" in logs[1] + logs[2], logs[1][-3000:]
    assert "trained" not in logs[1] + logs[2]
