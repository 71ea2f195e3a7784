"""The real `kerntune` in a real pseudo-terminal of a given size, and what a
person would see on it afterwards (the screen of a VT100 emulator, pyte, fed
every byte the program wrote: progress frames that were erased are gone,
lines that were cut show cut)."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import termios
import time
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import KERNTUNE, REPO


@dataclass
class Screen:
    returncode: int
    raw: bytes                 # every byte the program wrote
    lines: list[str]           # the final screen (and what scrolled off it), trailing blanks removed

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def run_tty(*args: str, columns: int, rows: int = 60, cwd: Path | None = None, timeout: float = 600,
            interrupt_after: float | None = None, interrupt_when: bytes | None = None) -> Screen:
    """Run kerntune with stdin, stdout and stderr on a pty of ``columns`` x ``rows``. With
    ``interrupt_when``, Ctrl-C (SIGINT to its process group, as a terminal sends) once that text
    has appeared, ``interrupt_after`` seconds later."""
    import pyte

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    env["TERM"] = "xterm-256color"
    proc = subprocess.Popen([*KERNTUNE, *args], stdin=slave, stdout=slave, stderr=slave, env=env,
                            cwd=cwd or REPO, start_new_session=True)
    os.close(slave)
    raw = b""
    deadline = time.monotonic() + timeout
    sent = False
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:          # the program closed the terminal
                    break
                if not data:
                    break
                raw += data
            if interrupt_when is not None and not sent and interrupt_when in raw:
                time.sleep(interrupt_after or 0)
                os.killpg(proc.pid, signal.SIGINT)
                sent = True
        proc.wait(max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
        os.close(master)
    screen = pyte.HistoryScreen(columns, rows, history=100000)
    stream = pyte.ByteStream(screen)
    stream.feed(raw.replace(b"\n", b"\r\n").replace(b"\r\r\n", b"\r\n"))
    history = ["".join(screen.history.top[i][x].data for x in range(columns))
               for i in range(len(screen.history.top))]
    lines = [line.rstrip() for line in history + list(screen.display)]
    while lines and not lines[-1]:
        lines.pop()
    return Screen(returncode=proc.returncode, raw=raw, lines=lines)
