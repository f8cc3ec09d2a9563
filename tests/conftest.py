"""Shared helpers: run the real train_stub.py in a subprocess and read what it wrote.

tests/unit/ holds in-process tests (a process started there fails the test, see _no_processes);
tests/e2e/ holds the tests that start processes, marked ``e2e`` here: ``pytest -m "not e2e"``
runs the unit tests alone."""

import _posixsubprocess
import importlib.util
import json
import math
import os
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

import pytest
from hypothesis import settings

import processes
import timing

# Property tests assert what holds, not how fast: a loaded 2-core CI machine must not fail them on time.
settings.register_profile("bootstrap", deadline=None)
settings.load_profile("bootstrap")

ROOT = Path(__file__).resolve().parents[1]
STUB = ROOT / "train_stub.py"
E2E = Path(__file__).resolve().parent / "e2e"
CLUSTER = Path(__file__).resolve().parent / "cluster"  # the one-machine cluster's tests start processes too
UNIT = Path(__file__).resolve().parent / "unit"


def pytest_ignore_collect(collection_path, config):
    # `-m "not e2e"` does not even import the e2e files: they insist on their engines (Lightning,
    # mpirun, Ray) at import, and the unit tests need only the `test` extra.
    path = collection_path.resolve()
    if config.getoption("markexpr") == "not e2e" and {E2E, CLUSTER} & {path, *path.parents}:
        return True
    return None


def pytest_configure(config):
    config.pluginmanager.register(processes, "bootstrap-processes")  # every test's processes end with it
    timing.register(config)  # BOOTSTRAP_TEST_TIMES=DIR: where the time goes (tests/durations.py)
    if not hasattr(config, "workerinput"):
        _compile_bytecode()
        _build_the_font_cache()


def _compile_bytecode() -> None:
    """Write the package's bytecode, once, before any test (about 1 s): where PYTHONDONTWRITEBYTECODE is set (this
    machine sets it) every job the suite starts would compile the package's modules again, 0.33 s of CPU each
    (measured: train_stub's bootstrap imports, 0.47 s from source, 0.14 s from bytecode). Python checks each file's
    bytecode against its source, so none is ever stale; tests/ is left alone (its data folders are read whole)."""
    import compileall

    for folder in ("bootstrap", "hydra_plugins"):
        compileall.compile_dir(ROOT / folder, quiet=2, workers=1)


def _build_the_font_cache() -> None:
    """matplotlib builds its font cache at its first import on a machine, and runs ``fc-list`` to do it: in a unit
    test (which may start no process) that first import failed, and only on a fresh machine whose first plot was a
    unit test's. Built here, once, in a process of its own, when the cache is not there (matplotlib's own rule for
    where: MPLCONFIGDIR, else $XDG_CACHE_HOME/matplotlib, else ~/.cache/matplotlib)."""
    try:
        if importlib.util.find_spec("matplotlib") is None:
            return
    except ImportError:  # hidden, as tests/e2e/test_extras.py hides it: the plot extra is missing
        return
    cache = Path(os.environ.get("MPLCONFIGDIR") or
                 Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "matplotlib")
    if not any(cache.glob("fontlist-*.json")):  # a broken matplotlib is left to the tests that need it to say
        subprocess.run([sys.executable, "-c", "import matplotlib.font_manager"], capture_output=True, timeout=300)


def pytest_collection_modifyitems(items):
    for item in items:
        parents = Path(item.path).resolve().parents
        if E2E in parents or CLUSTER in parents:
            item.add_marker(pytest.mark.e2e)
        if CLUSTER in parents:
            item.add_marker(pytest.mark.cluster)
    timing.order(items)  # the costliest modules first (tests/costs.json)


# -- optional parts: a test that needs one says which extra --------------------------------------------------------
# The unit tests need only the `test` extra; a test that needs an optional part is marked
# ``@pytest.mark.extra("plot")`` (or the module: ``pytestmark = pytest.mark.extra("plot")``). Without the part it
# is skipped with the extra's name and the command that installs it; under CI=true (CI installs every extra) such
# a skip is a failure, so CI still proves everything.
EXTRA_MODULES = {"plot": "matplotlib", "mlflow": "mlflow", "wandb": "wandb", "tensorboard": "tensorboard",
                 "lightning": "lightning", "ray": "ray", "mpi": "mpi4py", "bench": "lightning_fabric"}


def missing_extra_message(extra: str) -> Optional[str]:
    """None when the extra's module imports, else the line a skip (or, under CI=true, a failure) shows."""
    import importlib

    module = EXTRA_MODULES[extra]
    try:
        importlib.import_module(module)
    except ImportError:
        return f"needs the '{extra}' extra ({module} is not installed): pip install -e '.[test,{extra}]'"
    return None


def under_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def pytest_runtest_setup(item):
    for marker in item.iter_markers("extra"):
        message = missing_extra_message(marker.args[0])
        if message is not None:
            if under_ci():
                pytest.fail(f"{message} [CI=true: a test that needs an extra must run]", pytrace=False)
            pytest.skip(message)


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


