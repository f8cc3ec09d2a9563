"""How a judged rank gets into its CPU group (tests/cpu_groups.py): this file runs in every Python process of a
judged job. tests/preflight_app/pinned.sh and the Lightning test put this directory first on the ranks'
PYTHONPATH, with ``RANK_GROUPS`` set.

A rank joins its group, on CPU 0, as the bootstrap starts in it (the first import of one of :data:`JOIN_AT`), not
as its interpreter starts. Its imports (torch, Hydra, Lightning: seconds of CPU each) so run on every CPU, outside
the budgets, and it is in its group for all that is judged: the preflight, the steps the watch times. (Joined at its
start, a rank imported at 45% of one CPU, and rank 1 beside its busy loops at a ninth of that: a minute.) A process
that starts inside a group (the rank Lightning's rank 0 starts, a picture's process) first leaves it.

Rank 1, with ``BUSY_LOOPS=N``, starts N busy processes as its preflight check begins (:data:`LOOPS_AT`): they
inherit its group and CPU, and take its budget alone. pinned.sh kills what is left in the group when the rank ends.
Another ``sitecustomize`` further on the path (a test's own) still runs.
"""

import importlib.machinery
import importlib.util
import os
import subprocess
import sys

JOIN_AT = frozenset({"bootstrap.adapter.callback", "bootstrap.integrations.lightning", "bootstrap.core.session"})
LOOPS_AT = "bootstrap.preflight.check"
HERE = os.path.dirname(os.path.abspath(__file__))


def _cpu_groups():
    """tests/cpu_groups.py, loaded from its file: tests/ itself stays off the rank's path."""
    spec = importlib.util.spec_from_file_location("_judged_cpu_groups", os.path.join(HERE, "..", "cpu_groups.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Hook:
    """A finder that finds nothing: it sees the imports go by, and acts at the two that mark the rank's start."""

    joined = False
    loops = 0
    groups = None  # tests/cpu_groups.py, loaded once

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if not cls.joined and name in JOIN_AT:
            cls.joined = True
            cls.groups.join(cls.groups.Path(os.environ["RANK_GROUPS"]), int(os.environ.get("LOCAL_RANK", "0")))
        if name == LOOPS_AT and cls.joined:
            sys.meta_path.remove(cls)
            for _ in range(cls.loops):
                subprocess.Popen(["sh", "-c", "while :; do :; done"], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        return None


if os.environ.get("RANK_GROUPS"):
    _Hook.groups = _cpu_groups()
    _Hook.groups.leave()
    _Hook.loops = int(os.environ.pop("BUSY_LOOPS", "0") or 0)  # this rank's alone: its children start none
    sys.meta_path.insert(0, _Hook)

_spec = importlib.machinery.PathFinder.find_spec(
    "sitecustomize", [p for p in sys.path if os.path.abspath(p or ".") != HERE])
if _spec is not None and _spec.loader is not None:
    _spec.loader.exec_module(importlib.util.module_from_spec(_spec))
