"""The ranks' comparison through a real TCPStore: its operations per rank stay constant with the world size.

How it is measured: one real ``torch.distributed.TCPStore`` server and one real client per rank, each rank
in its own thread of this process (the store's calls release the GIL). Each client is wrapped in
:class:`Counting` (bench/bench_scale.py's, so that the test and the benchmark count the same operations),
which forwards every call to the real store and counts it: the store does the work.
"""
import datetime
import itertools
import json
import sys
import threading

import pytest
import torch.distributed as dist

from bootstrap.distributed.agree_store import MAX_NAMED, POLICY_KEY, Absent, absent_ranks, exchange
from bootstrap.distributed.waits import Deadline
from bootstrap.doors.inbound import Unreadable

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
from bench_scale import Counting, _connect  # noqa: E402


MAX_WORLD = 40  # the largest world below: 64 made no other point, and each connect may stall here (bench_scale)
_keys = itertools.count()


@pytest.fixture(scope="module")
def clients():
    """One real TCPStore server (rank 0's) and a client for each other rank, connected once for the module (bench's
    ``_connect``, all at once: one after another, this machine's loopback stalls a connect now and then)."""
    timeout = datetime.timedelta(seconds=60)
    server = dist.TCPStore("127.0.0.1", 0, MAX_WORLD, True, timeout, wait_for_workers=False)
    return [server, *_connect(server.port, MAX_WORLD - 1, MAX_WORLD - 1)]


def _world(clients, world_size: int, fingerprint_of, policy_of=lambda rank: "error", ranks=None,
           timeout_s: float = 60):
    """Every rank's exchange over the module's real TCPStore, under a key of its own (``ranks``: those that come;
    all by default); returns (results, stores, errors) by rank, each store counting that world's calls."""
    key = f"run/{next(_keys)}/1"
    stores = {rank: Counting(clients[rank]) for rank in range(world_size)}
    results, errors = {}, {}

    def rank_main(rank: int) -> None:
        store = stores[rank]
        try:
            results[rank] = exchange(store, key, rank, world_size, f"node-{rank % 4}", policy_of(rank),
                                     lambda salt: fingerprint_of(rank, salt), Deadline(timeout_s))
        except BaseException as error:  # noqa: BLE001 - handed to the test
            errors[rank] = error

    threads = [threading.Thread(target=rank_main, args=(rank,), daemon=True) for rank in (ranks or range(world_size))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)  # a rank that waited out a budget of an hour would still be here
    assert not any(thread.is_alive() for thread in threads), "a rank is still waiting"
    if ranks is None:
        assert not errors, errors
    return results, stores, errors


def _same(rank, salt):
    return {"version.torch": "2.13.0", "var.NCCL_ALGO": "Ring"}


def _ops(store) -> int:
    return sum(store.ops.values())


@pytest.mark.parametrize("world_size", [2, MAX_WORLD])
def test_when_the_ranks_agree_each_makes_five_operations_whatever_the_world_size(clients, world_size):
    results, stores, _ = _world(clients, world_size, _same)
    assert all(r.odd_count == 0 and r.odd == [] for r in results.values())
    ops = sorted(_ops(store) for store in stores.values())
    assert ops == [5] * world_size  # the last rank to arrive sets "done" where the others wait for it
    assert all(store.ops["get"] <= 2 and store.ops["multi_get"] == 0 for store in stores.values())


@pytest.mark.parametrize("world_size", [2, MAX_WORLD])
def test_a_rank_that_differs_costs_it_two_more_and_each_other_rank_one_read_and_one_mark(clients, world_size):
    odd_rank = world_size - 1

    def fingerprint(rank, salt):
        return {**_same(rank, salt), "var.NCCL_ALGO": "Tree"} if rank == odd_rank else _same(rank, salt)

    results, stores, _ = _world(clients, world_size, fingerprint)
    for result in results.values():  # every rank learns the same: who differs, on what, where
        assert result.odd_count == 1
        assert [(o.rank, o.host, o.values) for o in result.odd] == [(odd_rank, f"node-{odd_rank % 4}",
                                                                     {"var.NCCL_ALGO": "Tree"})]
    counts = {rank: _ops(store) - store.ops["check"] - (2 if rank == odd_rank else 0) for rank, store in stores.items()}
    # the 5, one multi_get of the odd records, one add saying this rank read them; then the last reader sets a
    # mark (one set), which rank 0, hosting the store, looks for (store.check, which never blocks) before it leaves
    assert set(counts.values()) <= {7, 8} and sum(counts.values()) - 7 * world_size == 1  # the mark, set once
    assert counts[0] == 8 or stores[0].ops["check"] >= 1  # rank 0 set the mark itself, or looked for it
    assert all(store.ops["check"] == 0 for rank, store in stores.items() if rank)  # only rank 0 looks


def test_the_odd_records_read_are_bounded_when_many_ranks_differ(clients):
    def fingerprint(rank, salt):
        return {"var.NCCL_PROTO": "Simple" if rank else "LL"}

    results, stores, _ = _world(clients, 40, fingerprint)
    assert all(r.odd_count == 39 and len(r.odd) == MAX_NAMED for r in results.values())
    assert all(store.ops["multi_get"] == 1 for store in stores.values())


def test_secrets_travel_as_salted_digests_that_differ_per_run():
    from bootstrap.core.comparison import SECRET, salted

    first, second = salted("a" * 32)("hf_secret_token"), salted("b" * 32)("hf_secret_token")
    assert first.startswith(SECRET) and "hf_secret_token" not in first
    assert first != second  # keyed by the run: a digest from one run says nothing in another