def free_port() -> int:
    """A TCP port free on the loopback now (a rendezvous's, for processes started next)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_together(commands, cwd: Path, envs, timeout: float) -> list:
    """Start every command at once (each in its own session), wait for all; kill what outlives the deadline.
    Returns (exit status, stdout, stderr) of each."""
    import signal

    procs = [subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              start_new_session=True) for cmd, env in zip(commands, envs, strict=True)]
    results = []
    try:
        for proc in procs:
            try:
                out, err = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                out, err = "", f"killed after {timeout} s"
            results.append((proc.returncode, out, err))
    finally:
        for proc in procs:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.communicate()
    return results


# -- the machine's two cores, shared by the tests that time ranks against each other ------------------------------
# Ranks timed against each other on this 2-core machine are judged by each other's speeds: anything else running
# meanwhile slows one rank more than another. CI saw it twice: busy loops pinned by one xdist worker made a
# healthy job's rank "slow" on the other (test_the_stub_under_torchrun_records_the_check), and ordinary tests on
# the other worker slowed one node's matmul 5x in test_slow_link (its window is 80 ms: a few scheduler slices).
# So every test holds the cores shared (the autouse fixture, in xdist's workers), and a test that runs busy loops
# or judges ranks' speeds holds them alone (``cores()``, ``judged_cores``), with the machine to itself.
#
# Two file locks (they hold across xdist's workers and two suites on one machine; the kernel drops a dead
# holder's): CORES_LOCK, shared or exclusive, and TURN, the turnstile a test passes before it takes CORES_LOCK,
# which a test waiting for the cores alone keeps: the tests that follow wait behind it, so it is not starved by
# a worker whose tests hold CORES_LOCK shared back to back. A test drops its own shared hold before it waits
# for the turnstile, so two that want the cores alone never wait on each other.
CORES_LOCK = Path(os.environ.get("TMPDIR", "/tmp")) / "hydra-train-bootstrap-tests.cores.lock"
TURN = CORES_LOCK.with_suffix(".turn")
CORES_WAIT_S = 1200.0  # longer than any one test holds the cores (the slowest cluster test, about 4 minutes)
_HELD: dict = {}  # this process's open lock files: "cores", and "shared" while it holds CORES_LOCK shared


def _flock(handle, mode: int, deadline: float) -> None:
    import fcntl
    import time

    while True:
        try:
            fcntl.flock(handle, mode | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > deadline:
                pytest.fail(f"the cores were held by another test for over {CORES_WAIT_S:g} s ({CORES_LOCK})")
            time.sleep(0.05)


def _lock_cores(exclusive: bool) -> None:
    """Take CORES_LOCK (shared or alone) through the turnstile; this process holds nothing of it before."""
    import fcntl
    import time

    started = time.monotonic()
    deadline = started + CORES_WAIT_S
    handle = _HELD.setdefault("cores", open(CORES_LOCK, "a"))
    with open(TURN, "a") as turn:
        _flock(turn, fcntl.LOCK_EX, deadline)
        _flock(handle, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH, deadline)
        if exclusive:  # the turnstile stays shut while this test has the cores alone: kept open in _HELD
            _HELD["turn"] = os.dup(turn.fileno())
    timing.WAITED[0] += time.monotonic() - started


def _unlock_cores() -> None:
    import fcntl

    fcntl.flock(_HELD["cores"], fcntl.LOCK_UN)
    turn = _HELD.pop("turn", None)
    if turn is not None:
        os.close(turn)  # the last descriptor of that open file: the turnstile opens


@contextmanager
def cores() -> Iterator[None]:
    """Hold the machine's cores alone, for a test that runs busy loops or judges ranks' speeds: no other test
    runs meanwhile. Waits at most CORES_WAIT_S, then fails the test naming the lock."""
    if "turn" in _HELD:  # already alone (judged_cores, then a helper that takes the cores itself)
        yield
        return
    shared = _HELD.pop("shared", False)
    if shared:
        _unlock_cores()
    _lock_cores(exclusive=True)
    try:
        yield
    finally:
        _unlock_cores()
        if shared:
            _lock_cores(exclusive=False)
            _HELD["shared"] = True


@pytest.fixture(autouse=True)
def _shared_cores(request):
    """Every test in an xdist worker holds the cores shared, so that one holding them alone runs by itself (a
    pytest this suite starts, with ``-n 0``, holds nothing: its parent test holds them)."""
    if not hasattr(request.config, "workerinput"):
        yield
        return
    _lock_cores(exclusive=False)
    _HELD["shared"] = True
    try:
        yield
    finally:
        if _HELD.pop("shared", False):
            _unlock_cores()


@pytest.fixture
def judged_cores(_shared_cores):
    """For a test that judges ranks' speeds and starts its processes itself: the cores, alone."""
    with cores():
        yield


def end_listed(pids: Path) -> list:
    """SIGKILL every process whose PID ``pids`` lists (the busy loops a test app started); returns the PIDs listed."""
    import signal

    listed = pids.read_text().split() if pids.exists() else []
    for pid in listed:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except ProcessLookupError:
            pass
    return listed


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
