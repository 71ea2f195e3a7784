"""`kerntune export pairs|traces`: training data from optimize runs, as JSON Lines."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from kerntune.cli import checks
from kerntune.cli.output import err, print_json, set_json
from kerntune.speedup import THRESHOLD
from kerntune.errors import ErrorCode, KerntuneError

app = typer.Typer(help="Training data from `kerntune optimize` runs: verified slow->fast pairs and rewrite traces "
                       "(JSON Lines; format in the README, section 'Training data').", no_args_is_help=True)

RUNS_HELP = "Optimize run directories (they hold run.json), or folders of them."


def _runs(paths: list[Path]):
    from kerntune.export.runs import Run, expand, require_usable

    runs = [Run(p) for p in expand(paths)]
    require_usable(runs)       # a run that `show` refuses is refused here too, when no other run is there
    return runs


def _check_output(output: Optional[Path], json: bool, force: bool, example: str) -> None:
    from kerntune.fsutil import check_output_file, refuse_existing

    if json and output is None:
        raise KerntuneError(ErrorCode.USAGE, "--json prints a summary on stdout, so the records need a file",
                            hint="add -o FILE.jsonl")
    if output is not None:
        check_output_file(output, example)
        refuse_existing(output, force)


def _report(what: str, n: int, output: Optional[Path], skipped, dropped: int, json: bool) -> None:
    if json:
        print_json({"written": str(output), what: n, "duplicates_dropped": dropped,
                    "skipped": [s.model_dump() for s in skipped]})
        return
    where = str(output) if output is not None else "stdout"
    extra = f", {dropped} duplicates dropped" if dropped else ""
    err.print(f"wrote {n} {what} to {where}{extra}")
    for s in skipped:
        err.print(f"  skipped {s.run_dir}: {s.reason}", style="dim")


@app.command("pairs")
def pairs(
    run_dirs: List[Path] = typer.Argument(..., help=RUNS_HELP),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="The JSONL file to write (default: stdout)."),
    min_speedup: float = typer.Option(THRESHOLD, "--min-speedup", min=1.0, callback=checks.finite,
                                      help="Only pairs at least this much faster (the tester's own threshold by "
                                           "default)."),
    force: bool = typer.Option(False, "--force", "-f", help="Overwrite an existing output file."),
    json: bool = typer.Option(False, "--json", help="Print a machine-readable summary (needs -o)."),
) -> None:
    """Verified slow->fast kernel pairs, one JSON object per line.

    A pair is the original and a kernel the tester confirmed faster (the general
    best, each round's best, the per-shape winners), with per-shape times, the
    transformations, the spec and the device; deduplicated by normalized source,
    launch and compile options."""
    set_json(json)
    _check_output(output, json, force, "pairs.jsonl")
    from kerntune.export.jsonl import write_jsonl
    from kerntune.export.pairs import export_pairs

    found, skipped, dropped = export_pairs(_runs(run_dirs), min_speedup)
    n = write_jsonl((p.line() for p in found), output)
    _report("pairs", n, output, skipped, dropped, json)


@app.command("traces")
def traces(
    run_dirs: List[Path] = typer.Argument(..., help=RUNS_HELP),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="The JSONL file to write (default: stdout)."),
    force: bool = typer.Option(False, "--force", "-f", help="Overwrite an existing output file."),
    json: bool = typer.Option(False, "--json", help="Print a machine-readable summary (needs -o)."),
) -> None:
    """The rewrite trace of each run, one JSON object per run.

    Per round: the input kernel, the template, the transformations, the round's
    best kernel with its measurements, and what the tester confirmed."""
    set_json(json)
    _check_output(output, json, force, "traces.jsonl")
    from kerntune.export.jsonl import write_jsonl
    from kerntune.export.traces import export_traces

    found, skipped = export_traces(_runs(run_dirs))
    n = write_jsonl((t.line() for t in found), output)
    _report("traces", n, output, skipped, 0, json)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="export")
