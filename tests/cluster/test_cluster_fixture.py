"""The cluster fixture itself: nodes with their own hostnames and addresses, links that can be shaped, cut
and mended, and a teardown that leaves nothing, also when the test inside fails or is interrupted."""

import os
import signal
import subprocess
import sys

import pytest

from cluster.netns import NETNS_DIR, Cluster, sweep

# A TCP connect from one node to another's port 9 (nothing listens): "refused" proves the path is there.
PROBE = """
import socket, sys
s = socket.socket(); s.settimeout(1.0)
try:
    s.connect((sys.argv[1], 9)); print("open")
except ConnectionRefusedError:
    print("refused")
except OSError as e:
    print("unreachable")
"""


def reach(cluster, src, dst):
    return cluster.run(src, [sys.executable, "-c", PROBE, dst.name]).stdout.strip()


def test_each_node_has_its_hostname_address_and_only_the_cluster_route(cluster):
    for node in cluster.nodes:
        ran = cluster.run(node, ["sh", "-c", "hostname; ip -4 -o addr show dev eth0; ip route; echo $HOSTNAME"])
        lines = ran.stdout.splitlines()
        assert lines[0] == node.name
        assert f"inet {node.address}/24" in lines[1]
        route = f"169.254.0.0/24 dev eth0 proto kernel scope link src {node.address} "
        assert lines[2:-1] == [route]  # the cluster's subnet, and no other route
        assert lines[-1] == node.name
        assert node.address.startswith("169.254.")


def test_a_node_reaches_the_others_by_name_and_runs_in_the_callers_directory(cluster, tmp_path):
    first, *others = cluster.nodes
    for other in others:
        assert reach(cluster, first, other) == "refused"
    ran = cluster.run(first, ["pwd"], cwd=tmp_path)
    assert ran.stdout.strip() == str(tmp_path)


def test_a_shaped_link_is_slow_and_an_unshaped_one_is_not(cluster):
    """tbf both ways on one node's link: 2 MB from node1 to node3 at 20 Mbit/s takes about 0.8 s; unshaped,
    milliseconds."""
    first, last = cluster.nodes[0], cluster.nodes[-1]
    server = cluster.popen(last, [sys.executable, "-c", SINK], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout.readline().strip() == "listening"
        fast = float(cluster.run(first, [sys.executable, "-c", SEND, last.name]).stdout)
        cluster.shape(last, 20)
        try:
            slow = float(cluster.run(first, [sys.executable, "-c", SEND, last.name]).stdout)
        finally:
            cluster.unshape(last)
        again = float(cluster.run(first, [sys.executable, "-c", SEND, last.name]).stdout)
    finally:
        server.kill()
        server.wait()
    assert slow > 0.5, (fast, slow)
    assert fast < slow / 5 and again < slow / 5, (fast, slow, again)


SINK = """
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("0.0.0.0", 7000)); s.listen()
print("listening", flush=True)
while True:
    c, _ = s.accept()
    while c.recv(1 << 16):
        pass
    c.sendall(b"k"); c.close()
"""
SEND = """
import socket, sys, time
s = socket.create_connection((sys.argv[1], 7000), timeout=30)
started = time.perf_counter()
s.sendall(b"x" * (2 << 20)); s.shutdown(socket.SHUT_WR); s.recv(1)
print(time.perf_counter() - started)
"""


def test_a_cut_node_is_unreachable_until_mended(cluster):
    first, last = cluster.nodes[0], cluster.nodes[-1]
    cluster.cut(last)
    try:
        assert reach(cluster, first, last) == "unreachable"
    finally:
        cluster.mend(last)
    assert reach(cluster, first, last) == "refused"


def test_bring_up_and_teardown_take_seconds_and_leave_nothing(tmp_path):
    made = Cluster(tmp_path, nodes=3)
    with made:
        daemon = made.popen(made.nodes[1], ["sleep", "300"])
        # a grandchild in its own session, as a daemon's child would be: found by its namespace, not its parent
        made.run(made.nodes[2], ["sh", "-c", "setsid sleep 300 >/dev/null 2>&1 < /dev/null &"])
    assert made.leftovers() == []
    assert daemon.poll() is not None
    assert not [p for p in os.listdir("/proc") if p.isdigit() and _cmdline(p) == "sleep\x00300\x00"
                and _netns_of(p) not in _host_netns()], "a process of the cluster survived"
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert "br0" not in links and "node1" not in links
    assert not [n for n in os.listdir(NETNS_DIR) if n.startswith(made.prefix)] if NETNS_DIR.is_dir() else True
    print(f"cluster of 3: up {made.timings['up_s']:.2f} s, down {made.timings['down_s']:.2f} s")
    assert made.timings["up_s"] < 10 and made.timings["down_s"] < 10


def test_a_failing_test_inside_still_tears_down(tmp_path):
    made = Cluster(tmp_path, nodes=2)
    with pytest.raises(ZeroDivisionError):
        with made:
            made.popen(made.nodes[0], ["sleep", "300"])
            1 / 0
    assert made.leftovers() == []


def test_an_interrupted_owner_tears_down_and_a_killed_one_is_swept(tmp_path):
    """SIGTERM to a process that owns a cluster: it tears down before it goes. SIGKILL gives it no chance:
    `sweep` (what .ci/run's trap calls) removes the namespaces of an owner that is gone."""
    owner = f"""
import sys, time
sys.path.insert(0, {str(_tests())!r})
from pathlib import Path
from cluster.netns import Cluster
c = Cluster(Path({str(tmp_path)!r}), nodes=2).up()
c.popen(c.nodes[0], ["sleep", "300"])
print(c.prefix, flush=True)
time.sleep(300)
"""
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGKILL):
        process = subprocess.Popen([sys.executable, "-c", owner], stdout=subprocess.PIPE, text=True)
        prefix = process.stdout.readline().strip()
        assert prefix and [n for n in os.listdir(NETNS_DIR) if n.startswith(prefix)]
        process.send_signal(sig)
        process.wait(timeout=30)
        process.stdout.close()
        left = [n for n in os.listdir(NETNS_DIR) if n.startswith(prefix)]
        if sig == signal.SIGKILL:
            assert left
            removed = sweep()
            assert set(left) <= set(removed)
            left = [n for n in os.listdir(NETNS_DIR) if n.startswith(prefix)]
        assert left == [], (sig, left)


def _tests():
    from pathlib import Path
    return Path(__file__).resolve().parents[1]


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline") as f:
            return f.read()
    except OSError:
        return ""


def _netns_of(pid):
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


def _host_netns():
    return {os.stat("/proc/1/ns/net").st_ino}
