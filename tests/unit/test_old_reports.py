"""Every report this package ever wrote is read (issue 28, class 4): the real reports in tests/data/reports,
one or more of each schema version, made by running train_stub.py at commits of the package's own history
(tests/data/reports/rebuild.py). Each reads as a typed Report, compares with today's in ``bootstrap diff``,
and gives the sweep summary and ``tune`` a row to rank."""
import json
import shutil
from pathlib import Path

import pytest

from bootstrap.cli import diff
from bootstrap.doors import records, upgrades

DATA = Path(__file__).resolve().parents[1] / "data" / "reports"
KEPT = sorted(DATA.rglob("bootstrap*.json"))
TODAY = DATA / "schema2-drift" / "bootstrap.json"


def _written_version(path: Path) -> int:
    return json.loads(path.read_text())["schema_version"]


def test_a_report_of_every_schema_version_is_kept():
    assert {_written_version(path) for path in KEPT} == set(range(1, records.SCHEMA_VERSION + 1))


@pytest.mark.parametrize("path", KEPT, ids=lambda p: str(p.relative_to(DATA)))
def test_every_kept_report_reads_keeping_the_version_it_was_written_with(path):
    report = records.read_report(path)
    assert report.schema_version == _written_version(path)
    assert report.preset in ("cpu_debug", "auto", "h100") and report.job.status in ("completed", "check_failed")
    assert (report.preflight is None) == (report.schema_version < 3)  # the section came with version 3
    assert (report.provenance is None) == (report.schema_version < 4)  # and the provenance with version 4


@pytest.mark.parametrize("path", KEPT, ids=lambda p: str(p.relative_to(DATA)))
def test_bootstrap_diff_compares_every_kept_report_with_todays(path, capsys):
    code = diff.main([str(path), str(TODAY)])
    out, err = capsys.readouterr()
    assert code in (0, 1) and not err and out.startswith(f"A: {path}")


def test_version_1_wrote_resolved_as_text_and_the_group_s_end_in_process_group():
    resolved = records.read_report(DATA / "schema1-auto-sweep" / "0" / "bootstrap.json").resolved
    assert (resolved.from_, resolved.preset, resolved.reason) == ("auto", "cpu_debug", "no CUDA device")
    stopped = records.read_report(DATA / "schema1-check-failed" / "bootstrap.json")
    assert stopped.threads.intra_op is None and stopped.job.status == "check_failed"  # written as threads: null
    rank1 = records.read_report(DATA / "schema1-torchrun" / "bootstrap.rank1.json").distributed
    assert (rank1.process_group, rank1.teardown, rank1.world_size) == ("created", "destroyed", 2)


def test_upgrading_touches_nothing_but_the_old_shapes():
    today = json.loads(TODAY.read_text())
    assert upgrades.upgraded(today) == today
    assert upgrades.upgraded({"schema_version": 1, "resolved": "odd text"})["resolved"] == \
        {"from": "auto", "preset": "odd text", "reason": ""}
    assert upgrades.upgraded([1]) == [1] and upgrades.upgraded({"schema_version": "1"}) == {"schema_version": "1"}


@pytest.mark.parametrize("sweep", ["schema1-auto-sweep", "schema2-auto-sweep", "schema2-drift-auto-sweep"])
def test_an_old_sweep_is_summarised_and_tuned(tmp_path, sweep):
    from bootstrap.sweep import summary, tune

    copy = tmp_path / sweep
    shutil.copytree(DATA / sweep, copy)
    markdown = summary.write(copy)
    assert "unreadable" not in markdown and markdown.count("| completed |") + markdown.count("| **completed** |") == 2
    target, text = tune.write(copy, "from_old", tmp_path / "conf", False, None, None)
    assert Path(target).is_file() and "winner:" in text
