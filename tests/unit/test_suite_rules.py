"""The suite's own rules, read from its source: a test that times ranks pinned to CPUs, or slows one with busy
loops, holds the machine's cores alone (conftest.cores), so that no other test runs beside ranks
being timed. (A test that pins one process for steadier timings alone, as tests/e2e/test_diff.py's app, times
no rank against another.)"""
import re

import pytest

from conftest import CLUSTER, E2E

# what a test that times ranks on given cores, or slows one for real, says in its source
PINS = re.compile(r"pinned\.sh|BUSY_LOOPS|busy loops?\b", re.IGNORECASE)
HOLDS = re.compile(r"\bcores\(\)|judged_cores")


@pytest.mark.parametrize("path", sorted([*E2E.glob("test_*.py"), *CLUSTER.glob("test_*.py")]), ids=lambda p: p.name)
def test_a_test_that_pins_ranks_or_slows_one_holds_the_cores(path):
    text = path.read_text()
    assert not PINS.search(text) or HOLDS.search(text), (
        f"{path.name} times pinned ranks or runs busy loops: run them inside conftest.cores() "
        "(or take the judged_cores fixture)")
