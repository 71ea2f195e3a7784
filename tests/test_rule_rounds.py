"""Every rule composes with every other rule across rounds.

For kernels written so that each rule of the catalog applies to one of them,
a round-1 winner is picked for every rule (that rule's parameters at a
non-first value, the rest unchanged) plus one winner with every parameter at a
non-first value; each is baked (kerntune.agents.bake) as the optimize loop
bakes a round's winner, and the whole catalog is applied again to the baked
kernel. The baked winner must be the winner (the same tokens after the C
preprocessor), and every rule that can take the baked code as its input again
must apply again.

Instances of the next template are compiled, after the winners of the rules
that change the code's structure or decorate loops and the kernel
(shuffle-reduction, vectorize, elements-per-thread, privatize-atomics, unroll,
launch-bounds) and the all-rules winner. For OpenCL on the real CPU device:
the baseline and every other value of each parameter, the rest unchanged;
after the all-rules winner also a pairwise covering sample (every pair of
values of every two parameters appears in at least one compiled instance; the
whole space when it has at most 48 configurations); and the chain of all-rules
winners goes through a third round (baseline and every value one at a time).
For CUDA with nvcc for sm_90 (about a second an instance): the baseline and
each parameter at its last value, the rest unchanged (distinct sources only).
Cold, this compiles about 400 OpenCL instances and 150 with nvcc; pyopencl's
and kerntune's nvcc caches make reruns fast.
"""

from __future__ import annotations

import itertools
import random
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from kerntune.agents.bake import bake
from kerntune.agents.rules.catalog import apply_catalog
from kerntune.errors import KerntuneError
from kerntune.spec.load import load_file
from kerntune.spec.shapes import verification_shapes
from kerntune.tuner.kernel_files import resolve_launch_params
from kerntune.tuner.space import Space
from kerntune.tuner.template import parse_template
from tests.conftest import REPO, catalog_of, wrong_configs


# kernel (without extension), spec, the rules that must apply to it in round 1
CASES = {
    "rms_norm": ("tests/data/rms_norm", "tests/data/rms_norm.yaml",
                 {"launch-config", "shuffle-reduction", "unroll", "restrict", "compiler-flags"}),
    "softmax": ("tests/data/softmax", "tests/data/softmax.yaml",
                {"launch-config", "shuffle-reduction", "vectorize", "unroll", "fast-math", "compiler-flags"}),
    "row_sum": ("kernels/examples/row_sum", "kernels/examples/row_sum.yaml",
                {"launch-config", "shuffle-reduction", "vectorize", "unroll"}),
    "vector_add": ("kernels/examples/vector_add", "kernels/examples/vector_add.yaml",
                   {"launch-config", "elements-per-thread"}),
    "histogram": ("kernels/classic/histogram/naive", "kernels/classic/histogram/spec.yaml",
                  {"privatize-atomics", "unroll"}),
    # the naive corpus (kernels/naive): one row per thread, multi-pass rows, a flat index split by division,
    # a block-strided loop at an offset
    "naive_rms_norm": ("kernels/naive/rms_norm/rms_norm", "kernels/naive/rms_norm/spec.yaml",
                       {"launch-config", "cooperative-rows", "hoist-invariants", "unroll", "restrict"}),
    "naive_softmax": ("kernels/naive/softmax/softmax", "kernels/naive/softmax/spec.yaml",
                      {"launch-config", "online-softmax", "cooperative-rows", "hoist-invariants", "unroll",
                       "fast-math"}),
    "naive_silu_and_mul": ("kernels/naive/silu_and_mul/silu_and_mul", "kernels/naive/silu_and_mul/spec.yaml",
                           {"launch-config", "row-column-grid", "restrict", "fast-math"}),
    "naive_gelu_tanh_rows": ("kernels/naive/gelu_tanh_and_mul_rows/gelu_tanh_and_mul_rows",
                             "kernels/naive/gelu_tanh_and_mul_rows/spec.yaml",
                             {"launch-config", "vectorize", "hoist-invariants", "unroll"}),
    # a kernel whose body is a macro (expand-macros), walking four rows as one flattened range (row-loop)
    "scale_rows": ("tests/data/scale_rows", "tests/data/scale_rows.yaml",
                   {"expand-macros", "launch-config", "row-loop", "unroll", "restrict"}),
}
EXT = {"opencl": ".cl", "cuda": ".cu"}
EXHAUSTIVE_UP_TO = 48


