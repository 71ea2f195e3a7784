"""What an optimize run hands back: ``best.<ext>`` (the general configuration,
parameters baked in), one kernel per shape with ``per_shape/dispatch.json``,
and ``spec.yaml``: the original spec with a ``launches`` entry for every
written kernel, so each can be benched beside the original at once:

    kerntune bench RUN/original/kernel.cu --against RUN/best.cu --spec RUN/spec.yaml
"""

from __future__ import annotations

from typing import Any, Mapping

import yaml

from kerntune.agents.bake import bake
from kerntune.agents.original import helper_path
from kerntune.kernelfile import KernelFile
from kerntune.record.audit import file_digests
from kerntune.record.outcome import DispatchEntry, OutputFiles, TestReport
from kerntune.record.store import DISPATCH, ORIGINAL, REPORT, RunDir
from kerntune.spec.model import LaunchSpec
from kerntune.tuner.kernel_files import EXT, file_stem, instance_file, launch_dict, own_kernel, with_header
from kerntune.tuner.template import Template


class _Writer:
    """Kernel files for the original and for template configurations, with their launches."""

    def __init__(self, kf: KernelFile, templates: Mapping[int, Template]):
        self.kf, self.templates, self.spec = kf, templates, kf.spec
        self.base_options = tuple(getattr(self.spec.compile_options, kf.lang))
        self.kernels: dict[str, str] = {}      # launches key -> entry point, where it is not the spec's

    def original(self, what: str, key: str) -> tuple[str, LaunchSpec, tuple[str, ...]]:
        kf, spec = self.kf, self.spec
        own = kf.own_launch
        launch = own or spec.launch
        extra = tuple(own.compile_options) if own is not None else ()
        if kf.kernel_name != spec.kernel:
            self.kernels[key] = kf.kernel_name
            what += f"\n// entry point: {kf.kernel_name}"
        return with_header(kf.source, what, launch, self.base_options + extra), launch, extra

    def configured(self, r: int, config: dict[str, Any], what: str,
                   key: str) -> tuple[str, LaunchSpec, tuple[str, ...]]:
        t = self.templates[r]
        text, launch, options = instance_file(t, config, self.spec, what, finish=lambda s: bake(s, self.kf.lang))
        n = len(self.base_options)
        extra = options[n:] if options[:n] == self.base_options else options
        name = own_kernel(t, config, self.spec)
        if name:
            self.kernels[key] = name
        return text, launch, extra


def write_outputs(run: RunDir, kf: KernelFile, templates: Mapping[int, Template],
                  report: TestReport | None) -> OutputFiles:
    """Write best.<ext>, per_shape/ and spec.yaml from the tester's report; ``templates`` are the
    rounds' templates by round number."""
    ext = EXT[kf.lang]
    w = _Writer(kf, templates)
    launches: dict[str, dict[str, Any]] = {}
    g = report.general if report is not None and report.improved else None
    if g is not None:
        text, launch, extra = w.configured(g.round, g.config, f"kerntune: general configuration {g.key} from round "
                                                              f"{g.round}, {g.geomean_speedup:.3f}x geomean over the "
                                                              "original", "best")
    else:
        text, launch, extra = w.original("kerntune: no candidate beat the original; this is the original kernel",
                                         "best")
    run.write("best" + ext, text)
    launches["best"] = launch_dict(launch, extra, w.kernels.get("best"))
    dispatch = []
    for win in (report.per_shape if report is not None else []):
        stem = file_stem(win.label)
        cand = report.candidate(win.round, win.winner) if win.winner != "original" else None
        if cand is None:
            text, launch, extra = w.original(f"kerntune: shape {win.label}: the original kernel is the fastest", stem)
        else:
            text, launch, extra = w.configured(cand.round, cand.config, f"kerntune: shape {win.label}: {cand.key} "
                                                                        f"from round {cand.round}, {win.speedup:.3f}x",
                                               stem)
        run.write(f"per_shape/{stem}{ext}", text)
        launches[stem] = launch_dict(launch, extra, w.kernels.get(stem))
        dispatch.append(DispatchEntry(label=win.label, shape=win.shape, kernel=f"per_shape/{stem}{ext}",
                                      launch=launches[stem], speedup=win.speedup, winner=win.winner,
                                      round=win.round))
    run.save_dispatch(dispatch)
    # a spec that launches every written kernel correctly, its helper files in original/
    spec = kf.spec
    data = spec.model_dump(mode="json", exclude_defaults=True)
    data.pop("include_dirs", None)      # the kernels written are self-contained (local headers inlined)
    for key in ("reference", "inputs"):
        ref = getattr(spec, key)
        if ref is not None and ref.file is not None:
            data[key] = {"file": f"{ORIGINAL}/{helper_path(ref.file)}", "function": ref.function}
    data["launches"] = {**{k: launch_dict(v, tuple(v.compile_options), v.kernel) for k, v in spec.launches.items()},
                        **launches}
    run.write("spec.yaml", "# the original spec, with the launch of every kernel this run wrote\n" +
              yaml.safe_dump(data, sort_keys=False))
    written = ["best" + ext] + [d.kernel for d in dispatch] + [DISPATCH, "spec.yaml"]
    return OutputFiles(best="best" + ext, dispatch=DISPATCH, spec="spec.yaml", report=REPORT,
                       digests=file_digests(run, written))


__all__ = ["write_outputs"]
