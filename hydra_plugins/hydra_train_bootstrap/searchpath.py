"""Puts the bootstrap's presets and callback config on every Hydra app's search path.

Hydra imports this module in its plugin scan, the first thing ``@hydra.main`` does: the start's timeline
(``bootstrap.doors.timeline``) takes that moment as the end of the interpreter and the imports before the app's
main, and the start of Hydra's compose."""

import time

_SCANNED = time.clock_gettime(getattr(time, "CLOCK_BOOTTIME", time.CLOCK_MONOTONIC))  # first: before our imports

from hydra.core.config_search_path import ConfigSearchPath  # noqa: E402
from hydra.plugins.search_path_plugin import SearchPathPlugin  # noqa: E402

import bootstrap  # noqa: E402, F401  registers the preset schema before the app composes
from bootstrap.doors.timeline import TIMELINE  # noqa: E402

TIMELINE.mark("interpreter", at=_SCANNED)


class BootstrapSearchPathPlugin(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        # Appended: the app's own configs come first, so its env/h100.yaml shadows ours.
        search_path.append(provider="hydra-train-bootstrap", path="pkg://bootstrap.conf")
