"""The rank agreement's pure parts: the fingerprint, what each difference means, the message."""
from types import SimpleNamespace

import pytest

from bootstrap.core import agreement, comparison
from bootstrap.core.comparison import Facts, Status
from bootstrap.distributed.agree_store import OddRank
from bootstrap.doors import records

FACTS = Facts(versions={"python": "3.11.7", "torch": "2.13.0", "cuda": None, "bootstrap": "0.1.0"},
              preset="cpu_debug", preset_digest="sha256:abc", device_type="cpu", intra_op=2, inter_op=1,
              torch={"matmul_precision": "highest", "deterministic": False}, debug_level="OFF")


def test_the_fingerprint_holds_what_must_agree_and_leaves_out_what_differs_per_rank():
    environ = {"NCCL_ALGO": "Ring", "RANK": "3", "LOCAL_RANK": "1", "CUDA_VISIBLE_DEVICES": "1", "HOSTNAME": "b",
               "MY_APP_SETTING": "x", "OMP_NUM_THREADS": "2"}
    prints = comparison.fingerprint(FACTS, environ)
    assert prints == {
        "version.python": "3.11.7", "version.torch": "2.13.0", "version.bootstrap": "0.1.0",
        "preset.name": "cpu_debug", "preset.digest": "sha256:abc", "device.type": "cpu",
        "threads.intra_op": "2", "threads.inter_op": "1", "torch.matmul_precision": "highest",
        "torch.deterministic": "False", "effective.distributed_debug": "OFF",
        "var.NCCL_ALGO": "Ring", "var.OMP_NUM_THREADS": "2"}  # no rank, device, host or unknown variable


def test_a_secret_in_a_known_variable_is_masked_in_the_report_and_salted_for_peers():
    environ = {"NCCL_IB_HCA": "https://user:hunter2secret@host/x"}  # a credential inside a known variable's value
    assert comparison.fingerprint(FACTS, environ)["var.NCCL_IB_HCA"] == "***"
    salted = comparison.fingerprint(FACTS, environ, comparison.salted("s" * 32))["var.NCCL_IB_HCA"]
    assert "hunter2secret" not in salted and comparison.shown("var.NCCL_IB_HCA", salted) == "***"


@pytest.mark.parametrize("key, kind", [
    ("version.torch", "version"), ("preset.digest", "preset"), ("device.type", "device"),
    ("effective.distributed_debug", "collective"), ("var.TORCH_DISTRIBUTED_DEBUG", "collective"),
    ("var.NCCL_ALGO", "collective"), ("var.NCCL_DEBUG", "logging"), ("threads.intra_op", "speed"),
    ("var.OMP_NUM_THREADS", "speed"), ("torch.matmul_precision", "numerics"), ("torch.cudnn_benchmark", "speed"),
    ("torch.detect_anomaly", "speed"), ("torch.a_later_versions_setting", "numerics")])
def test_each_key_has_the_kind_the_rule_gives(key, kind):
    assert comparison.kind_of(key) == kind


REFERENCE = {"var.NCCL_ALGO": "Ring", "version.torch": "2.13.0"}


def test_values_are_grouped_with_their_ranks_and_rank_zeros_side_counts_the_silent_ones():
    odd = [OddRank(rank=5, host="node-b", values={"var.NCCL_ALGO": None}),
           OddRank(rank=9, host="node-c", values={"var.NCCL_ALGO": None, "version.torch": "2.12.0"})]
    (algo, torch_version), more = comparison.differences(REFERENCE, "node-a", odd, 2, 64, "error")
    assert more == 0
    assert (algo.name, algo.kind, algo.stops) == ("var.NCCL_ALGO", "collective", True)
    assert [(g.value, g.ranks, g.hosts, g.others) for g in algo.values] == [
        ("unset", [5, 9], ["node-b", "node-c"], 0), ("Ring", [0], ["node-a"], 61)]
    # rank 5 differs on NCCL_ALGO only: on torch it holds rank 0's value, and is named there
    assert [(g.value, g.ranks, g.others) for g in torch_version.values] == [("2.12.0", [9], 0), ("2.13.0", [0, 5], 61)]


