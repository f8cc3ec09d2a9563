"""Every wait is bounded by the user's timeout and never blames a rank that started (issue 28, class 5).

1. Static: every call in the package that can block on another process, a thread or the clock is listed in
   :data:`WAITS` with what bounds it; a new one fails the test until it is listed (and bounded).
2. Real stores: rank 0's run directory under torchrun's agent store is waited for within the preset's
   ``env.distributed.timeout_s``, connect and read together, and what rank 0 sent is read strictly.
3. The budget: one :class:`~bootstrap.distributed.waits.Deadline` for all the steps of one wait.

The agreement's own waits (a rank under another policy, a rank that never comes) are held by
tests/unit/test_agree_store.py on a real TCPStore and tests/e2e/test_agreement.py under torchrun.
"""
import ast
import datetime

import pytest
import torch.distributed as dist

from bootstrap.distributed import group
from bootstrap.distributed.launcher import detect
from bootstrap.distributed.waits import Deadline
from bootstrap.doors.errors import BootstrapError

from conftest import ROOT

# (module, call) -> what bounds it. Anything else found below fails the test.
WAITS = {
    ("bootstrap/fabric/profile.py", "process.communicate"): "min(60, env.distributed.timeout_s), then its "
                                                                        "process group is killed",
    ("bootstrap/fabric/profile.py", "process.wait"): "bash, after SIGKILL to its process group (reaped at "
                                                                 "once); its pipe is closed, not read again",
    ("bootstrap/adapter/callback.py", "agree_on_run_dir"): "env.distributed.timeout_s (jobconfig.timeout_s)",
    ("bootstrap/adapter/sweep_end.py", "self._ended.wait"): "POLL_S, in a daemon thread that ends with the sweep",
    ("bootstrap/core/agreement.py", "group.run_interruptibly"): "the work's own deadline; Ctrl-C within POLL_S",
    ("bootstrap/core/agreement.py", "group.rendezvous_store"): "the comparison's Deadline(timeout_s)",
    ("bootstrap/core/agreement.py", "agree_store.exchange"): "the comparison's Deadline(timeout_s)",
    ("bootstrap/distributed/agree_store.py", "deadline.bound(store).get"): "what is left of the Deadline",
    ("bootstrap/distributed/agree_store.py", "time.sleep"): "POLL_S, looping within min(COURTESY_S, the Deadline)",
    ("bootstrap/distributed/agree_store.py", "store.multi_get"): "keys every rank set before 'done': no wait",
    ("bootstrap/distributed/phase_exchange.py", "store.wait"): "rank 0's Deadline(env.distributed.timeout_s), from "
                                                               "its first step; no other rank waits",
    ("bootstrap/distributed/phase_exchange.py", "store.multi_get"): "only the records found set: no wait",
    ("bootstrap/doors/outbound.py", "time.sleep"): "locked's own deadline: env.distributed.timeout_s (core/nodes.py)",
    ("bootstrap/distributed/requeue.py", "subprocess.run"): "timeout=env.distributed.timeout_s, each scontrol line",
    ("bootstrap/distributed/requeue.py", "shlex.join"): "no wait: a command line quoted for the log",
    ("bootstrap/distributed/flightrec.py", "time.sleep"): "wait_for_dumps' min(PEERS_S, timeout_s) deadline",
    ("bootstrap/distributed/flightrec.py", "wait_for_dumps"): "min(PEERS_S, env.distributed.timeout_s)",
    ("bootstrap/distributed/flightrec.py", "self._thread.join"): "5 s, once the watcher was told to stop",
    ("bootstrap/distributed/flightrec.py", "select.select"): "POLL_S, in the watcher's daemon thread",
    ("bootstrap/distributed/flightrec.py", "self._main_alive.wait"): "min(GRACE_S, env.distributed.timeout_s)",
    ("bootstrap/distributed/flightrec.py", "store.get"): "only after store.check found the key: no wait",
    ("bootstrap/distributed/group.py", "dist.TCPStore"): "Deadline(timeout_s).left(): connecting, within the budget",
    ("bootstrap/distributed/group.py", "run_interruptibly"): "the work's own timeout; Ctrl-C within POLL_S",
    ("bootstrap/distributed/group.py", "dist.init_process_group"): "timeout=env.distributed.timeout_s (torch's)",
    ("bootstrap/distributed/group.py", "deadline.bound(store).get"): "what is left of Deadline(timeout_s)",
    ("bootstrap/distributed/group.py", "worker.finished.wait"): "POLL_S, looping while the work's own deadline runs",
    ("bootstrap/distributed/group.py", "init_device_mesh"): "the group's timeout (its sub-groups inherit it)",
    ("bootstrap/distributed/group.py", "dist.destroy_process_group"): "local: waits on no peer",
    # the dry run's DeviceMesh: torch's fake backend over a FakeStore, in this process, with no peer to wait for
    ("bootstrap/distributed/fakemesh.py", "dist.init_process_group"): "the fake backend: no peer, no store wait",
    ("bootstrap/distributed/fakemesh.py", "init_device_mesh"): "the fake backend: its collectives return at once",
    ("bootstrap/distributed/fakemesh.py", "dist.destroy_process_group"): "local: waits on no peer",
    ("bootstrap/distributed/group.py", "store.compare_set"): "the group's store timeout, env.distributed.timeout_s",
    ("bootstrap/integrations/__init__.py", "done.wait"): "env.distributed.timeout_s: a tracker's end, in a thread",
    ("bootstrap/provenance/collect.py", "self._thread.join"):
        "the end of env.provenance.seconds (at most env.distributed.timeout_s) at job end; no wait before",
    ("bootstrap/provenance/git.py", "process.wait"): "a watchdog kills git at env.provenance.seconds' deadline",
    ("bootstrap/preflight/measure.py", "time.sleep"): "POLL_S, looping until the preflight's Deadline(seconds)",
    ("bootstrap/preflight/measure.py", "work.wait"): "only once work.is_completed(): no wait; a send or receive "
                                                     "(gloo's never says it is completed): what is left of the Deadline",
    ("bootstrap/preflight/measure.py", "dist.new_group"): "timeout=what is left of the preflight's Deadline",
    ("bootstrap/preflight/check.py", "measure.new_group"): "what is left of the preflight's Deadline",
    ("bootstrap/watch/watcher.py", "self._stopped.wait"): "a window (env.watch.window_s), in the watch's daemon "
                                                          "thread; the job's end sets the event",
    ("bootstrap/watch/watcher.py", "self._thread.join"): "JOIN_S, once the watch was told to stop",
    ("bootstrap/watch/probe.py", "self._thread.join"): "1 s, once the listener's socket is closed (its accept wakes "
                                                       "within 0.5 s)",
    ("bootstrap/watch/exchange.py", "self.store.get"): "only after store.check found the key (or its counter said "
                                                       "rank 0 set it): no wait",
    ("bootstrap/watch/exchange.py", "self.store.multi_get"): "only keys store.check found: no wait",
    ("bootstrap/preflight/check.py", "dist.destroy_process_group"):
        "the check's own group: after a collective a peer never matched, its timeout, what was left of the budget",
}
_BLOCKING = {"wait", "join", "sleep", "TCPStore", "init_process_group", "init_device_mesh", "multi_get",
             "compare_set", "barrier", "new_group", "run_interruptibly", "destroy_process_group", "wait_for_dumps",
             "exchange", "agree_on_run_dir", "rendezvous_store", "get", "select", "run", "communicate"}


