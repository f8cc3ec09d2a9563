"""The bad-node ledger and its evidence rule (bootstrap/distributed/ledger.py), on values: hard and soft evidence,
occasions (jobs, attempts, the watch's windows), aging, clearances, issue 39's lines, hostile lines, and what a
writer keeps."""

import json
import tracemalloc
from datetime import datetime, timedelta, timezone

import pytest

from bootstrap.distributed import ledger
from bootstrap.distributed.ledger import Rule

NOW = datetime(2026, 12, 7, 12, 0, 0, tzinfo=timezone.utc)


def _at(hours_ago: float) -> str:
    return ledger.stamp(NOW - timedelta(hours=hours_ago))


def _seen(node="node3", reason="slow", hours_ago=1.0, job="4242", attempt=0, ttl=24, **more) -> bytes:
    data = {"type": "observation", "schema_version": 2, "node": node, "reason": reason, "observed_at": _at(hours_ago),
            "valid_until": _at(hours_ago - ttl), "job_id": job, "restart_count": attempt, "kinds": [reason], **more}
    return json.dumps(data).encode()


def _cleared(node="node3", hours_ago=0.5, by="ops", why="GPU replaced") -> bytes:
    return json.dumps({"type": "clearance", "node": node, "cleared_at": _at(hours_ago), "by": by, "why": why}).encode()


def _judge(*lines, rule=Rule(), node="node3"):
    return ledger.judge(ledger.parse(b"\n".join(lines) + b"\n", NOW), NOW, rule).get(node)


def test_one_soft_observation_is_a_suspect_and_a_second_job_excludes_it_naming_both_jobs():
    one = _judge(_seen(job="4242", hours_ago=5))
    assert one.state == "suspect" and one.until == NOW + timedelta(hours=19)
    two = _judge(_seen(job="4242", hours_ago=5), _seen(job="4250", hours_ago=1, reason="slow_link"))
    assert two.state == "excluded"
    assert two.summary(NOW) == "slow, slow_link in 2 jobs (4242, 4250) in the last 5 h"
    assert two.until == NOW + timedelta(hours=19)  # when the older of the two ages out, one is left: a suspect


def test_hard_evidence_excludes_at_once_and_lasts_its_ttl():
    found = _judge(_seen(reason="faulty", hours_ago=2))
    assert found.state == "excluded" and found.summary(NOW).startswith("faulty in job 4242 at ")
    assert found.until == NOW + timedelta(hours=22)
    assert _judge(_seen(reason="invalid")).state == "excluded"


@pytest.mark.parametrize("second, occasions", [
    ({"job": "4242", "attempt": 0, "hours_ago": 0.9}, 1),  # the same attempt, minutes later: one occasion
    ({"job": "4242", "attempt": 1, "hours_ago": 0.9}, 2),  # the requeued attempt: another
    ({"job": "4242", "attempt": 0, "hours_ago": 0.4}, 2),  # the same attempt, 36 min later (a watch window)
    ({"job": None, "attempt": 0, "hours_ago": 0.9}, 2),  # no job id: an attempt of its own
])
def test_occasions_are_jobs_attempts_and_windows_far_enough_apart(second, occasions):
    found = _judge(_seen(hours_ago=1.0), _seen(**second))
    assert len(found.counted) == occasions
    assert found.state == ("excluded" if occasions >= 2 else "suspect")


def test_min_observations_is_the_count_of_occasions():
    lines = [_seen(job=str(job), hours_ago=job / 10) for job in range(1, 4)]
    assert _judge(*lines[:2], rule=Rule(min_observations=3)).state == "suspect"
    assert _judge(*lines, rule=Rule(min_observations=3)).state == "excluded"
    assert _judge(lines[0], rule=Rule(min_observations=1)).state == "excluded"  # issue 39's rule, if asked for


