"""The package's layout rule, read by tests/unit/test_layout.py and by the docs generator (CONTRIBUTING's table)."""

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "bootstrap"

# Higher numbers sit higher; a folder imports only from folders below it, and from itself.
# variables/, distributed/, pictures/, provenance/ and fabric/ are peers: none imports another; so are sweep/, dryrun/
# and integrations/ (the trackers need only core/ and the doors, and the adapter calls them at a job's end). watch/
# sits above preflight/, whose records, verdict and links it reuses, and under core/, which starts it.
LEVELS = {"adapter": 7, "cli": 6, "sweep": 5, "integrations": 5, "dryrun": 5, "core": 4, "watch": 3,
          "preflight": 2, "variables": 1, "distributed": 1, "pictures": 1, "provenance": 1, "fabric": 1, "doors": 0}
FACADE = {"__init__", "__main__"}  # the public names and ``python -m bootstrap``: they may reach any part
DATA_TABLES = {"variables/table.py", "variables/torch_names.py"}  # rows of data, not logic
MAX_LINES = 450
