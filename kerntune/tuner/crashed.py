"""Kernels that crashed their worker during a search, kept where the user can run them again.

A configuration that takes its worker process down (Intel's CPU runtime dies of SIGSEGV on an
out-of-bounds access) leaves only the runtime's last words, which rarely say why. The run folder
gets the kernel of each such configuration (at most :data:`MAX_FILES`), rendered with its launch in
kerntune's header, as ``crashed/<configuration>.<ext>``; `kerntune bench` runs such a file under the
memory checker, which says where it goes wrong. The run's record keeps which files were written and
what the command needs (spec, device, shape set), so that `tune`, `show` and the report print the
same command."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

from kerntune.fmt import shell
from kerntune.fsutil import write_atomic
from kerntune.results import Record, Status
from kerntune.tuner.kernel_files import EXT, file_stem, instance_file

CRASHED_KEY = "crashed"       # meta: the Crashed record of the run (absent: nothing crashed)
CRASHED_DIR = "crashed"
MAX_FILES = 20                # a space full of crashing configurations does not fill the disk


class Crashed(Record):
    """The crashed configurations' kernel files of one run, and how to run the first under the checker."""

    files: list[str]          # relative to the run folder, in the order the search measured them
    total: int                # configurations that crashed (files holds at most MAX_FILES of them)
    lang: str
    spec: str                 # the spec file, absolute (the command works from any folder)
    device: str               # the device the run measured on, as --device takes it
    shape_set: Optional[str] = None

    def command(self, run_dir: str | Path) -> str:
        """The `kerntune bench` command that runs the first crashed kernel under the memory checker."""
        return shell("kerntune", "bench", Path(run_dir) / self.files[0], "--spec", self.spec, "--device", self.device,
                     *(["--shape-set", self.shape_set] if self.shape_set else []))

    def hint(self, run_dir: str | Path) -> str:
        from kerntune.engine.checker import crash_hint

        n = self.total
        kept = f", the first {len(self.files)} of them" if n > len(self.files) else ""
        return (f"{n} configuration{'s' if n != 1 else ''} crashed the worker (kernel files with their launch: "
                f"{Path(run_dir) / CRASHED_DIR}{kept}); "
                + crash_hint(Status.CRASH.value, None, self.lang, self.command(run_dir)))


def write_crashed(run_path: Path, store, template, loaded, device: str, shape_set: Optional[str],
                  finish: Optional[Callable[[str], str]] = None) -> Optional[Crashed]:
    """Write each crashed configuration's kernel (at most MAX_FILES) under ``run_path/crashed`` and record
    them in ``store``; None (and nothing written) when none crashed. ``finish`` post-processes the rendered
    source as the run's other kernel files are (optimize bakes its macros in)."""
    crashed = [e for e in store.evaluations() if e.status == Status.CRASH.value and e.duplicate_of is None]
    if not crashed:
        return None
    ext = EXT[template.lang]
    files: list[str] = []
    for e in crashed[:MAX_FILES]:
        rel = f"{CRASHED_DIR}/{file_stem(e.key)}{ext}"
        why = " ".join(e.message.split())[:300]
        text, _, _ = instance_file(template, e.config, loaded.spec,
                                   f"kerntune: configuration {e.key} crashed its worker: {why}", finish)
        dest = run_path / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(dest, text)
        files.append(rel)
    record = Crashed(files=files, total=len(crashed), lang=template.lang, spec=str(Path(loaded.origin).resolve()),
                     device=device, shape_set=shape_set)
    store.set(CRASHED_KEY, record.model_dump(mode="json"))
    return record


def read_crashed(store) -> Optional[Crashed]:
    return store.get(CRASHED_KEY, None, Crashed)


__all__ = ["CRASHED_DIR", "CRASHED_KEY", "Crashed", "MAX_FILES", "read_crashed", "write_crashed"]