def test_observations_age_out_by_the_readers_ttl_and_never_outlast_their_own_valid_until():
    assert _judge(_seen(hours_ago=30), _seen(job="2", hours_ago=29)).state == "clear"
    assert _judge(_seen(hours_ago=3, reason="faulty"), rule=Rule(ttl_h=2)).state == "clear"  # the reader's TTL
    assert _judge(_seen(hours_ago=3, reason="faulty", ttl=2)).state == "clear"  # its own, shorter
    forged = _judge(_seen(hours_ago=30, reason="faulty", ttl=10**5))  # "until the year 2038": the reader's rule
    assert forged.state == "clear"


def test_a_clearance_hides_every_earlier_observation_and_later_ones_count_again():
    before = [_seen(job="1", hours_ago=3), _seen(job="2", hours_ago=2, reason="faulty")]
    cleared = _judge(*before, _cleared(hours_ago=1))
    assert cleared.state == "clear" and cleared.cleared.by == "ops" and cleared.cleared.why == "GPU replaced"
    again = _judge(*before, _cleared(hours_ago=1), _seen(job="3", hours_ago=0.5))
    assert again.state == "suspect" and [o.job_id for o in again.soft] == ["3"]


def test_a_person_s_exclusion_is_hard_and_lasts_until_its_own_valid_until():
    line = _seen(reason="by_hand", hours_ago=48, ttl=24 * 30, by="ops", why="fan failing", job=None)
    found = _judge(line)
    assert found.state == "excluded" and found.summary(NOW).endswith("by ops at " + _at(48) + ": fan failing")
    assert _judge(line, _cleared(hours_ago=1)).state == "clear"


def test_observations_their_job_did_not_count_are_recorded_and_never_evidence():
    lines = [_seen(job=str(j), hours_ago=j, counts=False, note="systemic: 3 of 3 nodes at once") for j in (1, 2, 3)]
    found = _judge(*lines)
    assert found.state == "clear" and len(found.ignored) == 3


def test_issue_39_s_lines_read_as_observations_hard_or_soft_by_their_reason():
    old = {"type": "observation", "schema_version": 1, "node": "node3", "observed_at": _at(1),
           "valid_until": _at(-23), "job_id": "41", "restart_count": 0, "kinds": ["slow"], "ranks": [3]}
    soft = _judge(json.dumps({**old, "reason": "slow"}).encode())
    assert soft.state == "suspect" and soft.soft[0].ranks == [3]
    assert _judge(json.dumps({**old, "reason": "faulty"}).encode()).state == "excluded"
    bare = json.dumps({"node": "node3", "reason": "slow", "observed_at": _at(1), "valid_until": _at(-23)}).encode()
    assert _judge(bare).state == "suspect"  # issue 39's hand-written entry: its four fields


@pytest.mark.parametrize("line, why", [
    (b"\xff\xfe binary", "not UTF-8"),
    (b"{not json", "not JSON"),
    (b"[1, 2]", "not a JSON object"),
    (b'{"node": "a b", "reason": "slow"}', "no valid 'node'"),
    (b'{"node": "node[0-99999999]", "reason": "slow"}', "no valid 'node'"),  # a host list is no node's name
    (_seen().replace(b'"observed_at": "', b'"observed_at": "x'), "UTC time"),
    (_seen(hours_ago=-1), "in the future"),
    (_seen(reason="Slow!"), "no valid 'reason'"),
    (_cleared(hours_ago=-1), "in the future"),  # a clearance dated ahead, to clear what is not observed yet
    (_cleared(by="a b"), "no valid 'by'"),
    (b'{"type": "verdict", "node": "node3"}', "neither observation nor clearance"),
    (b'{"node": NaN}', "not JSON"),
    (b"[" * 100000, "larger than 65536 bytes"),
    (b"[" * 40 + b"]" * 40, "nested more than 32 deep"),
])
def test_a_line_that_is_no_entry_is_dropped_with_its_reason_and_the_rest_read(line, why):
    read = ledger.parse(line + b"\n" + _seen(job="7") + b"\n\n", NOW)
    assert [o.job_id for o in read.observations] == ["7"] and read.clearances == []
    assert len(read.dropped) == 1 and why in read.dropped[0][1] and read.dropped[0][0] == 1
    assert read.dropped_line("f").startswith("f: line 1 dropped (")


