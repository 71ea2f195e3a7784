"""Termination signals: kerntune takes its workers down with it.

Workers run in their own sessions (so Ctrl-C in the terminal reaches only
kerntune, which decides), so a signal sent to kerntune alone (an outer
`timeout`, a CI runner cancelling a job, a closed terminal) would leave a
worker spinning on a hung kernel. On SIGINT (Ctrl-C), SIGTERM, SIGHUP and
SIGQUIT kerntune kills every worker at once and then unwinds: the command
records where it stopped (an optimize run's run.json says "interrupted"),
says how to continue, and kerntune exits with 128 + the signal's number (130
for Ctrl-C, 143 for SIGTERM). A second signal while it unwinds ends it at
once. SIGKILL cannot be caught: then the workers notice that their parent is
gone and exit by themselves (``kerntune.engine.worker``).
"""

from __future__ import annotations

import os
import signal
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from kerntune.interrupts import Terminated, as_interrupt, note, received

CAUGHT = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT") if hasattr(signal, name))


class _State:
    reported = False                # the command already said how it stopped


def how(signum: int | None) -> str:
    """How the command stopped, in a few words."""
    if signum is None or signum == signal.SIGINT:
        return "interrupted"
    return f"stopped by {signal.Signals(signum).name}"


def report(what: str) -> None:
    """Say how the command stopped and what to do next (once; the CLI says nothing more)."""
    from kerntune.cli.output import err
    from rich.markup import escape

    err.print(f"[yellow]{how(received())}[/]: {escape(what)}")
    _State.reported = True


def reported() -> bool:
    return _State.reported


@contextmanager
def stopping(then: Callable[[], None]) -> Iterator[None]:
    """Run ``then`` (record and say where the command stopped) when the block is interrupted, also
    when a library wrapped the interrupt in an error of its own; the interrupt goes on unwinding."""
    try:
        yield
    except BaseException as caught:
        e = as_interrupt(caught)
        if not isinstance(e, KeyboardInterrupt):
            raise
        then()
        if e is caught:
            raise
        raise e from caught


def _kill_workers() -> None:
    from kerntune.engine.supervisor import kill_all

    kill_all()


def _again(signum: int, frame: Any) -> None:
    _kill_workers()
    os._exit(128 + signum)


def _first(signum: int, frame: Any) -> None:
    note(signum)
    for sig in CAUGHT:
        signal.signal(sig, _again)
    _kill_workers()
    raise Terminated(signum)


def install() -> None:
    """Catch the termination signals (in the main thread; a no-op elsewhere)."""
    for sig in CAUGHT:
        try:
            signal.signal(sig, _first)
        except (ValueError, OSError):      # not the main thread, or not settable here
            pass


__all__ = ["CAUGHT", "Terminated", "as_interrupt", "how", "install", "received", "report", "reported", "stopping"]
