"""Bad nodes as steps of a job (bootstrap/core/nodes.py), on real files: the ledger read at start (hostile ones
included), the one step after the preflight and after the watch (observed, weighed, excluded on evidence), and the
ledger written as a shared file (no link followed, its mode and group kept, the lock its group's)."""

import json
import os
import stat
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace

import pytest

from bootstrap.core import facts, nodes
from bootstrap.core.plan import make_plan
from bootstrap.core.schema import EnvConfig, Nodes, OnBad, Watch, WatchMode, load, validate
from bootstrap.distributed import nodename
from bootstrap.distributed.launcher import Launch, Launcher
from bootstrap.doors import records
from bootstrap.doors.errors import BadNodeError, ConfigError, PreflightError, WatchError
from bootstrap.variables.readers import ProcessState


def _stamp(moment):
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _entry(node="node3", hours_ago=1.0, reason="slow", job_id="41", **more):
    now = datetime.now(timezone.utc)
    return json.dumps({"node": node, "reason": reason, "observed_at": _stamp(now - timedelta(hours=hours_ago)),
                       "valid_until": _stamp(now + timedelta(hours=24 - hours_ago)), "job_id": job_id, **more}) + "\n"


def _preset(path, **nodes_fields):
    return EnvConfig(nodes=Nodes(exclude_file=str(path), **nodes_fields))


