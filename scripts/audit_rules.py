#!/usr/bin/env python3
"""Audit the rule catalog's rewrites for soundness: for every OpenCL kernel file with a spec (under
kernels/ and tests/data, or the files given), apply the catalog as `kerntune optimize` does, and run
a sample of the template's configurations (the first values, every parameter's last values together,
and random valid ones) against the original kernel on the spec's smallest shapes plus its held-out
ones, on every input distribution, then under the memory checker (Oclgrind: out-of-bounds accesses,
races in local memory, barrier divergence) on the check shapes. A second round applies the catalog
again to instances of the first (their macros baked in), as optimize's round 2 does to round 1's
best.

A finding is a configuration that is wrong or that the checker flags: a rule that rewrote a kernel
into something that is not the same kernel. The search would reject such a candidate (every
candidate is verified, and the checker runs on every would-be best), but each one costs the search
an evaluation, and on a device without a checker (CUDA without compute-sanitizer) an out-of-bounds
read that happens to return harmless values passes verification.

    python scripts/audit_rules.py --out bench/results/rule-audit-2026-12-03     # every kernel
    python scripts/audit_rules.py kernels/naive/softmax/softmax.cl --configs 40   # some of them

CUDA kernel files (.cu, with nvcc on PATH; no GPU needed) are audited for what can be known without a
GPU: each sampled configuration is either pruned before compiling (an H100's limits, the template's
shared-memory estimate) or compiles with nvcc for sm_90, and the estimate never exceeds the static shared
memory ptxas reports. A finding there is a configuration the tuner would try that does not compile, or an
estimate that would prune a configuration that fits.

Writes OUT.md (a table per kernel and every finding) and OUT.json. Exit 1 when there is a finding.
"""

from __future__ import annotations

import argparse
import datetime
import json
import random
import sys
import time
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import provenance  # noqa: E402
from kerntune.agents.bake import bake  # noqa: E402
from kerntune.agents.rules.catalog import apply_catalog  # noqa: E402
from kerntune.engine.checker import MemoryChecker, check_shapes, oclgrind_library  # noqa: E402
from kerntune.engine.evaluate import EvalRequest  # noqa: E402
from kerntune.engine.supervisor import DeviceWorker  # noqa: E402
from kerntune.backends.nvcc import CompileFailed, compile_offline, nvcc_path  # noqa: E402
from kerntune.errors import KerntuneError  # noqa: E402
from kerntune.hardware import load_profile  # noqa: E402
from kerntune.spec import expr  # noqa: E402
from kerntune.kernelfile import load_kernel  # noqa: E402
from kerntune.results import CheckStatus, Status  # noqa: E402
from kerntune.spec.shapes import holdout_shapes, spec_shapes  # noqa: E402
from kerntune.tuner.feasibility import before_compile  # noqa: E402
from kerntune.tuner.kernel_files import resolve_launch_params  # noqa: E402
from kerntune.tuner.space import Space  # noqa: E402
from kerntune.tuner.template import parse_template  # noqa: E402

COMPUTE_UNITS = 132      # an H100's SMs: the rules that size themselves by the device offer all they can
H100 = load_profile("h100")   # the limits a CUDA configuration is pruned by before compiling


def kernel_files(suffixes=(".cl", ".cu")) -> list[Path]:
    return sorted(p for root in ("kernels", "tests/data") for p in (REPO / root).rglob("*")
                  if p.suffix in suffixes and p.is_file())


def small_shapes(spec) -> tuple:
    """The smallest listed shape (of the spec's cpu set when it has one) and the held-out ones."""
    listed = sorted(spec_shapes(spec, "cpu" if "cpu" in spec.shape_sets else None),
                    key=lambda s: sum(v for _, v in s.sizes))
    return tuple(dict.fromkeys((listed[0], *holdout_shapes(spec))))


APPROXIMATE = ("FAST_MATH", "FAST_FLAGS", "TANH_EXP")   # approximations by design: the tolerance decides them, not the audit


