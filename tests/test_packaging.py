"""The wheel is the product: it must hold every module and every data file
under kerntune/, and an installed wheel must run `kerntune optimize` end to end.

The wheel is the one `.ci/run` built (KERNTUNE_TEST_WHEEL), else one built here
from a copy of pyproject.toml, README.md and kerntune/ alone (so nothing outside
the package can leak in). The installed kerntune is the environment these tests
run in when `.ci/run` installed the wheel into it (KERNTUNE_TEST_INSTALLED=1);
otherwise a fresh venv gets the wheel, with no dependencies, and borrows this
environment's site-packages for them (after its own, so the wheel's kerntune is
the one imported; the editable install's import hook there never runs)."""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import os
import shutil
import site
import subprocess
import sys
import sysconfig
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import INSTALLED, KERNTUNE, REPO, run_cli

pytestmark = pytest.mark.host   # host-side behaviour: .ci/run's PoCL pass leaves these out

PACKAGE = REPO / "kerntune"
JUNK = ("__pycache__", ".pyc")
SMALL_KERNEL = REPO / "kernels/classic/reduce_sum"      # naive.cl: atomics, rewritten by the structural rules
TINY_BUDGET = ("--device", "cpu", "--shape-set", "cpu", "--rounds", "1", "--evaluations", "4", "--warmup", "1",
               "--repeats", "5", "--final-repeats", "6")


