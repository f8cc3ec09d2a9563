"""The bad nodes' records and the shared exclusion list's entries (bootstrap/distributed/badnodes.py), pure."""

import json
from datetime import datetime, timedelta, timezone

import pytest

from bootstrap.distributed import badnodes
from bootstrap.doors import records

NOW = datetime(2026, 12, 6, 3, 0, 0, tzinfo=timezone.utc)


def _record(*findings, hosts=None):
    hosts = hosts or {0: "node1", 1: "node1", 2: "node3", 3: "node3"}
    return records.Preflight(
        median_tflops=0.5, max_skew=2.0, min_tflops=0.1,
        ranks=[records.PreflightRank(rank=r, host=h, tflops=0.5 if h != "node3" else 0.05) for r, h in hosts.items()],
        findings=[records.PreflightFinding(kind=k, message=f"{k} message", ranks=ranks) for k, ranks in findings])


def test_one_entry_per_node_with_nvrx_field_names_and_every_kind_that_named_it():
    entries = badnodes.from_preflight(_record(("faulty", [3]), ("slow", [2, 3]), ("min_busbw_gbps", [])),
                                      NOW, 24, "123", 1)
    assert [e.node for e in entries] == ["node3"]
    data = json.loads(entries[0].to_json())
    assert {k: data[k] for k in ("type", "schema_version", "node", "reason", "observed_at", "valid_until",
                                 "job_id", "restart_count")} == {
        "type": "observation", "schema_version": 1, "node": "node3", "reason": "faulty",
        "observed_at": "2026-12-06T03:00:00Z", "valid_until": "2026-12-07T03:00:00Z", "job_id": "123",
        "restart_count": 1}
    assert data["kinds"] == ["faulty", "slow"] and data["ranks"] == [3, 2]
    assert [f["tflops"] for f in data["figures"]] == [0.05, 0.05]
    assert data["against"] == {"median_tflops": 0.5, "max_skew": 2.0, "min_tflops": 0.1}


def test_a_world_figure_and_a_rank_with_no_known_host_name_no_node():
    assert badnodes.from_preflight(_record(("min_busbw_gbps", []), ("unfinished", [7])), NOW, 24) == []
    forged = _record(("slow", [0]), hosts={0: "node1; rm -rf /"})
    assert badnodes.from_preflight(forged, NOW, 24) == []


def test_the_exclude_text_is_slurms_compact_form():
    assert badnodes.exclude_text(["node7", "node3", "node3", "gpu01", "gpu02"]) == "gpu[01-02],node[3,7]"


def _line(node="node3", observed="2026-12-06T02:00:00Z", until="2026-12-07T02:00:00Z", **more):
    return json.dumps({"node": node, "reason": "slow", "observed_at": observed, "valid_until": until, **more})


def test_a_listed_host_is_kept_out_until_its_entry_expires_and_ignore_overrides_it():
    listed = badnodes.parse((_line() + "\n" + _line("node4", until="2026-12-06T02:30:00Z") + "\n").encode(), NOW)
    assert listed.skipped == []
    assert badnodes.listing(listed.entries, "node3", NOW, 24).node == "node3"
    assert badnodes.listing(listed.entries, "node4", NOW, 24) is None  # expired half an hour ago
    assert badnodes.listing(listed.entries, "node3", NOW, 24, ignore=["node3"]) is None
    assert badnodes.listing(listed.entries, "node3", NOW, ttl_h=0.5) is None  # the reader's TTL bounds it
    assert badnodes.live_nodes(listed.entries, NOW, 24) == ["node3"]


def test_an_entry_claiming_a_ban_for_ever_is_bounded_by_the_readers_ttl():
    entry = badnodes.parse(_line(until="9999-01-01T00:00:00Z").encode(), NOW).entries[0]
    assert badnodes.expiry(entry, 24) == datetime(2026, 12, 7, 2, 0, tzinfo=timezone.utc)
    assert badnodes.listing([entry], "node3", NOW + timedelta(days=2), 24) is None


@pytest.mark.parametrize("line, why", [
    (b"\xff\xfe binary", "not UTF-8"),
    (b"{not json", "not JSON"),
    (b"[1, 2]", "not a JSON object"),
    (b'{"node": "a b", "reason": "slow"}', "no valid 'node'"),
    (_line(observed="yesterday").encode(), "UTC times"),
    (_line(observed="2027-01-01T00:00:00Z").encode(), "observed in the future"),
    (_line(reason=None).encode(), "no valid 'reason'"),
    (b'{"node": NaN}', "not JSON"),
    (b"[" * 100000, "larger than 65536 bytes"),
    (b"[" * 40 + b"]" * 40, "nested more than 32 deep"),
])
def test_a_line_that_is_no_entry_is_skipped_with_its_reason_and_the_rest_read(line, why):
    listed = badnodes.parse(line + b"\n" + _line().encode() + b"\n\n", NOW)
    assert [e.node for e in listed.entries] == ["node3"]
    assert len(listed.skipped) == 1 and why in listed.skipped[0][1] and listed.skipped[0][0] == 1
    assert listed.skipped_line("env.nodes.exclude_file").startswith("env.nodes.exclude_file: line 1 skipped")


def test_many_bad_lines_are_named_once():
    listed = badnodes.parse(b"x\n" * 1000, NOW)
    assert listed.skipped_line("f") == "f: line 1 skipped (not JSON) and 999 more; the other entries are read"


def test_appending_keeps_other_writers_lines_and_drops_expired_entries():
    old = (_line("node1", "2026-12-04T00:00:00Z", "2026-12-05T00:00:00Z") + "\nsomeone else's line\n" +
           _line("node2") + "\n").encode()
    new = badnodes.from_preflight(_record(("slow", [2])), NOW, 24)
    out = badnodes.appended(old, [entry.to_json() for entry in new], NOW, 24).decode().splitlines()
    assert out[0] == "someone else's line" and json.loads(out[1])["node"] == "node2"
    assert json.loads(out[2])["node"] == "node3" and len(out) == 3


def test_the_start_message_names_the_entry_and_the_exclude_to_use():
    entry = badnodes.parse(_line(job_id="42").encode(), NOW).entries[0]
    text = badnodes.start_message(entry, "node3", "env", True, 24)
    assert "\n" not in text
    assert text == ("env.nodes.exclude_file lists this host node3: slow at 2026-12-06T02:00:00Z by job 42, kept out "
                    "until 2026-12-07T02:00:00Z: resubmit with --exclude=node3 (sbatch) or set "
                    "env.nodes.ignore=[node3] to run here anyway")
    assert "--exclude" not in badnodes.start_message(entry, "node3", "env", False, 24)
