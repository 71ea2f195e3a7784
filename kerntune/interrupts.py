"""Whether a termination signal has reached this process, for code below the CLI.

``kerntune.cli.signals`` catches the signals and raises ``Terminated`` (a
``KeyboardInterrupt``) in whatever Python code runs at that moment. When that
code belongs to a library that turns exceptions into its own (pydantic's
serializer wraps it in ``PydanticSerializationError``, a Jinja filter or a
callback may do the same), what unwinds is no longer a KeyboardInterrupt,
and a run that was interrupted would be recorded and reported as failed.
``as_interrupt`` undoes that: once a signal was received, any exception
unwinding the command is the interruption.
"""

from __future__ import annotations

import signal


class Terminated(KeyboardInterrupt):
    """A termination signal, unwinding the command like Ctrl-C (``except KeyboardInterrupt`` sees it)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


class _State:
    received: int | None = None     # the first signal caught


def note(signum: int) -> None:
    """Record the signal that stops this command (the CLI's handler calls this)."""
    _State.received = signum


def received() -> int | None:
    """The signal that stopped this command, if one did."""
    return _State.received


def as_interrupt(e: BaseException) -> BaseException:
    """``e`` itself, unless a signal was received and ``e`` is another exception that it caused or
    that arrived while unwinding from it: then the interruption (``Terminated``, caused by ``e``)."""
    if _State.received is None or isinstance(e, (KeyboardInterrupt, SystemExit)):
        return e
    t = Terminated(_State.received)
    t.__cause__ = e
    return t


__all__ = ["Terminated", "as_interrupt", "note", "received"]
