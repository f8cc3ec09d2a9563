"""The app's own callback: records the launching process's environment around a sweep."""

import json
import os
from pathlib import Path

from hydra.experimental.callback import Callback


class EnvironRecorder(Callback):
    def on_multirun_start(self, config, **kwargs):
        self._write(config, "environ_before.json")

    def on_multirun_end(self, config, **kwargs):
        self._write(config, "environ_after.json")

    def on_job_start(self, config, **kwargs):
        Path(config.hydra.runtime.output_dir, "theirs_ran").touch()

    @staticmethod
    def _write(config, name):
        sweep_dir = Path(config.hydra.sweep.dir)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        (sweep_dir / name).write_text(json.dumps(dict(os.environ)))