def sample(space: Space, shapes, constants: dict, n: int, rng: random.Random) -> list[dict]:
    """The first values, the last values together, then random valid configurations (n in all at most),
    the approximate parameters at their first (exact) value."""
    out, seen = [], set()

    def add(c):
        c = {**c, **{p: space.params[p][0] for p in APPROXIMATE if p in space.params}}
        if space.key(c) not in seen and not space.violated(c, shapes, constants):
            seen.add(space.key(c))
            out.append(c)

    add(space.baseline())
    add({p: v[-1] for p, v in space.params.items()})
    for _ in range(50 * n):
        if len(out) >= n:
            break
        add(space.random_config(rng))
    return out


class Audit:
    def __init__(self, worker, configs: int, seed: int, rounds: int, check: bool, checks: int = 1_000_000):
        self.worker, self.configs, self.rounds, self.checks = worker, configs, rounds, checks
        self.rng = random.Random(seed)
        self.checker = MemoryChecker(worker.info) if check else None
        self.findings: list[dict] = []
        self.rows: list[dict] = []
        self.distributions: tuple[str, ...] | None = None    # of the kernel being audited (None: the spec's)

    def found(self, **finding) -> None:
        self.findings.append(finding)
        print(f"    FINDING ({finding['origin']}) {finding['config']}: {finding['what']}: {finding['message'][:200]}",
              file=sys.stderr, flush=True)

    def run_file(self, path: Path) -> None:
        rel = str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)
        try:
            kf = load_kernel(path)
        except KerntuneError as e:
            self.rows.append({"kernel": rel, "skipped": e.message})
            return
        spec, base = kf.spec, str(kf.loaded.base_dir)
        original = kf.instance("original")
        shapes = small_shapes(spec)
        self.distributions = None
        if kf.lang == "cuda":
            why = "nvcc is not on PATH" if nvcc_path() is None else self._compiles(original)
        else:
            why, self.distributions = self._original(original, spec, base, shapes)
        if why:
            self.rows.append({"kernel": rel, "skipped": why})
            return
        launch = original.launch or spec.launch
        row = {"kernel": rel, "templates": 0, "configs": 0, "wrong": 0, "checked": 0, "flagged": 0, "pruned": 0,
               "seconds": 0.0}
        if self.distributions is not None:
            row["left_out"] = [d for d in spec.input_distributions if d not in self.distributions]
        t0 = time.time()
        inputs = [(kf.source, launch, "round 1")]
        for rnd in range(1, self.rounds + 1):
            nxt = []
            for source, lnch, origin in inputs:
                ran = self._round(rel, kf, original, source, lnch, origin, shapes, row)
                if rnd < self.rounds:
                    nxt += ran
            inputs = [(src, ln, f"round {rnd + 1} from {cfg}") for src, ln, cfg in nxt]
        row["seconds"] = round(time.time() - t0, 1)
        self.rows.append(row)

    def _original(self, original, spec, base, shapes) -> tuple[str, tuple[str, ...] | None]:
        """Why the original cannot be audited against ("" when it can), and the distributions to audit
        on: as `kerntune optimize` does, those on which the original disagrees with the NumPy reference
        are left out (None: none is), and disagreeing on the spec's own inputs skips the kernel."""
        req = EvalRequest(original, spec, base, shapes, (), seed=3, timing=None)
        r = self.worker.evaluate(req, 300)
        v = r.verification
        if r.status is Status.WRONG_RESULT and v is not None:
            bad = {s.distribution for s in v.shapes if not s.ok}
            keep = tuple(d for d in v.distributions if d not in bad)
            if "spec" not in bad and keep:
                print(f"    the original disagrees with the reference on {', '.join(sorted(bad))} inputs: "
                      "left out, as optimize does", file=sys.stderr, flush=True)
                r = self.worker.evaluate(replace(req, distributions=keep), 300)
                return ("" if r.status is Status.OK else f"the original is not correct here ({r.status.value})"), keep
        return ("" if r.status is Status.OK else f"the original is not correct here ({r.status.value})"), None

    def _round(self, rel, kf, original, source, launch, origin, shapes, row) -> list[tuple]:
        spec, base = kf.spec, str(kf.loaded.base_dir)
        result = apply_catalog(source, kf.lang, spec, kernel=kf.kernel_name, launch=launch,
                               device=self.worker.info, compute_units=COMPUTE_UNITS)
        if result.space_size <= 1:
            return []
        t = parse_template(result.template, kf.lang, rel)
        space = Space.of(t)
        row["templates"] += 1
        ok, checked = [], 0
        for c in sample(space, shapes, spec.constants, self.configs, self.rng):
            inst = t.instance(c, spec)
            row["configs"] += 1
            cfg = space.key(c)
            if kf.lang == "cuda":
                if before_compile(t, space, c, spec, shapes, H100) is not None:
                    row["pruned"] += 1
                    continue
                what, message = self._cuda_finding(t, spec, c, inst)
                if what:
                    row["wrong"] += 1
                    self.found(kernel=rel, origin=origin, config=cfg, what=what, message=message,
                               rules=result.applied_names)
                else:
                    ok.append(c)
                continue
            r = self.worker.evaluate(EvalRequest(inst, spec, base, shapes, (), seed=11, reference=original,
                                                 timing=None, distributions=self.distributions), 300)
            if r.status is not Status.OK:
                row["wrong"] += 1
                self.found(kernel=rel, origin=origin, config=cfg, what=r.status.value, message=r.message,
                           rules=result.applied_names)
                continue
            if self.checker is not None and checked < self.checks:
                checked += 1
                row["checked"] += 1
                rep = self.checker.check(inst, spec, base, check_shapes(spec), 5)
                if rep.status in (CheckStatus.MEMORY_ERROR, CheckStatus.WRONG_RESULT):
                    row["flagged"] += 1
                    self.found(kernel=rel, origin=origin, config=cfg, what="memory checker", message=rep.message,
                               rules=result.applied_names)
                    continue
            ok.append(c)
        # the next round's inputs: two correct instances other than the first values, baked as optimize does
        return [(bake(t.render(c, spec), kf.lang), resolve_launch_params(t.decl.launch, c), space.key(c))
                for c in ok[1:3]]

    @staticmethod
    def _nvcc(inst):
        """(ptxas's resource report, '') when ``inst`` compiles for sm_90, else (None, nvcc's message)."""
        try:
            return compile_offline(inst.source, inst.name, options=inst.options).resources, ""
        except CompileFailed as e:
            return None, str(e)
        except KerntuneError as e:
            return None, e.message + (f": {e.detail}" if e.detail else "")

    def _compiles(self, inst) -> str:
        _, error = self._nvcc(inst)
        return f"the original does not compile with nvcc: {error.splitlines()[0][:200]}" if error else ""

    def _cuda_finding(self, t, spec, config, inst) -> tuple[str, str]:
        """('', '') when the instance compiles for sm_90 and the template's shared-memory estimate is no more
        than what ptxas reports; else what is wrong."""
        res, error = self._nvcc(inst)
        if error:
            return "compile error", error
        if t.decl.shared_estimate is not None:
            want = expr.evaluate_int(str(t.decl.shared_estimate), {**spec.constants, **config}, "shared_estimate")
            got = res.static_shared_bytes or 0
            if want > got:
                return "shared estimate", f"the template estimates {want} B of static shared memory, ptxas reports {got} B"
        return "", ""


