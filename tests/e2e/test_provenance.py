"""Provenance against the real thing: a real git repository (dirty, untracked files, a 1.5 MB change), no git
on PATH, no repository, a git that hangs, real installed packages (and one more, installed for one run only),
a one-process sweep and two torchrun ranks whose packages differ."""
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import clean_env

SECRET = "sk-live-provenance-4242"
APP = """\
import hydra

import bootstrap


@hydra.main(version_base=None, config_path=None, config_name=None)
def main(cfg):
    session = bootstrap.current()
    return {"flat_has_commit": float("bootstrap/git/commit" in session.flat())}


if __name__ == "__main__":
    main()
"""
ENABLE = ["+env=cpu_debug", "hydra/callbacks=bootstrap"]
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def make_repo(root: Path) -> Path:
    """A repository holding the app: committed, then changed (a secret among the changes) and a file added."""
    root.mkdir(parents=True)
    (root / "app.py").write_text(APP)
    (root / "settings.py").write_text("learning_rate = 0.1\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "add", ".")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "first")
    (root / "settings.py").write_text(f'learning_rate = 0.2\napi_key = "{SECRET}"\n')
    (root / "notes.txt").write_text("untracked\n")
    return root


HUNG_GIT_S = 3600  # the fake git's sleep: far beyond run_app's bound, so a job that waited for it fails


def run_app(app_dir: Path, out: Path, *overrides: str, env=None, timeout=180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(app_dir / "app.py"), *ENABLE, f"hydra.run.dir={out}", *overrides],
                          capture_output=True, text=True, cwd=app_dir, env=env or clean_env(), timeout=timeout)


def report(out: Path, name: str = "bootstrap.json") -> dict:
    return json.loads((out / name).read_text())


def test_a_dirty_repository_gives_commit_branch_digests_and_a_masked_diff(tmp_path):
    repo = make_repo(tmp_path / "repo")
    out = tmp_path / "run"
    proc = run_app(repo, out)
    assert proc.returncode == 0, proc.stderr
    found = report(out)
    provenance, git_found = found["provenance"], found["provenance"]["git"]
    assert provenance["status"] == "collected" and found["job"]["metrics"] == {"flat_has_commit": 1.0}
    whole_diff = subprocess.run(["git", "-C", str(repo), "diff", "HEAD"], capture_output=True, check=True).stdout
    assert git_found == {
        "root": str(repo.resolve()), "commit": git(repo, "rev-parse", "HEAD").strip(), "branch": "main",
        "dirty": True, "diff_digest": hashlib.sha256(whole_diff).hexdigest(), "diff_bytes": len(whole_diff),
        "diff_file": "git.diff", "untracked": 1, "untracked_digest": hashlib.sha256(b"notes.txt").hexdigest()}
    written = (out / "git.diff").read_text()
    assert "+learning_rate = 0.2" in written and '+api_key = ***' in written and SECRET not in written
    assert SECRET not in (out / "bootstrap.json").read_text()
    listed = dict(line.split("==", 1) for line in (out / "packages.txt").read_text().splitlines())
    assert listed["torch"].startswith("2.13.0") and "hydra-core" in listed
    assert provenance["packages"] == len(listed) and provenance["packages_file"] == "packages.txt"
    listing = (out / "packages.txt").read_bytes().rstrip(b"\n")
    assert provenance["packages_digest"] == hashlib.sha256(listing).hexdigest()
    assert provenance["host"] == os.uname().nodename
    assert 0 < found["timings"]["provenance_s"] < 10 and found["timings"]["bootstrap_s"] < 1


def test_a_clean_tree_writes_no_diff_and_a_long_diff_is_cut_whole_lines(tmp_path):
    repo = make_repo(tmp_path / "repo")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-am", "second")
    proc = run_app(repo, tmp_path / "clean")
    assert proc.returncode == 0, proc.stderr
    clean = report(tmp_path / "clean")["provenance"]["git"]
    assert (clean["dirty"], clean["diff_file"], clean["diff_digest"]) == (False, None, None)
    assert not (tmp_path / "clean" / "git.diff").exists()
    (repo / "settings.py").write_text("".join(f"value_{i} = {'x' * 60}\n" for i in range(24_000)))  # about 1.6 MB
    proc = run_app(repo, tmp_path / "long")
    assert proc.returncode == 0, proc.stderr
    long = report(tmp_path / "long")["provenance"]["git"]
    written = (tmp_path / "long" / "git.diff").read_bytes()
    assert long["diff_cut"] is True and long["diff_bytes"] > 1_500_000
    whole = subprocess.run(["git", "-C", str(repo), "diff", "HEAD"], capture_output=True, check=True).stdout
    kept = whole[:2**20][:whole[:2**20].rfind(b"\n") + 1]  # the first MiB's whole lines, masked as they are written
    assert long["diff_bytes"] == len(whole) and written.endswith(
        f"holds the first {len(kept)} of {len(whole)} bytes of `git diff HEAD`\n".encode())
    assert len(written) < 2**20 + 200 and written.split(b"\n# hydra")[0].endswith(b"x" * 60 + b"\n")  # whole lines


