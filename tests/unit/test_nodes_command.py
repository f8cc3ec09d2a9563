"""``bootstrap nodes`` (bootstrap/cli/nodes.py) on ledgers written as jobs write them: list, explain, clear, exclude
by hand and the exclude list, each with --json; bad usage and hostile ledgers. (A ledger written by real jobs:
tests/e2e/test_bad_nodes.py.)"""

import json
import os
from datetime import datetime, timedelta, timezone

import pytest

from bootstrap.cli import commands
from bootstrap.distributed import ledger


def _line(node, job, hours_ago, reason="slow"):
    now = datetime.now(timezone.utc)
    return ledger.Observation(node, reason, ledger.stamp(now - timedelta(hours=hours_ago)),
                              ledger.stamp(now + timedelta(hours=24 - hours_ago)), job, kinds=[reason], ranks=[1],
                              message=f"rank 1 ({node}) is {reason}").to_json() + "\n"


@pytest.fixture
def ledger_file(tmp_path):
    path = tmp_path / "bad_nodes.jsonl"
    path.write_text(_line("node3", "4242", 5) + _line("node3", "4250", 2, "slow_link") + _line("node5", "4250", 2) +
                    _line("node7", "4100", 30))
    return path


def _run(capsys, *args):
    code = commands.main(["nodes", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_list_names_each_node_s_state_evidence_and_when_it_clears(capsys, ledger_file):
    code, out, err = _run(capsys, ledger_file)
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].split() == ["node", "state", "evidence", "first", "seen", "last", "seen", "clears", "at"]
    assert lines[1].startswith("node3  excluded  slow, slow_link in 2 jobs (4242, 4250) in the last 5 h")
    assert lines[2].startswith("node5  suspect   slow in 1 job (4250) in the last 2 h")
    assert len(lines) == 3  # node7's observation aged out: it is not listed
    code, out, _ = _run(capsys, ledger_file, "--json")
    listed = json.loads(out)
    assert listed["rule"] == {"ttl_h": 24.0, "min_observations": 2, "apart_s": 1800.0}
    node3 = listed["nodes"][0]
    assert (node3["node"], node3["state"], node3["observations"], node3["kinds"], node3["jobs"]) == \
        ("node3", "excluded", 2, ["slow", "slow_link"], ["4242", "4250"])
    assert node3["first_seen"] < node3["last_seen"] < node3["clears_at"]
    code, out, _ = _run(capsys, ledger_file, "--min-observations", "3", "--json")
    assert json.loads(out)["nodes"][0]["state"] == "suspect"


def test_explain_gives_every_observation_of_a_node(capsys, ledger_file):
    code, out, _ = _run(capsys, ledger_file, "--explain", "node3")
    assert code == 0 and out.splitlines()[0].startswith("node3: excluded: slow, slow_link in 2 jobs")
    assert out.count(": counts\n") == 2 and "rank 1 (node3) is slow_link" in out
    code, out, _ = _run(capsys, ledger_file, "--explain", "node7", "--json")
    explained = json.loads(out)
    assert explained["state"] == "clear" and [e["standing"] for e in explained["entries"]] == ["aged out"]
    assert _run(capsys, ledger_file, "--explain", "node[1-2]")[0] == 2


def test_clear_adds_an_entry_saying_who_and_why_and_the_node_runs_again(capsys, ledger_file):
    before = ledger_file.read_text()
    code, out, err = _run(capsys, ledger_file, "--clear", "node3", "--why", "GPU replaced")
    assert code == 0 and err == "" and "node3 cleared by " in out and ": GPU replaced" in out
    after = ledger_file.read_text()
    assert after.splitlines()[:3] == before.splitlines()[:3]  # an entry added, none edited (node7's aged out)
    added = json.loads(after.splitlines()[-1])
    assert (added["type"], added["node"], added["why"]) == ("clearance", "node3", "GPU replaced") and added["by"]
    code, out, _ = _run(capsys, ledger_file, "--json")
    assert [(n["node"], n["state"]) for n in json.loads(out)["nodes"]] == [("node3", "clear"), ("node5", "suspect")]
    code, out, _ = _run(capsys, ledger_file, "--explain", "node3")
    assert out.count(": cleared\n") == 2 and "cleared by " in out


def test_exclude_by_hand_is_hard_evidence_until_cleared_and_the_list_feeds_sbatch(capsys, ledger_file):
    code, out, _ = _run(capsys, ledger_file, "--exclude", "node[8-9]", "--why", "fan failing", "--json")
    assert code == 0 and [n["state"] for n in json.loads(out)["nodes"]] == ["excluded", "excluded"]
    code, out, _ = _run(capsys, ledger_file, "--exclude-list")
    assert (code, out) == (0, "node[3,8-9]\n")
    code, out, _ = _run(capsys, ledger_file, "--exclude-list", "--json")
    assert json.loads(out) == {"exclude": "node[3,8-9]"}
    code, out, _ = _run(capsys, ledger_file, "--explain", "node8")
    assert "excluded by hand by " in out and ": fan failing" in out


@pytest.mark.parametrize("args, said", [
    (["--clear", "node3"], "--clear needs --why"),
    (["--exclude", "node3", "--why", " "], "--exclude needs --why"),
    (["--exclude", "node[0-99999999]", "--why", "bomb"], "NODE names 100000000 hosts; at most 4096 are read"),
    (["--clear", "a;b", "--why", "x"], "is not a host name"),
    (["--hours", "3"], "--hours goes with --exclude NODE"),
    (["--min-observations", "0"], "--min-observations takes a count in [1, 1000]"),
    (["--ttl-h", "nan"], "--ttl-h takes positive hours"),
])
def test_bad_usage_is_one_line_and_exit_2_writing_nothing(capsys, ledger_file, args, said):
    before = ledger_file.read_bytes()
    code, out, err = _run(capsys, ledger_file, *args)
    assert code == 2 and out == "" and said in err
    assert ledger_file.read_bytes() == before


def test_a_ledger_that_cannot_be_believed_is_one_line_and_exit_1(capsys, ledger_file, tmp_path):
    os.chmod(ledger_file, 0o666)
    code, out, err = _run(capsys, ledger_file)
    assert (code, out) == (1, "") and err == ("bootstrap nodes: bad_nodes.jsonl: not trusted: every user may write it "
                                              "(mode 666): chmod o-w it: the ledger is not read\n")
    code, _, err = _run(capsys, ledger_file, "--clear", "node3", "--why", "x")
    assert code == 1 and "the observations were not added: bad_nodes.jsonl: not trusted" in err
    link = tmp_path / "link.jsonl"
    link.symlink_to(ledger_file)
    assert _run(capsys, link)[0] == 1
    assert _run(capsys, tmp_path / "none.jsonl") == (0, f"{tmp_path / 'none.jsonl'}: no node observed in the last "
                                                        "24 h\n", "")