def write(out: Path, audit: Audit, args, device: str, seconds: float) -> None:
    today = datetime.date.today().isoformat()
    lines = [f"# Rule catalog audit ({today})", "",
             f"Device `cpu` ({device}), commit {provenance.commit(True)}; {args.configs} configurations per template "
             f"(the first values, the last values together, random valid ones; seed {args.seed}), {args.rounds} "
             f"round(s) (round 2 rewrites two correct round-1 instances), rules sized for {COMPUTE_UNITS} compute "
             f"units, fast-math parameters off (approximations by design: the spec's tolerance decides them); "
             f"each configuration verified against the original on the smallest spec shape (of the cpu set where there is one) and the held-out "
             f"ones, every input distribution" + (f", the first {args.checks} of each template's then run under Oclgrind on the check shapes" if audit.checker
                                                  else " (no memory checker: Oclgrind is not installed)") +
             f". {seconds / 60:.1f} minutes.", "",
             "```", "python scripts/audit_rules.py " + " ".join(sys.argv[1:]), "```", "",
             "CUDA files (no GPU here): each configuration pruned before compiling by an H100's limits, or compiled "
             "with nvcc for sm_90 (`wrong` counts those that do not compile, or whose shared-memory estimate exceeds "
             "what ptxas reports).", "",
             "| kernel | templates | configurations | wrong | under the checker | flagged by it | pruned | seconds |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in audit.rows:
        if "skipped" in r:
            lines.append(f"| {r['kernel']} | skipped: {r['skipped']} | | | | | | |")
        else:
            left = f" (without {', '.join(r['left_out'])}: the original disagrees with the reference there)" \
                if r.get("left_out") else ""
            lines.append(f"| {r['kernel']}{left} | {r['templates']} | {r['configs']} | {r['wrong']} | {r['checked']} | "
                         f"{r['flagged']} | {r['pruned']} | {r['seconds']} |")
    total = sum(r.get("configs", 0) for r in audit.rows)
    lines += ["", f"{total} configurations of {sum(r.get('templates', 0) for r in audit.rows)} templates; "
                  f"{len(audit.findings)} finding(s).", ""]
    for f in audit.findings:
        lines += [f"- `{f['kernel']}` ({f['origin']}) `{f['config']}`: {f['what']}: {f['message'][:300]} "
                  f"(rules: {', '.join(f['rules'])})"]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    out.with_suffix(".json").write_text(json.dumps({"rows": audit.rows, "findings": audit.findings}, indent=1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("files", nargs="*", type=Path,
                    help="kernel files (default: every .cl and .cu under kernels/ and tests/data)")
    ap.add_argument("--lang", choices=("opencl", "cuda", "all"), default="all",
                    help="which kernel files by default (default all; CUDA needs nvcc)")
    ap.add_argument("--configs", type=int, default=10, help="configurations per template (default 10)")
    ap.add_argument("--rounds", type=int, default=2, choices=(1, 2), help="catalog rounds (default 2)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random configurations (default 0)")
    ap.add_argument("--checks", type=int, default=4,
                    help="configurations per template run under the memory checker, the first of the sample (default 4)")
    ap.add_argument("--no-check", action="store_true", help="verify only, without the memory checker")
    ap.add_argument("--out", type=Path, help="write OUT.md and OUT.json")
    args = ap.parse_args()
    files = [p.resolve() for p in args.files] or kernel_files(
        {"opencl": (".cl",), "cuda": (".cu",), "all": (".cl", ".cu")}[args.lang])
    missing = [str(p) for p in files if not p.is_file()]
    if missing:
        print(f"error: no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    check = not args.no_check and oclgrind_library() is not None
    from kerntune.engine.devices import resolve
    try:
        ref, _ = resolve("cpu", "opencl")
    except KerntuneError as e:
        print(f"error: {e.message}\nhint: {e.hint}", file=sys.stderr)
        return 2
    t0 = time.time()
    with DeviceWorker(ref) as worker:
        device = f"{worker.info.name}, {worker.info.driver}"
        audit = Audit(worker, args.configs, args.seed, args.rounds, check, args.checks)
        for i, path in enumerate(files, 1):
            print(f"[{i}/{len(files)}] {path.relative_to(REPO) if path.is_relative_to(REPO) else path}",
                  file=sys.stderr, flush=True)
            audit.run_file(path)
            row = audit.rows[-1]
            if args.out:
                args.out.parent.mkdir(parents=True, exist_ok=True)
                write(args.out, audit, args, device, time.time() - t0)
            print("    " + (f"skipped: {row['skipped']}" if "skipped" in row else
                            f"{row['configs']} configurations, {row['wrong']} wrong, {row['flagged']} flagged "
                            f"({row['seconds']} s)"), file=sys.stderr, flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        write(args.out, audit, args, device, time.time() - t0)
    print(f"{sum(r.get('configs', 0) for r in audit.rows)} configurations, {len(audit.findings)} finding(s)")
    return 1 if audit.findings else 0


if __name__ == "__main__":
    sys.exit(main())
