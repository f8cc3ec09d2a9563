"""The preflight's pure parts fed values: compute verdicts on real tensors, the skew and floor rules, the
records ranks send each other, nccl-tests' bus bandwidth, the schema's checks, and a lone process measured
for real (issue 29). The check across ranks runs under torchrun in tests/e2e/test_preflight.py."""
import random

import pytest
import torch

import bootstrap
from bootstrap.core import preflight as preflight_step
from bootstrap.doors.errors import ConfigError, PreflightError
from bootstrap.preflight import check, figures, verdict
from bootstrap.preflight.figures import Compute, RankFigures
from bootstrap.preflight.verdict import Floors


def _rank(rank, tflops, host=None, busbw=None, node_busbw=None, compute=Compute.OK, node_rank=0):
    return RankFigures(rank=rank, host=host or f"node{rank}", node_rank=node_rank, compute=compute, tflops=tflops,
                       busbw_gbps=busbw, node_busbw_gbps=node_busbw)


# -- compute verdicts, on real tensors ---------------------------------------------------------------
@pytest.fixture(scope="module")
def product():
    generator = torch.Generator().manual_seed(1)
    a, b = torch.randn(16, 1024, generator=generator), torch.randn(1024, 1024, generator=generator)
    return a @ b, a.double() @ b.double(), a, b


def test_float32_rounding_is_not_faulty(product):
    result, reference, a, b = product
    error = verdict.compute_error(result, reference, a, b)
    assert 0 < error < verdict.TOLERANCE["highest"] / 20  # real rounding, far inside the tolerance
    assert verdict.compute_verdict(error, "highest") is Compute.OK


def test_bfloat16_and_tf32_rounding_pass_at_their_precision_only(product):
    _, reference, a, b = product
    rounded = a.bfloat16().float() @ b.bfloat16().float()  # the inputs as a bf16 matmul rounds them
    error = verdict.compute_error(rounded, reference, a, b)
    assert verdict.compute_verdict(error, "medium") is Compute.OK
    assert verdict.compute_verdict(error, "highest") is Compute.WRONG

    def tf32(x):  # round to nearest at 10 bits of mantissa, as TF32 tensor cores take their inputs
        return ((x.view(torch.int32) + 0x1000) & ~0x1FFF).view(torch.float32)

    error = verdict.compute_error(tf32(a) @ tf32(b), reference, a, b)
    assert verdict.compute_verdict(error, "high") is Compute.OK and error > verdict.TOLERANCE["highest"]


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_a_nan_or_inf_is_faulty(product, bad):
    result, reference, a, b = product
    broken = result.clone()
    broken[3, 7] = bad
    assert verdict.compute_error(broken, reference, a, b) == float("inf")
    assert verdict.compute_verdict(verdict.compute_error(broken, reference, a, b), "high") is Compute.NOT_FINITE


@pytest.mark.parametrize("spoil", [lambda x: x * 2, lambda x: -x, lambda x: x + 1e3],
                         ids=["an element doubled", "an element of the wrong sign", "a garbage element"])
def test_one_wrong_element_is_faulty_even_at_tf32_tolerance(product, spoil):
    result, reference, a, b = product
    broken = result.clone()
    row, column = divmod(int(reference.abs().argmax()), reference.shape[1])  # an element large enough to matter
    broken[row, column] = spoil(broken[row, column])
    assert verdict.compute_verdict(verdict.compute_error(broken, reference, a, b), "high") is Compute.WRONG


