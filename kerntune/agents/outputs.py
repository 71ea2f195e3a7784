"""What an optimize run hands back: ``best.<ext>`` (the general configuration,
parameters baked in), one kernel per shape with ``per_shape/dispatch.json``,
and ``spec.yaml``: the original spec with a ``launches`` entry for every
written kernel, so each can be benched beside the original at once:

    kerntune bench RUN/original/kernel.cu --against RUN/best.cu --spec RUN/spec.yaml
"""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING, Any

import yaml

from kerntune.agents.bake import bake
from kerntune.tuner.kernel_files import EXT, file_stem, instance_file, launch_dict, own_kernel, with_header

if TYPE_CHECKING:
    from kerntune.agents.loop import Optimizer
    from kerntune.agents.tester import TestReport


def write_outputs(opt: "Optimizer", report: "TestReport | None") -> dict[str, str]:
    run, lang, spec = opt.run_dir, opt.kf.lang, opt.spec
    ext = EXT[lang]
    files: dict[str, str] = {}
    launches: dict[str, dict[str, Any]] = {}
    original_launch = spec.launches.get(opt.kf.stem) or spec.launch
    base_options = tuple(getattr(spec.compile_options, lang))

    kernels: dict[str, str] = {}       # launches key -> entry point, where it is not the spec's

    def kernel_text(r: int | None, config: dict[str, Any], what: str, key: str) -> tuple[str, Any, tuple[str, ...]]:
        """The kernel, its launch, and the compile options it needs beyond the spec's own."""
        if r is None:
            launch = original_launch
            src = opt.kf.source
            extra: tuple[str, ...] = tuple(spec.launches[opt.kf.stem].compile_options) \
                if opt.kf.stem in spec.launches else ()
            if opt.kf.kernel_name != spec.kernel:
                kernels[key] = opt.kf.kernel_name
        else:
            text, launch, options = instance_file(opt.templates[r], config, spec, what,
                                                  finish=lambda s: bake(s, lang))
            extra = options[len(base_options):] if options[:len(base_options)] == base_options else options
            name = own_kernel(opt.templates[r], config, spec)
            if name:
                kernels[key] = name
            return text, launch, extra
        return with_header(src, what, launch, base_options + extra), launch, extra

    g = report.general if report is not None and report.improved else None
    if g is not None:
        text, launch, extra = kernel_text(g.round, g.config, f"kerntune: general configuration {g.key} from round "
                                                             f"{g.round}, {g.geomean_speedup:.3f}x geomean over the "
                                                             "original", "best")
    else:
        text, launch, extra = kernel_text(None, {}, "kerntune: no candidate beat the original; this is the original "
                                                    "kernel", "best")
    run.write("best" + ext, text)
    launches["best"] = launch_dict(launch, extra, kernels.get("best"))
    files["best"] = "best" + ext
    dispatch = []
    for w in (report.per_shape if report is not None else []):
        stem = file_stem(w.label)
        if w.winner == "original":
            text, launch, extra = kernel_text(None, {}, f"kerntune: shape {w.label}: the original kernel is the "
                                                        "fastest", stem)
        else:
            cand = next(c for c in report.candidates if c.key == w.winner and c.round == w.round)
            text, launch, extra = kernel_text(cand.round, cand.config, f"kerntune: shape {w.label}: {cand.key} from "
                                                                       f"round {cand.round}, {w.speedup:.3f}x", stem)
        run.write(f"per_shape/{stem}{ext}", text)
        launches[stem] = launch_dict(launch, extra, kernels.get(stem))
        dispatch.append({"label": w.label, "shape": w.shape, "kernel": f"per_shape/{stem}{ext}",
                         "launch": launches[stem], "speedup": w.speedup, "winner": w.winner})
    run.write_json("per_shape/dispatch.json", dispatch)
    files["dispatch"] = "per_shape/dispatch.json"
    # a spec that launches every written kernel correctly, with its helper files beside it
    data = spec.model_dump(mode="json", exclude_defaults=True)
    for key in ("reference", "inputs"):
        ref = getattr(spec, key)
        if ref is not None and ref.file is not None:
            src = (opt.kf.loaded.base_dir / ref.file).resolve()
            if src.exists():
                shutil.copy(src, run.path / "original" / src.name)
                data[key] = {"file": f"original/{src.name}", "function": ref.function}
    data["launches"] = {**{k: launch_dict(v, tuple(v.compile_options), v.kernel) for k, v in spec.launches.items()},
                        **launches}
    run.write("spec.yaml", "# the original spec, with the launch of every kernel this run wrote\n" +
              yaml.safe_dump(data, sort_keys=False))
    files["spec"] = "spec.yaml"
    return files
