"""Shared helpers: run the real train_stub.py in a subprocess and read what it wrote.

tests/unit/ holds in-process tests (a process started there fails the test, see _no_processes);
tests/e2e/ holds the tests that start processes, marked ``e2e`` here: ``pytest -m "not e2e"``
runs the unit tests alone."""

import _posixsubprocess
import json
import math
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pytest
from hypothesis import settings

# Property tests assert what holds, not how fast: a loaded 2-core CI machine must not fail them on time.
settings.register_profile("bootstrap", deadline=None)
settings.load_profile("bootstrap")

ROOT = Path(__file__).resolve().parents[1]
STUB = ROOT / "train_stub.py"
E2E = Path(__file__).resolve().parent / "e2e"
UNIT = Path(__file__).resolve().parent / "unit"


def pytest_ignore_collect(collection_path, config):
    # `-m "not e2e"` does not even import the e2e files: they insist on their engines (Lightning,
    # mpirun, Ray) at import, and the unit tests need only the `test` extra.
    path = collection_path.resolve()
    if config.getoption("markexpr") == "not e2e" and E2E in (path, *path.parents):
        return True
    return None


def pytest_collection_modifyitems(items):
    for item in items:
        if E2E in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.e2e)


def _refuse_process(*args, **kwargs):
    raise AssertionError("a unit test started a process: move it to tests/e2e")


# subprocess binds fork_exec when it is imported; multiprocessing calls it through the module
_PROCESS_STARTS = ((subprocess, "_fork_exec"), (_posixsubprocess, "fork_exec"), (os, "fork"), (os, "posix_spawn"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """A unit test, and every fixture it sets up (module-scoped ones too), runs in this process:
    ``pytest -m "not e2e"`` stays the fast subset."""
    if UNIT not in Path(item.path).resolve().parents:
        yield
        return
    saved = [(owner, name, getattr(owner, name)) for owner, name in _PROCESS_STARTS]
    for owner, name, _ in saved:
        setattr(owner, name, _refuse_process)
    try:
        yield
    finally:
        for owner, name, value in saved:
            setattr(owner, name, value)


@pytest.fixture(scope="session", autouse=True)
def _every_report_matches_its_schema(tmp_path_factory):
    """Every report of today's version that the suite's jobs wrote validates against bootstrap.schema.json.
    A file the package's own reader refuses is a test's planted input, not a report the package wrote; older
    versions' reports here are copies or planted (tests/unit/test_report_schema.py checks the real ones against
    their own version's schema). At the session's end: a mismatch fails the last test that ran."""
    yield
    import jsonschema

    from bootstrap.doors import json_schema, records
    from bootstrap.doors.inbound import Unreadable

    validators = {records.SCHEMA_VERSION: jsonschema.Draft202012Validator(json_schema.report_schema())}
    wrong = []
    for path in tmp_path_factory.getbasetemp().rglob("bootstrap*.json"):
        try:
            records.read_report(path)
            data = json.loads(path.read_text())
        except (Unreadable, OSError, ValueError):
            continue
        validator = validators.get(data.get("schema_version"))
        errors = list(validator.iter_errors(data)) if validator else []
        wrong += [f"{path}: {'.'.join(map(str, e.absolute_path))}: {e.message[:200]}" for e in errors[:3]]
    assert not wrong, "reports that do not match their schema:\n" + "\n".join(wrong[:20])


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    out_dir: Path

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    @property
    def report(self) -> Optional[dict]:
        path = self.out_dir / "bootstrap.json"
        return json.loads(path.read_text()) if path.exists() else None


def clean_env(**extra: str) -> dict:
    """The test process's environment without variables that would change the stub's plan."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "HYDRA_FULL_ERROR", "PYTHONHASHSEED")
           and not k.startswith(("TORCH_", "PYTORCH_"))}
    env.update(extra)
    return env



def trained_as_one(reports: list) -> bool:
    """Whether the ranks ended with the same model: their final losses on one shared batch agree.

    To float rounding only: each rank evaluates on its own threads (MKL may use fewer of them
    on a busy machine), so the last bits can differ. Ranks that did not all-reduce their
    gradients trained on different data and differ by far more."""
    losses = [r["job"]["metrics"]["final_loss"] for r in reports]
    return all(math.isclose(loss, losses[0], rel_tol=1e-6) for loss in losses)

@pytest.fixture
def run_stub(tmp_path):
    """Run ``python train_stub.py OVERRIDES`` with its output directory in tmp_path."""

    def run(*overrides: str, env: Optional[dict] = None, script: Path = STUB, timeout: int = 120) -> Run:
        out_dir = tmp_path / "out"
        cmd = [sys.executable, str(script), f"hydra.run.dir={out_dir}", *overrides]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path,
                              env=clean_env() if env is None else env, timeout=timeout)
        return Run(proc.returncode, proc.stdout, proc.stderr, out_dir)

    return run


@dataclass
class Answer:
    returncode: int
    stdout: str
    stderr: str


def _main_here(main, capsys, monkeypatch):
    """``main(ARGS)`` of one of the package's command-line tools, run in this process (its code
    path, minus the interpreter's start), with ``env`` as the whole environment and ``cwd`` as the
    working directory; both are put back afterwards."""

    def run(*args: str, cwd: Optional[Path] = None, env: Optional[dict] = None) -> Answer:
        capsys.readouterr()
        with monkeypatch.context() as patch:
            for name in list(os.environ):
                patch.delenv(name)
            for name, value in (clean_env() if env is None else env).items():
                patch.setenv(name, value)
            if cwd is not None:
                patch.chdir(cwd)
            try:
                code = main(list(args))
            except SystemExit as stop:  # argparse's usage errors
                code = stop.code
        captured = capsys.readouterr()
        return Answer(code, captured.out, captured.err)

    return run


@pytest.fixture
def doctor_here(capsys, monkeypatch):
    """``bootstrap doctor ARGS`` in this process (see :func:`_main_here`)."""
    from bootstrap.cli import doctor

    return _main_here(doctor.main, capsys, monkeypatch)


@pytest.fixture
def tune_here(capsys, monkeypatch):
    """``bootstrap tune ARGS`` in this process (see :func:`_main_here`)."""
    from bootstrap.cli import tune

    return _main_here(tune.main, capsys, monkeypatch)


@pytest.fixture
def diff_here(capsys):
    """``bootstrap diff`` in this process: (exit status, stdout, stderr)."""
    def run(*args):
        capsys.readouterr()
        from bootstrap.cli import diff

        code = diff.main([str(arg) for arg in args])
        out, err = capsys.readouterr()
        return code, out, err

    return run
