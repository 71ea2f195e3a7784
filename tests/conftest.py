"""Shared fixtures: the real CPU OpenCL device (PoCL or Intel's CPU runtime),
a worker on it, and helpers to write kernels and specs into a temp folder."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def pytest_collection_modifyitems(config, items):
    if any("gpu" in item.keywords for item in items):
        from kerntune.engine.devices import all_devices

        if not any(d.backend == "cupy" and not d.problem for d in all_devices()):
            skip = pytest.mark.skip(reason="no CUDA GPU with CuPy here")
            for item in items:
                if "gpu" in item.keywords:
                    item.add_marker(skip)


@pytest.fixture(scope="session")
def cpu_ref():
    from kerntune.engine.devices import resolve
    from kerntune.errors import KerntuneError

    try:
        ref, _ = resolve("cpu", "opencl")
    except KerntuneError as e:  # the CPU path must work everywhere: fail, do not skip
        pytest.fail(f"no usable OpenCL CPU device: {e.message} ({e.hint})")
    return ref


@pytest.fixture(scope="module")
def worker(cpu_ref):
    from kerntune.engine.supervisor import DeviceWorker

    with DeviceWorker(cpu_ref) as w:
        yield w


def write(dir: Path, name: str, text: str) -> Path:
    p = dir / name
    p.write_text(textwrap.dedent(text).lstrip("\n"))
    return p


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run the real `kerntune` entry point in a subprocess (true exit codes)."""
    return subprocess.run([sys.executable, "-m", "kerntune", *args], capture_output=True, text=True,
                          cwd=cwd or REPO, timeout=timeout)
