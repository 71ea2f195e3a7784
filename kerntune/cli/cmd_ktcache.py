"""`kerntune kt-cache`: move runs between kerntune and Kernel Tuner."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from kerntune.cli.output import err, print_json, set_json
from kerntune.fmt import shell

app = typer.Typer(help="Import and export Kernel Tuner cache files (one problem size per cache).",
                  no_args_is_help=True)


@app.command("export")
def export(
    run_dir: Path = typer.Argument(..., help="A run directory written by `kerntune tune`."),
    output: Path = typer.Option(..., "--output", "-o", help="The Kernel Tuner cache file to write."),
    shape: Optional[str] = typer.Option(None, "--shape", help="Which shape (label) to export (default: the first)."),
    force: bool = typer.Option(False, "--force", "-f", help="Overwrite an existing output file."),
    json: bool = typer.Option(False, "--json", help="Print machine-readable JSON."),
) -> None:
    """Write one shape of a run as a Kernel Tuner cache (usable with its simulation mode)."""
    set_json(json)
    from kerntune.fsutil import check_output_file, refuse_existing
    from kerntune.tuner.kerneltuner import export_cache
    from kerntune.tuner.store import RunStore

    check_output_file(output, "cache.json")
    refuse_existing(output, force)
    n = export_cache(RunStore.in_dir(run_dir, readonly=True), shape, output)
    if json:
        print_json({"written": str(output), "entries": n})
    else:
        err.print(f"wrote {n} entries to {output}")


@app.command("import")
def import_(
    cache: Path = typer.Argument(..., help="A Kernel Tuner cache file (.json)."),
    run_dir: Path = typer.Option(..., "--run-dir", help="The run directory to create."),
    json: bool = typer.Option(False, "--json", help="Print machine-readable JSON."),
) -> None:
    """Create a kerntune run from a Kernel Tuner cache, for `kerntune show` and replay
    (`kerntune tune --device replay:RUN_DIR`)."""
    set_json(json)
    from kerntune.tuner.kerneltuner import import_cache, read_cache

    doc = read_cache(cache)
    n = import_cache(cache, run_dir, doc)
    left_out = len(doc["cache"]) - n     # entries without a value for every parameter
    if json:
        print_json({"run_dir": str(run_dir), "entries": n, "left_out": left_out})
    else:
        if left_out:
            err.print(f"left out {left_out} entr{'y' if left_out == 1 else 'ies'} of {cache}: not an object with a "
                      "number, string or boolean for every tuning parameter", style="yellow")
        err.print(f"imported {n} entries into {run_dir}; see them with `kerntune show {shell(run_dir)}`, replay "
                  f"a strategy on them with `kerntune tune --device {shell(f'replay:{run_dir}')} --strategy tpe --budget 20`")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="kt-cache")
