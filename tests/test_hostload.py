"""The host-load meter behind the final test's "the machine was busy" note: real processes, real /proc."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from kerntune.engine.hostload import BUSY_CORES, HostLoad, LoadMeter
from kerntune.record.outcome import TestReport

pytestmark = pytest.mark.skipif(not Path("/proc/stat").exists(), reason="the meter reads Linux's /proc")


def test_another_process_burning_a_core_makes_the_machine_busy():
    # a process outside kerntune's tree: the shell exits at once and its background job is re-parented
    subprocess.run(["sh", "-c", "timeout 3 sh -c 'while :; do :; done' >/dev/null 2>&1 &"], check=True)
    time.sleep(0.3)
    meter = LoadMeter().start()
    time.sleep(2)
    load = meter.stop()
    assert load is not None and load.busy and load.others >= BUSY_CORES, load
    assert "busy" in load.note() and "kerntune bench" in load.note()


def test_kerntunes_own_worker_is_not_other_work():
    """CPU time of kerntune's own descendants (the device worker) is subtracted: a child burning a
    core adds nothing to `others` beyond what the machine did anyway."""
    quiet = LoadMeter().start()
    time.sleep(2)
    before = quiet.stop()
    meter = LoadMeter().start()
    child = subprocess.Popen([sys.executable, "-c", "import time\nt = time.time()\nwhile time.time() - t < 2: pass"])
    child.wait()
    load = meter.stop()
    assert load is not None and before is not None
    assert load.others < before.others + 0.6, (before, load)      # the child's ~1 core is not counted


def test_the_load_travels_in_the_test_report():
    r = TestReport(seed=1, host_load=HostLoad(cpus=2, seconds=3.0, others=1.2))
    back = TestReport.model_validate_json(r.model_dump_json())
    assert back.host_load is not None and back.host_load.busy and back.host_load.others == 1.2
