"""One worked example per command, shown at the end of its --help (tests check every option they use exists)."""

from __future__ import annotations

import typer

EXAMPLES: dict[str, tuple[str, ...]] = {
    "optimize": ("kerntune optimize kernels/examples/vector_add.cl --device cpu --shape-set cpu --evaluations 40",
                 "kerntune optimize --resume runs/vector_add-TIME"),
    "report": ("kerntune report runs/vector_add-TIME --html --open",),
    "devices": ("kerntune devices --profiles",),
    "init": ("kerntune init kernel.cu -o kernel.yaml",),
    "extract": ("kerntune extract csrc/activation.cu --kernel act_and_mul_kernel -o act_and_mul.cu",),
    "check": ("kerntune check kernel.cu --target h100",),
    "bench": ("kerntune bench kernel.cl --device cpu --against best.cl",),
    "tune": ("kerntune tune templates/examples/vector_add.cl.j2 --spec kernels/examples/vector_add.yaml "
             "--device cpu --shape-set cpu --strategy tpe --budget 40 --run-dir runs/va",
             "kerntune tune --resume runs/va"),
    "show": ("kerntune show runs/va",),
    "strategies": ("kerntune strategies --json",),
    "kt-cache import": ("kerntune kt-cache import cache.json --run-dir runs/imported",),
    "kt-cache export": ("kerntune kt-cache export runs/va --output cache.json --shape 256K",),
    "regress": ("kerntune regress kernels/ --baseline bench/baseline.json --device cpu --update",
                "kerntune regress kernels/ --baseline bench/baseline.json --device cpu --tolerance 5%"),
    "export pairs": ("kerntune export pairs runs/ --output pairs.jsonl --min-speedup 1.1",),
    "export traces": ("kerntune export traces runs/ --output traces.jsonl",),
    "score fast-p": ("kerntune score fast-p runs/ pairs.jsonl --p 1.0 --p 1.5",),
    "score reward": ("kerntune score reward candidate.cl --baseline original.cl --device cpu",),
}


def add_examples(app: typer.Typer, prefix: str = "") -> None:
    """Set each registered command's epilog to its examples (groups: their commands, by "GROUP COMMAND")."""
    for info in app.registered_commands:
        name = f"{prefix}{info.name}"
        if name in EXAMPLES and info.epilog is None:
            info.epilog = "Example" + ("s" if len(EXAMPLES[name]) > 1 else "") + ":\n\n" + \
                "\n\n".join(f"  {line}" for line in EXAMPLES[name])
    for group in app.registered_groups:
        add_examples(group.typer_instance, f"{prefix}{group.name} ")
