"""The bad-node ledger as a file many users share (issue 45 section 1), with two real users, made with useradd, their
commands run as them with runuser (root, as CI runs; elsewhere these tests skip with one line, and under CI=true fail):

- in a setgid project directory (2775), the first member's umask (022) shuts the second out of neither the list nor
  its lock, and a lock an older version left as 0644 is taken by both;
- a link another member plants at the list's name, to a token of the first's (0644, in a home of 0700 they cannot
  enter), is refused in one line when the first member's command adds to the list: the token never reaches the
  shared directory.
"""

import os
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from cluster.fixtures import unavailable
from conftest import ROOT, clean_env

pytestmark = pytest.mark.e2e

TOKEN = "hf_planted_target_0123456789abcdef\n"


def _reachable(path: str) -> bool:
    """Whether every user may run ``path``: each directory above it searchable, the file executable by others."""
    parts = Path(path).resolve()
    return all(os.stat(p).st_mode & stat.S_IXOTH for p in [*reversed(parts.parents), parts])


def _python_for_others() -> str:
    """A Python of this one's version that other users may run (this one may live under root's 0700 home)."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (sys.executable, shutil.which(version), f"/usr/bin/{version}", f"/usr/local/bin/{version}"):
        if candidate and os.path.exists(candidate) and _reachable(candidate):
            return candidate
    unavailable(f"no {version} that other users may run")
    raise AssertionError("unreachable")


class Team:
    """Two users of one group, a setgid project directory of that group, and the first user's private home."""

    def __init__(self, base: Path):
        tag = f"htb{os.getpid() % 100000}"
        self.group, self.first, self.second = tag, f"{tag}a", f"{tag}b"
        self.base, self.project, self.home = base, base / "project", base / "home"
        self.python = _python_for_others()
        self.made: list = []

    def up(self) -> "Team":
        self._run(["groupadd", self.group])
        self.made.append(["groupdel", self.group])
        for user in (self.first, self.second):
            self._run(["useradd", "-M", "-N", "-g", self.group, "-d", str(self.base / user), "-s", "/bin/sh", user])
            self.made.insert(0, ["userdel", user])
        self.project.mkdir()
        shutil.chown(self.project, group=self.group)
        os.chmod(self.project, 0o2775)
        self.home.mkdir()
        shutil.chown(self.home, user=self.first, group=self.group)
        os.chmod(self.home, 0o700)
        token = self.home / "token"
        token.write_text(TOKEN)
        shutil.chown(token, user=self.first, group=self.group)
        os.chmod(token, 0o644)
        return self

    def down(self) -> None:
        for command in self.made:
            subprocess.run(command, capture_output=True, timeout=60)
        shutil.rmtree(self.base, ignore_errors=True)

    @staticmethod
    def _run(command):
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, f"{command}: {done.stderr}"

    def as_user(self, user: str, *argv: str) -> subprocess.CompletedProcess:
        """``argv`` run as ``user``, with umask 022, the package's Python and paths."""
        paths = [str(ROOT), *dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))]
        env = clean_env(PYTHONPATH=os.pathsep.join(paths), HOME=str(self.base))
        return subprocess.run(["runuser", "-u", user, "--", "sh", "-c", 'umask 022 && exec "$@"', "sh", *argv],
                              capture_output=True, text=True, env=env, cwd=self.base, timeout=120)

    def nodes(self, user: str, *args: str) -> subprocess.CompletedProcess:
        return self.as_user(user, self.python, "-m", "bootstrap", "nodes", *args)


@pytest.fixture(scope="module")
def team():
    if os.geteuid() != 0 or not shutil.which("useradd") or not shutil.which("runuser"):
        unavailable("two real users need root, useradd and runuser (CI runs as root)")
    base = Path(tempfile.mkdtemp(prefix="htb-team-", dir="/tmp"))
    os.chmod(base, 0o755)
    made = Team(base)
    try:
        yield made.up()
    finally:
        made.down()


def test_in_a_setgid_directory_the_first_members_umask_shuts_the_second_out_of_neither_list_nor_lock(team):
    ledger = team.project / "bad_nodes.jsonl"
    first = team.nodes(team.first, str(ledger), "--exclude", "node3", "--why", "fan failing")
    assert first.returncode == 0, first.stderr
    for path in (ledger, ledger.with_name("bad_nodes.jsonl.lock")):
        info = os.stat(path)
        assert (stat.S_IMODE(info.st_mode), info.st_gid) == (0o664, os.stat(team.project).st_gid), path
    second = team.nodes(team.second, str(ledger), "--exclude", "node4", "--why", "link flapping")
    assert second.returncode == 0 and second.stderr == "", second.stderr
    listed = team.nodes(team.first, str(ledger), "--exclude-list")
    assert listed.stdout == "node[3-4]\n", listed.stderr


def test_a_lock_an_older_version_left_0644_is_taken_by_every_member(team):
    ledger = team.project / "old.jsonl"
    made = team.nodes(team.first, str(ledger), "--exclude", "node5", "--why", "x")
    assert made.returncode == 0, made.stderr
    lock = ledger.with_name("old.jsonl.lock")
    os.chmod(lock, 0o644)  # issue 39's lock: the first member's umask, opened O_RDWR, shut the group out
    second = team.nodes(team.second, str(ledger), "--clear", "node5", "--why", "fan replaced")
    assert second.returncode == 0, second.stderr
    assert team.nodes(team.first, str(ledger), "--exclude-list").stdout == "\n"


def test_a_link_planted_at_the_list_to_a_members_token_is_refused_and_the_token_never_copied(team):
    ledger = team.project / "planted.jsonl"
    token = team.home / "token"
    assert team.as_user(team.second, "cat", str(token)).returncode != 0  # the second member cannot read it
    planted = team.as_user(team.second, "ln", "-s", str(token), str(ledger))
    assert planted.returncode == 0, planted.stderr
    added = team.nodes(team.first, str(ledger), "--exclude", "node6", "--why", "x")
    assert added.returncode == 1 and added.stdout == ""
    assert added.stderr == ("bootstrap nodes: planted.jsonl: the observations were not added: planted.jsonl: a link, "
                            "not followed\n")
    listed = team.nodes(team.first, str(ledger))
    assert listed.returncode == 1 and listed.stderr == ("bootstrap nodes: planted.jsonl: a link, not followed: the "
                                                        "ledger is not read\n")
    assert ledger.is_symlink() and token.read_text() == TOKEN
    copies = [p for p in team.project.iterdir() if p.is_file() and not p.is_symlink() and TOKEN in p.read_text()]
    assert copies == []
