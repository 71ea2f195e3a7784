"""Kernel Tuner cache files, both ways, so runs move between the two tools.

A Kernel Tuner cache is JSON: a header (``device_name``, ``kernel_name``,
``problem_size``, ``tune_params_keys``, ``tune_params``, ``objective``) and
``cache``, a map from the comma-joined parameter values (in
``tune_params_keys`` order) to an entry with the parameters, ``time`` (ms)
and Kernel Tuner's timing fields. Failed configurations carry the strings
``InvalidConfig``, ``CompilationFailedConfig`` or ``RuntimeFailedConfig`` in
place of ``time``. Files left open by an interrupted Kernel Tuner session
(no closing braces, a trailing comma) are read too.

Kernel Tuner records one problem size per cache, so export writes one shape
of a run; import creates a run whose template is a placeholder (it cannot be
compiled, only replayed) and whose single shape is the cache's problem size.
"""

from __future__ import annotations

import datetime
import json
import math
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from kerntune.errors import ErrorCode, KerntuneError
from kerntune.fmt import shell
from kerntune.fsutil import run_holding, write_atomic
from kerntune.results import (
    DeviceInfo, EvalResult, ShapeTiming, Status, TimingStats,
)
from kerntune.spec.model import Shape
from kerntune.tuner.space import Space
from kerntune.tuner.store import RunStore
from kerntune.tuner.template import config_key

FAILURES = {
    "InvalidConfig": (Status.PRUNED, "kernel_tuner_invalid"),
    "CompilationFailedConfig": (Status.COMPILE_ERROR, ""),
    "RuntimeFailedConfig": (Status.LAUNCH_FAILURE, ""),
}
KT_FIELDS = ("compile_time", "verification_time", "benchmark_time", "strategy_time", "framework_time")


def kt_key(values: list[Any]) -> str:
    return ",".join(str(v) for v in values)


def export_cache(store: RunStore, shape_label: str | None, dest: Path) -> int:
    """Write one shape of a run as a Kernel Tuner cache (gzip-compressed when
    ``dest`` ends in .gz); returns the entry count."""
    return _export(store, shape_label, dest)


def _export(store: RunStore, shape_label: str | None, dest: Path) -> int:
    shapes = store.get("shapes", [])
    if not shapes:
        raise KerntuneError(ErrorCode.RUN, f"{store.path} records no shapes")
    chosen = shapes[0] if shape_label is None else next((s for s in shapes if s.get("label") == shape_label), None)
    if chosen is None:
        raise KerntuneError(ErrorCode.USAGE, f"the run has no shape {shape_label!r}",
                            hint="shapes: " + ", ".join(s.get("label", "") for s in shapes))
    sizes = {k: v for k, v in chosen.items() if k != "label"}
    key = Shape.of(sizes).key
    from kerntune.tuner.run import template_from_store

    template, loaded = template_from_store(store)
    params = {k: list(v) for k, v in template.decl.params.items()}
    device = store.get("device") or {}
    cache: dict[str, Any] = {}
    for e in store.evaluations():
        values = [e.config[k] for k in params]
        entry: dict[str, Any] = dict(e.config)
        if e.status == Status.OK.value and e.result is not None:
            t = next((t for t in e.result.timings if Shape.of(t.shape).key == key), None)
            if t is None:
                continue
            entry["time"] = t.stats.median_ms
            entry["times"] = [t.stats.median_ms]
            entry["kerntune_stats"] = t.stats.model_dump(mode="json")
        elif e.status == Status.PRUNED.value:
            entry["time"] = "InvalidConfig"
        elif e.status == Status.COMPILE_ERROR.value:
            entry["time"] = "CompilationFailedConfig"
        else:
            entry["time"] = "RuntimeFailedConfig"
        for f in KT_FIELDS:
            entry.setdefault(f, 0)
        entry["timestamp"] = datetime.datetime.fromtimestamp(e.finished, datetime.timezone.utc).isoformat()
        cache[kt_key(values)] = entry
    doc = {"device_name": device.get("name", "unknown"), "kernel_name": template.kernel_name(loaded.spec),
           "problem_size": list(sizes.values()), "tune_params_keys": list(params), "tune_params": params,
           "objective": "time", "cache": cache}
    text = json.dumps(doc, indent=1) + "\n"
    if dest.suffix == ".gz":
        import gzip

        try:
            dest.write_bytes(gzip.compress(text.encode()))
        except OSError as e:
            raise KerntuneError(ErrorCode.FILE, f"cannot write {dest}: {e}") from None
    else:
        write_atomic(dest, text)
    return len(cache)