def test_many_dropped_lines_are_counted_in_one_line():
    read = ledger.parse(b"x\n" * 1000, NOW)
    assert read.dropped_line("f") == ("f: line 1 dropped (not JSON) and 999 more: not an observation or a "
                                      "clearance; the others are read")


def test_a_writer_keeps_live_entries_as_written_and_drops_aged_ones_and_lines_that_are_no_entry():
    lines = [_seen(job="old", hours_ago=30), b"someone else's line", _seen(job="live", hours_ago=2),
             _cleared(hours_ago=40), _cleared(node="node4", hours_ago=1), _cleared(node="node5", hours_ago=40)]
    lines.insert(0, _seen(node="node5", job="hidden", hours_ago=41))
    kept = ledger.kept(ledger.parse(b"\n".join(lines), NOW), NOW, Rule())
    assert kept == [lines[3], lines[5]]  # the live observation, and the clearance made within the TTL
    hidden = [_seen(node="node5", job="h", reason="by_hand", hours_ago=41, ttl=24 * 30), _cleared("node5", 40)]
    assert ledger.kept(ledger.parse(b"\n".join(hidden), NOW), NOW, Rule()) == hidden  # it still hides one


def test_a_flood_of_ten_thousand_jobs_observations_reads_in_memory_bounded_by_the_file():
    data = b"\n".join(_seen(node=f"node{j % 50}", job=str(j), hours_ago=j / 1000) for j in range(10_000))
    tracemalloc.start()
    try:
        read = ledger.parse(data, NOW)
        judged = ledger.judge(read, NOW, Rule())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(read.observations) == 10_000 and len(judged) == 50
    assert all(found.state == "excluded" and len(found.counted) == 200 for found in judged.values())
    assert peak < 20 * len(data), (peak, len(data))  # the entries, a few times the bytes; never more


def test_the_summary_counts_attempts_and_jobs():
    attempts = _judge(_seen(job="9", attempt=0, hours_ago=2), _seen(job="9", attempt=1, hours_ago=1.9))
    assert attempts.summary(NOW) == "slow 2 times in 1 job (9) in the last 2 h"
    many = _judge(*[_seen(job=str(j), hours_ago=j / 10) for j in range(1, 8)])
    assert many.summary(NOW) == "slow in 7 jobs (7, 6, 5, 4, 3 and 2 more) in the last 1 h"
    assert ledger.excluded(ledger.parse(b"\n".join([_seen(job="1"), _seen(job="2")]), NOW), NOW, Rule()) == ["node3"]
    assert ledger.excluded(ledger.parse(_seen(reason="faulty"), NOW), NOW, Rule(), ignore=["node3"]) == []


def test_a_rank_that_reads_the_job_s_own_lines_back_counts_the_job_once():
    """Rank 0 adds the job's observations to the ledger; a slower rank that reads it afterwards judges the job's
    observations with the ledger too. Without a job id each copy was an attempt of its own, and a slow Lightning rank
    said its node was excluded after one job."""
    own = _seen(job=None, hours_ago=0.001, ranks=[1], message="rank 1 (node3) is 12.7x slower")
    other = _seen(job=None, hours_ago=2, ranks=[1], message="rank 1 (node3) is 4.0x slower")
    past = ledger.parse(b"\n".join([other, own]) + b"\n", NOW)
    made = ledger.parse(own.replace(_at(0.001).encode(), _at(0).encode()) + b"\n", NOW).observations  # its own moment
    kept = ledger.without_own(past, [seen.to_json() for seen in made], NOW)
    assert [seen.message for seen in kept.observations] == ["rank 1 (node3) is 4.0x slower"]
    once = ledger.Ledger(entries=[*ledger.without_own(ledger.parse(own + b"\n", NOW), [made[0].to_json()], NOW).entries,
                                  *((seen, b"") for seen in made)])
    assert ledger.judge(once, NOW, Rule())["node3"].state == "suspect"  # one job, one occasion
    twice = ledger.Ledger(entries=[*kept.entries, *((seen, b"") for seen in made)])
    assert ledger.judge(twice, NOW, Rule())["node3"].state == "excluded"  # another job's observation still counts
