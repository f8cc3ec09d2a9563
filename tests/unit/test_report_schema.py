"""The report's JSON Schema (bootstrap.doors.json_schema): made from the typed report, shipped as
bootstrap/bootstrap.schema.json, one per schema version; it and the package's strict reader agree.
(tests/conftest.py validates every report the suite's jobs write against it, at the session's end.)"""

import copy
import json
from pathlib import Path

import jsonschema
import pytest

from bootstrap.cli import commands
from bootstrap.doors import json_schema, records, statuses
from bootstrap.doors.inbound import Unreadable

from conftest import ROOT

REPORTS = ROOT / "tests" / "data" / "reports"
CASES = sorted(p for p in REPORTS.iterdir() if p.is_dir())


def _validator(version: int) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json_schema.report_schema(version))


def test_the_shipped_schema_is_the_one_the_types_make():
    shipped = ROOT / "bootstrap" / "bootstrap.schema.json"
    assert shipped.read_text() == json_schema.text(), "run: bootstrap schema > bootstrap/bootstrap.schema.json"


@pytest.mark.parametrize("version", range(1, records.SCHEMA_VERSION + 1))
def test_every_versions_schema_is_a_valid_json_schema(version):
    jsonschema.Draft202012Validator.check_schema(json_schema.report_schema(version))


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_a_real_report_of_each_version_validates_against_its_own_versions_schema_only(case):
    version = int(case.name.split("-")[0][len("schema"):])
    paths = sorted(case.rglob("bootstrap*.json"))
    assert paths
    for path in paths:
        data = json.loads(path.read_text())
        assert data["schema_version"] == version
        assert [e.message for e in _validator(version).iter_errors(data)] == [], path
        for other in set(range(1, records.SCHEMA_VERSION + 1)) - {version}:
            assert not _validator(other).is_valid(data), (path, other)


def test_every_status_field_is_an_enumeration_of_its_values():
    defs = json_schema.report_schema()["$defs"]

    def values(definition: str, field: str) -> list:
        schema = defs[definition]["properties"][field]
        schema = next((s for s in schema.get("anyOf", [schema]) if "enum" in s), schema)
        return schema["enum"]

    assert values("Job", "status") == [s.value for s in statuses.JobStatus]
    assert values("Agreement", "status") == [s.value for s in statuses.AgreementStatus]
    assert values("Distributed", "process_group") == ["created", "existing", "none"]
    assert values("Distributed", "teardown") == ["destroyed", "left"]
    assert values("Preflight", "status") == ["ok", "slow", "faulty", "skipped"]
    assert values("PreflightRank", "compute") == ["ok", "not_finite", "wrong", "not_run"]
    assert values("GroupAtEnd", "owner") == ["bootstrap", "framework"]
    assert defs["Distributed"]["properties"]["hang"]["anyOf"][0] == {"$ref": "#/$defs/Hang"}


def _written() -> dict:
    """A real report of two ranks, with the provenance today's reports add."""
    report = json.loads((REPORTS / "schema3-preflight-torchrun" / "bootstrap.rank1.json").read_text())
    git = {"root": "/app", "commit": "ea90ff78e8e379ba3a4bde4c88f6534f18c35440", "branch": "main", "dirty": True,
           "diff_digest": "ab" * 32, "diff_bytes": 120, "diff_file": "git.rank1.diff", "untracked": 1,
           "untracked_digest": "cd" * 32}
    return {**report, "schema_version": records.SCHEMA_VERSION,
            "provenance": {"status": "collected", "host": "node-1", "git": git, "git_missing": None, "packages": 190,
                           "packages_digest": "ef" * 32, "packages_file": "packages.rank1.txt", "container": None,
                           "gpu_driver": None}}


# Each change makes a report that the reader and the schema must judge alike.
CHANGES = [
    (lambda r: r["job"].update(status="paused"), False),
    (lambda r: r["job"].update(status="failed"), True),
    (lambda r: r["distributed"].update(teardown="kept"), False),
    (lambda r: r["distributed"].update(teardown=None), True),
    (lambda r: r["distributed"].update(process_group="destroyed"), False),  # version 1's spelling only
    (lambda r: r["distributed"].update(hang={"dumps": ["comm_lib_trace_rank_0"], "ranks": [0, 1]}), True),
    (lambda r: r["distributed"].update(hang={"dumps": "comm_lib_trace_rank_0"}), False),
    (lambda r: r["distributed"].update(hang={"ranks": [-1]}), False),
    (lambda r: r["distributed"]["agreement"].update(status="agreed"), True),
    (lambda r: r["distributed"]["agreement"].update(status="Agreed"), False),
    (lambda r: r["preflight"].update(status="slow"), True),
    (lambda r: r["preflight"].update(status=None), False),
    (lambda r: r["preflight"]["ranks"][0].update(compute="wrong"), True),
    (lambda r: r["found"].update(gpus=2**53), False),
    (lambda r: r["found"].update(gpus=True), False),
    (lambda r: r["seed"].update(value=2**63), False),
    (lambda r: r["seed"].update(value=-(2**63)), True),
    (lambda r: r["timings"].update(bootstrap_s="fast"), False),
    (lambda r: r["vars"].update(X={"value": "1", "source": "shell"}), False),  # `effective` is required
    (lambda r: r.update(a_field_of_a_later_version={"any": "thing"}), True),
    (lambda r: r.pop("job"), True),  # an absent section takes its default
    (lambda r: r["provenance"].update(status="unfinished", git=None, git_missing="git timed out"), True),
    (lambda r: r["provenance"].update(status="gone"), False),
    (lambda r: r["provenance"]["git"].update(commit=5), False),
    (lambda r: r["provenance"]["git"].update(diff_bytes=-1), False),
    (lambda r: r["provenance"]["git"].pop("root"), False),  # where the repository is, always
    (lambda r: r["provenance"].update(packages=2**53), False),
    (lambda r: r.pop("provenance"), True),
]


@pytest.mark.parametrize("change, valid", CHANGES)
def test_the_schema_and_the_reader_judge_a_report_alike(tmp_path, change, valid):
    data = copy.deepcopy(_written())
    change(data)
    path = tmp_path / "bootstrap.json"
    path.write_text(json.dumps(data))
    try:
        records.read_report(path)
        read = True
    except Unreadable:
        read = False
    assert (read, _validator(records.SCHEMA_VERSION).is_valid(data)) == (valid, valid)


def test_a_report_of_a_newer_version_that_does_not_read_says_to_upgrade(tmp_path):
    data = _written()
    data.update(schema_version=records.SCHEMA_VERSION + 1)
    data["job"]["status"] = "paused"  # a status this version does not know
    path = tmp_path / "bootstrap.json"
    path.write_text(json.dumps(data))
    with pytest.raises(Unreadable, match=rf"newer hydra-train-bootstrap, schema_version {records.SCHEMA_VERSION + 1}"
                                         r"; this one reads 1 to \d: upgrade it"):
        records.read_report(path)


def test_bootstrap_schema_prints_each_versions_schema(capsys):
    assert commands.main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out) == json_schema.report_schema()
    assert commands.main(["schema", "--version", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["properties"]["schema_version"] == {"const": 1}
    assert commands.main(["schema", "--version", "9"]) == 2
    assert "--version 9: this package knows schema versions 1 to" in capsys.readouterr().err


def test_docs_link_the_schema():
    assert "../bootstrap/bootstrap.schema.json" in (ROOT / "docs" / "report.md").read_text()
    assert Path(ROOT / "bootstrap" / "bootstrap.schema.json").is_file()