def read_cache(path: Path) -> dict[str, Any]:
    import zlib

    what = "pass the .json (or .json.gz) cache file Kernel Tuner wrote, or one `kerntune kt-cache export` wrote"
    try:
        if path.suffix == ".gz":
            import gzip

            text = gzip.decompress(path.read_bytes()).decode().strip()
        else:
            text = path.read_text().strip()
    except (OSError, EOFError, zlib.error) as e:     # zlib.error: a corrupt .gz
        raise KerntuneError(ErrorCode.FILE, f"cannot read {path}: {e}", hint=what) from None
    except UnicodeDecodeError as e:      # a binary file (or an encoding other than UTF-8): no JSON in it
        raise KerntuneError(ErrorCode.FILE, f"{path} is not a Kernel Tuner cache (not UTF-8 text: byte "
                                            f"{e.object[e.start]:#04x} at offset {e.start})",
                            hint=what) from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        try:    # a cache left open by an interrupted Kernel Tuner run: no closing braces, a trailing comma
            doc = json.loads(text.rstrip(",") + "}\n}")
        except json.JSONDecodeError:
            raise KerntuneError(ErrorCode.FILE, f"{path} is not a Kernel Tuner cache (invalid JSON: {e})") from None
    if not isinstance(doc, dict):
        raise KerntuneError(ErrorCode.FILE, f"{path} is not a Kernel Tuner cache: a JSON {type(doc).__name__}, "
                                            "not an object")
    missing = [k for k in ("tune_params_keys", "cache") if k not in doc]
    if missing:
        raise KerntuneError(ErrorCode.FILE, f"{path} is not a Kernel Tuner cache: missing {', '.join(missing)}")
    if not isinstance(doc["cache"], dict) or not isinstance(doc["tune_params_keys"], list):
        raise KerntuneError(ErrorCode.FILE, f"{path} is not a Kernel Tuner cache: 'cache' must be an object and "
                                            "'tune_params_keys' a list")
    return doc


# the description of the template an imported run records: it holds the parameters, no kernel
REPLAY_ONLY = "imported from a Kernel Tuner cache: replay only"


def _placeholder_template(params: dict[str, list[Any]], kernel: str) -> str:
    import yaml

    decl = yaml.safe_dump({"description": REPLAY_ONLY,
                           "kernel": kernel, "params": params, "launch": {"grid": [1], "block": [1]}},
                          sort_keys=False)
    body = "// imported configuration: " + " ".join("{{ %s }}" % k for k in params) + "\n"
    return "{# kerntune-template\n" + decl + "#}\n" + body