def _waits():
    for path in sorted((ROOT / "bootstrap").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            receiver = ast.unparse(func.value) if isinstance(func, ast.Attribute) else ""
            if name not in _BLOCKING or (name == "get" and "store" not in receiver.lower()) \
                    or (name == "select" and receiver != "select") or (name == "run" and receiver != "subprocess") \
                    or (name == "join" and (isinstance(func.value, ast.Constant) or receiver.startswith("os.path"))):
                continue
            yield str(path.relative_to(ROOT)), ast.unparse(func)


def test_every_wait_in_the_package_is_listed_with_what_bounds_it():
    found = set(_waits())
    assert found - set(WAITS) == set(), "bound these by the user's timeout, then list them in WAITS"
    assert set(WAITS) - found == set(), "no longer in the package: take it off WAITS"


def test_one_deadline_bounds_every_step_of_a_wait():
    deadline = Deadline(0.3)
    store = dist.TCPStore("127.0.0.1", 0, 1, True, datetime.timedelta(seconds=3600))
    for key in ("a", "b", "c"):  # three steps, each would wait an hour on the store's own timeout
        bounded = deadline.bound(store)
        assert bounded.timeout <= datetime.timedelta(seconds=0.3)  # what is left of the one budget, at most
        with pytest.raises(RuntimeError):
            bounded.get(key)


# -- rank 0's run directory, under torchrun's agent store -----------------------------------------
def _agent_store():
    """A store as torchrun's agent hosts it, and rank 1's launch of a world it serves."""
    store = dist.TCPStore("127.0.0.1", 0, 1, True, datetime.timedelta(seconds=3600), wait_for_workers=False)
    environ = {"TORCHELASTIC_RUN_ID": "run9", "TORCHELASTIC_USE_AGENT_STORE": "True", "RANK": "1", "WORLD_SIZE": "2",
               "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(store.port)}
    return store, environ, detect(environ)


def test_rank_1_waits_for_rank_0s_run_directory_within_the_users_timeout():
    store, environ, launch = _agent_store()  # a store whose own timeout is an hour: only the user's 2 s end this
    with pytest.raises(BootstrapError) as refused:  # rank 0 never publishes: the old wait was 300 s + 300 s
        group.agree_on_run_dir("/mine", launch, 2, environ)
    assert "within env.distributed.timeout_s=2" in str(refused.value) and "Rank 0 did not start" in str(refused.value)


def test_rank_0s_run_directory_is_read_strictly():
    store, environ, launch = _agent_store()
    key = "hydra_train_bootstrap/run9/0/run_dir"
    store.set(key, "/runs/rank0")
    assert group.agree_on_run_dir("/mine", launch, 5, environ) == "/runs/rank0"
    for garbage in (b"\xff\xfe", b"a\0b", b"/" * 5000):
        store.set(key, garbage)
        with pytest.raises(BootstrapError, match="could not learn rank 0's run directory"):
            group.agree_on_run_dir("/mine", launch, 5, environ)


def test_no_store_is_asked_where_torchrun_offers_none():
    store, environ, launch = _agent_store()
    environ = {**environ, "TORCHELASTIC_USE_AGENT_STORE": "False"}
    assert group.agree_on_run_dir("/mine", detect(environ), 5, environ) == "/mine"
