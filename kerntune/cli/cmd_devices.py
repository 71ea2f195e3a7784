"""`kerntune devices`: what this machine can run kernels on."""

from __future__ import annotations

import typer
from rich.markup import escape
from rich.text import Text

from kerntune.cli.output import Grid, fmt_bytes, grid, out, print_json, print_table, set_json


def devices(
    json: bool = typer.Option(False, "--json", help="Print machine-readable JSON."),
    profiles: bool = typer.Option(False, "--profiles", help="Also list the stored device profiles (for --target)."),
) -> None:
    """List CUDA GPUs and OpenCL devices with the limits that matter for tuning.

    Use the ID with --device: a CUDA ordinal (0), 'cpu', or opencl:P:D. The sub-groups and vector
    columns are what the rule catalog reads: without sub-groups the shuffle reduction is not offered,
    and OpenCL vectors wider than the compiler's native width (probed with a small compile) are not.
    """
    set_json(json)
    from kerntune.engine.devices import all_devices, with_vector_widths
    from kerntune.hardware import list_profiles, load_profile

    found = list(with_vector_widths(all_devices()))
    stored = [load_profile(p) for p in list_profiles()] if profiles else []
    if json:
        print_json({"devices": [d.model_dump(mode="json") for d in found],
                    "profiles": [d.model_dump(mode="json") for d in stored]})
        return
    if not found:
        out.print("No CUDA or OpenCL devices found. Install PoCL (pip install \"pyopencl[pocl]\") for the CPU, "
                  "or CuPy for NVIDIA GPUs (pip install \"kerntune[cuda13]\").")
    else:
        print_table(_table("Devices", found, live=True))
        for d in found:
            if d.problem:
                out.print(f"[yellow]{escape(d.id)}[/] cannot be used: {escape(d.problem)}")
    if stored:
        print_table(_table("Stored profiles (kerntune check --target NAME, kerntune tune --target NAME)", stored,
                         live=False))


def _table(title: str, devs: list, live: bool) -> Grid:
    rows = []
    for d in devs:
        ident = d.id if live else d.id.removeprefix("profile:")
        name = d.name + (f" ({d.arch})" if d.arch else "")
        shared = fmt_bytes(d.max_shared_per_block) + (f" ({fmt_bytes(d.max_shared_per_block_optin)} opt-in)"
                                                      if d.max_shared_per_block_optin else "")
        kind = Text(d.kind) if not d.problem else Text.assemble(d.kind, " ", ("unusable", "red"))
        rows.append([ident, name, kind, str(d.sm_count), str(d.max_threads_per_block), shared,
                     str(d.registers_per_sm or "-"), fmt_bytes(d.l2_bytes), fmt_bytes(d.global_mem_bytes)]
                    + (["yes" if d.subgroups else "no", str(d.vector_width or "-")] if live else []))
    headers = ["id", "name", "kind", "SMs/\nCUs", "threads\n/block", "shared\n/block", "regs\n/SM", "L2", "memory"]
    return grid(headers + (["sub-\ngroups", "vector\nwidth"] if live else []), rows, title=title,
                right=frozenset(range(3, 9)))


def register(app: typer.Typer) -> None:
    app.command("devices")(devices)
