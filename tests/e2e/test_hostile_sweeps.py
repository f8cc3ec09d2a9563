"""Hostile sweep directories: the summary and `tune` read them without a traceback or a leak.

Real files in temporary directories, no mocks. Each class of hostile input has a focused
test; one hypothesis test builds random sweep directories out of all of them at once.
"""
import subprocess
import sys

from unit.test_hostile_sweeps import assert_one_line_error, csv_rows, run_tune

from bootstrap.sweep import summary

from conftest import STUB, clean_env

SECRET = "hf_planted_SECRET_123"
TRACEBACK = "Traceback (most recent call last)"








# -- 2. a reused hydra.sweep.dir: only the latest sweep ---------------------------------------------
def multirun(tmp_path, sweep, *overrides):
    proc = subprocess.run([sys.executable, str(STUB), "-m", "train.steps=0", f"hydra.sweep.dir={sweep}", *overrides],
                          capture_output=True, text=True, cwd=tmp_path, env=clean_env(), timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_a_reused_sweep_dir_lists_only_the_latest_sweep_and_a_real_dict_of_secrets_stays_out(tmp_path, capsys):
    sweep = tmp_path / "sweep"
    multirun(tmp_path, sweep, "env.threads.intra_op=1,2,3")
    # The second sweep has fewer jobs (2/ is left over from the first) and varies a dict naming a secret.
    proc = multirun(tmp_path, sweep, f"++env.vars={{HF_TOKEN:{SECRET}}},{{HF_TOKEN:hf_other_SECRET_456}}")
    # What the rule rests on, measured: Hydra rewrote multirun.yaml when the second sweep started,
    # after the first sweep's jobs wrote .hydra/overrides.yaml and before the second's did.
    started = (sweep / "multirun.yaml").stat().st_mtime_ns
    written = {d: (sweep / d / ".hydra" / "overrides.yaml").stat().st_mtime_ns for d in ("0", "1", "2")}
    assert written["2"] < started <= min(written["0"], written["1"])
    assert f"{{HF_TOKEN:{SECRET}}}" in (sweep / "0" / ".hydra" / "overrides.yaml").read_text()  # Hydra's own record

    rows = csv_rows(sweep)
    assert [r["overrides"] for r in rows] == ["train.steps=0 ++env.vars=***"] * 2
    markdown = (sweep / summary.MD_NAME).read_text()
    assert "1 job directory of an earlier sweep" in markdown and markdown in proc.stdout
    for text in ((sweep / summary.CSV_NAME).read_text(), markdown, proc.stdout, proc.stderr):
        assert SECRET not in text

    code, out, err = run_tune(capsys, sweep, tmp_path / "conf", "--objective", "steps")
    assert_one_line_error(code, out, err, "the sweep varied env.vars, which holds or looks like a secret")
    assert SECRET not in out + err and not (tmp_path / "conf").exists()
