"""The suite's own rules, read from its source: a test that slows a rank with busy loops, or judges pinned ranks'
speeds against each other, holds the machine's cores alone (conftest.cores), so that no other test runs beside
ranks being timed, and runs its ranks in CPU groups (tests/cpu_groups.rank_groups: one CPU, a fixed budget each,
the loops in the slowed rank's group), so that the loops slow that rank alone. A run that judges no speed (a floor, a crafted record, an absent rank) says so instead: it takes
a skew no noise reaches (``UNJUDGED_SKEW``, tests/e2e/test_preflight.py) and shares the cores. (A test that pins one
process for steadier timings alone, as tests/e2e/test_diff.py's app, times no rank against another.)"""
import re

import pytest

from conftest import CLUSTER, E2E

# what a test that slows a rank for real says in its source; and one that times ranks on given cores
BUSY = re.compile(r"BUSY_LOOPS|busy (loops?|process(es)?)\b|slow\.loops", re.IGNORECASE)
PINS = re.compile(r"pinned\.sh", re.IGNORECASE)
HOLDS = re.compile(r"\bcores\(\)|judged_cores")
UNJUDGED = re.compile(r"\bUNJUDGED_SKEW\b")
GROUPS = re.compile(r"\brank_groups\(")


@pytest.mark.parametrize("path", sorted([*E2E.glob("test_*.py"), *CLUSTER.glob("test_*.py")]), ids=lambda p: p.name)
def test_a_test_that_slows_a_rank_or_judges_pinned_ranks_holds_the_cores(path):
    text = path.read_text()
    assert not BUSY.search(text) or HOLDS.search(text), (
        f"{path.name} runs busy loops: run them inside conftest.cores() (or take the judged_cores fixture)")
    assert not PINS.search(text) or HOLDS.search(text) or UNJUDGED.search(text), (
        f"{path.name} times pinned ranks: judge their speeds inside conftest.cores(), or judge none "
        "(env.preflight.max_skew=UNJUDGED_SKEW)")
    assert not (BUSY.search(text) or PINS.search(text)) or GROUPS.search(text), (
        f"{path.name} slows or pins ranks: run them inside tests/cpu_groups.rank_groups (pinned.sh needs its "
        "RANK_GROUPS), so that busy loops slow the rank they are started beside, and no other")
