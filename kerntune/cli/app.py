"""kerntune's command line: `kerntune --help` lists the commands."""

from __future__ import annotations

import os
import sys
from typing import NoReturn, Optional

import typer
import typer.main
import typer.rich_utils

from kerntune import __version__
from kerntune import hostblas
from kerntune.cli import helptable, signals
from kerntune.cli.output import State, err, fail, internal, out
from kerntune.errors import ErrorCode, KerntuneError

# help takes the width every table takes: the terminal's, else $COLUMNS or 120 (piped at typer's own 80, option
# names were cut: regress's '--allow-device-…'); $TERMINAL_WIDTH, typer's own setting, still wins
if typer.rich_utils.MAX_WIDTH is None:
    typer.rich_utils.MAX_WIDTH = out.width if not sys.stdout.isatty() else None
helptable.install()    # and option names are never cut in a narrow terminal (COLUMNS=80: '--allow-device-…')

# the click that typer runs on (typer vendors it as typer._click in recent versions)
_click = getattr(typer.main, "_click", None) or getattr(typer.main, "click")

app = typer.Typer(
    name="kerntune",
    help="Make GPU kernels faster, with proof: semantics-preserving templates, measured search under hardware "
         "limits, and verification of every candidate against the original kernel.\n\n"
         "The main command is [bold]kerntune optimize KERNEL[/]. To prepare a kernel: [bold]kerntune init KERNEL[/] "
         "writes its spec, [bold]kerntune check[/] compiles it, [bold]kerntune bench[/] verifies and times it.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"kerntune {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks and full logs on errors (anywhere on the "
                                                     "command line)."),
    version: Optional[bool] = typer.Option(None, "--version", callback=_version, is_eager=True,
                                           help="Print the version and exit."),
) -> None:
    State.debug = State.debug or debug


def _register() -> None:
    from kerntune.cli import (cmd_bench, cmd_check, cmd_devices, cmd_extract, cmd_init, cmd_ktcache, cmd_optimize,
                              cmd_tune)

    for module in (cmd_optimize, cmd_devices, cmd_extract, cmd_init, cmd_check, cmd_bench, cmd_tune, cmd_ktcache):
        module.register(app)
    from kerntune.cli import cmd_export, cmd_regress, cmd_score   # the CI gate, training data, scores

    for module in (cmd_regress, cmd_export, cmd_score):
        module.register(app)

    from kerntune.cli import cmd_report   # run directory -> report.md / report.html

    cmd_report.register(app)
    from kerntune.cli.examples import add_examples

    add_examples(app)


_register()


def _take(args: list[str], flag: str) -> tuple[list[str], bool]:
    """``args`` without ``flag`` (before a ``--``), and whether it was there."""
    end = args.index("--") if "--" in args else len(args)
    kept = [a for a in args[:end] if a != flag] + args[end:]
    return kept, len(kept) != len(args)


def _usage_error(e) -> KerntuneError:
    ctx = getattr(e, "ctx", None)
    path = ctx.command_path if ctx is not None else "kerntune"
    usage = ctx.get_usage().replace("Usage: ", "usage: ", 1) if ctx is not None else ""
    names = sorted(getattr(ctx.command, "commands", {}) or {}) if ctx is not None else []
    if names and e.format_message().startswith("No such command"):     # a group's: name the ones it has
        return KerntuneError(ErrorCode.USAGE, e.format_message(),
                             hint=f"`{path}` takes one of: {', '.join(names)}")
    return KerntuneError(ErrorCode.USAGE, e.format_message(),
                         hint=(usage + "\n" if usage else "") + f"`{path} --help` explains every option")


def _stopped() -> NoReturn:
    """After a signal (Ctrl-C included): say so unless the command did, and exit 128 + its number."""
    from kerntune.engine.supervisor import kill_all

    kill_all()
    signum = signals.received() or 2
    if not signals.reported():
        err.print(f"[yellow]{signals.how(signum)}[/]")
    sys.exit(128 + signum)


def _classes(*found) -> tuple:
    return tuple(x for x in found if isinstance(x, type))


# what the click typer runs on raises (the names differ between versions)
_ABORT = _classes(getattr(typer, "Abort", None), getattr(_click, "Abort", None),
                  getattr(_click.exceptions, "Abort", None))
_NO_ARGS = _classes(getattr(_click.exceptions, "NoArgsIsHelpError", None))


def _reader_gone() -> NoReturn:
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except OSError:
        pass
    sys.exit(141)


def _failed(e: BaseException) -> int:
    """What a command's exception means: an error message and its exit status (or the status to
    exit with, where the exception was only the help being printed)."""
    try:
        raise e
    except KerntuneError as e:
        fail(e)
    except _NO_ARGS as e:              # the help was printed: fine for `kerntune` alone
        ctx = getattr(e, "ctx", None)
        if ctx is None or ctx.parent is None:
            return 0
        names = sorted(getattr(ctx.command, "commands", {}) or {})   # a group called without its command
        fail(KerntuneError(ErrorCode.USAGE, f"`{ctx.command_path}` needs a command"
                                            + (f": {', '.join(names)}" if names else ""),
                           hint=f"`{ctx.command_path} COMMAND --help` explains each (the list is above)"))
    except _click.exceptions.UsageError as e:
        fail(_usage_error(e))
    except _ABORT:
        _stopped()
    except _click.exceptions.ClickException as e:
        fail(KerntuneError(ErrorCode.USAGE, e.format_message()))
    except BrokenPipeError:            # the reader of our output went away (`kerntune ... | head`)
        _reader_gone()
    except SystemExit:
        raise
    except Exception as e:  # anything else is a bug: say so, without a traceback unless --debug
        internal(e)


def main(argv: Optional[list[str]] = None) -> None:
    """The `kerntune` executable. ``--debug`` is read anywhere on the command line, and ``--json``
    applies to every error, usage errors included."""
    args, State.debug = _take(list(sys.argv[1:] if argv is None else argv), "--debug")
    State.json = "--json" in (args[:args.index("--")] if "--" in args else args)
    signals.install()
    hostblas.one_host_thread()
    status = 0
    try:
        status = typer.main.get_command(app).main(args=args, prog_name="kerntune", standalone_mode=False) or 0
    except KeyboardInterrupt:          # Ctrl-C, or a termination signal (signals.Terminated)
        _stopped()
    except BaseException as e:
        if not isinstance(e, SystemExit) and signals.received() is not None:
            _stopped()                 # an error the interrupt caused, or met while unwinding: it stopped us
        try:
            status = _failed(e)
        except BrokenPipeError:        # the reader went away while the error was printed
            _reader_gone()
    if signals.received() is not None:   # a framework turned the interrupt into an exit status: ours wins
        _stopped()
    sys.exit(status if isinstance(status, int) else 0)
