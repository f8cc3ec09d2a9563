"""What the preflight believes of its peers, what it allocates and the links between nodes (issues 37 and 38), fed
values: each figure a peer sends checked against the device's bounds, the header agreed before the records, the
sizes refused or capped before anything is allocated, and the rounds and verdict of the per-link measurement. The
same under real torchrun, with a rank sending crafted records: tests/e2e/test_preflight_trust.py."""
import math
import struct

import pytest

import bootstrap
from bootstrap.doors.errors import ConfigError
from bootstrap.preflight import bounds, figures, links, measure, verdict
from bootstrap.preflight.figures import Compute, RankFigures
from bootstrap.preflight.verdict import Floors

V1_LAYOUT = struct.Struct("<qBBddd64s")  # version 1's record, sent with no header (before issue 37)


def _rank(rank, tflops=1.0, host=None, node_rank=0, **more):
    return RankFigures(rank=rank, host=host or f"node{rank}", node_rank=node_rank, compute=Compute.OK, tflops=tflops,
                       **more)


def _sent(rank, **changed):
    """Rank ``rank``'s record as a peer would send it, with ``changed`` figures (raw, unchecked)."""
    values = dict(version=figures.VERSION, node_rank=0, compute=0, network=0, tflops=0.07, busbw=0.4,
                  node_busbw=figures.UNKNOWN, prev=figures.UNKNOWN, next=figures.UNKNOWN, host=f"h{rank}".encode())
    values.update(changed)
    return figures.LAYOUT.pack(*values.values())


# -- each figure a peer sends ---------------------------------------------------------------------------
@pytest.mark.parametrize("tflops, said", [
    (float("nan"), "tflops=nan (not a number)"), (float("inf"), "tflops=inf (not a number)"),
    (0.0, "tflops=0 (a measured figure is above 0)"), (-4.0, "tflops=-4 (a measured figure is above 0)"),
    (1e6, "tflops=1e+06 TFLOP/s (above 200 TFLOP/s, more than any CPU reaches)"),
])
def test_a_figure_no_measurement_gives_is_itself_a_finding_naming_the_rank(tflops, said):
    world = [figures.unpack(0, _sent(0), "cpu"), figures.unpack(1, _sent(1, tflops=tflops), "cpu")]
    assert world[1].tflops is None and world[1].invalid == [said]
    found = verdict.judge(world, Floors(min_tflops=1e-6), 3.0, "cpu", "gloo")
    assert [(f.kind, f.ranks) for f in found] == [("invalid", [1])]  # never "ok, 0 findings"
    assert found[0].message.startswith(f"rank 1 (h1) sent {said}: figures no measurement gives")
    assert verdict.status(found) == "faulty"


def test_a_figure_not_measured_is_no_finding_and_a_real_one_passes():
    got = figures.unpack(3, _sent(3, busbw=figures.UNKNOWN), "cpu")
    assert (got.invalid, got.busbw_gbps, got.tflops) == ([], None, 0.07)
    gpu = figures.unpack(3, _sent(3, tflops=989.0, busbw=450.0, next=48.0), "cuda")  # H100 bf16, NVLink, IB
    assert gpu.invalid == [] and (gpu.tflops, gpu.busbw_gbps, gpu.link_next_gbps) == (989.0, 450.0, 48.0)
    assert figures.unpack(3, _sent(3, busbw=5000.0), "cuda").invalid == [
        "busbw_gbps=5000 GB/s (above 4000 GB/s, more than any CUDA reaches)"]


def test_a_record_of_another_version_or_size_is_invalid_not_a_rank_that_measured_nothing():
    other = figures.unpack(1, b"\3" + _sent(1)[1:], "cpu")
    assert other.invalid == [f"record version 3, not {figures.VERSION}"]
    longer = figures.unpack(1, _sent(1) + b"\0" * 8, "cpu")
    assert longer.invalid == [f"rank 1: {figures.LAYOUT.size + 8} bytes, not {figures.LAYOUT.size}"]
    found = verdict.judge([_rank(0), longer], Floors(), 3.0, "cpu", "gloo")
    assert [f.kind for f in found] == ["invalid"]  # not "faulty: the matmul failed there" as well


def test_every_network_kind_travels_in_the_record():
    for kind in ("ib", "roce", "efa", "ofi", "socket", "fastrak", "tcpx", "other", None):
        sent = _rank(2, network=kind)
        assert figures.unpack(2, figures.pack(sent), "cpu").network == kind


