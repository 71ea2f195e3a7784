"""kerntune takes its workers down with it: a real `kerntune` process running a
real hung kernel on the CPU's OpenCL device, stopped by a real SIGTERM (as an
outer `timeout` sends) or killed outright (SIGKILL, which cannot be caught)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import KERNTUNE, REPO, vector_add_folder, vector_add_spec, write

pytestmark = pytest.mark.host   # host-side behaviour: .ci/run's PoCL pass leaves these out

# vector_add that never ends: the loop writes memory, so no compiler may remove it, and its exit
# condition never holds for inputs in the spec's range
HUNG = """\
__kernel void vector_add(__global float* c, __global const float* a, __global const float* b, const int n)
{
    int i = get_global_id(0);
    if (i < n) {
        for (;;) {
            if (a[i] > 1e30f) break;
            c[i] += b[i];
        }
        c[i] = a[i] + b[i];
    }
}
"""


def _workers_of(pid: int) -> list[int]:
    """The device worker processes whose parent is ``pid`` (not the short-lived device enumeration)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmd = (proc / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == pid and b"kerntune.engine.worker" in cmd and b"\x00device\x00" in cmd:
            found.append(int(proc.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _gone(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.1)
    return not _alive(pid)


def _busy_worker(tmp_path: Path, *args: str) -> tuple[subprocess.Popen, int]:
    """A `kerntune bench` on the hung kernel, once its worker has been in the kernel a while."""
    write(tmp_path, "vector_add.yaml", vector_add_spec({"small": 4096}))
    shutil.copy(REPO / "kernels/examples/reference.py", tmp_path / "reference.py")
    write(tmp_path, "vector_add.cl", HUNG)
    proc = subprocess.Popen([*KERNTUNE, "bench", str(tmp_path / "vector_add.cl"), "--device", "cpu", "--timeout",
                             "900", "--no-memcheck", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=REPO, start_new_session=True)
    deadline = time.monotonic() + 120
    workers: list[int] = []
    while time.monotonic() < deadline and not workers:
        workers = _workers_of(proc.pid)
        time.sleep(0.2)
    assert workers, "kerntune started no worker"
    time.sleep(8)                       # compiled, verified once... and now spinning in the kernel
    assert proc.poll() is None and all(_alive(w) for w in workers)
    return proc, workers[0]


@pytest.fixture
def cleanup():
    pids: list[int] = []
    yield pids
    for pid in pids:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_sigterm_takes_the_worker_down(tmp_path, cleanup):
    proc, worker = _busy_worker(tmp_path)
    cleanup.append(worker)
    os.kill(proc.pid, signal.SIGTERM)           # to kerntune alone: the worker is in its own session
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert b"stopped by SIGTERM" in err and b"Traceback" not in err
    assert _gone(worker, 5), "the worker outlived kerntune"


def test_a_worker_whose_parent_is_killed_exits(tmp_path, cleanup):
    proc, worker = _busy_worker(tmp_path)
    cleanup.append(worker)
    os.kill(proc.pid, signal.SIGKILL)           # nothing can be caught: the worker must notice by itself
    proc.communicate(timeout=60)
    assert _gone(worker, 10), "the worker kept spinning after its parent was killed"


def test_an_optimize_run_stopped_by_sigterm_says_so_and_resumes(tmp_path):
    kernel = vector_add_folder(tmp_path, vector_add_spec({"4K": 4096, "256K": 262144}))
    run = tmp_path / "run"
    proc = subprocess.Popen([*KERNTUNE, "optimize", str(kernel), "--device", "cpu", "--rounds", "1",
                             "--evaluations", "30", "--repeats", "30", "--warmup", "1", "--final-repeats", "10",
                             "--run-dir", str(run)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not (run / "rounds/01/tuning.db").exists():
        time.sleep(0.2)
    time.sleep(3)
    workers = _workers_of(proc.pid)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 143 and b"stopped by SIGTERM" in err and b"--resume" in err, err
    assert all(_gone(w, 5) for w in workers)
    m = json.loads((run / "run.json").read_text())
    assert m["status"] == "interrupted" and m["error"] == "stopped by SIGTERM"


# A Ctrl-C that lands while a library runs Python code of ours is raised there, and the library may
# wrap it in an error of its own: pydantic's serializer turns it into a PydanticSerializationError.
# Once seen in a full run (exit 70, "unexpected error"); here it is made to happen every time.
TRAPPED = """
import os, signal, sys, time
from pydantic import BaseModel, field_serializer
import {module} as m

class Trap(BaseModel):
    x: int = 0

    @field_serializer("x")
    def _x(self, v):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)          # the handler runs here, inside pydantic's serializer
        return v

def trapped(self, *args, **kwargs):
    Trap().model_dump_json()
    raise AssertionError("the signal did not arrive")

setattr(m.{cls}, "{method}", trapped)
from kerntune.cli.app import main
main(sys.argv[1:])
"""


def _trapped(module: str, cls: str, method: str, *args: str) -> subprocess.CompletedProcess:
    code = TRAPPED.format(module=module, cls=cls, method=method)
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=REPO, timeout=300)


def test_an_interrupt_wrapped_by_a_library_is_still_an_interrupt(tmp_path):
    kernel = vector_add_folder(tmp_path, vector_add_spec({"4K": 4096}))
    run = tmp_path / "run"
    r = _trapped("kerntune.agents.loop", "Optimizer", "baseline", "optimize", str(kernel), "--device", "cpu",
                 "--rounds", "1", "--evaluations", "4", "--run-dir", str(run))
    assert r.returncode == 130, r.stderr
    assert f"interrupted: the run is kept in {run}" in " ".join(r.stderr.split()), r.stderr
    assert "unexpected" not in r.stderr and "Traceback" not in r.stderr
    m = json.loads((run / "run.json").read_text())
    assert m["status"] == "interrupted", m


def test_a_tune_interrupted_inside_a_library_keeps_its_run(tmp_path):
    run = tmp_path / "run"
    r = _trapped("kerntune.tuner.run", "Tuner", "run", "tune", str(REPO / "templates/examples/vector_add.cl.j2"),
                 "--spec", str(REPO / "kernels/examples/vector_add.yaml"), "--device", "cpu", "--budget", "4",
                 "--run-dir", str(run))
    assert r.returncode == 130, r.stderr
    said = " ".join(r.stderr.split())
    assert f"interrupted: everything measured so far is in {run}" in said, r.stderr
    assert "unexpected" not in r.stderr and "Traceback" not in r.stderr
    from kerntune.tuner.store import RunStore

    assert RunStore.in_dir(run).get("stop_reason") == "interrupted"
