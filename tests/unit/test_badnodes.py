"""The observations a job makes of the nodes its findings name, and what it judges of them before they count
(bootstrap/distributed/badnodes.py), pure: NVRx's field names, the figures each rank was judged against, the
watch's findings, a systemic fault and the job's cap."""

import json
from datetime import datetime, timezone
from types import SimpleNamespace

import pytest

from bootstrap.distributed import badnodes, ledger
from bootstrap.doors import records

NOW = datetime(2026, 12, 6, 3, 0, 0, tzinfo=timezone.utc)


def _record(*findings, hosts=None):
    hosts = hosts or {0: "node1", 1: "node1", 2: "node3", 3: "node3"}
    return records.Preflight(
        median_tflops=0.4, max_skew=2.0, min_tflops=0.1,
        ranks=[records.PreflightRank(rank=r, host=h, tflops=0.5 if h != "node3" else 0.05) for r, h in hosts.items()],
        findings=[records.PreflightFinding(kind=k, message=f"{k} message", ranks=ranks, against=against)
                  for k, ranks, against in findings])


def test_one_observation_per_node_with_nvrx_field_names_and_every_kind_that_named_it():
    observed = badnodes.from_preflight(_record(("faulty", [3], []), ("slow", [2, 3], [0.5, 0.5]),
                                               ("min_busbw_gbps", [], [])), NOW, 24, "123", 1)
    assert [o.node for o in observed] == ["node3"]
    data = json.loads(observed[0].to_json())
    assert {k: data[k] for k in ("type", "schema_version", "node", "reason", "evidence", "observed_at", "valid_until",
                                 "job_id", "restart_count", "counts")} == {
        "type": "observation", "schema_version": 2, "node": "node3", "reason": "faulty", "evidence": "hard",
        "observed_at": "2026-12-06T03:00:00Z", "valid_until": "2026-12-07T03:00:00Z", "job_id": "123",
        "restart_count": 1, "counts": True}
    assert data["kinds"] == ["faulty", "slow"] and data["ranks"] == [3, 2]
    assert [f["tflops"] for f in data["figures"]] == [0.05, 0.05]


def test_a_slow_node_is_recorded_against_the_other_ranks_median_its_message_states():
    # the message says "rank 3 is 10x slower than the other ranks' median (0.05 against 0.5)": the entry says 0.5,
    # not the world's median (0.4 here, rank 3 among them), which is the report's preflight.median_tflops
    (observed,) = badnodes.from_preflight(_record(("slow", [3], [0.5])), NOW, 24)
    assert observed.against == {"others_median_tflops": 0.5, "max_skew": 2.0, "min_tflops": 0.1}
    assert observed.figures[0]["others_median_tflops"] == 0.5 and observed.figures[0]["tflops"] == 0.05
    (floor,) = badnodes.from_preflight(_record(("min_tflops", [3], [])), NOW, 24)
    assert "others_median_tflops" not in floor.against and "others_median_tflops" not in floor.figures[0]


def test_a_world_figure_and_a_rank_with_no_known_node_name_no_node():
    assert badnodes.from_preflight(_record(("min_busbw_gbps", [], []), ("unfinished", [7], [])), NOW, 24) == []
    forged = _record(("slow", [0], []), hosts={0: "node1; rm -rf /"})
    assert badnodes.from_preflight(forged, NOW, 24) == []


def test_figures_gathered_from_fewer_ranks_than_the_world_name_no_node_on_any_rank():
    # a peer of another version sends only its header: each rank's record holds itself alone (world_size 1), and
    # rank 0 cannot name the peer's node, so the peer names none either
    alone = _record(("invalid", [1], []), hosts={1: "node3"})
    alone.world_size = 1
    assert badnodes.from_preflight(alone, NOW, 24, world=2) == []
    alone.world_size = 2
    assert [o.node for o in badnodes.from_preflight(alone, NOW, 24, world=2)] == ["node3"]


def test_the_watch_s_findings_are_soft_observations_of_each_rank_s_node():
    findings = [SimpleNamespace(kind="slow", message="rank 2 (node3) scores 0.4", ranks=[2, 3],
                                hosts=["node3", "node3"]),
                SimpleNamespace(kind="slow-link!", message="node4's link", ranks=[5], hosts=["node4"]),
                SimpleNamespace(kind="slow", message="forged", ranks=[6], hosts=["node[1-9999999]"])]
    observed = badnodes.from_findings(findings, NOW, 24, "77", 2)
    assert [(o.node, o.reason, o.ranks, o.hard, o.job_id, o.restart_count) for o in observed] == [
        ("node3", "watch_slow", [2, 3], False, "77", 2), ("node4", "watch_slow_link_", [5], False, "77", 2)]
    read = ledger.parse("\n".join(o.to_json() for o in observed).encode(), NOW)  # the ledger takes its kinds
    assert read.dropped == [] and len(read.observations) == 2


def _observed(*nodes, hard=()):
    return [ledger.Observation(node, "faulty" if node in hard else "slow", "2026-12-06T03:00:00Z",
                               "2026-12-07T03:00:00Z", kinds=["faulty" if node in hard else "slow"]) for node in nodes]


def test_more_than_the_fraction_of_the_job_s_nodes_at_once_is_systemic_and_none_counts():
    observed = _observed("node1", "node2", "node3")
    line = badnodes.weigh(observed, 3, 0.5, 2)
    assert line == ("systemic: 3 of 3 nodes slow at once: the network, a filesystem or the job itself, not a node: "
                    "no node is excluded for it (env.nodes.systemic_fraction=0.5)")
    assert [(o.counts, o.note) for o in observed] == [(False, "systemic: 3 of 3 nodes at once")] * 3
    assert not ledger.parse(observed[0].to_json().encode(), NOW).observations[0].counts


@pytest.mark.parametrize("named, job_nodes, systemic", [
    (1, 1, False),  # a one-node job's one node: its ranks compared among themselves, never systemic
    (2, 4, False), (3, 4, True), (2, 3, True), (1, 2, False)])
def test_systemic_needs_two_nodes_and_more_than_the_fraction(named, job_nodes, systemic):
    observed = _observed(*[f"node{i}" for i in range(named)])
    line = badnodes.weigh(observed, job_nodes, 0.5, 10)
    assert (line is not None and line.startswith("systemic")) is systemic
    assert all(o.counts for o in observed) is not systemic


def test_past_the_job_s_cap_the_evidence_is_recorded_and_does_not_count_hard_first():
    observed = _observed("node1", "node2", "node3", "node4", hard=("node4",))
    line = badnodes.weigh(observed, 10, 0.5, 2)
    assert line == ("env.nodes.max_per_job=2: this job named 4 nodes; the evidence against node[2-3] is recorded "
                    "and does not count")
    assert [(o.node, o.counts) for o in observed] == [("node1", True), ("node2", False), ("node3", False),
                                                      ("node4", True)]
    assert observed[1].note == "over env.nodes.max_per_job=2"


def test_the_exclude_text_is_slurms_compact_form():
    assert badnodes.exclude_text(["node7", "node3", "node3", "gpu01", "gpu02"]) == "gpu[01-02],node[3,7]"
