"""How busy the host's CPUs were with other work while kerntune timed kernels.

Paired, interleaved timing cancels load that changes slowly, but not an
effect that exists only under load: on a CPU device, a work-group size that
balances better on cores another process is using can be faster for the
whole session and slower on an idle machine. The intervals then describe
the run under that load, and the final test says so.

Measured from /proc (Linux): the CPU time every process used (``/proc/stat``)
minus what kerntune's own process and its descendants (the device worker)
used, over the window; elsewhere nothing is measured and nothing is said.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Optional

from kerntune.results import Record

BUSY_CORES = 0.5          # other work averaging half a core or more: the final test says the machine was busy


class HostLoad(Record):
    cpus: int
    seconds: float                 # the window measured
    others: float                  # cores' worth of CPU time other processes used, on average over the window

    @property
    def busy(self) -> bool:
        return self.others >= BUSY_CORES

    def note(self) -> str:
        return (f"the machine was busy while the final test timed kernels: other processes used {self.others:.1f} "
                f"of {self.cpus} cores on average; the intervals describe the run under that load, which can "
                "favour or hurt a configuration (work-group sizes on a CPU, for one): re-measure on a quiet "
                "machine (kerntune bench ORIGINAL --against BEST) before relying on a small speedup")


def _busy_ticks() -> Optional[int]:
    """Non-idle clock ticks of all CPUs since boot."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    v = [int(x) for x in fields[1:9]]          # user nice system idle iowait irq softirq steal
    return v[0] + v[1] + v[2] + v[5] + v[6] + v[7]


def _stat(pid: str) -> Optional[tuple[int, int]]:
    """(parent pid, ticks used by the process and its reaped children)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = text[text.rfind(")") + 2:].split()      # after "pid (comm) "
    # rest[0] state, rest[1] ppid, ..., rest[11] utime, rest[12] stime, rest[13] cutime, rest[14] cstime
    return int(rest[1]), int(rest[11]) + int(rest[12]) + int(rest[13]) + int(rest[14])


def _own_ticks(root: int) -> int:
    """Ticks used by ``root`` and every process below it."""
    stats = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            s = _stat(d)
            if s is not None:
                stats[int(d)] = s
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            total += stats[pid][1]
        todo += children.get(pid, [])
    return total


class LoadMeter:
    """``start()``, time kernels, ``stop()`` -> HostLoad (None where /proc cannot tell)."""

    def __init__(self) -> None:
        self._at: Optional[tuple[float, int, int]] = None

    def start(self) -> "LoadMeter":
        busy = _busy_ticks()
        self._at = None if busy is None else (time.monotonic(), busy, _own_ticks(os.getpid()))
        return self

    def stop(self) -> Optional[HostLoad]:
        busy = _busy_ticks()
        if self._at is None or busy is None:
            return None
        t0, busy0, own0 = self._at
        seconds = time.monotonic() - t0
        if seconds <= 0:
            return None
        hz = os.sysconf("SC_CLK_TCK")
        others = max(0, (busy - busy0) - (_own_ticks(os.getpid()) - own0)) / hz / seconds
        return HostLoad(cpus=os.cpu_count() or 1, seconds=round(seconds, 2), others=round(others, 2))


__all__ = ["BUSY_CORES", "HostLoad", "LoadMeter"]