def pairwise(space: Space, shapes, seed: int = 0) -> list[dict]:
    """A pairwise covering sample: the baseline first, then greedily the valid configuration that
    covers the most pairs of parameter values not covered yet (pairs no valid configuration can
    cover are given up after a while)."""
    valid = lambda c: space.violated(c, shapes) is None  # noqa: E731
    if space.size <= EXHAUSTIVE_UP_TO:
        return [c for c in space.configs() if valid(c)]
    names = space.names
    idx = {n: {repr(v): i for i, v in enumerate(space.params[n])} for n in names}

    def pairs(c):
        return {(a, idx[a][repr(c[a])], b, idx[b][repr(c[b])]) for a, b in itertools.combinations(names, 2)}

    todo = {(a, i, b, j) for a, b in itertools.combinations(names, 2)
            for i in range(len(space.params[a])) for j in range(len(space.params[b]))}
    out = [space.baseline()]
    todo -= pairs(out[0])
    rng = random.Random(seed)
    stale = 0
    while todo and stale < 30:
        best, gain = None, 0
        for a, i, b, j in rng.sample(sorted(todo), min(len(todo), 20)):
            c = space.random_config(rng)
            c[a], c[b] = space.params[a][i], space.params[b][j]
            if valid(c) and len(pairs(c) & todo) > gain:
                best, gain = c, len(pairs(c) & todo)
        if best is None:
            stale += 1
            continue
        out.append(best)
        todo -= pairs(best)
    return out


def one_at_a_time(space: Space, shapes) -> list[dict]:
    """The baseline and every other value of each parameter, the rest unchanged."""
    base = space.baseline()
    configs = [base] + [{**base, k: v} for k, vals in space.params.items() for v in vals[1:]]
    return [c for c in configs if space.violated(c, shapes) is None]


def opencl_sample(space: Space, shapes, label: str) -> list[dict]:
    configs = one_at_a_time(space, shapes)
    if label == "all":     # the most composed template: every pair of values too
        seen = {space.key(c) for c in configs}
        configs += [c for c in pairwise(space, shapes) if space.key(c) not in seen]
    return configs


def extremes(space: Space, shapes) -> list[dict]:
    """The baseline and each parameter at its last value, the rest unchanged."""
    base = space.baseline()
    configs = [base] + [{**base, k: vals[-1]} for k, vals in space.params.items()]
    return [c for c in configs if space.violated(c, shapes) is None]


def winners(space: Space, trace, shapes) -> list[tuple[str, dict]]:
    """Round-1 winners: per rule, its parameters at their last value; then every parameter at a
    non-first value (the last valid one found, from the last values down)."""
    base = space.baseline()
    out = []
    for a in trace:
        c = {**base, **{p: space.params[p][-1] for p in a.params}}
        if space.violated(c, shapes) is None and c != base:
            out.append((a.rule, c))
    for pick in (-1, 1):
        c = {k: v[pick] for k, v in space.params.items()}
        if space.violated(c, shapes) is None:
            out.append(("all", c))
            break
    return out


# the round-1 winners compiled: those of the rules that change the code's structure or decorate loops
# and the kernel, and the all-rules winner (the others' winners change a qualifier, a call name, a
# number or a flag, which the all-rules winner covers)
WINNERS = {"shuffle-reduction", "vectorize", "elements-per-thread", "privatize-atomics", "unroll",
           "launch-bounds", "cooperative-rows", "online-softmax", "row-column-grid", "vector-accumulators",
           "hoist-invariants", "row-loop", "all"}


