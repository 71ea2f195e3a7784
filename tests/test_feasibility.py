"""Every pruning reason, before and after compiling, against stored device profiles."""

from kerntune.hardware import load_profile, occupancy
from kerntune.results import ResourceUsage
from kerntune.spec.model import KernelSpec, Shape
from kerntune.tuner.feasibility import REASONS, after_compile, before_compile
from kerntune.tuner.space import Space
from kerntune.tuner.template import parse_template

SPEC = KernelSpec.model_validate({
    "kernel": "k", "args": [{"name": "out", "dtype": "fp32", "shape": ["n"], "intent": "out"}],
    "launch": {"grid": [1], "block": [1]}, "shapes": [{"n": 4096}, {"n": 100}]})
SHAPES = (Shape.of({"n": 4096}), Shape.of({"n": 100}))
H100 = load_profile("h100")


def template(params: str, launch: str, extra: str = ""):
    return parse_template("{# kerntune-template\nparams: {%s}\nlaunch: {%s}\n%s#}\nbody\n" % (params, launch, extra),
                          "cuda", "t.cu.j2")


def reason(t, config):
    r = before_compile(t, Space.of(t), config, SPEC, SHAPES, H100)
    return r.reason if r else None


def test_restriction_with_sizes_names_the_shape():
    t = template("V: [1, 8]", "grid: [1], block: [32]", "restrictions: ['n % V == 0']\n")
    r = before_compile(t, Space.of(t), {"V": 8}, SPEC, SHAPES, H100)
    assert r.reason == "restriction" and "n=100" in r.message
    assert reason(t, {"V": 1}) is None


def test_launch_expression_error():
    assert reason(template("B: [0]", "grid: ['n // B'], block: [32]"), {"B": 0}) == "launch"


def test_threads_block_dims_grid_dims():
    assert reason(template("B: [2048]", "grid: [1], block: [B]"), {"B": 2048}) == "threads_per_block"
    assert reason(template("B: [128]", "grid: [1], block: [1, 1, B]"), {"B": 128}) == "block_dims"
    assert reason(template("G: [70000]", "grid: [1, G], block: [32]"), {"G": 70000}) == "grid_dims"


def test_shared_memory_estimate_and_dynamic():
    t = template("T: [64, 128]", "grid: [1], block: [256]", "shared_estimate: 'T * T * 4'\n")
    assert reason(t, {"T": 64}) is None                      # 16 KiB
    assert reason(t, {"T": 128}) == "shared_memory"          # 64 KiB static > 48 KiB without opt-in
    t2 = template("S: [300000]", "grid: [1], block: [256], shared_mem: S")
    assert reason(t2, {"S": 300000}) == "shared_memory"      # beyond the 227 KiB opt-in limit


def test_after_compile_registers_spills_occupancy():
    t = template("B: [1024]", "grid: [1], block: [B]")
    heavy = ResourceUsage(source="ptxas", registers=128, static_shared_bytes=0)
    assert after_compile(t, {"B": 1024}, SPEC, SHAPES, H100, heavy).reason == "registers"
    spilly = ResourceUsage(source="ptxas", registers=32, spill_store_bytes=64, spill_load_bytes=64)
    assert after_compile(t, {"B": 1024}, SPEC, SHAPES, H100, spilly) is None
    assert after_compile(t, {"B": 1024}, SPEC, SHAPES, H100, spilly, reject_spills=True).reason == "spills"
    limited = ResourceUsage(source="cupy", registers=32, max_threads_per_block=512)
    assert after_compile(t, {"B": 1024}, SPEC, SHAPES, H100, limited).reason == "threads_per_block"
    big = ResourceUsage(source="ptxas", registers=32, static_shared_bytes=40_000)
    t2 = template("S: [200000]", "grid: [1], block: [32], shared_mem: S")
    assert after_compile(t2, {"S": 200000}, SPEC, SHAPES, H100, big).reason == "shared_memory"


def test_occupancy():
    occ = occupancy(H100, 256, 32, 0)
    assert occ.occupancy == 1.0 and occ.limiter in ("threads", "blocks")
    occ = occupancy(H100, 256, 128, 0)
    assert occ.limiter == "registers" and occ.blocks_per_sm == 2 and occ.occupancy == 0.25
    occ = occupancy(H100, 128, 32, 100_000)
    assert occ.limiter == "shared memory" and occ.blocks_per_sm == 2


def test_no_block_fits_an_sm():
    # a device whose per-SM shared memory is smaller than its per-block opt-in limit
    odd = H100.model_copy(update={"max_shared_per_sm": 64 * 1024, "max_shared_per_block_optin": 100 * 1024})
    t = template("S: [80000]", "grid: [1], block: [128], shared_mem: S")
    res = ResourceUsage(source="ptxas", registers=32, static_shared_bytes=0)
    assert after_compile(t, {"S": 80000}, SPEC, SHAPES, odd, res).reason == "occupancy"


def test_every_reason_is_covered_by_a_test():
    tested = {"restriction", "launch", "threads_per_block", "block_dims", "grid_dims", "shared_memory",
              "registers", "spills", "occupancy"}
    assert tested == set(REASONS)


def test_itemsize_constants_in_restrictions_and_launch():
    spec = KernelSpec.model_validate({
        "kernel": "k", "args": [{"name": "out", "dtype": "bf16", "shape": ["n"], "intent": "out"}],
        "launch": {"grid": [1], "block": [1]}, "shapes": [{"n": 4096}]})
    t = parse_template("{# kerntune-template\nparams: {VEC: [1, 8, 16]}\nrestrictions: ['VEC * itemsize_out <= 16']\n"
                       "launch: {grid: ['ceil_div(n, 256 * VEC)'], block: [256]}\n#}\nbody\n", "cuda", "t.cu.j2")
    from kerntune.tuner.template import check_against_spec

    check_against_spec(t, spec)
    space = Space.of(t)
    shapes = (Shape.of({"n": 4096}),)
    assert before_compile(t, space, {"VEC": 8}, spec, shapes, H100) is None          # 8 x 2 B = 16 B
    assert before_compile(t, space, {"VEC": 16}, spec, shapes, H100).reason == "restriction"
