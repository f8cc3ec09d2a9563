"""Ctrl-C and SIGTERM while the rendezvous waits for a peer: real processes, real TCPStore, no mocks.

torch waits for peers in C++, where Python runs no signal handler; the bootstrap waits in
a worker thread so that the main thread stays responsive (bootstrap.distributed.start).
"""
import json
import signal
import socket
import subprocess
import sys
import time

import pytest

from conftest import ROOT, STUB, clean_env

EXIT_WITHIN_S = 3.0  # the issue asks for about 2 s; the rest is slack for a loaded CI machine


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port: int) -> bool:
    """Whether some socket listens on ``port`` (rank 0's TCPStore), read from /proc: no connection made."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.read().splitlines()[1:]:
                fields = line.split()
                if fields[1].endswith(f":{port:04X}") and fields[3] == "0A":  # 0A: LISTEN
                    return True
    return False


def wait_for(predicate, timeout: float, what: str, proc: subprocess.Popen):
    """Poll for an event the test needs before acting: not a stand-in for work."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        if proc.poll() is not None:
            raise AssertionError(f"the process ended ({proc.returncode}) before {what}:\n{proc.stderr.read()}")
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def rank_env(rank: int, port: int, **extra: str) -> dict:
    return clean_env(RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE="2",
                     MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), **extra)


def popen(cmd, env, cwd) -> subprocess.Popen:
    return subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.communicate(timeout=10)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_waiting_for_a_peer_ends_the_job_at_once(tmp_path, sig):
    # Rank 0 of a 2-rank world whose rank 1 never comes: without the fix it waits timeout_s (600 s).
    port, out = free_port(), tmp_path / "out"
    proc = popen([sys.executable, str(STUB), f"hydra.run.dir={out}"], rank_env(0, port), tmp_path)
    try:
        wait_for(lambda: listening(port), 30, "rank 0 to host the rendezvous store", proc)
        sent = time.monotonic()
        proc.send_signal(sig)
        try:
            stdout, stderr = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{sig.name} did not end a rank waiting for its peer within 20 s") from None
        elapsed = time.monotonic() - sent
    finally:
        stop(proc)

    assert elapsed < EXIT_WITHIN_S, f"exited {elapsed:.2f} s after {sig.name}"
    # SIGTERM: the session's handler's SystemExit(143). SIGINT: 130, or death by SIGINT.
    assert proc.returncode in ((143,) if sig == signal.SIGTERM else (130, -signal.SIGINT)), (proc.returncode, stderr)
    report = json.loads((out / "bootstrap.rank0.json").read_text())
    assert report["job"]["status"] == "interrupted", report["job"]
    assert report["distributed"]["process_group"] == "none"  # never made, so nothing to destroy
    assert "Traceback" not in stderr, stderr


PEER_WAITS = """
import os, sys, threading
import torch.distributed as dist
from bootstrap.distributed import group
from bootstrap.doors.errors import BootstrapError
from bootstrap.distributed.launcher import Launch

launch = Launch("torchrun", rank=0, world_size=2, local_world_size=2, master_addr="127.0.0.1",
                master_port=int(os.environ["MASTER_PORT"]))
print("starting", flush=True)
try:
    group.start(launch, "gloo", 60, "cpu", {"dp": 2}, create=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
assert not dist.is_initialized()
try:  # the interrupted rendezvous still holds MASTER_PORT: a second one must not start
    group.start(launch, "gloo", 60, "cpu", None, create=True)
except BootstrapError as error:
    print("refused:", error, flush=True)
(waiting,) = group._abandoned
print("waiting for the late peer", flush=True)
assert waiting.finished.wait(30), "the abandoned rendezvous never finished"
waiting.join(10)  # its last lines after finished is set
print("late peer came; group left behind:", dist.is_initialized(),
      "; threads:", sorted(t.name for t in threading.enumerate()), flush=True)
"""
LATE_PEER = """
import datetime, torch.distributed as dist
dist.init_process_group("gloo", rank=1, world_size=2, timeout=datetime.timedelta(seconds=30))
print("peer joined", flush=True)
"""


@pytest.mark.timeout(60)
def test_a_peer_that_comes_after_the_interrupt_leaves_no_group_behind(tmp_path):
    """In a process that lives on (a notebook), the abandoned wait may still succeed later:
    the group it makes then is destroyed at once, and no second rendezvous starts meanwhile."""
    port = free_port()
    env = rank_env(0, port)
    proc = popen([sys.executable, "-c", PEER_WAITS], env, ROOT)
    try:
        wait_for(lambda: listening(port), 30, "the rendezvous store", proc)
        proc.send_signal(signal.SIGINT)
        lines = []
        while not lines or lines[-1] != "waiting for the late peer":
            line = proc.stdout.readline()
            assert line, f"ended early: {lines}\n{proc.stderr.read()}"
            lines.append(line.strip())
        assert lines[:2] == ["starting", "interrupted"]
        assert lines[2].startswith("refused: An interrupted rendezvous of this process is still waiting")
        peer = subprocess.run([sys.executable, "-c", LATE_PEER], env=rank_env(1, port), cwd=ROOT,
                              capture_output=True, text=True, timeout=30)
        assert peer.returncode == 0 and "peer joined" in peer.stdout, peer.stderr
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        stop(proc)
    assert proc.returncode == 0, stderr
    assert "late peer came; group left behind: False ; threads: ['MainThread']" in stdout
    assert "Traceback" not in stderr and "Exception in thread" not in stderr, stderr