@pytest.mark.parametrize("case", ["no git on PATH", "no repository", "a git that hangs"])
def test_without_git_state_the_report_says_why_and_the_job_runs(tmp_path, case):
    app_dir = tmp_path / "app"
    app_dir.mkdir()
    (app_dir / "app.py").write_text(APP)
    env, overrides, expected = clean_env(), [], {"no git on PATH": "git is not installed",
                                                 "no repository": "not in a git repository",
                                                 "a git that hangs": "git timed out"}[case]
    if case == "no git on PATH":
        env["PATH"] = str(tmp_path / "empty")
    elif case == "a git that hangs":
        fake = tmp_path / "bin"
        fake.mkdir()
        (fake / "git").write_text(f"#!/bin/sh\nexec sleep {HUNG_GIT_S}\n")
        (fake / "git").chmod(0o755)
        env["PATH"] = f"{fake}:{env['PATH']}"
        overrides = ["env.provenance.seconds=4"]  # git's share: 3 s
    proc = run_app(app_dir, tmp_path / "run", *overrides, env=env)  # within run_app's bound: git was not waited for
    assert proc.returncode == 0, proc.stderr
    hung = subprocess.run(["pgrep", "-f", f"sleep {HUNG_GIT_S}"], capture_output=True, text=True).stdout
    assert hung == "", hung  # stopped at its 3 s, not left running
    found = report(tmp_path / "run")["provenance"]
    assert (found["status"], found["git"], found["git_missing"]) == ("collected", None, expected)
    assert found["packages"] > 10 and (tmp_path / "run" / "packages.txt").exists()
    assert "Traceback" not in proc.stderr


def test_provenance_off_records_the_host_only(tmp_path):
    repo = make_repo(tmp_path / "repo")
    proc = run_app(repo, tmp_path / "run", "env.provenance.enabled=false")
    assert proc.returncode == 0, proc.stderr
    found = report(tmp_path / "run")
    assert found["provenance"] == {"status": "off", "host": os.uname().nodename, "git": None, "git_missing": None,
                                   "packages": None, "packages_digest": None, "packages_file": None,
                                   "container": None, "gpu_driver": None}
    assert "provenance_s" not in found["timings"]
    assert not (tmp_path / "run" / "packages.txt").exists() and not (tmp_path / "run" / "git.diff").exists()


def fake_package(where: Path, name: str = "fakepkg", version: str = "1.0") -> Path:
    """A distribution Python finds on its path: the metadata is what importlib.metadata reads."""
    info = where / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return where


def test_bootstrap_diff_names_the_package_two_runs_differ_in_and_the_changed_tree(tmp_path):
    repo = make_repo(tmp_path / "repo")
    assert run_app(repo, tmp_path / "a").returncode == 0
    (repo / "settings.py").write_text("learning_rate = 0.3\n")
    extra = fake_package(tmp_path / "site")
    proc = run_app(repo, tmp_path / "b", env=clean_env(PYTHONPATH=str(extra)))
    assert proc.returncode == 0, proc.stderr
    diff = subprocess.run([sys.executable, "-m", "bootstrap", "diff", str(tmp_path / "a"), str(tmp_path / "b")],
                          capture_output=True, text=True, env=clean_env(), timeout=120)
    assert diff.returncode == 1, diff.stderr
    assert "provenance (code, packages, host)" in diff.stdout
    lines = {line.split(":")[0].strip(): line for line in diff.stdout.splitlines()}
    assert lines["package fakepkg"].split() == ["package", "fakepkg:", "unset", "->", "1.0"]
    assert "git tree" in lines and "packages" in lines  # another diff, another package list
    as_json = subprocess.run([sys.executable, "-m", "bootstrap", "diff", str(tmp_path / "a"), str(tmp_path / "b"),
                              "--json"], capture_output=True, text=True, env=clean_env(), timeout=120)
    rows = json.loads(as_json.stdout)["sections"]["provenance"]
    assert {"name": "package fakepkg", "a": "unset", "b": "1.0"} in rows


