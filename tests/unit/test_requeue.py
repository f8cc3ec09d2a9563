"""SLURM's retry of a job with bad nodes (bootstrap/distributed/requeue.py): the pure decision. The scontrol lines
themselves run on a real SLURM in tests/e2e (docs/preflight.md#bad-nodes says what is verified)."""

import pytest

from bootstrap.distributed import requeue
from bootstrap.distributed.launchvars import slurm_attempt
from bootstrap.doors.errors import ConfigError, RequeuedError

SHOW = ("JobId=12 JobName=train UserId=u(1000) Requeue=1 Restarts=1 ReqNodeList=(null) ExcNodeList=node[2,5] "
        "NodeList=node[1,3]")


def test_the_jobs_exclusion_is_read_from_scontrol_show_job():
    assert requeue.excluded_now(SHOW) == "node[2,5]"
    assert requeue.excluded_now(SHOW.replace("node[2,5]", "(null)")) == ""
    assert requeue.excluded_now("") == ""


def test_a_first_requeue_excludes_the_bad_nodes_merged_with_the_jobs_own():
    decision = requeue.decide("12", ["node3"], "node[2,5]", 0, 2, "slow")
    assert decision.requeue and decision.exit_code == RequeuedError.exit_code == 75
    assert decision.excluded == "node[2-3,5]"
    assert decision.commands == [["scontrol", "requeuehold", "12"],
                                 ["scontrol", "update", "JobId=12", "ExcNodeList=node[2-3,5]"],
                                 ["scontrol", "release", "12"]]
    assert decision.drain == [["scontrol", "update", "NodeName=node3", "State=DRAIN",
                               "Reason=hydra-train-bootstrap: slow (job 12)"]]
    assert requeue.line(decision.drain[0]).endswith("'Reason=hydra-train-bootstrap: slow (job 12)'")
    assert "attempt 1 of at most 3" in decision.message


def test_the_loop_stops_at_max_requeues_naming_every_node_it_excluded():
    decision = requeue.decide("12", ["node4"], "node[2-3]", 2, 2, "slow")
    assert not decision.requeue and decision.commands == [] and decision.exit_code == 1
    assert decision.excluded == "node[2-4]"
    assert "env.nodes.max_requeues=2 reached (SLURM_RESTART_COUNT=2)" in decision.message
    assert "--exclude=node[2-4]" in decision.message


def test_soft_evidence_that_excludes_no_node_requeues_the_job_as_it_is():
    decision = requeue.decide("12", [], "node[2,5]", 0, 2, "slow")
    assert decision.requeue and decision.drain == []
    assert decision.commands == [["scontrol", "requeuehold", "12"], ["scontrol", "release", "12"]]  # no update
    assert decision.excluded == "node[2,5]"  # the job's own, untouched
    assert decision.message == ("requeued job 12 (attempt 1 of at most 3) excluding nothing: no node meets the "
                                "evidence rule yet; SLURM may place it on the same nodes, and an observation there "
                                "again excludes the node")
    stop = requeue.decide("12", [], "", 2, 2, "slow")
    assert not stop.requeue and "Excluded: nothing; resubmit, or raise env.nodes.max_requeues" in stop.message


def test_max_requeues_zero_never_requeues():
    assert not requeue.decide("12", ["node4"], "", 0, 0, "slow").requeue


@pytest.mark.parametrize("environ, attempt", [({}, None), ({"SLURM_JOB_ID": "12"}, ("12", 0)),
                                               ({"SLURM_JOB_ID": "12", "SLURM_RESTART_COUNT": "2"}, ("12", 2))])
def test_the_restart_count_links_attempts(environ, attempt):
    assert slurm_attempt(environ) == attempt


@pytest.mark.parametrize("value", ["-1", "one", "1e3", "\u0663", "9" * 12])
def test_a_restart_count_that_is_no_whole_number_is_refused_naming_it(value):
    with pytest.raises(ConfigError, match="SLURM_RESTART_COUNT"):
        slurm_attempt({"SLURM_JOB_ID": "12", "SLURM_RESTART_COUNT": value})
