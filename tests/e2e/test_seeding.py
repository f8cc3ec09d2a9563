"""numpy's global generator, seeded by the bootstrap without importing numpy.random for it: in a fresh process,
since whether numpy.random is imported yet is the point."""
import subprocess
import sys

import pytest

SEED_PROBE = """
import sys, torch
from bootstrap.distributed.seeding import seed_everything
if sys.argv[1] == "imported":
    import numpy.random
assert seed_everything(7) == ["random", "numpy", "torch"]
assert ("numpy.random" in sys.modules) == (sys.argv[1] == "imported")  # not imported for the seed's sake
seed_everything(8)  # the next job's seed replaces a pending one
import numpy
drawn = numpy.random.random_sample(3).tolist()
assert drawn == numpy.random.RandomState(8).random_sample(3).tolist(), drawn
loader = numpy.random.__spec__.loader
assert numpy.random.__loader__ is loader and type(loader).__name__ != "Seeding", loader  # numpy's own
assert not [f for f in sys.meta_path if type(f).__name__ == "_SeedNumpyOnImport"]  # it leaves once it has seeded
print("ok")
"""


@pytest.mark.parametrize("numpy_random", ["imported", "later"])
def test_numpy_seeded_at_once_or_when_first_imported(numpy_random):
    out = subprocess.run([sys.executable, "-c", SEED_PROBE, numpy_random], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_a_task_draws_the_seeded_numbers(tmp_path):
    # Through a whole job: the task imports numpy.random after the bootstrap started it, and draws env.seed's.
    task = tmp_path / "app.py"
    task.write_text(
        "import hydra\n"
        "@hydra.main(config_path=None, config_name=None, version_base='1.3')\n"
        "def main(cfg):\n"
        "    import numpy.random\n"
        "    print('DRAWN', numpy.random.randint(0, 10**9))\n"
        "main()\n")
    out = subprocess.run([sys.executable, str(task), "+env=cpu_debug", "env.seed=11", "hydra/callbacks=bootstrap",
                          f"hydra.run.dir={tmp_path / 'run'}"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    import numpy.random

    expected = numpy.random.RandomState(11).randint(0, 10**9)
    assert f"DRAWN {expected}" in out.stdout.splitlines()


def test_a_job_that_never_imports_numpy_random_leaves_no_import_hook_behind():
    probe = ("import sys, bootstrap\n"
             "with bootstrap.initialize({'seed': 5}):\n"
             "    assert 'numpy.random' not in sys.modules\n"
             "    waiting = [f for f in sys.meta_path if type(f).__name__ == '_SeedNumpyOnImport']\n"
             "    assert waiting, 'the seed waits for numpy.random while the job runs'\n"
             "assert not [f for f in sys.meta_path if type(f).__name__ == '_SeedNumpyOnImport'], sys.meta_path\n"
             "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr
