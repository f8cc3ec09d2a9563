"""The watch on the namespace cluster under a real ``srun -N3`` (issue 48): one job, three phases. It trains healthy;
then node3's link is shaped to 50 Mbit/s (``tc``, both ways), and the watch names node3 (``slow_link``); then node3's
rank gets 4 more busy processes on its core, and the watch names it with node3's host (``slow``).

Each rank is pinned (a node's profile gives its CPU): node1's and node2's ranks share CPU 0, node3's rank shares CPU 1
with one busy process of its own from its first step, so that every rank has half a core while healthy. The 4 loops
added leave node3's rank a sixth of its core: 3x slower than the others, for real."""

import json
import sys
import time
from pathlib import Path

import pytest

from cluster import jobs

from conftest import clean_env

pytestmark = pytest.mark.usefixtures("judged_cores")  # the ranks' speeds are judged against each other

APP = Path(__file__).parents[1] / "watch_app" / "app.py"
SHAPED_MBIT = 50
WINDOW_S, CONSECUTIVE = 2.0, 3  # cpu_debug's
LINK_AT_S = 4 * WINDOW_S  # 4 healthy windows first
CPU_AT_S = LINK_AT_S + 8 * WINDOW_S  # the link's finding takes at most consecutive + 1 windows
PIN = 'exec nice -n -10 taskset -c "$WATCH_CPU" "$@"'


def test_a_throttled_link_then_a_slowed_node_are_each_named_with_node3_s_host(cluster, slurm, tmp_path):
    slow = cluster.nodes[2]
    run_dir, mark, pids = tmp_path / "run", tmp_path / "mark", tmp_path / "loops.pids"
    script = ["sh", "-c", PIN, "sh", sys.executable, str(APP), f"hydra.run.dir={run_dir}", "env.threads.intra_op=1",
              "train.hidden=512", "train.batch_size=256", "train.max_s=300", "env.distributed.timeout_s=120",
              "slow.rank=2", "slow.base_loops=1", "slow.loops=4", f"slow.after_s={CPU_AT_S}", f"slow.pids={pids}",
              "slow.findings=2", "slow.windows_after=1", f"mark.after_s={LINK_AT_S}", f"mark.file={mark}"]
    exports = {node.name: {"WATCH_CPU": "1" if node is slow else "0"} for node in cluster.nodes}

    def shape_when_marked(_processes) -> None:
        deadline = time.monotonic() + 180  # the job's start, then LINK_AT_S of training
        while not mark.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        cluster.shape(slow, SHAPED_MBIT)

    try:
        (finished,) = jobs.srun(slurm, script, work=tmp_path, env=clean_env(), exports=exports,
                                during=shape_when_marked)
    finally:
        cluster.unshape(slow)
    assert finished.returncode == 0, finished.output[-4000:]
    reports = jobs.rank_reports(run_dir, 3)
    watch = reports[0]["watch"]
    by_kind = {f["kind"]: f for f in watch["findings"]}
    assert sorted(by_kind) == ["slow", "slow_link"] and len(watch["findings"]) == 2, json.dumps(watch)[:8000]
    for finding in by_kind.values():
        assert (finding["ranks"], finding["hosts"]) == ([2], [slow.name]), finding
    link_at = float(mark.read_text())
    slowed_at = reports[2]["job"]["metrics"]["slowed_at_s"]
    # the app's clock starts a step before the watch's, a link is timed at the end of each window, and a starved
    # rank measures its window late: the window before the one the change began in may already see it
    for finding, began in ((by_kind["slow_link"], link_at), (by_kind["slow"], slowed_at)):
        began_window = int(began // WINDOW_S)
        assert began_window - 1 <= finding["since_window"] and \
            finding["window"] - began_window + 1 <= CONSECUTIVE + 1, (began, finding)
        print(f"{finding['kind']}: named after {finding['window'] - began_window + 1} windows")
    assert f"node {slow.name}" in by_kind["slow_link"]["message"]
    links = {tuple(link["hosts"]): link["gbps"] for link in watch["links"]}
    assert all(slow.name in hosts for hosts, gbps in links.items() if gbps == min(links.values())), links
    for report in reports:
        assert report["watch"]["findings"] == watch["findings"] and report["job"]["status"] == "completed"
    observed = [json.loads(line) for line in (run_dir / "bad_nodes.jsonl").read_text().splitlines()]
    watched = [entry for entry in observed if entry["reason"].startswith("watch_")]
    assert {entry["node"] for entry in watched} == {slow.name}, observed
    assert {kind for entry in watched for kind in entry["kinds"]} == {"watch_slow_link", "watch_slow"}, observed