def test_the_message_names_the_odd_rank_each_value_and_the_fix():
    odd = [OddRank(rank=1, host="node-b", values={"var.TORCH_DISTRIBUTED_DEBUG": "INFO",
                                                  "effective.distributed_debug": "INFO"})]
    record = comparison.outcome({"effective.distributed_debug": "OFF"}, "node-a", odd, 1, 2, "error")
    assert record.status == Status.STOPPED
    assert record.message.startswith("the ranks did not start alike in what collectives depend on; odd one out: "
                                     "rank 1 (node-b). rank 1 (node-b): TORCH_DISTRIBUTED_DEBUG=INFO; "
                                     "rank 0 (node-a): unset [collective]. Fix: set TORCH_DISTRIBUTED_DEBUG alike")
    assert record.message.endswith("distributed.agree=warn to go on anyway.")
    assert "get_debug_level" not in record.message  # said once, through its variable


def test_when_most_ranks_differ_rank_zeros_side_is_the_odd_one():
    odd = [OddRank(rank=r, host="b", values={"var.NCCL_PROTO": "LL"}) for r in (1, 2, 3)]
    record = comparison.outcome({"var.NCCL_PROTO": "Simple"}, "a", odd, 3, 4, "error")
    assert "odd one out: rank 0 (a) (the others differ from them)" in record.message


@pytest.mark.parametrize("policy, status", [("error", Status.DIFFERS), ("warn", Status.DIFFERS)])
def test_logging_differences_never_stop(policy, status):
    odd = [OddRank(rank=1, host="b", values={"var.NCCL_DEBUG": "INFO"})]
    record = comparison.outcome({}, "a", odd, 1, 2, policy)
    assert record.status == status and not record.differences[0].stops
    assert "agree=warn" not in record.message


def test_under_warn_a_collective_difference_is_recorded_not_stopping():
    odd = [OddRank(rank=1, host="b", values={"var.NCCL_ALGO": "Tree"})]
    assert comparison.outcome({}, "a", odd, 1, 2, "warn").status == Status.DIFFERS


def test_values_in_messages_are_masked_and_bounded():
    odd = [OddRank(rank=1, host="b", values={"var.NCCL_SOCKET_IFNAME": "x" * 5000})]
    record = comparison.outcome({}, "a", odd, 1, 2, "error")
    assert len(record.message) < 1000 and record.differences[0].values[0].value.endswith("...")


def test_a_framework_started_rank_leaves_out_what_rank_zero_planned_for_one_process():
    own = {"threads.intra_op": "1", "var.OMP_NUM_THREADS": "1", "var.NCCL_ALGO": "Ring", "version.torch": "2.13.0"}
    theirs = {"threads.intra_op": "2", "version.torch": "2.13.0"}
    reference = records.Report(distributed=records.Distributed(agreement=records.Agreement(
        status="single", host="a", fingerprint=theirs)))
    record = agreement.compare_with_report(reference, own, 1, 2, "error", planned=["OMP_NUM_THREADS"])
    assert [d.name for d in record.differences] == ["var.NCCL_ALGO"]  # an export the bootstrap did not plan
    assert record.status == Status.STOPPED


def test_what_rank_zeros_process_set_for_itself_is_still_compared():
    # rank 0's report records it (source process), yet rank 0's bootstrap did not plan it: a task that changed it
    # before the framework started rank 1 gave rank 1 another value, and the comparison says so
    nvml, algo = "PYTORCH_NVML_BASED_CUDA_CHECK", "NCCL_ALGO"
    reference = records.Report(vars={
        nvml: records.Var(value="1", source="process", effective=True),
        algo: records.Var(value="Ring", source="preset", effective=True)},
        distributed=records.Distributed(agreement=records.Agreement(
            status="single", host="a", fingerprint={f"var.{nvml}": "1", f"var.{algo}": "Ring"})))
    own = {f"var.{nvml}": "0", f"var.{algo}": "Tree"}
    record = agreement.compare_with_report(reference, own, 1, 2, "error")
    assert [d.name for d in record.differences] == [f"var.{nvml}"]  # NCCL_ALGO: rank 0 planned it, left out


def test_off_compares_nothing_and_one_rank_only_records_its_fingerprint():
    single = SimpleNamespace(world_size=1, rank=0)
    off, store = agreement.check("off", single, FACTS, None, False, 60)
    assert (off.status, off.fingerprint, store) == (Status.OFF, {}, None)
    alone, _ = agreement.check("error", single, FACTS, None, False, 60)
    assert alone.status == Status.SINGLE and alone.fingerprint["preset.name"] == "cpu_debug" and alone.digest