def test_a_node_the_evidence_excludes_stops_before_the_group_naming_the_evidence_and_the_exclude(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(_entry(job_id="41", hours_ago=3) + _entry(job_id="42"))
    warnings = []
    refusal = nodes.at_start(_preset(path), "env", warnings, "node3", {"SLURM_JOB_ID": "43"})
    assert refusal.error is BadNodeError and warnings == [] and "\n" not in refusal.message
    assert refusal.message.startswith("env.nodes.exclude_file: this node node3 is excluded: slow in 2 jobs (41, 42) "
                                      "in the last 3 h; kept out until ")
    assert "resubmit with --exclude=node3 (sbatch) or set env.nodes.ignore=[node3]" in refusal.message
    assert f"`bootstrap nodes {path} --explain node3` shows the evidence" in refusal.message
    assert nodes.at_start(_preset(path), "env", [], "node4") is None
    assert nodes.at_start(_preset(path, ignore=["node3"]), "env", [], "node3") is None


def test_one_soft_observation_keeps_no_node_out_and_one_hard_one_does(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(_entry())
    assert nodes.at_start(_preset(path), "env", [], "node3") is None
    path.write_text(_entry(reason="faulty"))
    refusal = nodes.at_start(_preset(path), "env", [], "node3")
    assert "is excluded: faulty in job 41 at " in refusal.message and "run elsewhere, or set" in refusal.message
    assert nodes.at_start(_preset(path, min_observations=1), "env", [], "node3") is not None


def test_the_kernel_s_host_name_matches_too(tmp_path):
    # an observation made outside the scheduler (or before issue 45) names the node by the kernel's host name
    path = tmp_path / "bad.jsonl"
    path.write_text(_entry(node=nodename.kernel_host(), reason="faulty"))
    refusal = nodes.at_start(_preset(path), "env", [], "slurm-name-of-this-node")
    assert f"this node {nodename.kernel_host()} is excluded" in refusal.message


def test_an_aged_observation_no_longer_stops_a_job(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(_entry(hours_ago=30, reason="faulty"))
    assert nodes.at_start(_preset(path), "env", [], "node3") is None
    path.write_text(_entry(hours_ago=3, reason="faulty"))
    assert nodes.at_start(_preset(path, exclude_ttl_h=2), "env", [], "node3") is None  # the reader's own TTL
    assert nodes.at_start(_preset(path, exclude_ttl_h=4), "env", [], "node3") is not None


def _hostile(tmp_path, kind):
    path = tmp_path / "bad.jsonl"
    if kind == "binary":
        path.write_bytes(os.urandom(4096).replace(b"\n", b"") + b"\n" + _entry(reason="faulty").encode())
    elif kind == "sparse 1 GB":
        with open(path, "wb") as f:
            f.truncate(2**30)
    elif kind == "link to /dev/zero":
        path.symlink_to("/dev/zero")
    elif kind == "link to a file":
        (tmp_path / "elsewhere").write_text(_entry(reason="faulty"))
        path.symlink_to(tmp_path / "elsewhere")
    elif kind == "a directory":
        path.mkdir()
    elif kind == "a fifo":
        os.mkfifo(path)
    elif kind == "every user may write it":
        path.write_text(_entry(reason="faulty"))
        os.chmod(path, 0o666)
    elif kind == "a group that is not ours may write it":
        path.write_text(_entry(reason="faulty"))
        os.chmod(path, 0o664)
        os.chown(path, -1, max(os.getgroups() + [os.getegid()]) + 4242)
    return path


@pytest.mark.parametrize("kind, warning, stops", [
    ("binary", "env.nodes.exclude_file: line 1 dropped (not UTF-8 text): not an observation or a clearance; the "
               "others are read", True),
    ("sparse 1 GB", "env.nodes.exclude_file: bad.jsonl: larger than 4194304 bytes: its observations are not read, "
                    "and the job goes on", False),
    ("link to /dev/zero", "env.nodes.exclude_file: bad.jsonl: a link, not followed: its observations are not read",
     False),
    ("link to a file", "bad.jsonl: a link, not followed", False),
    ("a directory", "bad.jsonl: not a regular file", False),
    ("a fifo", "bad.jsonl: not a regular file", False),
    ("every user may write it", "bad.jsonl: not trusted: every user may write it (mode 666): chmod o-w it", False),
    ("a group that is not ours may write it", "may write it (mode 664), and this user", False),
])
def test_a_hostile_ledger_is_one_line_never_a_crash(tmp_path, kind, warning, stops):
    if kind.startswith("a group") and os.geteuid() != 0:
        pytest.skip("giving a file a group that is not ours needs root (CI runs as root)")
    path = _hostile(tmp_path, kind)
    warnings = []
    refusal = nodes.at_start(_preset(path), "env", warnings, "node3")
    assert (refusal is not None) is stops
    assert len(warnings) == 1 and warning in warnings[0] and "\n" not in warnings[0], warnings


def test_a_missing_ledger_holds_nothing_silently(tmp_path):
    warnings = []
    assert nodes.at_start(_preset(tmp_path / "none.jsonl"), "env", warnings, "node3") is None and warnings == []


@pytest.mark.parametrize("fields, key", [
    ({"exclude_ttl_h": 0.0}, "env.nodes.exclude_ttl_h=0.0 must be positive hours"),
    ({"exclude_ttl_h": float("nan")}, "env.nodes.exclude_ttl_h=nan"),
    ({"max_requeues": -1}, "env.nodes.max_requeues=-1 must be a count"),
    ({"min_observations": 0}, "env.nodes.min_observations=0 must be a count in [1, 1000]"),
    ({"max_per_job": 0}, "env.nodes.max_per_job=0 must be a count in [1, 1000]"),
    ({"systemic_fraction": 0.0}, "env.nodes.systemic_fraction=0.0 must be a fraction in (0, 1]"),
    ({"systemic_fraction": 1.5}, "env.nodes.systemic_fraction=1.5 must be a fraction in (0, 1]"),
    ({"ignore": ["node3", "a b"]}, "'a b' is not a node's name"),
    ({"exclude_file": " "}, "env.nodes.exclude_file=' ' is not a path"),
])
def test_bad_nodes_settings_are_refused_in_one_line_naming_the_key(fields, key):
    with pytest.raises(ConfigError) as refused:
        validate(EnvConfig(nodes=Nodes(**fields)))
    assert key in str(refused.value) and "\n" not in str(refused.value)


def _plan(tmp_path, rank=0, world=4, per_node=2, job="run1"):
    launch = Launch(Launcher("torchrun"), rank=rank, local_rank=rank % per_node, world_size=world,
                    local_world_size=per_node, master_addr="node1", master_port=29500, job_id=job)
    return make_plan(load({}), environ_now={}, env_set={}, explicit_vars=(),
                     state=ProcessState(cuda_initialized=False, process_group_initialized=False), cpus=2,
                     machine_cpus=2, launch=launch, output_dir=str(tmp_path / "run"))


def _checked(kind="slow", ranks=(3,), hosts=None):
    hosts = hosts or {0: "node1", 3: "node3"}
    return records.Preflight(
        mode="error", median_tflops=0.5, max_skew=2.0,
        ranks=[records.PreflightRank(rank=r, host=h, tflops=0.5 if r == 0 else 0.05) for r, h in hosts.items()],
        findings=[records.PreflightFinding(kind=kind, message=f"rank 3 (node3) is {kind}", ranks=list(ranks),
                                           against=[0.5] * len(ranks) if kind == "slow" else [])])


def test_a_first_soft_observation_is_recorded_everywhere_and_excludes_nothing(tmp_path):
    shared = tmp_path / "shared.jsonl"
    shared.write_text(_entry("node9"))
    os.chmod(shared, 0o664)
    checked, warnings = _checked(), []
    stopped = nodes.after_preflight(_preset(shared), _plan(tmp_path), checked, "preflight: slow", "env", warnings, {})
    assert isinstance(stopped, PreflightError) and warnings == []
    assert str(stopped).endswith("bad nodes: observed, not excluded: node3 (soft evidence, excluded from "
                                 "env.nodes.min_observations=2 jobs or attempts)")
    run = tmp_path / "run"
    (record,) = [json.loads(line) for line in (run / "bad_nodes.jsonl").read_text().splitlines()]
    assert (record["node"], record["reason"], record["evidence"], record["ranks"], record["job_id"]) == \
        ("node3", "slow", "soft", [3], "run1")
    assert not (run / "exclude.txt").exists()  # no node meets the rule
    lines = [json.loads(line) for line in shared.read_text().splitlines()]
    assert [line["node"] for line in lines] == ["node9", "node3"] and lines[1] == record  # the whole observation
    assert stat.S_IMODE(os.stat(shared).st_mode) == 0o664  # the shared file keeps its mode
    (bad,) = checked.bad_nodes
    assert (bad.node, bad.reason, bad.ranks, bad.evidence, bad.excluded) == ("node3", "slow", [3], "soft", False)
    assert checked.on_bad == "stopped" and checked.restart_count is None


def test_a_second_job_s_observation_excludes_the_node_and_exclude_txt_names_it(tmp_path):
    shared = tmp_path / "shared.jsonl"
    shared.write_text(_entry("node3", job_id="run0"))
    checked = _checked()
    nodes.after_preflight(_preset(shared), _plan(tmp_path), checked, None, "env", [], {})
    assert (tmp_path / "run" / "exclude.txt").read_text() == "node3\n"
    assert checked.bad_nodes[0].excluded is True and checked.on_bad == "recorded"
    assert nodes.at_start(_preset(shared), "env", [], "node3") is not None


def test_a_faulty_node_is_excluded_at_once(tmp_path):
    checked = _checked("faulty")
    stopped = nodes.after_preflight(_preset(tmp_path / "s.jsonl"), _plan(tmp_path), checked, "preflight: faulty",
                                    "env", [], {})
    assert "\nbad nodes: node3 excluded: faulty in job run1 at " in str(stopped)
    assert str(stopped).endswith(" (exclude.txt in the job's directory)")
    assert checked.bad_nodes[0].evidence == "hard" and checked.bad_nodes[0].excluded is True


def test_every_node_named_at_once_is_systemic_and_none_is_excluded(tmp_path):
    checked = _checked("min_node_busbw_gbps", ranks=(0, 2, 4), hosts={0: "node1", 2: "node2", 4: "node3"})
    warnings = []
    stopped = nodes.after_preflight(_preset(tmp_path / "s.jsonl", min_observations=1), _plan(tmp_path, world=6),
                                    checked, "preflight: floor", "env", warnings, {})
    assert warnings == ["systemic: 3 of 3 nodes slow at once: the network, a filesystem or the job itself, not a "
                        "node: no node is excluded for it (env.nodes.systemic_fraction=0.5)"]
    assert "observed, not excluded: node[1-3] (systemic: 3 of 3 nodes at once)" in str(stopped)
    assert [(b.excluded, b.note) for b in checked.bad_nodes] == [(False, "systemic: 3 of 3 nodes at once")] * 3
    assert not (tmp_path / "run" / "exclude.txt").exists()


def test_other_ranks_write_nothing_and_a_warning_finding_is_recorded_without_a_stop(tmp_path):
    checked = _checked()
    assert nodes.after_preflight(_preset(tmp_path / "s.jsonl"), _plan(tmp_path, rank=1), checked, None, "env",
                                 [], {}) is None
    assert not (tmp_path / "run").exists() and not (tmp_path / "s.jsonl").exists()
    assert checked.on_bad == "recorded" and [b.node for b in checked.bad_nodes] == ["node3"]


@pytest.mark.parametrize("planted", ["a link to /dev/zero", "a link to another user's token"])
def test_a_link_planted_at_the_ledger_is_refused_and_what_it_points_at_is_never_copied(tmp_path, planted):
    shared, token = tmp_path / "shared.jsonl", tmp_path / "home" / "token"
    token.parent.mkdir()
    token.write_text("hf_secret_token_of_someone\n")
    shared.symlink_to("/dev/zero" if planted.startswith("a link to /dev") else token)
    warnings = []
    nodes.after_preflight(_preset(shared), _plan(tmp_path), _checked(), None, "env", warnings, {})
    assert warnings == ["env.nodes.exclude_file: the observations were not added: shared.jsonl: a link, not followed"]
    assert shared.is_symlink() and token.read_text() == "hf_secret_token_of_someone\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".shared")] == []  # no copy left beside it


def test_a_writer_drops_lines_that_are_no_entry_and_says_how_many(tmp_path):
    shared = tmp_path / "shared.jsonl"
    shared.write_text("a verbatim line of someone's\n" + _entry("node9") + "{\"node\": \"x y\"}\n")
    warnings = []
    nodes.after_preflight(_preset(shared), _plan(tmp_path), _checked(), None, "env", warnings, {})
    assert warnings == ["env.nodes.exclude_file: line 1 dropped (not JSON) and 1 more: not an observation or a "
                        "clearance; the others are read"]
    assert [json.loads(line)["node"] for line in shared.read_text().splitlines()] == ["node9", "node3"]


def test_a_new_ledger_and_its_lock_in_a_group_directory_are_the_group_s_whatever_the_umask(tmp_path):
    group_dir = tmp_path / "project"
    group_dir.mkdir()
    os.chmod(group_dir, 0o2775)
    old = os.umask(0o022)
    try:
        nodes.after_preflight(_preset(group_dir / "bad.jsonl"), _plan(tmp_path), _checked(), None, "env", [], {})
    finally:
        os.umask(old)
    for name in ("bad.jsonl", "bad.jsonl.lock"):
        assert stat.S_IMODE(os.stat(group_dir / name).st_mode) == 0o664, name
    os.chmod(group_dir / "bad.jsonl", 0o660)
    os.remove(group_dir / "bad.jsonl.lock")
    nodes.after_preflight(_preset(group_dir / "bad.jsonl"), _plan(tmp_path), _checked(), None, "env", [], {})
    assert stat.S_IMODE(os.stat(group_dir / "bad.jsonl.lock").st_mode) == 0o660  # the list's own mode


def test_requeue_outside_slurm_stops_saying_so(tmp_path):
    checked = _checked("faulty")
    stopped = nodes.after_preflight(_preset(tmp_path / "s.jsonl", on_bad=OnBad.requeue), _plan(tmp_path), checked,
                                    "preflight: faulty", "env", [], {})
    assert isinstance(stopped, PreflightError) and "on_bad=requeue: not a SLURM job" in str(stopped)


def _watch_preset(path, mode):
    preset = _preset(path)
    preset.watch = Watch(mode=WatchMode(mode))  # env.watch (issue 48's)
    return preset


def test_the_watch_s_findings_are_soft_evidence_and_stop_the_job_only_under_error(tmp_path):
    shared = tmp_path / "s.jsonl"
    findings = [SimpleNamespace(kind="slow", message="rank 3 (node3) scores 0.31 for 4 windows", ranks=[3],
                                hosts=["node3"])]
    warnings = []
    assert nodes.after_watch(_watch_preset(shared, "warn"), _plan(tmp_path), findings, "env", warnings, {}) is None
    (seen,) = [json.loads(line) for line in shared.read_text().splitlines()]
    assert (seen["node"], seen["reason"], seen["evidence"], seen["job_id"]) == ("node3", "watch_slow", "soft", "run1")
    assert nodes.at_start(_preset(shared), "env", [], "node3") is None  # a watch finding alone bans no node
    stopped = nodes.after_watch(_watch_preset(shared, "error"), _plan(tmp_path, job="run2"), findings, "env",
                                warnings, {})
    assert isinstance(stopped, WatchError) and warnings == []
    assert str(stopped).startswith("watch: rank 3 (node3) scores 0.31 for 4 windows\nbad nodes: node3 excluded")
    assert nodes.at_start(_preset(shared), "env", [], "node3") is not None  # two jobs' windows: evidence


def test_the_report_s_host_is_the_scheduler_s_name_with_the_kernel_s_beside_it(monkeypatch):
    monkeypatch.setenv("SLURMD_NODENAME", "node3")
    named = nodes.named(records.Provenance(status=records.ProvenanceStatus.OFF, host="x"))
    kernel = nodename.kernel_host()
    assert (named.host, named.kernel_host) == ("node3", None if kernel == "node3" else kernel)
    monkeypatch.setenv("SLURMD_NODENAME", "not a node name")
    assert nodes.named(records.Provenance(status=records.ProvenanceStatus.OFF)).host == kernel


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


def _filled(hours_ago, room):
    """Entries up to ``room`` bytes short of the ledger's cap."""
    from bootstrap.doors.inbound import MAX_SHARED_BYTES

    lines, size, i = [], 0, 0
    while True:
        line = _entry(f"node{i}", hours_ago=hours_ago, message="x" * 400)
        if size + len(line) > MAX_SHARED_BYTES - room:
            return "".join(lines)
        lines.append(line)
        size, i = size + len(line), i + 1


def test_at_the_ledger_s_cap_aged_observations_go_and_a_ledger_still_too_large_says_so_in_one_line(tmp_path):
    from bootstrap.doors.inbound import MAX_SHARED_BYTES

    shared = tmp_path / "shared.jsonl"
    shared.write_text(_filled(30, 0))  # aged: dropped on the way, so the observation fits
    warnings = []
    nodes.after_preflight(_preset(shared), _plan(tmp_path), _checked(), None, "env", warnings, {})
    assert warnings == [] and [json.loads(line)["node"] for line in shared.read_text().splitlines()] == ["node3"]
    live = _filled(1, 100)  # live, with less room than one observation takes
    shared.write_text(live)
    nodes.after_preflight(_preset(shared), _plan(tmp_path), _checked(), None, "env", warnings, {})
    (said,) = warnings
    assert said.startswith("env.nodes.exclude_file: 1 observations were not added: the ledger would hold ") and \
        said.endswith(f"bytes of live entries, past its cap of {MAX_SHARED_BYTES}: clear mended nodes (bootstrap "
                      "nodes FILE --clear NODE --why ...), or lower exclude_ttl_h")
    assert shared.read_text() == live  # unchanged
