"""kerntune's command line: `kerntune --help` lists the commands."""

from __future__ import annotations

import sys
from typing import Optional

import typer

from kerntune import __version__
from kerntune.cli.output import State, fail, internal, err
from kerntune.errors import KerntuneError

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
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks and full logs on errors."),
    version: Optional[bool] = typer.Option(None, "--version", callback=_version, is_eager=True,
                                           help="Print the version and exit."),
) -> None:
    State.debug = debug


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


_register()


def main() -> None:
    try:
        app()
    except KerntuneError as e:
        fail(e)
    except KeyboardInterrupt:
        err.print("[yellow]interrupted[/]")
        sys.exit(130)
    except SystemExit:
        raise
    except Exception as e:  # anything else is a bug: say so, without a traceback unless --debug
        internal(e)
