"""A slow link, named: node3's link shaped to 50 Mbit/s (tc tbf, both ways) against the others' unshaped veths.
A world all_reduce cannot tell which node is slow (gloo's ring waits on its slowest link, so every rank's bus
bandwidth falls alike); the preflight's per-link exchange can, within cpu_debug's 5 s budget and with no
absolute floor. Under torchrun (one agent per node) and srun, at 1 and 2 ranks per node."""

import sys

import pytest

from cluster import jobs
from conftest import STUB, clean_env

# the ranks' speeds are judged against each other: no other test meanwhile
pytestmark = pytest.mark.usefixtures("judged_cores")

SHAPED_MBIT = 50
CASES = [("srun", 2), ("torchrun", 1)]  # each launcher once; srun with two ranks a node (its leaders exchange)
# cpu_debug's 5 s was enough when measured (4.3-4.5 s at 3 x 1 and 3 x 2, docs/distributed.md#tested-on), with
# little to spare on a loaded 2-core machine; 15 s keeps the verdict decisive there: the check itself decides
# how much of it to use (1 MB messages, 3 rounds of links), not the budget
BUDGET_S = 15


@pytest.mark.parametrize("launcher, per_node", CASES)
def test_a_node_behind_a_slow_link_is_named_by_host_within_the_budget(request, cluster, launcher, per_node,
                                                                     tmp_path):
    slow = cluster.nodes[2]
    run_dir = tmp_path / "run"
    script = [sys.executable, str(STUB), f"hydra.run.dir={run_dir}", "train.steps=5", "train.hidden=64",
              "train.batch_size=32", "env.preflight.mode=error", f"env.preflight.seconds={BUDGET_S}"]
    cluster.shape(slow, SHAPED_MBIT)
    try:
        if launcher == "torchrun":
            finished = jobs.torchrun(cluster, script, work=tmp_path, env=clean_env(), nproc=per_node)
        else:
            finished = jobs.srun(request.getfixturevalue("slurm"), script, work=tmp_path, env=clean_env(),
                                 ntasks_per_node=per_node)
    finally:
        cluster.unshape(slow)
    world = 3 * per_node
    reports = jobs.rank_reports(run_dir, world)
    assert all(f.returncode != 0 for f in finished)
    slow_ranks = [rank for rank in range(world) if reports[rank]["provenance"]["host"] == slow.name]
    assert slow_ranks == list(range(2 * per_node, 3 * per_node))
    for report in reports:
        preflight = report["preflight"]
        assert report["job"]["status"] == "check_failed", report["job"]
        (finding,) = [f for f in preflight["findings"] if f["kind"] == "slow_link"]
        assert finding["ranks"] == slow_ranks
        assert f"node {slow.name}" in finding["message"], finding["message"]
        assert "against the other links'" in finding["message"]
        # no other finding of the link: the world's bus bandwidth fell on every rank alike, and no floor is set. (The
        # link's verdict shares max_skew with the matmul's, and 3 x 2 ranks time-sharing 2 CPUs unpinned may also be
        # found `slow` in their matmul: CI saw rank 5 at 4.3x the median. That is no verdict on the link.)
        assert [f["kind"] for f in preflight["findings"] if f["kind"] != "slow"] == ["slow_link"], \
            preflight["findings"]
        assert preflight["budget_s"] == BUDGET_S
        assert report["timings"]["preflight_s"] < preflight["budget_s"] + 1
        links = {tuple(link["hosts"]): link["gbps"] for link in preflight["links"]}
        through_slow = [gbps for hosts, gbps in links.items() if slow.name in hosts]
        others = [gbps for hosts, gbps in links.items() if slow.name not in hosts]
        assert through_slow and others and max(through_slow) * 3 < min(others), links
    seconds = [r["timings"]["preflight_s"] for r in reports]
    links = reports[0]["preflight"]["links"]
    print(f"{launcher} 3 nodes x {per_node}: preflight {min(seconds):.2f}-{max(seconds):.2f} s of a "
          f"{reports[0]['preflight']['budget_s']} s budget; links {[(l['hosts'], l['gbps']) for l in links]}")
    # the ranks print no C++ frames (torchrun's agents may, closing their rendezvous: jobs._log_dir)
    output = "\n".join(f.ranks_output for f in finished)
    assert f"preflight: node {slow.name}" in output and "frame #0" not in output, output[-4000:]
