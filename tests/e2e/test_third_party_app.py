"""Using the presets and the callback from a Hydra app that knows nothing of this repository.

The app (tests/third_party_app) is copied to a temporary directory and run in a
subprocess against the installed package, in two ways:

* ``current``: this test environment's install (editable, as the README installs it);
* ``wheel``: a wheel built from this checkout, installed non-editable into a fresh venv.
  That venv borrows torch and Hydra from this environment through a path entry, which
  makes no site directory of it: this checkout's editable hook is not loaded there.
"""
import json
import shutil
import site
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from conftest import ROOT, clean_env

APP = Path(__file__).parents[1] / "third_party_app"


@pytest.fixture(scope="session")
def wheel_python(tmp_path_factory):
    base = tmp_path_factory.mktemp("wheel_install")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(base / "dist"), str(ROOT)], check=True, capture_output=True)
    venv.create(base / "venv", with_pip=False)
    python = base / "venv" / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    Path(purelib, "borrowed_dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    (wheel,) = (base / "dist").glob("*.whl")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", str(wheel)],
                   check=True, capture_output=True)
    return str(python), wheel


@pytest.fixture(params=["current", "wheel"])
def python(request):
    return sys.executable if request.param == "current" else request.getfixturevalue("wheel_python")[0]


@pytest.fixture
def app(tmp_path):
    app_dir = tmp_path / "app"
    shutil.copytree(APP, app_dir)
    return app_dir


def run_app(python, app_dir, *args, timeout=180):
    proc = subprocess.run([python, str(app_dir / "app.py"), *args], capture_output=True, text=True,
                          cwd=app_dir, env=clean_env(), timeout=timeout)
    return proc


def observed(job_dir: Path) -> dict:
    return json.loads((job_dir / "observed.json").read_text())


def report(job_dir: Path) -> dict:
    return json.loads((job_dir / "bootstrap.json").read_text())


def test_the_wheel_ships_the_presets_and_no_hydra_plugins_init(wheel_python):
    import zipfile

    names = set(zipfile.ZipFile(wheel_python[1]).namelist())
    assert "hydra_plugins/__init__.py" not in names  # it would hide every other Hydra plugin
    assert "hydra_plugins/hydra_train_bootstrap/searchpath.py" in names
    assert "bootstrap/conf/__init__.py" in names  # Hydra's pkg:// source requires a regular package
    assert "bootstrap/py.typed" in names  # PEP 561: a user's type checker reads the package's annotations
    assert "bootstrap/bootstrap.schema.json" in names  # the report's JSON Schema, for tools that run no Python
    shipped = {n for n in names if n.endswith(".yaml")}
    in_repo = {f"bootstrap/conf/{p.relative_to(ROOT / 'conf')}" for p in (ROOT / "conf").rglob("*.yaml")}
    assert shipped == in_repo - {"bootstrap/conf/config.yaml"}  # train_stub's own config stays out


def test_two_line_form(python, app):
    out = app / "out"
    proc = run_app(python, app, f"hydra.run.dir={out}", "env.threads.intra_op=1")
    assert proc.returncode == 0, proc.stderr
    assert observed(out)["threads"] == 1
    assert report(out)["preset"] == "cpu_debug"
    bootstrap_file = Path(observed(out)["bootstrap_file"])
    if python != sys.executable:  # the wheel install, not this checkout
        assert ROOT not in bootstrap_file.parents and "site-packages" in bootstrap_file.parts


def test_command_line_form(python, app):
    out = app / "out"
    proc = run_app(python, app, "--config-name=bare", f"hydra.run.dir={out}", "+env=h100",
                   "hydra/callbacks=bootstrap", "env.on_mismatch=warn", "env.threads.intra_op=1")
    assert proc.returncode == 0, proc.stderr
    assert observed(out)["threads"] == 1
    assert report(out)["preset"] == "h100" and "TORCH_NCCL_ASYNC_ERROR_HANDLING" in report(out)["vars"]


def test_their_callback_runs_beside_ours(python, app):
    out = app / "out"
    proc = run_app(python, app, "--config-name=both_callbacks", f"hydra.run.dir={out}")
    assert proc.returncode == 0, proc.stderr
    assert (out / "theirs_ran").exists() and report(out)["job"]["status"] == "completed"


def test_their_preset_extends_ours(python, app):
    out = app / "out"
    proc = run_app(python, app, f"hydra.run.dir={out}", "env=probe")
    assert proc.returncode == 0, proc.stderr
    assert observed(out)["probe"] == "from_probe"
    assert report(out)["vars"]["TORCH_DISTRIBUTED_DEBUG"]["value"] == "DETAIL"  # inherited from cpu_debug_detail


def test_an_app_with_its_own_env_group_uses_bootstrap_env(python, app):
    out = app / "out"
    proc = run_app(python, app, "--config-name=own_env_group", f"hydra.run.dir={out}",
                   "bootstrap_env.threads.intra_op=1")
    assert proc.returncode == 0, proc.stderr
    assert observed(out)["threads"] == 1
    assert report(out)["preset"] == "cpu_debug"
    cfg = (out / ".hydra" / "config.yaml").read_text()
    assert "name: CartPole-v1" in cfg  # their env is untouched


def test_info_searchpath_shows_where_the_presets_come_from(python, app):
    proc = run_app(python, app, "--info", "searchpath")
    assert proc.returncode == 0, proc.stderr
    assert "hydra-train-bootstrap" in proc.stdout and "pkg://bootstrap.conf" in proc.stdout


def test_the_installed_packages_schema_command_prints_the_file_it_ships(wheel_python, tmp_path):
    import zipfile

    python, wheel = wheel_python
    shipped = zipfile.ZipFile(wheel).read("bootstrap/bootstrap.schema.json").decode()
    bin_dir = Path(python).parent
    printed = subprocess.run([str(bin_dir / "bootstrap"), "schema"], capture_output=True, text=True, cwd=tmp_path,
                             timeout=120)
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout == shipped