# -- who is slow ---------------------------------------------------------------------------------------
def test_medians_of_the_other_ranks_match_a_brute_force():
    rng = random.Random(3)
    for size in (1, 2, 3, 4, 7, 10):
        values = [rng.choice([1.0, 2.0, rng.random()]) for _ in range(size)]
        expected = [None if size == 1 else sorted(values[:i] + values[i + 1:])[(size - 2) // 2] / 2
                    + sorted(values[:i] + values[i + 1:])[(size - 1) // 2] / 2 for i in range(size)]
        assert verdict.medians_of_others(values) == pytest.approx(expected)


def test_two_ranks_one_slow_names_it_with_its_figure_and_the_others():
    found = verdict.judge([_rank(0, 0.0715), _rank(1, 0.0161, host="gpu-b")], Floors(), 2.0, "cpu", "gloo")
    assert [f.kind for f in found] == ["slow"] and found[0].ranks == [1]
    assert "rank 1 (gpu-b) is 4.4x slower than the other ranks' median (0.0161 TFLOP/s against 0.0715)" \
        in found[0].message
    assert "env.preflight.max_skew=2" in found[0].message
    # against the median of both ranks (0.0438) rank 1 would be only 2.7x slower, and pass max_skew=3:
    # the rule compares with the *other* ranks
    assert [f.ranks for f in verdict.judge([_rank(0, 0.0715), _rank(1, 0.0161)], Floors(), 3.0, "cpu", "gloo")] \
        == [[1]]
    assert verdict.judge([_rank(0, 0.0715), _rank(1, 0.0161)], Floors(), 4.5, "cpu", "gloo") == []


def test_a_healthy_world_and_noise_under_the_skew_find_nothing():
    world = [_rank(r, 100 + r % 7) for r in range(64)]
    assert verdict.judge(world, Floors(min_tflops=50), 1.5, "cuda", "nccl") == []
    assert verdict.status([]) == "ok"


def test_ten_thousand_ranks_are_judged_naming_the_slow_one_alone():
    # (how long it takes, against 1,000 ranks: bench/bench_scale.py's verdict benchmark)
    world = [_rank(r, 100.0 + (r % 13)) for r in range(10_000)]
    world[4321] = _rank(4321, 20.0)
    found = verdict.judge(world, Floors(), 1.5, "cuda", "nccl")
    assert [f.ranks for f in found] == [[4321]]


def test_many_slow_ranks_are_named_up_to_a_bound_and_counted():
    world = [_rank(r, 10.0 if r % 2 else 100.0) for r in range(40)]
    world += [_rank(r, 100.0) for r in range(40, 100)]
    found = verdict.judge(world, Floors(), 2.0, "cuda", "nccl")
    assert found[0].ranks == [1, 3, 5, 7, 9, 11, 13, 15] and "and 12 more" in found[0].message


# -- floors ---------------------------------------------------------------------------------------------
def test_a_compute_floor_names_the_rank_the_figure_and_the_key():
    found = verdict.judge([_rank(0, 0.05)], Floors(min_tflops=100), 2.0, "cuda", "nccl", key="bootstrap_env")
    assert found[0].kind == "min_tflops" and "rank 0 (node0) 0.05 TFLOP/s" in found[0].message
    assert "bootstrap_env.preflight.min_tflops=100" in found[0].message and "throttled" in found[0].message


def test_a_socket_fall_back_is_named_by_the_world_floor_with_the_fix():
    world = [_rank(r, 300.0, busbw=3.1) for r in range(16)]
    found = verdict.judge(world, Floors(min_busbw_gbps=100), 1.5, "cuda", "nccl")
    assert [f.kind for f in found] == ["min_busbw_gbps"]
    assert "bus bandwidth is 3.1 GB/s over 16 ranks, under the floor env.preflight.min_busbw_gbps=100" \
        in found[0].message and "NCCL may be using sockets: set NCCL_NET" in found[0].message


def test_a_slow_node_is_told_apart_from_a_slow_network():
    world = [_rank(r, 300.0, host=f"n{r // 4}", busbw=40.0, node_busbw=200.0 if r < 4 else 9.0) for r in range(8)]
    found = verdict.judge(world, Floors(min_busbw_gbps=10, min_node_busbw_gbps=100), 1.5, "cuda", "nccl")
    assert [f.kind for f in found] == ["min_node_busbw_gbps"] and found[0].ranks == [4]
    assert "ranks 4-7 on n1 9 GB/s" in found[0].message and "nvidia-smi topo -m" in found[0].message


def test_ranks_on_another_network_than_expected_are_named_by_every_rank_alike():
    world = [_rank(r, 300.0, host=f"n{r // 2}") for r in range(4)]
    for rank, network in zip(world, ["ib", "ib", "socket", None], strict=True):
        rank.network = network  # rank 3's log could not be read: no evidence either way
    found = verdict.judge(world, Floors(), 1.5, "cuda", "nccl", network="ib")
    assert [(f.kind, f.ranks) for f in found] == [("network", [2])]
    assert "rank 2 (n1) NCCL uses socket, and env.preflight.network=ib expects ib" in found[0].message
    assert "set NCCL_NET" in found[0].message
    assert verdict.judge(world, Floors(), 1.5, "cuda", "nccl", network="any") == []


def test_faulty_comes_first_and_sets_the_status():
    world = [_rank(0, 0.01), _rank(1, 0.08, compute=Compute.NOT_FINITE), _rank(2, 0.08)]
    found = verdict.judge(world, Floors(), 2.0, "cpu", "gloo")
    assert [f.kind for f in found] == ["faulty", "slow"] and verdict.status(found) == "faulty"
    assert "rank 1 (node1): NaN or Inf" in found[0].message


# -- the records ranks send each other ----------------------------------------------------------------
def test_a_record_travels_intact():
    sent = _rank(5, 0.5, host="gpu-a", busbw=12.5, node_busbw=None, compute=Compute.WRONG, node_rank=3)
    sent.network = "socket"
    assert figures.unpack(5, figures.pack(sent)) == sent
    assert len(figures.pack(sent)) == figures.LAYOUT.size


@pytest.mark.parametrize("data", [b"", b"\0" * 7, b"x" * 10_000])
def test_a_record_of_the_wrong_size_is_a_rank_that_measured_nothing(data):
    got = figures.unpack(2, data)
    assert (got.rank, got.host, got.compute, got.tflops) == (2, "?", Compute.NOT_RUN, None)


def test_a_hostile_record_is_read_within_its_bounds():
    record = figures.LAYOUT.pack(figures.VERSION, -9, 77, 200, float("nan"), -4.0, float("inf"), 0.0, 1e9,
                                 b"evil\nhost\x1b[31m" + b"\0" * 40)
    got = figures.unpack(1, record)
    assert got.compute is Compute.NOT_RUN and got.node_rank == 0 and got.network is None
    assert (got.tflops, got.busbw_gbps, got.node_busbw_gbps, got.link_prev_gbps, got.link_next_gbps) == (None,) * 5
    assert len(got.invalid) == 8  # each: the node rank, the verdict, the network and the five figures
    assert "\n" not in got.host and "\x1b" not in got.host and got.host.startswith("'evil\\nhost")


def test_bus_bandwidth_is_nccl_tests_formula():
    # nccl-tests, doc/PERFORMANCE.md: busbw = algbw * 2(n-1)/n
    assert figures.bus_bandwidth_gbps(8 * 10**9, 1.0, 8) == pytest.approx(8 * 2 * 7 / 8)
    assert figures.bus_bandwidth_gbps(10**9, 1.0, 2) == pytest.approx(1.0)  # 2 ranks: busbw = algbw
    assert figures.bus_bandwidth_gbps(10**9, 1.0, 1) == 0.0  # one rank moves nothing


# -- the schema, the request and the verdict's consequence ---------------------------------------------
@pytest.mark.parametrize("preflight, fragment", [
    ({"max_skew": 0.5}, "env.preflight.max_skew=0.5 must be above 1"),
    ({"seconds": 0}, "env.preflight.seconds=0.0 must be positive"),
    ({"seconds": float("nan")}, "env.preflight.seconds=nan"),
    ({"sizes_mb": [1] * 9}, "must list 1 to 8 message sizes"),
    ({"sizes_mb": [0.0]}, "each above 0"),
    ({"sizes_mb": [10**6]}, "at most 16384"),
    ({"min_tflops": -1}, "env.preflight.min_tflops=-1.0 is not a floor"),
    ({"min_node_busbw_gbps": float("inf")}, "env.preflight.min_node_busbw_gbps=inf"),
])
def test_bad_preflight_settings_name_the_key_and_the_fix(preflight, fragment):
    with pytest.raises(ConfigError, match="e.g.") as raised:
        bootstrap.initialize({"preflight": preflight})
    assert fragment in str(raised.value)


def test_a_lone_process_without_a_floor_skips_and_pays_nothing():
    request = check.Request(mode="warn", seconds=5, max_skew=2)
    record = check.run(request)
    assert record.status == "skipped" and record.seconds is None and "nothing to compare with" in record.note
    off = check.run(check.Request(mode="off", seconds=5, max_skew=2, floors=Floors(min_tflops=1)))
    assert off.status == "skipped" and off.note == "env.preflight.mode=off"


def test_a_lone_process_with_a_floor_it_cannot_reach_is_measured_and_stops_under_error():
    with pytest.raises(PreflightError) as raised:
        with bootstrap.initialize({"preflight": {"mode": "error", "min_tflops": 1000}}, key="cfg.env"):
            pytest.fail("the task must not run")
    message = str(raised.value)
    assert "TFLOP/s in a matmul, under the floor cfg.env.preflight.min_tflops=1000" in message
    assert "set cfg.env.preflight.mode=warn to train anyway" in message


def test_under_warn_the_finding_is_recorded_and_the_job_runs():
    with bootstrap.initialize({"preflight": {"min_tflops": 1000}}) as session:
        record = session.report.preflight
    assert record.status == "slow" and record.findings[0].kind == "min_tflops" and record.world_size == 1
    assert 0 < record.ranks[0].tflops < 1000 and record.compute_error < verdict.TOLERANCE["highest"]
    assert record.precision == "highest" and record.matrix == 512 and 0 < record.seconds < record.budget_s
    assert session.report.timings.preflight_s == record.seconds
    assert any(w.startswith("preflight: rank 0") for w in session.report.warnings)


def test_the_check_leaves_the_job_s_random_streams_alone():
    torch.manual_seed(7)
    expected = torch.rand(3)
    torch.manual_seed(7)
    check.run(check.Request(mode="warn", seconds=5, max_skew=2, always=True))
    assert torch.equal(torch.rand(3), expected)


def test_only_a_collective_that_did_not_finish_stops_a_job_under_warn():
    def record(mode, kind):
        return bootstrap.doors.records.Preflight(mode=mode, status="faulty" if kind == "unfinished" else "slow",
                                                 findings=[bootstrap.doors.records.PreflightFinding(kind=kind,
                                                                                                    message="m")])
    assert preflight_step.refusal(record("warn", "slow"), "env") is None
    assert "would not take part in training either" in preflight_step.refusal(record("warn", "unfinished"), "env")
    assert "env.preflight.mode=warn" in preflight_step.refusal(record("error", "slow"), "env")


RANK0_OF_2 = {"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1",
              "MASTER_PORT": "29500"}


def test_nccl_logs_its_start_into_the_job_dir_only_when_asked_and_the_user_has_not(monkeypatch, tmp_path):
    for name, value in RANK0_OF_2.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("NCCL_DEBUG", raising=False)
    monkeypatch.delenv("NCCL_DEBUG_FILE", raising=False)
    gpu = {"device": "cuda", "on_mismatch": "warn", "distributed": {"backend": "nccl"}, "preflight": {"network": "ib"}}
    planned = bootstrap.initialize(gpu, output_dir=tmp_path).preview()
    assert {name: planned.vars[name].value for name in ("NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE")} == \
        {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET", "NCCL_DEBUG_FILE": str(tmp_path / "nccl.%h.%p.log")}
    assert planned.preflight.network_expected == "ib" and planned.preflight.status == "skipped"
    unasked = bootstrap.initialize({**gpu, "preflight": {"network": None}}, output_dir=tmp_path).preview()
    gloo = bootstrap.initialize({**gpu, "distributed": {"backend": "gloo"}}, output_dir=tmp_path).preview()
    assert "NCCL_DEBUG" not in unasked.vars and "NCCL_DEBUG" not in gloo.vars
    monkeypatch.setenv("NCCL_DEBUG", "WARN")  # the user's own: theirs wins, and NCCL's lines go where they said
    theirs = bootstrap.initialize(gpu, output_dir=tmp_path).preview()
    assert "NCCL_DEBUG_FILE" not in theirs.vars


# -- where the results go -------------------------------------------------------------------------------
def _ran(tflops: float, status: str = "ok"):
    from bootstrap.doors import records

    slowest = records.PreflightRank(rank=1, host="gpu-b", compute="ok", tflops=tflops)
    return records.Preflight(status=status, mode="error", seconds=0.2, budget_s=30, max_skew=1.5, min_tflops=50,
                             median_tflops=300.0, busbw_gbps=40.0, slowest=slowest, ranks=[slowest], world_size=8)


def test_bootstrap_diff_says_why_tuesday_was_slower():
    from bootstrap.cli import diff
    from bootstrap.core import facts
    from bootstrap.doors.records import Report

    monday, tuesday = Report(preflight=_ran(290.0)), Report(preflight=_ran(95.123456, "slow"))
    rows = {row["name"]: (row["a"], row["b"]) for row in diff.compare(facts.facts(monday),
                                                                        facts.facts(tuesday))["preflight"]}
    assert rows == {"status": ("ok", "slow"), "slowest rank": ("1 (gpu-b) 290 TFLOP/s", "1 (gpu-b) 95.1 TFLOP/s")}
    assert "preflight check (expected, measured)" in diff.format_text("a", "b", diff.compare(
        facts.facts(monday), facts.facts(tuesday)), False)


def test_the_sweep_summary_shows_the_check_only_where_it_ran():
    from bootstrap.doors.records import Report
    from bootstrap.sweep import read, tables

    ran = read.row_from_reports("0", [Report(preflight=_ran(95.0, "slow"))])
    skipped = read.row_from_reports("1", [Report(preflight=bootstrap.doors.records.Preflight())])
    assert (ran.preflight, ran.slowest_tflops, skipped.preflight) == ("slow", 95.0, "skipped")
    assert tables.to_csv([ran, skipped]).splitlines()[:2] == [
        "job,overrides,status,intra_op,inter_op,preflight,slowest_tflops,best", "0,,unknown,,,slow,95.0,"]
    assert "preflight" not in tables.to_csv([skipped]).splitlines()[0]  # a lone process's sweep: no columns


def test_the_doctor_shows_what_the_check_expects():
    from bootstrap.cli import doctor

    preview = bootstrap.initialize({"preflight": {"min_tflops": 50, "network": "ib"}}).preview()
    text = doctor.format_text(preview)
    section = text.split("\nPreflight\n", 1)[1].split("\n\n", 1)[0]
    assert "min_tflops           50 TFLOP/s" in section and "network              ib" in section
    assert "not run: a preview (bootstrap doctor --preflight measures)" in section and "status" not in section


def test_an_unfinished_collective_names_who_had_not_arrived_or_why_it_cannot():
    from bootstrap.distributed.ranks import Ranks
    from bootstrap.preflight.measure import Unfinished

    absent = check._unfinished(Unfinished("the all_reduce of 1 MB", Ranks.span(3, 10_003), True, 3))
    assert absent.ranks == list(range(3, 3 + verdict.MAX_NAMED)) and "ranks 3-10002 had not arrived" in absent.message
    gone = check._unfinished(Unfinished("the gather", Ranks(), False, 3))
    assert "could not be read" in gone.message and "every rank had arrived" not in gone.message
    slow = check._unfinished(Unfinished("the gather", Ranks(), True, 3))
    assert "every rank had arrived: the network is far slower" in slow.message


def test_the_check_runs_on_a_group_of_its_own_and_leaves_the_job_s_store_as_it_was():
    import datetime

    import torch.distributed as dist

    preset = {"distributed": {"init": "always", "timeout_s": 321}, "preflight": {"min_tflops": 0.0001, "seconds": 2}}
    with bootstrap.initialize(preset) as session:
        store = dist.distributed_c10d._get_default_store()
        # a 1-rank group's in-memory store keeps its own default, not what was left of the check's 2 s
        assert store.timeout == datetime.timedelta(seconds=300)
        check_record = session.report.preflight
        assert check_record.status == "ok" and check_record.collective[0].reps == 5
        assert dist.get_world_size() == 1 and len(dist.distributed_c10d._world.pg_map) == 1  # the check's is gone
    assert not dist.is_initialized()


def test_a_rank_of_a_world_without_a_group_says_why_it_skips():
    record = check.run(check.Request(mode="warn", seconds=5, max_skew=2, world_size=2, rank=1, key="cfg.env"))
    assert record.status == "skipped"
    assert record.note.startswith("no process group yet (a framework makes it later, or "
                                  "cfg.env.distributed.init=never)")