def next_rounds(name: str, lang: str, labels: set[str] | None = None, subgroups: bool = True, vector_width: int = 16):
    """(round-1 winner label, baked source, next template, spec) for each winner of the case, with the
    templates made for a device with sub-groups or without (shuffle-reduction then declines)."""
    stem, spec_path, expected = CASES[name]
    loaded = load_file(REPO / spec_path)
    spec = loaded.spec
    source = (REPO / (stem + EXT[lang])).read_text()
    first = apply_catalog(source, lang, spec, subgroups=subgroups, vector_width=vector_width)
    if not subgroups:
        expected = expected - {"shuffle-reduction"}
    assert expected <= set(first.applied_names), (name, lang, first.skipped)
    t1 = parse_template(first.template, lang, f"{name} round 1")
    shapes = tuple(verification_shapes(spec))
    space = Space.of(t1)
    for label, config in winners(space, first.trace, shapes):
        if labels is not None and label not in labels:
            continue
        baked = bake(t1.render(config, spec), lang)
        launch = resolve_launch_params(t1.decl.launch, config)
        second = apply_catalog(baked, lang, spec, launch=launch, note="round 2", subgroups=subgroups,
                               vector_width=vector_width)
        yield label, config, baked, second, parse_template(second.template, lang, f"{name} round 2 after {label}"), \
            spec, shapes, first


def lost_rules(first, config: dict, second, spec, lang: str) -> set[str]:
    """Rules of round 1 that do not apply again to the baked winner although they should: those
    whose parameters the winner left at their first values (the baked code is their input again)
    unless those parameters make no difference to it (another parameter took a branch without the
    code the rule rewrote), and launch-config and elements-per-thread, which take their own output
    back as a parameter."""
    space_first = {k: v[0] for k, v in first.params.items()}
    t = parse_template(first.template, lang, "round")

    def matters(params) -> bool:
        baked = bake(t.render(config, spec), lang)
        return any(bake(t.render({**config, p: v}, spec), lang) != baked for p in params for v in first.params[p][1:])

    again = {a.rule for a in first.trace if all(config[p] == space_first[p] for p in a.params) and matters(a.params)}
    if config.get("VACC", 1) > 1:
        # a row summed in vectors (vload at x + offset) is not one cooperative-rows splits among
        # threads, nor a pass online-softmax fuses: the winner chose one row per thread and the
        # passes as they are (docs/rules.md, vector-accumulators)
        again -= {"cooperative-rows", "online-softmax"}
    if config.get("VEC", 1) > 1:
        # a vectorized loop is not one split-groups deals out (its body reads and writes through
        # buffers at other indices than the tail's): the split and the width were chosen together in
        # the round that offered both (docs/rules.md, split-groups)
        again -= {"split-groups"}
    again |= {a.rule for a in first.trace if a.rule in ("launch-config", "elements-per-thread")}
    return again - set(second.applied_names)


