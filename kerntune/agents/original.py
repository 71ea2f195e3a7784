"""The run's own copy of the original kernel (``original/`` in the run
directory): written when a run starts, and what ``--resume``, the reports and
the exports read, so a run is complete in itself and resumes from any working
directory, whatever happened to the files it was started from."""

from __future__ import annotations

import shutil
from pathlib import Path, PurePosixPath

import yaml

from kerntune.errors import ErrorCode, KerntuneError
from kerntune.kernelfile import KernelFile
from kerntune.record.models import Manifest
from kerntune.record.store import ORIGINAL, RunDir
from kerntune.spec.load import parse


def helper_path(ref_file: str) -> str:
    """Where the run keeps a spec helper file, relative to ``original/``: where the spec says when
    that is inside the spec's folder, else beside the spec."""
    p = PurePosixPath(ref_file)
    return ref_file if not p.is_absolute() and ".." not in p.parts else p.name


def keep_original(run: RunDir, kf: KernelFile) -> str:
    """Copy the kernel (an extension source's extracted device code: what runs), its spec and the
    spec's helper files (reference, input generator) into ``original/``; returns the kernel's file name."""
    run.write(f"{ORIGINAL}/{kf.path.name}", kf.source)
    spec = kf.spec
    moved: dict[str, dict[str, str]] = {}
    for field in ("reference", "inputs"):
        ref = getattr(spec, field)
        if ref is None or ref.file is None:
            continue
        src = kf.loaded.base_dir / ref.file
        if not src.is_file():
            raise KerntuneError(ErrorCode.FILE, f"{kf.loaded.origin}: {field}: {src} not found")
        rel = helper_path(ref.file)
        dest = run.path / ORIGINAL / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
        if rel != ref.file:
            moved[field] = {"file": rel, "function": ref.function}
    if moved:      # a helper outside the spec's folder: the copy names where it was put
        data = spec.model_dump(mode="json", exclude_defaults=True) | moved
        text = "# the run's copy of the spec (helper files moved beside it)\n" + yaml.safe_dump(data, sort_keys=False)
    else:
        text = kf.loaded.text
    run.write(run.original_spec, text)
    return kf.path.name


def load_original(run: RunDir, m: Manifest) -> KernelFile:
    """The run's copy of its kernel and spec, as the run started with them."""
    kernel = run.file(run.original(m))
    spec_file = run.file(run.original_spec)
    source, spec_text = run.text(run.original(m)), run.text(run.original_spec)
    if source is None or spec_text is None:
        missing = kernel if source is None else spec_file
        raise KerntuneError(ErrorCode.RUN, f"{missing} is missing: the run's copy of its kernel is gone",
                            hint="restore it, or start a new run")
    from kerntune.record.audit import digest

    for rel, want in m.original_digests.items():     # a copy edited since the run started (adversarial tour:
        p = run.file(rel)                             # its candidates were all 'wrong' against it, and the
        if not p.is_file() or digest(p.read_bytes()) != want:    # edited kernel was handed back as the original)
            raise KerntuneError(ErrorCode.RUN, f"{p} {'is gone' if not p.is_file() else 'changed'} since the run "
                                               "started: the run's measurements are of the kernel and spec it "
                                               "held then",
                                hint="restore the file (from the kernel and spec you gave the run), or start a new "
                                     "run")
    loaded = parse(spec_text, origin=spec_file, base_dir=spec_file.parent)
    return KernelFile(path=Path(kernel), lang=m.lang, source=source, loaded=loaded)


__all__ = ["helper_path", "keep_original", "load_original"]