def import_cache(src: Path, run_dir: Path, doc: dict[str, Any] | None = None) -> int:
    """Create a replayable run from a Kernel Tuner cache (``doc``: its contents, when the caller has read
    it already); returns the entry count."""
    doc = read_cache(src) if doc is None else doc
    keys = list(doc["tune_params_keys"])
    # an entry is an object holding every parameter, each a number, a string or a boolean; others are left out
    entries = {raw: e for raw, e in doc["cache"].items() if isinstance(e, dict) and
               all(isinstance(e.get(k), (int, float, str, bool)) for k in keys)}
    if not entries:
        raise KerntuneError(ErrorCode.FILE, f"{src} holds no usable entry: each must be an object with a value "
                                            f"for every one of {', '.join(map(str, keys)) or '(no parameters)'}")
    params = doc.get("tune_params") or {}
    if not isinstance(params, dict) or set(params) != set(keys) or \
            not all(isinstance(v, list) for v in params.values()):   # older caches: rebuild from the entries
        params = {k: sorted({e[k] for e in entries.values()}, key=lambda v: (str(type(v)), v)) for k in keys}
    params = {k: list(params[k]) for k in keys}
    problem = doc.get("problem_size") or [1]
    if not isinstance(problem, list):
        problem = [problem]
    sizes = {f"p{i}": int(v) if isinstance(v, (int, float)) else 1 for i, v in enumerate(problem)}
    shape = Shape.of(sizes, label="kernel-tuner")
    kernel = str(doc.get("kernel_name") or "kernel")
    held = run_holding(run_dir)
    if held is not None:       # a tuning.db dropped into an optimize run (or a round) would be a stray run
        raise KerntuneError(ErrorCode.USAGE, f"{run_dir} already holds a run" if held == Path(os.path.abspath(run_dir)) else
                            f"{run_dir} is inside the kerntune run {held}",
                            hint=f"import into a new folder outside it: --run-dir {shell(held.parent / (held.name + '-kt'))}")
    store = RunStore.in_dir(run_dir, create=True)
    # a problem size may hold a 0 (kerntune exports every size of a shape, a histogram's skew=0 among them):
    # the placeholder spec admits it, as the spec the cache came from did
    spec_text = json.dumps({"kernel": kernel if kernel.isidentifier() else "kernel",
                            "sizes": {k: {"min": 0} for k in sizes},
                            "args": [{"name": "out", "dtype": "fp32", "shape": ["p0"], "intent": "out"}],
                            "launch": {"grid": [1], "block": [1]}, "shapes": [sizes]})
    device = DeviceInfo(id="kernel-tuner", backend="replay", lang="cuda", name=str(doc.get("device_name", "unknown")))
    store.set("created", datetime.datetime.now().timestamp())
    store.set("template_text", _placeholder_template(params, kernel if kernel.isidentifier() else "kernel"))
    store.set("template_lang", "cuda")
    store.set("template_path", f"{src.name} (Kernel Tuner cache)")
    store.set("spec_text", spec_text)
    store.set("spec_path", str(src))
    store.set("spec_inline", False)
    store.set("shapes", [shape.as_dict() | {"label": shape.label}])
    store.set("device", device.model_dump(mode="json"))
    store.set("settings", {"strategy": "imported"})
    store.set("space_size", Space({k: tuple(v) for k, v in params.items()}).size)
    count = 0
    for raw_key, entry in entries.items():
        config = {k: entry[k] for k in keys}
        time_ms = entry.get("time")
        key = config_key(config)
        if isinstance(time_ms, (int, float)) and not isinstance(time_ms, bool) and math.isfinite(time_ms) and \
                time_ms > 0:
            try:      # written by kerntune: keep the full statistics
                stats = TimingStats.model_validate(entry["kerntune_stats"]) \
                    if isinstance(entry.get("kerntune_stats"), dict) else None
            except ValidationError:
                stats = None
            if stats is None:
                raw = entry.get("times")
                times = [float(x) for x in (raw if isinstance(raw, list) else [])
                         if isinstance(x, (int, float)) and math.isfinite(x) and x > 0] or [float(time_ms)]
                stats = TimingStats.from_samples(times, warmup=0).model_copy(update={"median_ms": float(time_ms)})
            result = EvalResult(status=Status.OK, kernel=key, device=device,
                                timings=[ShapeTiming(shape=sizes, label=shape.label, stats=stats, bytes_moved=0,
                                                     achieved_gbs=0.0)])
            store.add(key, config, Status.OK.value, True, score=float(time_ms), result=result)
        else:
            status, reason = FAILURES.get(str(time_ms), (Status.ERROR, "kernel_tuner"))
            store.add(key, config, status.value, status is not Status.PRUNED, reason=reason, message=str(time_ms))
        count += 1
    return count