def source_files() -> dict[str, Path]:
    """Every file under kerntune/ in the checkout, by its name in a wheel (kerntune/...)."""
    return {p.relative_to(REPO).as_posix(): p for p in sorted(PACKAGE.rglob("*"))
            if p.is_file() and not any(part.endswith(JUNK) for part in p.relative_to(REPO).parts)}


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def build_wheel(dest: Path) -> Path:
    """Build the wheel from a copy of what the build may use (pyproject.toml, README.md,
    kerntune/): in-tree builds reuse a stale build/ folder, and a copy cannot have one."""
    src = dest / "src"
    src.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    shutil.copytree(PACKAGE, src / "kerntune", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dest / "dist"), str(src)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"building the wheel failed:\n{r.stdout}\n{r.stderr}"
    wheels = list((dest / "dist").glob("kerntune-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    given = os.environ.get("KERNTUNE_TEST_WHEEL")
    if given:
        path = Path(given)
        if not path.is_file():
            pytest.fail(f"KERNTUNE_TEST_WHEEL={given} is not a file")
        return path
    return build_wheel(tmp_path_factory.mktemp("wheel"))


def wheel_files(wheel: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as z:
        return {n: z.read(n) for n in z.namelist() if not n.endswith("/")}


@dataclass
class Installed:
    python: Path       # the interpreter of the environment the wheel is installed in
    kerntune: Path     # its `kerntune` executable
    env: dict          # the environment to run them in

    def run(self, *args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.kerntune), *args], capture_output=True, text=True, cwd=cwd, env=self.env,
                              timeout=timeout)


def _fresh_venv(wheel: Path, root: Path) -> Installed:
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    r = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                        "--no-index", str(wheel)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"installing the wheel failed:\n{r.stdout}\n{r.stderr}"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    ours = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib"), *site.getsitepackages()}
    # the dependencies: this environment's site-packages, listed after the venv's own
    Path(purelib, "kerntune_test_dependencies.pth").write_text("".join(p + "\n" for p in sorted(ours)
                                                                       if Path(p).is_dir()))
    env = dict(os.environ)
    # Intel's CPU OpenCL runtime lies in this environment's prefix, which the venv's kerntune does not
    # look in: point the ICD loader at it, as kerntune does for its own environment
    from kerntune.backends.opencl import prepare_icd_environment

    prepare_icd_environment()
    env.update({k: os.environ[k] for k in ("OCL_ICD_VENDORS",) if k in os.environ})
    return Installed(python, venv / "bin" / "kerntune", env)


@pytest.fixture(scope="session")
def installed(wheel, tmp_path_factory) -> Installed:
    if INSTALLED:   # .ci/run installed the wheel into this environment: check it is that wheel
        import importlib.metadata

        dist = importlib.metadata.distribution("kerntune")
        for name, data in wheel_files(wheel).items():
            if name.startswith("kerntune/"):
                there = Path(dist.locate_file(name))
                assert there.is_file() and sha256(there.read_bytes()) == sha256(data), \
                    f"the installed kerntune differs from the wheel at {name}"
        found = Installed(Path(sys.executable), Path(sys.executable).with_name("kerntune"), dict(os.environ))
    else:
        found = _fresh_venv(wheel, tmp_path_factory.mktemp("installed"))
    where = subprocess.run([str(found.python), "-c", "import kerntune; print(kerntune.__file__)"], capture_output=True,
                           text=True, cwd=tmp_path_factory.getbasetemp(), env=found.env, timeout=120)
    assert where.returncode == 0, where.stderr
    location = Path(where.stdout.strip()).resolve()
    assert REPO not in location.parents, f"the installed kerntune is imported from the checkout: {location}"
    assert found.kerntune.is_file(), f"no kerntune executable at {found.kerntune}"
    return found


# --- the source tree -----------------------------------------------------------------------------
def test_every_folder_of_modules_under_kerntune_is_a_package():
    """A folder of modules without __init__.py is left out of the wheel (the package list has no
    namespace packages), so `kerntune optimize` failed installed with 'No module named
    kerntune.agents.rules' while an editable install worked."""
    folders = {p.parent for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}
    missing = sorted(str(d.relative_to(REPO)) for d in folders if not (d / "__init__.py").is_file())
    assert not missing, f"folders of modules with no __init__.py (not shipped in the wheel): {missing}"


# --- the wheel -----------------------------------------------------------------------------------
def test_the_wheel_holds_every_file_under_kerntune_and_nothing_else(wheel):
    files = wheel_files(wheel)
    ours = source_files()
    shipped = {n for n in files if not n.split("/")[0].endswith(".dist-info")}
    assert sorted(set(ours) - shipped) == [], "files under kerntune/ missing from the wheel (a module folder with " \
                                              "no __init__.py, or data not in package-data in pyproject.toml)"
    assert sorted(shipped - set(ours)) == [], "files in the wheel that are not under kerntune/ in this checkout"
    changed = [n for n, p in ours.items() if sha256(files[n]) != sha256(p.read_bytes())]
    assert changed == [], f"the wheel was built from other sources than this checkout's: {changed}"
    # what the code loads at run time is among them
    for needed in ("kerntune/py.typed", "kerntune/configs/__init__.py", "kerntune/configs/devices/h100.yaml",
                   "kerntune/agents/rules/__init__.py", "kerntune/agents/rules/catalog.py"):
        assert needed in shipped
    top = [n for n in files if n.split("/")[0].endswith(".dist-info")]
    entry_points = next(files[n] for n in top if n.endswith("/entry_points.txt")).decode()
    assert "kerntune = kerntune.cli.app:main" in entry_points


# --- the installed wheel -------------------------------------------------------------------------
def test_the_installed_wheel_optimizes_a_classic_kernel(installed, tmp_path):
    """The issue's bug: installed from the wheel, round 1 failed importing the rule catalog."""
    shutil.copytree(SMALL_KERNEL, tmp_path / "reduce_sum")
    run = tmp_path / "run"
    r = installed.run("optimize", "reduce_sum/naive.cl", *TINY_BUDGET, "--run-dir", str(run), "--json", cwd=tmp_path)
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    result = json.loads(r.stdout)
    assert result["rounds"] and (run / "best.cl").is_file() and (run / "report.md").is_file()
    rounds = json.loads((run / "run.json").read_text())["rounds"]
    assert rounds[0]["status"] == "done" and rounds[0]["source"] == "rules", rounds[0]
    assert "catalog" in (run / "rounds/01/template.cl.j2").read_text()   # the rule catalog wrote round 1
    # the report, HTML page included, from the installed package
    r = installed.run("report", str(run), "--html", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    page = (run / "report.html").read_text()
    assert "<style" in page and "data:image/png;base64," in page


def test_the_installed_wheel_loads_its_device_profiles(installed, tmp_path):
    r = installed.run("devices", "--profiles", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    names = sorted(p["id"].removeprefix("profile:") for p in json.loads(r.stdout)["profiles"])
    assert names == sorted(p.stem for p in (PACKAGE / "configs/devices").glob("*.yaml")) and "h100" in names


@pytest.fixture
def shadowing_folder(tmp_path) -> Path:
    """A working directory with a `kerntune` folder that is not kerntune, as a checkout is to an
    installed kerntune: importing it fails loudly."""
    (tmp_path / "kerntune").mkdir()
    (tmp_path / "kerntune/__init__.py").write_text("raise ImportError('the kerntune folder of the working directory')\n")
    return tmp_path


def test_a_kerntune_folder_in_the_working_directory_shadows_neither_the_cli_nor_its_workers(shadowing_folder):
    if KERNTUNE[0] == sys.executable:
        pytest.skip("no `kerntune` executable beside this Python (an uninstalled checkout): `python -m kerntune` "
                    "imports the working directory's kerntune by design")
    r = run_cli("devices", "--profiles", "--json", cwd=shadowing_folder)   # lists devices in a worker process
    assert r.returncode == 0, r.stderr
    assert any(d["backend"] == "opencl" for d in json.loads(r.stdout)["devices"])


def test_the_worker_imports_the_kerntune_of_its_parent(shadowing_folder, monkeypatch):
    from kerntune.engine.supervisor import run_isolated

    monkeypatch.chdir(shadowing_folder)
    there = run_isolated(importlib.resources.files, "kerntune", timeout_s=120, what="locating kerntune in a worker")
    assert Path(str(there)).resolve() == Path(str(importlib.resources.files("kerntune"))).resolve()