def test_a_sweep_collects_once_and_each_job_gets_its_files(tmp_path):
    repo = make_repo(tmp_path / "repo")
    proc = subprocess.run([sys.executable, str(repo / "app.py"), "-m", *ENABLE, "+x=1,2",
                           f"hydra.sweep.dir={tmp_path / 'sweep'}"], capture_output=True, text=True, cwd=repo,
                          env=clean_env(), timeout=240)
    assert proc.returncode == 0, proc.stderr
    first, second = (report(tmp_path / "sweep" / str(job)) for job in (0, 1))
    assert "reused" not in first["provenance"] and second["provenance"]["reused"] is True
    assert first["provenance"]["git"] == second["provenance"]["git"]
    for job in (0, 1):
        assert (tmp_path / "sweep" / str(job) / "packages.txt").exists()
        assert (tmp_path / "sweep" / str(job) / "git.diff").exists()


def test_torchrun_ranks_write_their_own_files_and_diff_names_the_rank_with_other_packages(tmp_path):
    repo = make_repo(tmp_path / "repo")
    extra = fake_package(tmp_path / "site")
    # rank 1 alone finds one more package: a launcher's wrapper, as a node with another image would
    wrapper = tmp_path / "rank.sh"
    wrapper.write_text(f'#!/bin/sh\n[ "$LOCAL_RANK" = 1 ] && export PYTHONPATH={extra}\nexec "$@"\n')
    wrapper.chmod(0o755)
    out = tmp_path / "run"
    proc = subprocess.run([*TORCHRUN, "--no-python", str(wrapper), sys.executable, str(repo / "app.py"), *ENABLE,
                           f"hydra.run.dir={out}", "env.distributed.agree=warn"],
                          capture_output=True, text=True, cwd=repo, env=clean_env(), timeout=240)
    assert proc.returncode == 0, proc.stderr
    ranks = [report(out, f"bootstrap.rank{rank}.json")["provenance"] for rank in (0, 1)]
    assert [found["packages_file"] for found in ranks] == ["packages.rank0.txt", "packages.rank1.txt"]
    assert [found["git"]["diff_file"] for found in ranks] == ["git.rank0.diff", "git.rank1.diff"]
    assert ranks[1]["packages"] == ranks[0]["packages"] + 1
    assert "fakepkg==1.0" in (out / "packages.rank1.txt").read_text().splitlines()
    assert "fakepkg==1.0" not in (out / "packages.rank0.txt").read_text().splitlines()
    diff = subprocess.run([sys.executable, "-m", "bootstrap", "diff", str(out), str(out), "--rank", "1"],
                          capture_output=True, text=True, env=clean_env(), timeout=120)
    assert f"packages differ from rank 0's on rank 1 ({ranks[1]['host']}) (packages.txt {ranks[1]['packages_digest'][:12]}" in diff.stdout
    # and the sweep summary of the runs beside it says which job's ranks ran other packages
    summary = subprocess.run([sys.executable, "-m", "bootstrap", "summary", str(tmp_path), "--no-plot"],
                             capture_output=True, text=True, env=clean_env(), timeout=120)
    assert summary.returncode == 0, summary.stderr
    assert "Ranks with other packages than their rank 0 (1 job;" in summary.stdout
    assert "- job run: rank 1" in summary.stdout


def test_the_sweep_summary_says_when_jobs_ran_on_different_commits(tmp_path):
    repo = make_repo(tmp_path / "repo")
    sweep = tmp_path / "sweep"
    assert run_app(repo, sweep / "0", "+x=1").returncode == 0
    first = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-am", "second")  # a new commit
    assert run_app(repo, sweep / "1", "+x=2").returncode == 0
    second = git(repo, "rev-parse", "HEAD").strip()
    proc = subprocess.run([sys.executable, "-m", "bootstrap", "summary", str(sweep), "--no-plot"],
                          capture_output=True, text=True, env=clean_env(), timeout=120)
    assert proc.returncode == 0, proc.stderr
    note = (sweep / "sweep_summary.md").read_text().split("Jobs ran in different environments", 1)[1]
    assert f"git commit: {first} in job 0; {second} in job 1" in note