def test_a_peers_garbage_in_the_store_is_refused_with_a_reason():
    store = dist.TCPStore("127.0.0.1", 0, 1, True, datetime.timedelta(seconds=5))
    store.set("k/ref", json.dumps({"host": "a", "salt": "s", "fingerprint": {"x": 5}}))
    with pytest.raises(Unreadable, match="fingerprint.x: not text"):
        exchange(store, "k", 1, 2, "b", "error", lambda salt: {}, Deadline(5))
    store.set("j/ref", b"\xff" * 10)
    with pytest.raises(Unreadable, match="not UTF-8"):
        exchange(store, "j", 1, 2, "b", "error", lambda salt: {}, Deadline(5))


# -- policies that differ, and ranks that never come: bounded, and naming the right ranks ----------------
@pytest.mark.parametrize("off_rank", [0, 1])
def test_a_rank_under_another_policy_is_named_by_every_rank_and_nobody_waits_for_it(clients, off_rank):
    """One rank runs agree=off, the others error: every rank still posts and arrives (no one waits out the
    timeout: under a budget of an hour, every rank's thread ends within _world's join), and every rank learns
    which rank runs which policy."""
    results, stores, _ = _world(clients, 3, _same, policy_of=lambda rank: "off" if rank == off_rank else "error",
                                timeout_s=3600)
    assert sorted(results) == [0, 1, 2]
    for result in results.values():
        odd = {o.rank: o.values for o in result.odd}
        assert result.reference.policy == ("off" if off_rank == 0 else "error")
        if off_rank == 0:  # rank 0's policy is the reference: the two others say theirs
            assert odd == {1: {POLICY_KEY: "error"}, 2: {POLICY_KEY: "error"}}
        else:
            assert odd == {1: {POLICY_KEY: "off"}}


def test_a_rank_that_never_comes_is_named_within_the_budget_and_the_ranks_that_came_are_not(clients):
    _, _, errors = _world(clients, 4, _same, ranks=[0, 1, 3], timeout_s=3)
    assert set(errors) == {0, 1, 3} and all(isinstance(e, Absent) for e in errors.values())
    for error in errors.values():
        assert list(error.ranks) == [2] and error.complete, str(error)
        assert "rank 2 of 4 did not reach the comparison within 3 s" in str(error)


def test_rank_0_that_never_comes_is_named_by_the_ranks_waiting_for_its_record(clients):
    _, _, errors = _world(clients, 3, _same, ranks=[1, 2], timeout_s=2)
    assert {rank: list(e.ranks) for rank, e in errors.items()} == {1: [0], 2: [0]}


def test_absent_ranks_are_found_by_halving_in_a_few_calls_each():
    store = Counting(dist.TCPStore("127.0.0.1", 0, 1, True, datetime.timedelta(seconds=5)))
    for rank in range(10_000):
        if rank not in (17, 5000, 9999):
            store.store.set(f"k/here/{rank}", "")
    absent, complete = absent_ranks(store, "k", 10_000)
    assert list(absent) == [17, 5000, 9999] and complete
    assert store.ops["check"] <= 3 * 2 * 14 + 1  # two checks per halving, 14 halvings per absent rank
    many, complete = absent_ranks(store, "nothing-here", 10_000)
    assert len(many) == MAX_NAMED and not complete  # named up to the bound, the rest said to exist


# -- issue 45: rank 0's wait for its peers to read is a courtesy: where it serves, bounded, and quiet ----------------
@pytest.mark.parametrize("rank0_hosts", [True, False], ids=["rank 0 hosts the store (srun)", "an agent hosts it"])
def test_a_peer_that_never_reads_costs_rank_0_its_courtesy_at_most(rank0_hosts, monkeypatch):
    from bootstrap.distributed import agree_store

    monkeypatch.setattr(agree_store, "COURTESY_S", 0.3)  # its own small bound (5 s), here shorter still
    key, timeout = "run/hostile/1", datetime.timedelta(seconds=60)
    server = dist.TCPStore("127.0.0.1", 0, 2, True, timeout, wait_for_workers=False)
    peer = dist.TCPStore("127.0.0.1", server.port, None, False, timeout)
    rank0, done = Counting(server), {}

    def rank_0() -> None:  # the budget is the default env.distributed.timeout_s: the courtesy must not spend it
        done["result"] = exchange(rank0, key, 0, 2, "node-0", "error", lambda salt: _same(0, salt), Deadline(600),
                                  rank0_hosts=rank0_hosts)

    thread = threading.Thread(target=rank_0)
    thread.start()
    peer.set(f"{key}/here/1", "")  # the peer: a readable record that differs, then it never reads what differed
    json.loads(peer.get(f"{key}/ref"))
    slot = peer.add(f"{key}/odd", 1)
    peer.set(f"{key}/odd/{slot}", json.dumps({"rank": 1, "host": "node-1", "values": {"var.NCCL_ALGO": "Tree"}}))
    if peer.add(f"{key}/arrived", 1) == 2:
        peer.set(f"{key}/done", "1")
    thread.join(60)  # a bound on the test, far below the 600 s a blocking wait would take
    assert not thread.is_alive() and done["result"].odd_count == 1
    assert rank0.ops["get"] <= 1  # the wait for "done" at most: the courtesy never blocks (no c10d warning lines)
    assert (rank0.ops["check"] >= 1) == rank0_hosts  # it looked only where its own process hosts the store
