"""The watch on the namespace cluster under a real ``srun -N3`` (issue 48): one job, three phases. It trains healthy;
then node3's link is shaped to 50 Mbit/s (``tc``, both ways), and the watch names node3 (``slow_link``); then node3's
rank gets 3 busy processes beside it, and the watch names it with node3's host (``slow``).

Every rank runs on CPU 0, each in a CPU group of its own (tests/cpu_groups.py; the wrapper below joins it as the task
starts), with a fixed budget of it: healthy, they run alike, whatever else runs. The 3 loops start in node3's rank's
group and share its budget alone: its own work then takes 4x the others', for real. (Ranks on CPUs of their own are not
comparable on this VM: CI saw node1's and node2's ranks on CPU 0 at 2.8x the own work of node3's on CPU 1.)"""

import json
import sys
import time
from pathlib import Path

import pytest

from cluster import jobs

from conftest import clean_env
from cpu_groups import rank_groups

pytestmark = pytest.mark.usefixtures("judged_cores")  # the ranks' speeds are judged against each other

APP = Path(__file__).parents[1] / "watch_app" / "app.py"
SHAPED_MBIT = 50
WINDOW_S, CONSECUTIVE = 2.0, 3  # cpu_debug's
LINK_AT_S = 4 * WINDOW_S  # 4 healthy windows first
CPU_AT_S = LINK_AT_S + 8 * WINDOW_S  # the link's finding takes at most consecutive + 1 windows
PIN = 'echo $$ > "$RANK_GROUPS/rank$SLURM_PROCID/cgroup.procs" && exec taskset -c 0 "$@"'


def test_a_throttled_link_then_a_slowed_node_are_each_named_with_node3_s_host(cluster, slurm, tmp_path):
    with rank_groups(tmp_path.name, ranks=3) as groups:
        _named(cluster, slurm, tmp_path, groups)


def _named(cluster, slurm, tmp_path, groups):
    slow = cluster.nodes[2]
    run_dir, mark, pids = tmp_path / "run", tmp_path / "mark", tmp_path / "loops.pids"
    script = ["sh", "-c", PIN, "sh", sys.executable, str(APP), f"hydra.run.dir={run_dir}", "env.threads.intra_op=1",
              "train.hidden=512", "train.batch_size=256", "train.max_s=300", "env.distributed.timeout_s=120",
              "slow.rank=2", "slow.loops=3", f"slow.after_s={CPU_AT_S}", f"slow.pids={pids}",
              "slow.findings=2", "slow.named='is slow|its links'", "slow.windows_after=1", f"mark.after_s={LINK_AT_S}",
              f"mark.file={mark}"]

    def shape_when_marked(_processes) -> None:
        deadline = time.monotonic() + 180  # the job's start, then LINK_AT_S of training
        while not mark.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        cluster.shape(slow, SHAPED_MBIT)

    try:
        (finished,) = jobs.srun(slurm, script, work=tmp_path, env=clean_env(RANK_GROUPS=str(groups)),
                                during=shape_when_marked)
    finally:
        cluster.unshape(slow)
    assert finished.returncode == 0, finished.output[-4000:]
    reports = jobs.rank_reports(run_dir, 3)
    watch = reports[0]["watch"]
    link_at = float(mark.read_text())
    # node3 is named twice, for its link and for its work. Besides, the shaped link's transfers (retransmissions,
    # the queue) run on CPU 0 inside the ranks' fixed CPU budgets here, and any rank's own work may rise with them:
    # then the watch may also say a rank, or most ranks at once, slowed (its individual score; CI saw "2 of 3 ranks
    # work slower ... not a node", a rerun here "rank 0 (node1) has slowed"), never before the shaping. Nothing
    # else is found
    mine = [f for f in watch["findings"] if slow.name in f["hosts"] and f["kind"] in ("slow", "slow_link")]
    by_kind = {f["kind"]: f for f in mine}
    assert sorted(by_kind) == ["slow", "slow_link"] and len(mine) == 2, json.dumps(watch)[:8000]
    assert all((f["ranks"], f["hosts"]) == ([2], [slow.name]) for f in mine), mine
    shaped_window = int(link_at // WINDOW_S)
    others = [f for f in watch["findings"] if f not in mine]
    assert all(f["kind"] == "slowed" and f["window"] >= shaped_window - 1 for f in others), others
    slowed_at = reports[2]["job"]["metrics"]["slowed_at_s"]
    # named no sooner than the change (a finding before it would be a false one) and within consecutive + 1 windows
    # of it. The app's clock starts a step before the watch's, a link is timed at the end of each window, and a
    # starved rank measures its window late: the window before the one the change began in may already see it. The
    # streak may have begun earlier: a healthy link's single message, timed on a CPU every rank shares by budget,
    # was under the threshold in the 2 windows before the shaping in a rerun (since_window 2, shaped in window 4);
    # it named nothing until the shaped window completed it
    for finding, began in ((by_kind["slow_link"], link_at), (by_kind["slow"], slowed_at)):
        began_window = int(began // WINDOW_S)
        assert began_window - 1 <= finding["window"] and \
            finding["window"] - began_window + 1 <= CONSECUTIVE + 1, (began, finding)
        print(f"{finding['kind']}: named after {finding['window'] - began_window + 1} windows")
    assert f"node {slow.name}" in by_kind["slow_link"]["message"]
    # the last window's links: one not timed in it (null) is one whose probe ran past its budget, which only node3's
    # may (its link shaped, its listener in the starved rank: CI saw one); every healthy link is timed, and faster
    links = {tuple(link["hosts"]): link["gbps"] for link in watch["links"]}
    timed = {hosts: gbps for hosts, gbps in links.items() if gbps is not None}
    healthy = [gbps for hosts, gbps in timed.items() if slow.name not in hosts]
    assert all(slow.name in hosts for hosts in set(links) - set(timed)) and healthy, links
    assert all(gbps < min(healthy) for hosts, gbps in timed.items() if slow.name in hosts), links
    for report in reports:
        assert report["watch"]["findings"] == watch["findings"] and report["job"]["status"] == "completed"
    observed = [json.loads(line) for line in (run_dir / "bad_nodes.jsonl").read_text().splitlines()]
    watched = [entry for entry in observed if entry["reason"].startswith("watch_")]
    assert {kind for entry in watched if entry["node"] == slow.name for kind in entry["kinds"]} >= \
        {"watch_slow_link", "watch_slow"}, observed
    assert all(set(entry["kinds"]) <= {"watch_slowed"} for entry in watched if entry["node"] != slow.name), observed
