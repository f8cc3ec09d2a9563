"""The export marker's key (bootstrap.exportkey): one per user, out of the environment, in a place only
the user may enter. Real files in a temporary home; nothing of the real user's is touched."""
import os
import stat
import tempfile

import pytest

from bootstrap.variables import exportkey


@pytest.fixture
def home(tmp_path, monkeypatch):
    """An environment whose home is a fresh directory, and a temporary directory of its own."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(exportkey, "_found", {})
    return {"HOME": str(tmp_path / "home")}


def test_the_key_is_made_once_in_a_directory_only_the_user_may_enter(home):
    assert exportkey.load(home) is None  # reading never creates
    key = exportkey.load_or_create(home)
    assert isinstance(key, bytes) and len(key) == 32
    directory = exportkey.candidates(home)[0]
    assert str(directory).startswith(home["HOME"]) and directory.name == "hydra-train-bootstrap"
    assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(directory / exportkey.KEY_NAME).st_mode) == 0o600
    assert sorted(os.listdir(directory)) == [exportkey.KEY_NAME]  # no spare file left behind
    exportkey._found.clear()
    assert exportkey.load(home) == key == exportkey.load_or_create(home)  # kept, and everyone's


def test_xdg_cache_home_is_the_users_cache(home, tmp_path):
    environ = {**home, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    assert exportkey.candidates(environ)[0] == tmp_path / "cache" / "hydra-train-bootstrap"
    assert exportkey.candidates({**home, "XDG_CACHE_HOME": "relative"})[0] == \
        exportkey.candidates(home)[0]  # the spec ignores a relative path


def test_a_directory_others_may_enter_is_not_used(home):
    directory = exportkey.candidates(home)[0]
    directory.mkdir(parents=True, mode=0o755)
    directory.chmod(0o755)
    (directory / exportkey.KEY_NAME).write_text("ab" * 32 + "\n")  # a key anyone could have read
    key = exportkey.load_or_create(home)
    assert key is not None and key != bytes.fromhex("ab" * 32)
    assert exportkey.candidates(home)[1].is_dir()  # made in the user's own temporary directory instead


def test_a_link_in_place_of_the_directory_is_not_followed(home, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (elsewhere / exportkey.KEY_NAME).write_text("cd" * 32 + "\n")
    directory = exportkey.candidates(home)[0]
    directory.parent.mkdir(parents=True)
    directory.symlink_to(elsewhere)
    assert exportkey.load(home) is None
    assert exportkey.load_or_create(home) != bytes.fromhex("cd" * 32)


def test_a_damaged_key_is_replaced(home):
    directory = exportkey.candidates(home)[0]
    directory.mkdir(parents=True, mode=0o700)
    (directory / exportkey.KEY_NAME).write_text("not a key")
    assert exportkey.load(home) is None
    key = exportkey.load_or_create(home)
    assert key is not None and (directory / exportkey.KEY_NAME).read_text().strip() == key.hex()


def test_no_place_for_a_key_means_no_key(home, monkeypatch, tmp_path):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where a directory would go")
    monkeypatch.setattr(tempfile, "tempdir", str(blocked / "tmp"))
    assert exportkey.load_or_create({"HOME": str(blocked)}) is None
    assert exportkey.load_or_create({}) is None  # no home at all, and no temporary directory


# -- key material from a private regular file of the user's only (issue 28, class 7) -----------------------
def _planted(directory, tmp_path, how: str) -> bytes:
    """A key someone else could know, put where the user's key goes: through a link, or readable by others."""
    known = bytes.fromhex("ef" * 32)
    directory.mkdir(parents=True, mode=0o700)
    directory.chmod(0o700)  # a private directory: only the file is wrong
    target = directory / exportkey.KEY_NAME
    if how == "a link to a file anyone may write":
        elsewhere = tmp_path / "world-writable"
        elsewhere.write_text(known.hex() + "\n")
        elsewhere.chmod(0o666)
        target.symlink_to(elsewhere)
    else:  # a regular file others may read (and so know the key) or write
        target.write_text(known.hex() + "\n")
        target.chmod({"readable by others": 0o644, "writable by the group": 0o620}[how])
    return known


@pytest.mark.parametrize("how", ["a link to a file anyone may write", "readable by others", "writable by the group"])
def test_a_key_someone_else_may_know_is_no_key_and_is_replaced(home, tmp_path, how):
    directory = exportkey.candidates(home)[0]
    known = _planted(directory, tmp_path, how)
    assert exportkey.load(home) is None
    key = exportkey.load_or_create(home)
    assert key is not None and key != known
    path = directory / exportkey.KEY_NAME
    assert not path.is_symlink() and stat.S_IMODE(os.lstat(path).st_mode) == 0o600
    if how == "a link to a file anyone may write":
        assert (tmp_path / "world-writable").read_text().strip() == known.hex()  # the link, not its target, replaced


def test_a_marker_forged_with_a_key_someone_else_knows_leaves_the_users_value_the_users(home, tmp_path, monkeypatch):
    """Before: a link to a world-writable file was trusted, so a marker forged with its key made the user's own
    value look like a parent's export, and the preset replaced it. Now the user's value wins."""
    from bootstrap.variables.environ import EXPORTED, export_digest, format_marker, inherited_names, plan_vars
    from bootstrap.variables.readers import ProcessState

    known = _planted(exportkey.candidates(home)[0], tmp_path, "a link to a file anyone may write")
    monkeypatch.setenv("HOME", home["HOME"])
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    shell = {"NCCL_ALGO": "Tree", EXPORTED: format_marker({"NCCL_ALGO": export_digest(known, "NCCL_ALGO", "Tree")})}
    assert inherited_names(shell) == frozenset()  # what cannot be verified with a trusted key is the user's
    state = ProcessState(cuda_initialized=False, process_group_initialized=False)
    (decision,) = plan_vars({"NCCL_ALGO": "Ring"}, shell, {}, set(), state)
    assert (decision.value, decision.source) == ("Tree", "shell")
