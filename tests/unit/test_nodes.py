"""Bad nodes as steps of a job's start (bootstrap/core/nodes.py), on real files: the shared exclusion file read at
start, hostile ones included, and the records written after the preflight."""

import json
import os
from pathlib import Path
from datetime import datetime, timedelta, timezone

import pytest

from bootstrap.core import facts, nodes
from bootstrap.core.plan import make_plan
from bootstrap.core.schema import EnvConfig, Nodes, OnBad, load, validate
from bootstrap.distributed.launcher import Launch, Launcher
from bootstrap.doors import records
from bootstrap.doors.errors import BadNodeError, ConfigError, PreflightError
from bootstrap.variables.readers import ProcessState


def _stamp(moment):
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _entry(node="node3", hours_ago=1.0, **more):
    now = datetime.now(timezone.utc)
    return json.dumps({"node": node, "reason": "slow", "observed_at": _stamp(now - timedelta(hours=hours_ago)),
                       "valid_until": _stamp(now + timedelta(hours=24 - hours_ago)), **more}) + "\n"


def _preset(path, **nodes_fields):
    return EnvConfig(nodes=Nodes(exclude_file=str(path), **nodes_fields))


def test_a_listed_host_stops_before_the_group_naming_the_entry_and_the_exclude(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(_entry(job_id="41"))
    warnings = []
    refusal = nodes.at_start(_preset(path), "env", warnings, "node3", {"SLURM_JOB_ID": "42"})
    assert refusal.error is BadNodeError and warnings == []
    assert "lists this host node3: slow at" in refusal.message and "by job 41" in refusal.message
    assert "--exclude=node3" in refusal.message and "\n" not in refusal.message
    assert nodes.at_start(_preset(path), "env", [], "node4") is None
    assert nodes.at_start(_preset(path, ignore=["node3"]), "env", [], "node3") is None


def test_an_expired_entry_no_longer_stops_a_job(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(_entry(hours_ago=30))
    assert nodes.at_start(_preset(path), "env", [], "node3") is None
    path.write_text(_entry(hours_ago=3))
    assert nodes.at_start(_preset(path, exclude_ttl_h=2), "env", [], "node3") is None  # the reader's own TTL
    assert nodes.at_start(_preset(path, exclude_ttl_h=4), "env", [], "node3") is not None


def _hostile(tmp_path, kind):
    path = tmp_path / "bad.jsonl"
    if kind == "binary":
        path.write_bytes(os.urandom(4096).replace(b"\n", b"") + b"\n" + _entry().encode())
    elif kind == "sparse 1 GB":
        with open(path, "wb") as f:
            f.truncate(2**30)
    elif kind == "link to /dev/zero":
        path.symlink_to("/dev/zero")
    elif kind == "a directory":
        path.mkdir()
    elif kind == "a fifo":
        os.mkfifo(path)
    elif kind == "forged, every user may write it":
        path.write_text(_entry())
        os.chmod(path, 0o666)
    return path


@pytest.mark.parametrize("kind, warning, stops", [
    ("binary", "env.nodes.exclude_file: line 1 skipped (not UTF-8 text); the other entries are read", True),
    ("sparse 1 GB", "env.nodes.exclude_file: bad.jsonl: larger than 4194304 bytes: its entries are not read, "
                    "and the job goes on", False),
    ("link to /dev/zero", "env.nodes.exclude_file: bad.jsonl: not a regular file: its entries are not read, and "
                          "the job goes on", False),
    ("a directory", "bad.jsonl: not a regular file", False),
    ("a fifo", "bad.jsonl: not a regular file", False),
    ("forged, every user may write it", "every user may write bad.jsonl (mode 666): its entries are not trusted",
     False),
])
def test_a_hostile_exclusion_file_is_one_line_never_a_crash(tmp_path, kind, warning, stops):
    path = _hostile(tmp_path, kind)
    warnings = []
    refusal = nodes.at_start(_preset(path), "env", warnings, "node3")
    assert (refusal is not None) is stops
    assert len(warnings) == 1 and warning in warnings[0] and "\n" not in warnings[0]


def test_a_missing_file_lists_nothing_silently(tmp_path):
    warnings = []
    assert nodes.at_start(_preset(tmp_path / "none.jsonl"), "env", warnings, "node3") is None and warnings == []


@pytest.mark.parametrize("fields, key", [
    ({"exclude_ttl_h": 0.0}, "env.nodes.exclude_ttl_h=0.0 must be positive hours"),
    ({"exclude_ttl_h": float("nan")}, "env.nodes.exclude_ttl_h=nan"),
    ({"max_requeues": -1}, "env.nodes.max_requeues=-1 must be a count"),
    ({"ignore": ["node3", "a b"]}, "'a b' is not a host name"),
    ({"exclude_file": " "}, "env.nodes.exclude_file=' ' is not a path"),
])
def test_bad_nodes_settings_are_refused_in_one_line_naming_the_key(fields, key):
    with pytest.raises(ConfigError) as refused:
        validate(EnvConfig(nodes=Nodes(**fields)))
    assert key in str(refused.value) and "\n" not in str(refused.value)


def _plan(tmp_path, rank=0):
    launch = Launch(Launcher("torchrun"), rank=rank, local_rank=rank, world_size=4, local_world_size=2,
                    master_addr="node1", master_port=29500, job_id="run1")
    return make_plan(load({}), environ_now={}, env_set={}, explicit_vars=(),
                     state=ProcessState(cuda_initialized=False, process_group_initialized=False), cpus=2,
                     machine_cpus=2, launch=launch, output_dir=str(tmp_path / "run"))


def _checked():
    return records.Preflight(
        mode="error", median_tflops=0.5, max_skew=2.0,
        ranks=[records.PreflightRank(rank=0, host="node1", tflops=0.5),
               records.PreflightRank(rank=3, host="node3", tflops=0.05)],
        findings=[records.PreflightFinding(kind="slow", message="rank 3 (node3) is 10x slower", ranks=[3])])


def test_rank_0_writes_both_files_appends_to_the_shared_one_and_the_report_names_the_nodes(tmp_path):
    shared = tmp_path / "shared.jsonl"
    shared.write_text(_entry("node9"))
    os.chmod(shared, 0o664)
    checked, warnings = _checked(), []
    stopped = nodes.after_preflight(_preset(shared), _plan(tmp_path), checked, "preflight: slow", "env", warnings,
                                    {})
    assert isinstance(stopped, PreflightError) and "bad nodes: node3 (exclude.txt" in str(stopped)
    assert warnings == []
    run = tmp_path / "run"
    record = [json.loads(line) for line in (run / "bad_nodes.jsonl").read_text().splitlines()]
    assert [(r["node"], r["reason"], r["ranks"], r["job_id"]) for r in record] == [("node3", "slow", [3], "run1")]
    assert (run / "exclude.txt").read_text() == "node3\n"
    lines = [json.loads(line) for line in shared.read_text().splitlines()]
    assert [line["node"] for line in lines] == ["node9", "node3"] and lines[1] == record[0]  # the whole record
    assert oct(os.stat(shared).st_mode & 0o777) == oct(0o664)  # the shared file keeps its mode
    assert [(b.node, b.reason, b.ranks) for b in checked.bad_nodes] == [("node3", "slow", [3])]
    assert checked.on_bad == "stopped" and checked.restart_count is None


def test_other_ranks_write_nothing_and_a_warning_finding_is_recorded_without_a_stop(tmp_path):
    checked = _checked()
    assert nodes.after_preflight(_preset(tmp_path / "s.jsonl"), _plan(tmp_path, rank=1), checked, None, "env",
                                 [], {}) is None
    assert not (tmp_path / "run").exists() and not (tmp_path / "s.jsonl").exists()
    assert checked.on_bad == "recorded" and [b.node for b in checked.bad_nodes] == ["node3"]


def test_a_shared_file_that_cannot_be_replaced_is_a_warning(tmp_path):
    shared = tmp_path / "shared.jsonl"
    shared.symlink_to("/dev/zero")
    warnings = []
    nodes.after_preflight(_preset(shared), _plan(tmp_path), _checked(), None, "env", warnings, {})
    assert warnings == ["env.nodes.exclude_file: the bad nodes were not added: shared.jsonl: not a regular file"]
    assert shared.is_symlink()


def test_requeue_outside_slurm_stops_saying_so(tmp_path):
    checked = _checked()
    stopped = nodes.after_preflight(_preset(tmp_path / "s.jsonl", on_bad=OnBad.requeue), _plan(tmp_path), checked,
                                    "preflight: slow", "env", [], {})
    assert isinstance(stopped, PreflightError) and "on_bad=requeue: not a SLURM job" in str(stopped)


KEPT5 = Path(__file__).resolve().parents[1] / "data" / "reports" / "schema5-bad-nodes" / "bootstrap.json"
KEPT4 = KEPT5.parents[1] / "schema4-provenance" / "bootstrap.json"


def test_bootstrap_diff_shows_the_bad_nodes_and_leaves_them_out_against_an_older_report(capsys):
    from bootstrap.cli import diff

    report = records.read_report(KEPT5)
    shown = facts.facts(report)["preflight"]
    host = report.preflight.bad_nodes[0].node
    assert shown["bad nodes"] == f"{host} (min_tflops)" and shown["on_bad"] == "recorded"
    diff.main([str(KEPT5), str(KEPT4)])
    out = capsys.readouterr().out
    assert "not compared: the bad nodes, which schema_version 4 reports do not hold (added in 5)" in out
    assert "bad nodes" not in out.replace("the bad nodes", "")


def test_the_sweep_summary_gets_a_bad_nodes_column_only_when_a_job_has_one():
    from bootstrap.sweep.read import Row
    from bootstrap.sweep.tables import to_markdown

    rows = [Row(job="0", overrides="", status="completed", intra_op=1, inter_op=1, preflight="slow",
                bad_nodes="node3 (slow)"),
            Row(job="1", overrides="", status="completed", intra_op=1, inter_op=1, preflight="ok")]
    assert "bad_nodes" in to_markdown(rows) and "node3 (slow)" in to_markdown(rows)
    assert "bad_nodes" not in to_markdown(rows[1:])