TWO_RANKS = """
import os, torch, torch.distributed as dist
from bootstrap.distributed import group
from bootstrap.distributed.launcher import Launch

rank = int(os.environ["RANK"])
launch = Launch("torchrun", rank=rank, world_size=2, local_world_size=2, master_addr="127.0.0.1",
                master_port=int(os.environ["MASTER_PORT"]))
group = group.start(launch, "gloo", 60, "cpu", {"dp": 1, "tp": 2}, create=True)
# Made in the rendezvous thread, used from the main one: the world group and a mesh sub-group.
world, tp = torch.tensor([rank + 1.0]), torch.tensor([10.0 * (rank + 1)])
dist.all_reduce(world)
dist.all_reduce(tp, group=group.mesh["tp"].get_group())
print(group.state, dist.get_world_size(), world.item(), tp.item(), group.mesh["tp"].get_local_rank(), flush=True)
group.teardown()
print("initialized after teardown:", dist.is_initialized(), flush=True)
"""


@pytest.mark.timeout(60)
def test_a_group_and_mesh_made_off_the_main_thread_serve_the_main_thread(tmp_path):
    port = free_port()
    procs = [popen([sys.executable, "-c", TWO_RANKS], rank_env(rank, port), ROOT) for rank in (0, 1)]
    try:
        results = [p.communicate(timeout=45) for p in procs]
    finally:
        for p in procs:
            stop(p)
    for rank, (p, (stdout, stderr)) in enumerate(zip(procs, results, strict=True)):
        assert p.returncode == 0, stderr
        assert stdout.splitlines() == [f"created 2 3.0 30.0 {rank}", "initialized after teardown: False"]


# A signal that arrives in the middle of a session's close. sys.setprofile sends it, for real, when
# the close reaches the given step. STATE is what the process looks like then: right after the close
# (a notebook that caught Ctrl-C goes on in this process), or at exit.
SIGNAL_DURING_CLOSE = """
import atexit, json, os, signal, sys
import torch
import bootstrap
from bootstrap.core.changes import sigterm_held

before = (os.environ.get("BOOTSTRAP_TEST_VAR"), torch.get_num_threads())
def state(when):
    print(when + " " + json.dumps({
        "restored": (os.environ.get("BOOTSTRAP_TEST_VAR"), torch.get_num_threads()) == before,
        "sigterm_default": signal.getsignal(signal.SIGTERM) is signal.SIG_DFL, "still_held": sigterm_held.depth,
        "pending": sigterm_held.held}),
        flush=True)
atexit.register(state, "EXIT")  # registered first: runs after every session's own exit hook
signums, nested = [getattr(signal, name) for name in sys.argv[1].split("+")], sys.argv[2] == "nested"
outer = bootstrap.initialize({"vars": {"BOOTSTRAP_TEST_VAR": "outer"}, "threads": {"intra_op": 1}},
                             output_dir=sys.argv[3] + "/outer").apply()
inner = bootstrap.initialize({"vars": {"BOOTSTRAP_TEST_VAR": "inner"}}, output_dir=sys.argv[3] + "/inner").apply() \\
    if nested else None
target = inner or outer

def send_at_close(frame, event, arg):
    if event == "call" and frame.f_code.co_name == "task_effects" and frame.f_locals.get("session") is target:
        sys.setprofile(None)
        for signum in signums:
            os.kill(os.getpid(), signum)

sys.setprofile(send_at_close)
try:
    target.close()  # the task's own inner session, or the job's
except KeyboardInterrupt:
    state("CAUGHT")
    sys.exit(0)
print("AFTER CLOSE", flush=True)
"""


@pytest.mark.parametrize("sig, nested", [("SIGTERM", "nested"), ("SIGTERM", "single"), ("SIGINT", "single"),
                                         ("SIGTERM+SIGINT", "single")])
def test_a_signal_during_close_still_leaves_the_process_restored_and_the_job_recorded(tmp_path, sig, nested):
    proc = subprocess.run([sys.executable, "-c", SIGNAL_DURING_CLOSE, sig, nested, str(tmp_path)], cwd=tmp_path,
                          env=clean_env(), capture_output=True, text=True, timeout=120)
    states = {line.split(" ", 1)[0]: json.loads(line.split(" ", 1)[1]) for line in proc.stdout.splitlines()
              if line.startswith(("CAUGHT ", "EXIT "))}
    restored = {"restored": True, "sigterm_default": True, "still_held": 0, "pending": None}
    status = {name: json.loads((tmp_path / name / "bootstrap.json").read_text())["job"]["status"]
              for name in ("outer", "inner") if (tmp_path / name).exists()}
    assert "AFTER CLOSE" not in proc.stdout, proc.stdout
    if sig == "SIGINT":  # Ctrl-C: the close still finished first, and nothing is left held
        assert (proc.returncode, states["CAUGHT"], status) == (0, restored, {"outer": "completed"}), proc.stderr
    elif nested == "nested":  # SIGTERM, held through the inner session's whole close, then ends the process
        assert (proc.returncode, status) == (143, {"outer": "interrupted", "inner": "completed"}), proc.stderr
    else:  # SIGTERM, with or without a Ctrl-C that breaks off the close: the process ends as SIGTERM asked
        assert (proc.returncode, status) == (143, {"outer": "completed"}), proc.stderr
    assert states["EXIT"] == restored