# -- the header, agreed before the records ----------------------------------------------------------------
def test_the_header_has_version_1_s_record_size_so_an_old_peer_is_a_finding_not_an_abort():
    assert figures.HEADER_BYTES == V1_LAYOUT.size == 98 and figures.HEADER.size <= figures.HEADER_BYTES
    mine = figures.header(figures.pack(_rank(0)), 512.0, "gpu-a", 1)
    assert len(mine) == figures.HEADER_BYTES
    read = figures.read_header(0, mine)
    assert (read.problem(), read.node, read.affordable_mb, read.size) == (None, "gpu-a#1", 512.0, figures.LAYOUT.size)
    old = figures.read_header(1, V1_LAYOUT.pack(0, 0, 3, 0.07, 0.4, -1.0, b"old-host"))
    assert old.problem().startswith("sent no header this version knows")
    longer = figures.read_header(2, figures.header(figures.pack(_rank(2)) + b"\0" * 8, 512.0, "gpu-c", 0))
    assert longer.problem() == (f"sends record version {figures.VERSION} of {figures.LAYOUT.size + 8} bytes, and this "
                                f"rank version {figures.VERSION} of {figures.LAYOUT.size} bytes: a different "
                                "hydra-train-bootstrap")
    mismatched, least = figures.agree([read, old, longer])
    assert [h.rank for h in mismatched] == [1, 2] and least == 0.0  # the old peer said nothing it can hold
    assert figures.agree([read])[1] == 512.0
    unknown = figures.read_header(3, figures.header(figures.pack(_rank(3)), math.inf, "gpu-d", 0))
    assert unknown.affordable_mb == math.inf and figures.agree([read, unknown])[1] == 512.0  # no limit of its own
    nan = figures.read_header(3, figures.header(figures.pack(_rank(3)), math.nan, "gpu-d", 0))
    assert nan.affordable_mb == 0.0


@pytest.mark.parametrize("data", [b"", b"\0" * 7, b"x" * 10_000, b"\xff" * 98])
def test_a_header_of_any_size_or_content_is_read_as_one_of_no_magic(data):
    assert figures.read_header(4, data).problem() is not None


# -- sizes against the budget and the memory, before allocating ------------------------------------------
def test_sizes_no_device_could_all_reduce_within_the_budget_are_refused_at_validation():
    assert bounds.too_slow([1.0], 5.0, "cpu") is None and bounds.too_slow([64, 256], 30.0, "cuda") is None
    assert bounds.too_slow([4096], 0.1, "cpu") == pytest.approx(0.1 * 0.75 * 50e9 / 6 / 2**20)
    with pytest.raises(ConfigError) as raised:
        bootstrap.initialize({"preflight": {"seconds": 0.1, "sizes_mb": [4096]}})
    assert str(raised.value) == ("env.preflight.sizes_mb=[4096.0] cannot be all_reduced 6 times each within "
                                 "env.preflight.seconds=0.1, even at 50 GB/s (faster than any cpu moves them): at most "
                                 "596 MB in all fits; lower env.preflight.sizes_mb or raise env.preflight.seconds.")


def test_the_largest_message_a_rank_may_hold_shares_the_free_memory_between_its_node_s_ranks():
    assert bounds.affordable_mb(8 * 2**30, 2) == 8 * 1024 * bounds.MEMORY_SHARE / 2 / bounds.MESSAGE_COPIES
    assert bounds.affordable_mb(None, 4) == math.inf
    free = measure.free_bytes("cpu")  # this machine's MemAvailable, read for real
    assert free is None or free > 2**20


# -- the links between nodes -------------------------------------------------------------------------------
@pytest.mark.parametrize("k", range(1, 12))
def test_the_rounds_cover_each_link_once_no_node_twice_in_a_round_and_are_at_most_three(k):
    rounds = links.rounds(k)
    assert len(rounds) <= 3
    assert sorted(pair for pairs in rounds for pair in pairs) == sorted(links.ring(k))
    for pairs in rounds:
        used = [node for pair in pairs for node in pair]
        assert len(used) == len(set(used))
    assert len(links.ring(k)) == (0 if k < 2 else 1 if k == 2 else k)


def _cluster(link_gbps, per_node=1):
    """A world of ``len(link_gbps)`` nodes; ``link_gbps[i]``: the link from node i to the next, as both ends saw it
    (the end that waited for its partner saw a little less)."""
    k = len(link_gbps)
    world = [_rank(n * per_node + r, host=f"node{n + 1}") for n in range(k) for r in range(per_node)]
    for n in range(k):
        leader = world[n * per_node]
        leader.link_next_gbps = link_gbps[n]
        leader.link_prev_gbps = None if link_gbps[n - 1] is None else link_gbps[n - 1] * 0.9
    return world