def preprocessed(source: str) -> list[str]:
    """The tokens the C preprocessor makes of ``source`` (macros expanded, #if resolved)."""
    out = subprocess.run(["cpp", "-P", "-w", "-x", "c", "-"], input=source, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    return re.findall(r"\w+|[^\w\s]", out.stdout)


@pytest.mark.skipif(shutil.which("cpp") is None, reason="no C preprocessor (cpp) on PATH")
@pytest.mark.parametrize("lang", ["opencl", "cuda"])
@pytest.mark.parametrize("name", list(CASES))
def test_baked_winner_is_the_winner(name, lang):
    """Baking keeps exactly the code the winner ran: the same tokens after preprocessing."""
    for label, config, baked, second, t2, spec, shapes, first in next_rounds(name, lang):
        rendered = parse_template(first.template, lang, name).render(config, spec)
        assert preprocessed(baked) == preprocessed(rendered), (label, config)


@pytest.mark.parametrize("name", list(CASES))
def test_third_round_compiles_for_opencl(worker, name):
    """The all-rules winner of round 2 after round 1's all-rules winner, baked and rewritten once more."""
    failures, compiled = [], 0
    sub, width = worker.info.subgroups, worker.info.vector_width
    for label, config, baked, second, t2, spec, shapes, first in next_rounds(name, "opencl", {"all"}, sub, width):
        space2 = Space.of(t2)
        pick = next((c for lbl, c in winners(space2, second.trace, shapes) if lbl == "all"), None)
        if pick is None:
            continue
        third = apply_catalog(bake(t2.render(pick, spec), "opencl"), "opencl", spec,
                              launch=resolve_launch_params(t2.decl.launch, pick), note="round 3", subgroups=sub,
                              vector_width=width)
        assert not lost_rules(second, pick, third, spec, "opencl"), (label, third.skipped)
        t3 = parse_template(third.template, "opencl", f"{name} round 3 after {label}")
        for c in one_at_a_time(Space.of(t3), shapes):
            inst = t3.instance(c, spec)
            try:
                worker.compile(inst.source, inst.name, inst.options, 120)
            except KerntuneError as e:
                failures.append((label, c, (e.detail or e.message)[:400]))
            compiled += 1
    assert compiled and failures == [], f"{len(failures)} of {compiled} instances failed to compile: {failures[:3]}"


@pytest.mark.parametrize("name", list(CASES))
def test_next_round_compiles_for_opencl(worker, name):
    failures, compiled = [], 0
    rounds = next_rounds(name, "opencl", WINNERS, worker.info.subgroups, worker.info.vector_width)
    for label, config, baked, second, t2, spec, shapes, first in rounds:
        assert not lost_rules(first, config, second, spec, "opencl"), (label, second.skipped)
        for c in opencl_sample(Space.of(t2), shapes, label):
            inst = t2.instance(c, spec)
            try:
                worker.compile(inst.source, inst.name, inst.options, 120)
            except KerntuneError as e:
                failures.append((label, c, (e.detail or e.message)[:400]))
            compiled += 1
    assert failures == [], f"{len(failures)} of {compiled} instances failed to compile: {failures[:3]}"


@pytest.mark.nvcc
@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_next_round_compiles_with_nvcc(name):
    from kerntune.backends.base import CompileFailed
    from kerntune.backends.nvcc import compile_offline

    jobs, seen = [], set()
    for label, config, baked, second, t2, spec, shapes, first in next_rounds(name, "cuda", WINNERS):
        assert not lost_rules(first, config, second, spec, "cuda"), (label, second.skipped)
        for c in extremes(Space.of(t2), shapes):
            inst = t2.instance(c, spec)
            if (inst.source, inst.options) not in seen:
                seen.add((inst.source, inst.options))
                jobs.append((label, c, inst))

    def build(job):
        label, c, inst = job
        try:
            compile_offline(inst.source, inst.name, "sm_90", inst.options)
        except CompileFailed as e:
            return label, c, str(e)[:400]
        return None

    with ThreadPoolExecutor(2) as pool:
        failures = [f for f in pool.map(build, jobs) if f is not None]
    assert failures == [], f"{len(failures)} of {len(jobs)} instances failed to compile: {failures[:3]}"



def _round_two_from_block_equal_to_width(lang: str, width: int, subgroups: bool = True, vector_width: int = 16):
    """avg_pool2d (a 2-D launch: square blocks of 4 to 32) after a round-1 winner whose block side
    equals its vector-accumulator width: (loaded spec, original source, round 2, its template), or
    None when the width is not offered."""
    folder = REPO / "kernels/heldout2/avg_pool2d"
    loaded, _, first = catalog_of(folder, lang, subgroups, vector_width)
    src = (folder / f"avg_pool2d{EXT[lang]}").read_text()
    spec = loaded.spec
    assert {"launch-config", "vector-accumulators"} <= set(first.applied_names), first.skipped
    t1 = parse_template(first.template, lang, "avg_pool2d round 1")
    if width not in t1.decl.params["VACC"]:
        return None
    assert width in t1.decl.params["BLOCK"]
    config = {**Space.of(t1).baseline(), "BLOCK": width, "VACC": width, "HOIST": True}
    baked = bake(t1.render(config, spec), lang)
    second = apply_catalog(baked, lang, spec, launch=resolve_launch_params(t1.decl.launch, config),
                           note="round 2", subgroups=subgroups, vector_width=vector_width)
    launch = next((a for a in second.trace if a.rule == "launch-config"), None)
    assert launch is not None, second.skipped
    # the kernel has no literal block size of its own: a number launch-config took for one came from a
    # baked parameter
    assert "literal" not in launch.summary, launch.summary
    return loaded, src, second, parse_template(second.template, lang, f"avg_pool2d round 2 from BLOCK=VACC={width}")


@pytest.mark.parametrize("vacc", [4, 8, 16])
def test_baked_vector_width_is_not_taken_for_the_block_size(worker, vacc):
    """A round-1 winner whose square block's side equals its vector-accumulator width (the rule
    audit's avg_pool2d from BLOCK=4,VACC=4): baked, the width must not be a number round 2's
    launch-config takes for the block size and rewrites into KT_BLOCK (the sum's step and its
    horizontal add followed the block while float4/vload4 stayed: no other block size compiled).
    Every block size of round 2 verifies against the original kernel."""
    made = _round_two_from_block_equal_to_width("opencl", vacc, worker.info.subgroups, worker.info.vector_width)
    if made is None:
        pytest.skip(f"{worker.info.name} takes vectors of at most {worker.info.vector_width} lanes")
    loaded, src, second, t2 = made
    space2 = Space.of(t2)
    configs = [{**space2.baseline(), "BLOCK": b} for b in space2.params["BLOCK"]]
    assert len(configs) > 1
    bad = wrong_configs(worker, t2, configs, loaded, tuple(verification_shapes(loaded.spec)), src, seed=5)
    assert bad == [], [(c["BLOCK"], status, msg[:300]) for c, status, msg in bad]


@pytest.mark.nvcc
@pytest.mark.parametrize("vacc", [4, 8])
def test_baked_vector_width_is_not_taken_for_the_block_size_cuda(vacc):
    """The same for CUDA, whose partial sums are an array sized by the width (the array kept its
    size while the loops over it followed the block: writes past its end); where the width equals a
    block size, every block size of round 2 compiles with nvcc for sm_90."""
    made = _round_two_from_block_equal_to_width("cuda", vacc)
    if made is None:
        pytest.skip(f"VACC={vacc} is not offered for CUDA")
    loaded, src, second, t2 = made
    assert _block_sizes_nvcc_refuses(t2, loaded.spec) == []


def _gemv_t_round_two_from_block_equal_to_width(tmp_path, width: int, subgroups: bool, vector_width: int):
    """The naive transposed GEMV (vector-columns) with a spec block of ``width``, after a round-1 winner
    with BLOCK = VW = ``width``: (loaded spec, original source, round 2's template), or None when the
    width is not offered."""
    folder = tmp_path / "gemv_t"
    folder.mkdir()
    naive = REPO / "kernels/naive/gemv_t"
    shutil.copy(naive / "gemv_t.cl", folder / "gemv_t.cl")
    spec_text = (naive / "spec.yaml").read_text()
    for old, new in (("ceil_div(cols, 128)", f"ceil_div(cols, {width})"), ("block: [128]", f"block: [{width}]"),
                     ("../reference.py", str(REPO / "kernels/naive/reference.py"))):
        assert old in spec_text
        spec_text = spec_text.replace(old, new)
    (folder / "spec.yaml").write_text(spec_text)
    loaded, src, first = catalog_of(folder, "opencl", subgroups, vector_width)
    assert {"launch-config", "vector-columns"} <= set(first.applied_names), first.skipped
    t1 = parse_template(first.template, "opencl", "gemv_t round 1")
    if width not in t1.decl.params["VW"]:
        return None
    config = {**Space.of(t1).baseline(), "BLOCK": width, "VW": width}
    launch1 = resolve_launch_params(t1.decl.launch, config)
    second = apply_catalog(bake(t1.render(config, loaded.spec), "opencl"), "opencl", loaded.spec, launch=launch1,
                           note="round 2", subgroups=subgroups, vector_width=vector_width)
    launch = next((a for a in second.trace if a.rule == "launch-config"), None)
    assert launch is not None, second.skipped
    # gemv_t has no literal block size of its own: a number launch-config took for one came from VW
    assert "literal" not in launch.summary, launch.summary
    t2 = parse_template(second.template, "opencl", f"gemv_t round 2 from BLOCK=VW={width}")
    # the grid's width stays the baked one while the block follows BLOCK
    assert t2.decl.launch.grid[0] == f"ceil_div(cols, BLOCK * fixed({width}))", t2.decl.launch.grid
    return loaded, src, t2


@pytest.mark.parametrize("vw", [4, 8, 16])
def test_baked_vector_columns_width_is_not_taken_for_the_block_size(worker, tmp_path, vw):
    """vector-columns after a round-1 winner whose 1-D block equals its width VW (a gemv_t whose spec
    block is 16, from BLOCK=VW=16): baked, the columns per work-item (get_global_id(0) * 16) and the
    grid (ceil_div(cols, 16 * 16)) held the width as a bare number, which round 2's launch-config
    rewrote into KT_BLOCK beside vload16: every other block size computed other columns than it stored.
    Every block size of round 2 verifies against the original kernel."""
    made = _gemv_t_round_two_from_block_equal_to_width(tmp_path, vw, worker.info.subgroups, worker.info.vector_width)
    if made is None:
        pytest.skip(f"{worker.info.name} takes vectors of at most {worker.info.vector_width} lanes")
    loaded, src, t2 = made
    space2 = Space.of(t2)
    configs = [{**space2.baseline(), "BLOCK": b} for b in space2.params["BLOCK"]]
    assert len(configs) > 1
    bad = wrong_configs(worker, t2, configs, loaded, tuple(verification_shapes(loaded.spec)), src, seed=5)
    assert bad == [], [(c["BLOCK"], status, msg[:300]) for c, status, msg in bad]


def _vector_add_round_from_block_equal_to_ept(tmp_path, lang: str, ept: int):
    """vector_add (elements-per-thread) with a spec block of ``ept``, after winners whose block equals
    their EPT: round 1 from BLOCK=EPT (16, which round 1 does not offer, through round 2 from EPT=8):
    (loaded spec, original source, the next round's template). Asserts that the next round's
    launch-config rewrote no literal (vector_add has none of its own: a number it took for the block
    came from EPT), that elements-per-thread takes its baked EPT again, and that the grid keeps it in
    fixed()."""
    folder = tmp_path / "vector_add"
    folder.mkdir()
    ext = EXT[lang]
    shutil.copy(REPO / f"kernels/examples/vector_add{ext}", folder / f"vector_add{ext}")
    spec_text = (REPO / "kernels/examples/vector_add.yaml").read_text()
    # small shapes, none a multiple of a block times EPT (the last group's tail), for a loaded CPU
    for old, new in (("ceil_div(n, 256)", f"ceil_div(n, {ept})"), ("block: [256]", f"block: [{ept}]"),
                     ("reference.py", str(REPO / "kernels/examples/reference.py")),
                     ("  - {label: small, n: 4096}\n  - {label: 1M, n: 1048576}\n  - {label: 16M, n: 16777216}",
                      "  - {label: small, n: 4099}\n  - {label: odd, n: 70001}\nholdout_shapes: [{n: 37}]")):
        assert old in spec_text
        spec_text = spec_text.replace(old, new)
    (folder / "spec.yaml").write_text(spec_text)
    loaded = load_file(folder / "spec.yaml")
    src = (folder / f"vector_add{ext}").read_text()
    result = apply_catalog(src, lang, loaded.spec)
    assert {"launch-config", "elements-per-thread"} <= set(result.applied_names), result.skipped
    steps = [8, 16] if ept == 16 else [ept]
    for n, k in enumerate(steps, 2):
        t = parse_template(result.template, lang, f"vector_add round {n - 1}")
        assert k in t.decl.params["EPT"] and ept in t.decl.params["BLOCK"], t.decl.params
        config = {**Space.of(t).baseline(), "BLOCK": ept, "EPT": k}
        result = apply_catalog(bake(t.render(config, loaded.spec), lang), lang, loaded.spec,
                               launch=resolve_launch_params(t.decl.launch, config), note=f"round {n}")
        launch = next((a for a in result.trace if a.rule == "launch-config"), None)
        assert launch is not None, result.skipped
        assert "literal" not in launch.summary, launch.summary
        again = next((a for a in result.trace if a.rule == "elements-per-thread"), None)
        assert again is not None and "earlier round" in again.summary, result.skipped
        t = parse_template(result.template, lang, f"vector_add round {n} from BLOCK={ept}, EPT={k}")
        assert t.decl.params["EPT"][0] == k, t.decl.params
        assert t.decl.launch.grid[0] == "ceil_div(n, BLOCK * fixed(EPT))", t.decl.launch.grid
    return loaded, src, t


@pytest.mark.parametrize("ept", [2, 4, 8, 16])
def test_baked_elements_per_thread_is_not_taken_for_the_block_size(worker, tmp_path, ept):
    """elements-per-thread after a winner whose 1-D block equals its EPT (a vector_add whose spec block
    is 8, from BLOCK=EPT=8): baked, kt_first = ... * 8 and kt_e < 8 and the grid ceil_div(n, 8 * 8) held
    EPT as bare numbers, which the next round's launch-config rewrote into KT_BLOCK: the elements per
    thread followed the block (up to 1024) and elements-per-thread no longer saw its own code. Every
    block size of the next round verifies against the original kernel, at the baked EPT and at every
    other EPT."""
    loaded, src, t = _vector_add_round_from_block_equal_to_ept(tmp_path, "opencl", ept)
    space = Space.of(t)
    configs = [{**space.baseline(), "BLOCK": b} for b in space.params["BLOCK"]]
    configs += [{**space.baseline(), "EPT": e} for e in space.params["EPT"][1:]]
    assert len(configs) > 1
    bad = wrong_configs(worker, t, configs, loaded, tuple(verification_shapes(loaded.spec)), src, seed=5)
    assert bad == [], [(c["BLOCK"], c["EPT"], status, msg[:300]) for c, status, msg in bad]


@pytest.mark.nvcc
@pytest.mark.parametrize("ept", [4, 8])
def test_baked_elements_per_thread_is_not_taken_for_the_block_size_cuda(tmp_path, ept):
    """The same for CUDA: the next round's template keeps the baked EPT, and every block size
    compiles with nvcc for sm_90."""
    loaded, _, t = _vector_add_round_from_block_equal_to_ept(tmp_path, "cuda", ept)
    assert _block_sizes_nvcc_refuses(t, loaded.spec) == []


FLAT_SPEC = """
kernel: k
args:
  - {name: out, dtype: fp32, shape: [rows, cols], intent: out}
  - {name: x, dtype: fp32, shape: [rows, cols], intent: in}
  - {name: cols, dtype: int32, value: cols}
launch: {grid: [rows], block: [BLOCK]}
shapes: [{rows: 3, cols: 300}]
holdout_shapes: [{rows: 2, cols: 37}]
noalias: true
"""

FLAT_KERNEL = {
    "opencl": """
__kernel void k(__global float* out, __global const float* x, const int cols)
{
    const long base = (long)get_group_id(0) * cols;
    for (int i = get_local_id(0); i < cols; i += get_local_size(0))
        out[base + i] = x[base + i] * 2.0f + (float)i;
}
""",
    "cuda": """
extern "C" __global__ void k(float* out, const float* x, const int cols)
{
    const long base = (long)blockIdx.x * cols;
    for (int i = threadIdx.x; i < cols; i += blockDim.x)
        out[base + i] = x[base + i] * 2.0f + (float)i;
}
"""}


def _flat_round_two(tmp_path, lang: str, block: int, vec: int):
    """A block-strided loop (vectorize) with a spec block of ``block``, after a round-1 winner with
    BLOCK = ``block`` and VEC = ``vec`` (a device of 2 compute units: no split-groups): (loaded spec,
    original source, round 2's template). Asserts that round 2's launch-config applies and rewrote no
    literal (the kernel has none of its own)."""
    p = tmp_path / "spec.yaml"
    p.write_text(FLAT_SPEC.replace("block: [BLOCK]", f"block: [{block}]"))
    loaded = load_file(p)
    src = FLAT_KERNEL[lang]
    first = apply_catalog(src, lang, loaded.spec, compute_units=2)
    assert {"launch-config", "vectorize"} <= set(first.applied_names), first.skipped
    t1 = parse_template(first.template, lang, "flat round 1")
    config = {**Space.of(t1).baseline(), "BLOCK": block, "VEC": vec}
    second = apply_catalog(bake(t1.render(config, loaded.spec), lang), lang, loaded.spec,
                           launch=resolve_launch_params(t1.decl.launch, config), note="round 2", compute_units=2)
    launch = next((a for a in second.trace if a.rule == "launch-config"), None)
    assert launch is not None, dict(second.skipped)["launch-config"]
    assert "literal" not in launch.summary, launch.summary
    return loaded, src, parse_template(second.template, lang, f"flat round 2 from BLOCK={block}, VEC={vec}")


@pytest.mark.parametrize("block, vec", [(4, 4), (8, 8), (8, 4), (2, 4)])
def test_baked_vec_is_not_taken_for_the_block_size(worker, tmp_path, block, vec):
    """vectorize after a winner whose 1-D block equals its VEC, or is twice or half of it: baked, the
    loop's kt_i0 = tid * 4, its step block * 4, kt_i0 + 4 <= cols and kt_v < 4 beside the arrays
    kt_v_x[4] held VEC as bare numbers. From BLOCK=VEC=4 round 2's launch-config rewrote them into
    KT_BLOCK (the loops over the arrays of 4 ran to the block size: writes past their end); from
    BLOCK=8, VEC=4 it declined (4 is half the block). Every block size of round 2 verifies against the
    original kernel."""
    loaded, src, t2 = _flat_round_two(tmp_path, "opencl", block, vec)
    space = Space.of(t2)
    configs = [{**space.baseline(), "BLOCK": b} for b in space.params["BLOCK"]]
    assert len(configs) > 1
    bad = wrong_configs(worker, t2, configs, loaded, tuple(verification_shapes(loaded.spec)), src, seed=5)
    assert bad == [], [(c["BLOCK"], status, msg[:300]) for c, status, msg in bad]


@pytest.mark.nvcc
@pytest.mark.parametrize("block, vec", [(4, 4), (8, 4)])
def test_baked_vec_is_not_taken_for_the_block_size_cuda(tmp_path, block, vec):
    """The same for CUDA (kt_vec<float, 4>, kt_vload<4>): every block size of round 2 compiles with
    nvcc for sm_90 and keeps the baked VEC."""
    loaded, _, t2 = _flat_round_two(tmp_path, "cuda", block, vec)
    assert _block_sizes_nvcc_refuses(t2, loaded.spec, f"kt_vec<typename kt_elem<decltype(x[0])>::type, {vec}>") == []


def _block_sizes_nvcc_refuses(t, spec, keeps: str = "") -> list:
    """Each block size of template ``t`` (the rest at its baseline) whose instance nvcc refuses for sm_90,
    with the error; each instance must also contain ``keeps``."""
    from kerntune.backends.base import CompileFailed
    from kerntune.backends.nvcc import compile_offline

    space = Space.of(t)
    failures = []
    for b in space.params["BLOCK"]:
        inst = t.instance({**space.baseline(), "BLOCK": b}, spec)
        assert keeps in inst.source, (b, keeps)
        try:
            compile_offline(inst.source, inst.name, "sm_90", inst.options)
        except CompileFailed as e:
            failures.append((b, str(e)[:300]))
    return failures
