"""Puts the bootstrap's presets and callback config on every Hydra app's search path."""

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin

import bootstrap  # noqa: F401  registers the preset schema before the app composes


class BootstrapSearchPathPlugin(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        # Appended: the app's own configs come first, so its env/h100.yaml shadows ours.
        search_path.append(provider="hydra-train-bootstrap", path="pkg://bootstrap.conf")