def test_the_node_whose_links_are_slow_is_named_with_its_host_and_its_figure_against_theirs():
    # design.md section 8: one node's link shaped to 50 Mbit/s (0.00625 GB/s) against unshaped veths
    world = _cluster([1.2, 0.0061, 0.0059], per_node=2)  # node3's links: node2->node3 and node3->node1
    found = verdict.judge(world, Floors(), 3.0, "cpu", "gloo")
    assert [(f.kind, f.ranks) for f in found] == [("slow_link", [4, 5])]
    assert found[0].message.startswith("node node3 (ranks 4, 5): its links carry 0.0061 GB/s against the other links' "
                                       "1.2 GB/s (196.7x slower)") and "env.preflight.max_skew=3" in found[0].message


def test_links_within_the_skew_or_a_lone_link_name_nobody():
    assert verdict.judge(_cluster([1.2, 0.6, 0.9, 1.0]), Floors(), 3.0, "cpu", "gloo") == []
    assert verdict.judge(_cluster([0.001, 0.001]), Floors(), 3.0, "cpu", "gloo") == []  # 2 nodes: one link
    assert links.slow_nodes(links.links(_cluster([None, None, None])), 3.0) == []
    found = verdict.judge(_cluster([1.0, 1.1, 0.01, 0.01, 0.9, 1.2]), Floors(), 1.5, "cuda", "nccl")
    assert [f.ranks for f in found] == [[3]]  # node4 of 6: both of its links slow; its neighbours have a fast one


def test_ten_thousand_nodes_are_judged_and_only_the_slow_one_named():
    # one sort serves every node (0.3 s here at a load of 23 on 2 cores); no time is asserted: speed lives in bench/
    world = _cluster([1.0 + (n % 5) / 10 for n in range(10_000)])
    world[500].link_next_gbps = world[501].link_prev_gbps = 0.001
    world[499].link_next_gbps = world[500].link_prev_gbps = 0.001
    (found,) = verdict.judge(world, Floors(), 2.0, "cuda", "nccl")
    assert found.kind == "slow_link" and found.ranks == [500]


@pytest.mark.parametrize("size", range(1, 9))
def test_the_median_of_the_other_links_matches_a_brute_force(size):
    import random
    import statistics

    rng = random.Random(size)
    values = sorted(rng.choice([0.5, 1.0, rng.random()]) for _ in range(size))
    for taken in ([0], [size - 1], [0, size - 1], [size // 2], [size // 3, size // 2]):
        taken = sorted(set(t for t in taken if t < size))
        rest = [v for i, v in enumerate(values) if i not in taken]
        assert links._median_without(values, taken) == (pytest.approx(statistics.median(rest)) if rest else None)



def test_the_doctor_shows_the_slowest_link_between_nodes():
    from bootstrap.cli import doctor
    from bootstrap.doors import records

    measured = records.Preflight(status="slow", mode="warn", seconds=0.31, budget_s=5, max_skew=3, world_size=3,
                                 links=[records.PreflightLink(ranks=[1, 2], hosts=["node2", "node3"], gbps=0.0061),
                                        records.PreflightLink(ranks=[0, 1], hosts=["node1", "node2"], gbps=1.2)])
    section = "\n".join(doctor._preflight(measured))
    assert "links                2 between nodes, the slowest 0.0061 GB/s (node2 - node3)" in section
    assert "links" not in "\n".join(doctor._preflight(records.Preflight(seconds=0.1)))  # one node: no row


def test_a_size_larger_than_the_free_memory_allows_is_skipped_before_it_is_allocated():
    preset = {"distributed": {"init": "always"}, "provenance": {"enabled": False},
              "preflight": {"min_tflops": 0.0001, "seconds": 20, "sizes_mb": [1, 16384]}}
    affordable = bounds.affordable_mb(measure.free_bytes("cpu"), 1)
    if affordable >= 16384:
        pytest.skip(f"this machine holds a 16 GB message ({affordable:.0f} MB free for one): nothing to skip")
    with bootstrap.initialize(preset) as session:
        record = session.report.preflight
        warnings = session.report.warnings
    assert [size.size_mb for size in record.collective] == [1.0]  # 16 GB was never allocated
    said = ("env.preflight.sizes_mb: 16384 MB not measured: more than every rank can hold (0.5 of the free memory, "
            "over the ranks that share it): lower env.preflight.sizes_mb")
    assert said in record.note and f"preflight: {said}" in warnings


def test_a_node_of_one_rank_times_nothing_within_it():
    assert measure.node_members(["a#0", "b#0", "c#0"]) == []  # srun --ntasks-per-node=1: no step within a node
    assert measure.node_members(["a#0", "a#0", "b#0"]) == [[0, 1]]  # b's lone rank sends no 0 GB/s figure
    assert measure.node_members(["a#0", "a#0"]) == []  # one node: the world's all_reduce is the node's
