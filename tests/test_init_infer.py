"""`kerntune init`: a spec inferred from the kernel's code (intents through casts, pointer
arithmetic, helpers and atomics; extents; divisibility; launch; budgeted shapes), checked
against small kernels with a known answer and against the issue's own example."""

import shutil

import pytest
import yaml

from kerntune.source.instantiate import resolve
from kerntune.spec.compare import compare
from kerntune.spec.infer import infer
from kerntune.spec.load import load_file
from kerntune.spec.shapes import verification_shapes
from kerntune.spec.signature import shape_bytes
from tests.conftest import REPO, run_cli, write

CORPUS = REPO / "tests/data/extensions"


def _infer(src: str, name: str, lang: str = "cuda"):
    r = resolve(src, lang, name)
    inf = infer(src, r.kernel, r.bindings, lang)
    return inf, {a.name: a for a in inf.args}


def test_intents_follow_real_data_flow():
    src = """
    __device__ void store_pair(float* dst, int i, float v) { dst[2 * i] = v; dst[2 * i + 1] = v; }
    extern "C" __global__ void k(float* out, float* lse, float* acc, float* hist, float* upd,
                                 const float* x, const int* idx, int n) {
        const int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        float* row = out + 2 * i;                       // pointer arithmetic: an alias of out
        *reinterpret_cast<float2*>(row) = make_float2(x[i], x[i]);   // a store through a cast
        if (lse != nullptr) lse[i] = x[i];              // a null check is not a read
        atomicAdd(&hist[idx[i] & 7], 1.0f);             // atomics update: inout
        store_pair(acc, i, x[i]);                       // written inside a helper
        if (x[i] > 0.0f) upd[i] = 0.0f;                 // written only where loaded data says so
    }"""
    inf, a = _infer(src, "k")
    assert a["out"].intent == "out" and a["lse"].intent == "out" and a["acc"].intent == "out"
    assert a["hist"].intent == "inout" and a["upd"].intent == "inout"
    assert a["x"].intent == "in" and a["idx"].intent == "in"
    assert a["out"].shape == ["2 * n"] and a["acc"].shape == ["2 * n"] and a["lse"].shape == ["n"]
    assert a["hist"].shape == ["8"]                    # idx & 7 < 8
    assert inf.grid == ["ceil_div(n, 256)"] and inf.block == [256]


def test_templated_pack_kernel_extents_divisibility_and_launch():
    src = """
    template <typename scalar_t, unsigned NUM_THREADS>
    __global__ void pack_copy(scalar_t* out, const scalar_t* in, unsigned rows, unsigned cols) {
        const unsigned pack = 16 / sizeof(scalar_t);
        const unsigned per_row = cols / pack;
        const unsigned g = blockIdx.x * NUM_THREADS + threadIdx.x;
        if (g >= rows * per_row) return;
        const unsigned r = g / per_row, p = g % per_row;
        reinterpret_cast<uint4*>(out + r * cols)[p] = reinterpret_cast<const uint4*>(in + r * cols)[p];
    }"""
    inf, a = _infer(src, "pack_copy<__nv_bfloat16, 64>")
    assert a["out"].dtype == "bf16" and a["out"].intent == "out" and a["out"].shape == ["rows", "cols"]
    assert inf.sizes["cols"] == 8                      # cols / (16 / sizeof(bf16))
    assert inf.block == [64] and inf.grid == ["ceil_div((rows * cols) // 8, 64)"]
    inf32, a32 = _infer(src, "pack_copy<float, 128>")
    assert inf32.sizes["cols"] == 4 and a32["in"].dtype == "fp32" and inf32.block == [128]


def test_block_per_row_grids():
    src = """
    extern "C" __global__ void __launch_bounds__(128) rows_norm(float* y, const float* x, int num_tokens, int d) {
        const int token_idx = blockIdx.x;
        for (int i = threadIdx.x; i < d; i += blockDim.x) y[token_idx * d + i] = x[token_idx * d + i];
    }
    extern "C" __global__ void act(float* y, const float* x, int d) {
        const long token_idx = blockIdx.x;
        for (long i = threadIdx.x; i < d; i += blockDim.x) y[token_idx * d + i] = x[token_idx * 2 * d + d + i];
    }"""
    inf, a = _infer(src, "rows_norm")
    # num_tokens is never read: it counts the blocks
    assert inf.grid == ["num_tokens"] and inf.block == [128] and a["y"].shape == ["num_tokens", "d"]
    inf, a = _infer(src, "act")
    # no parameter counts the blocks: a size named after the row variable
    assert inf.grid == ["num_tokens"] and inf.extra_sizes == ["num_tokens"]
    assert a["x"].shape == ["num_tokens", "2 * d"] and a["y"].shape == ["num_tokens", "d"]


def test_index_arrays_get_ranges_and_shared_memory_its_size():
    src = """
    extern "C" __global__ void count(const int* __restrict__ ids, int* __restrict__ counts, long numel, int bins) {
        extern __shared__ int local[];
        for (int e = threadIdx.x; e < bins; e += blockDim.x) local[e] = 0;
        __syncthreads();
        for (long i = blockIdx.x * blockDim.x + threadIdx.x; i < numel; i += (long)blockDim.x * gridDim.x)
            atomicAdd(&local[ids[i]], 1);
        __syncthreads();
        for (int e = threadIdx.x; e < bins; e += blockDim.x) atomicAdd(counts + e, local[e]);
    }
    extern "C" __global__ void lookup(float* out, const float* table, const long* pos, int dim, int n) {
        const int t = blockIdx.x;
        for (int i = threadIdx.x; i < dim; i += blockDim.x) out[t * dim + i] = table[pos[t] * dim + i];
    }"""
    inf, a = _infer(src, "count")
    assert inf.shared_mem == "4 * bins" and a["counts"].intent == "inout" and inf.noalias
    low = a["ids"].range[1]
    assert a["ids"].range[0] == 0 and inf.size_min["bins"] == low and all(s["bins"] >= low for s in inf.shapes)
    inf, a = _infer(src, "lookup")
    # nothing else bounds table: its rows get a size of their own, and pos a range below it
    assert a["table"].shape == ["max_po", "dim"] and a["pos"].range == (0, inf.size_min["max_po"])
    assert not inf.todos and not inf.noalias


def test_scatter_writes_are_inout_and_unbounded_indices_a_todo():
    src = """
    extern "C" __global__ void scatter(float* dst, const float* src, const int* slot, int n) {
        const int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) dst[slot[i] / 3 * 2] = src[i];
    }
    extern "C" __global__ void search(int* dst, const float* x, float v, int n) {
        int j = 0;
        while (j < n && x[j] < v) j++;
        dst[3 * j] = 1;
    }"""
    inf, a = _infer(src, "scatter")
    # an index loaded from memory: the slots get a size, and the writes may skip elements
    assert a["dst"].intent == "inout" and a["dst"].shape == ["(2 * max_slot + 1) // 3"]
    assert a["slot"].range == (0, inf.size_min["max_slot"])
    inf, a = _infer(src, "search")
    assert a["dst"].shape is None and "cannot bound" in a["dst"].todo
    assert any(t.startswith("args.dst: shape:") for t in inf.todos)


def test_default_shapes_fit_the_budgets_and_the_divisibility():
    src = (CORPUS / "expected/../csrc/attention/merge_attn_states.cu").read_text()
    r = run_cli("init", str(CORPUS / "csrc/attention/merge_attn_states.cu"), "--stdout")
    assert r.returncode == 0, r.stderr
    spec = yaml.safe_load(r.stdout)
    assert "1048576" not in r.stdout and "TODO" not in r.stdout
    small, large = spec["shapes"]
    assert small["head_size"] % 8 == 0 and large["head_size"] % 8 == 0
    assert src  # the file read above is the one init saw


def test_init_on_the_issue_example_is_right_the_first_time(tmp_path):
    """The issue: init guessed `output` (written through a reinterpret_cast store) as `in`, `output_lse`
    (only written) as `inout`, and shapes of 10^18 elements."""
    src = CORPUS / "csrc/attention/merge_attn_states.cu"
    out = tmp_path / "merge.yaml"
    r = run_cli("init", str(src), "--output", str(out))
    assert r.returncode == 0, r.stderr
    written = yaml.safe_load(out.read_text())
    args = {a["name"]: a for a in written["args"]}
    assert args["output"]["intent"] == "out" and args["output_lse"]["intent"] == "out"
    assert written["kernel"] == "ext::merge_attn_states_kernel<__nv_bfloat16, 128>"
    spec = load_file(out).spec
    assert all(shape_bytes(spec, s) <= 64 << 20 for s in verification_shapes(spec))
    truth = load_file(CORPUS / "expected/merge_attn_states_kernel.yaml").spec
    assert compare(written, truth) == []


@pytest.mark.nvcc
def test_init_then_check_on_the_extension_source(tmp_path):
    """The user's command line: init and check on the extension source as it is."""
    tree = tmp_path / "ext"
    shutil.copytree(CORPUS, tree)
    src = tree / "csrc/layernorm/fused_add_rms_norm.cu"
    r = run_cli("init", str(src))
    assert r.returncode == 0, r.stderr
    text = (tree / "csrc/layernorm/fused_add_rms_norm.yaml").read_text()
    assert "hidden_size: {multiple_of: 8}" in text and "intent: inout" in text and "noalias: true" in text
    r = run_cli("check", str(src), "--json")
    assert r.returncode == 0, r.stderr
    rep = yaml.safe_load(r.stdout)
    assert rep["mode"] == "offline" and all(not launch["problems"] for launch in rep["launches"])


def test_opencl_kernels_too():
    src = (REPO / "kernels/examples/row_sum.cl").read_text()
    inf, a = _infer(src, "row_sum", "opencl")
    assert a["out"].intent == "out" and a["x"].intent == "in"
    assert a["out"].shape == ["rows"] and a["x"].shape == ["rows", "cols"]


def test_guessed_scalars_are_never_an_identity_and_differ():
    """1.0 for every float made clamp(x, lo, hi) a constant and pow(x, p) x: a kernel ignoring them
    was verified and called faster. Guesses now are neither 0 nor 1, and differ (lo < hi)."""
    src = """
    __kernel void k(__global float* out, __global const float* x, const float lo, const float hi,
                    const float p, const float eps, const int reps, const int n) {
        int i = get_global_id(0);
        if (i < n) out[i] = pow(clamp(x[i], lo, hi), p) * reps + eps;
    }"""
    inf, a = _infer(src, "k", "opencl")
    values = [float(a[name].value) for name in ("lo", "hi", "p")]
    assert len(set(values)) == 3 and not {0.0, 1.0} & set(values) and values[0] < values[1]
    assert a["eps"].value == "1.0e-6" and "not 0 or 1" in a["lo"].why


def test_a_stride_is_guessed_longer_than_the_row_and_compare_accepts_the_padded_layout():
    """With ld = cols, a kernel indexing x by cols instead of ld was verified correct: the guess pads
    every row by STRIDE_PAD elements, and comparing with a dense hand-written spec is still no edit."""
    from kerntune.spec.infer import STRIDE_PAD
    from kerntune.spec.model import KernelSpec

    src = """
    __kernel void strd(__global float* out, __global const float* x, const int rows, const int cols, const int ld) {
        int c = get_global_id(0), r = get_global_id(1);
        if (r < rows && c < cols) out[r * cols + c] = 2.0f * x[r * ld + c];
    }"""
    inf, a = _infer(src, "strd", "opencl")
    assert a["ld"].value == f"cols + {STRIDE_PAD}" and "longer than the kernel reaches" in a["ld"].why
    from kerntune.spec import expr
    env = {"rows": 5, "cols": 7}
    assert expr.evaluate_int(a["x"].shape[0], env, "x") == 5 * 7 + STRIDE_PAD * 4
    args = [{"name": "out", "dtype": "fp32", "shape": ["rows", "cols"], "intent": "out"},
            {"name": "x", "dtype": "fp32", "shape": a["x"].shape, "intent": "in"},
            {"name": "rows", "dtype": "int32", "value": "rows"}, {"name": "cols", "dtype": "int32", "value": "cols"},
            {"name": "ld", "dtype": "int32", "value": a["ld"].value}]
    written = {"kernel": "strd", "args": args, "launch": {"grid": ["ceil_div(cols, 256)", "rows"], "block": [256]},
               "shapes": [{"rows": 64, "cols": 2048}]}
    truth = KernelSpec.model_validate({**written, "args": [dict(x, shape=["rows", "cols"]) if x["name"] == "x" else
                                                            dict(x, value="cols") if x["name"] == "ld" else x
                                                            for x in args]})
    assert compare(written, truth) == []
    args[4]["value"] = f"cols + {STRIDE_PAD - 1}"             # anything else is still an edit
    assert {e.field for e in compare(written, truth)} == {"args.ld.value", "args.x.shape"}


def test_a_local_array_indexed_by_the_thread_sets_the_block():
    """__local float s[64] indexed by get_local_id(0): the block is 64. init guessed 256 (its default),
    derived x's extent from it (64 * rows + 192), and the kernel then wrote past s (a SIGSEGV in Intel's
    runtime, found by a tour)."""
    src = """
__kernel void rsum(__global float* out, __global const float* x, const int rows)
{ __local float s[64]; int r = get_group_id(0), t = get_local_id(0);
  s[t] = x[r*64+t]; barrier(CLK_LOCAL_MEM_FENCE);
  for (int k = 32; k > 0; k >>= 1) { if (t < k) s[t] += s[t+k]; barrier(CLK_LOCAL_MEM_FENCE); }
  if (t == 0) out[r] = s[0]; }
"""
    inf, a = _infer(src, "rsum", "opencl")
    assert inf.block == [64] and "s[64]" in inf.launch_why
    assert a["x"].shape == ["64 * rows"]
    cuda = """
#define TILE 128
__global__ void rsum(float* out, const float* x, int rows)
{ __shared__ float s[TILE]; int t = threadIdx.x;
  s[t] = x[blockIdx.y * TILE + t]; __syncthreads();
  if (t == 0) out[blockIdx.y] = s[0]; }
"""
    inf, _ = _infer(cuda, "rsum")
    assert inf.block == [128]


def test_a_local_array_indexed_past_the_thread_bounds_the_block():
    """A bitonic sort per segment: `__local uint s[SEG]` with SEG 256, each work-item holding s[lid] and
    s[lid + SEG / 2]: the block is 128. init guessed 256 from s[lid] alone, and the keys' extent from it
    (256 * n_segments + 128); the kernel wrote past s and Intel's runtime crashed (a newcomer's tour).
    An access guarded by an `if` on the local id (a reduction's s[t + 32]) bounds nothing."""
    src = """
#define SEG 256
__kernel void segment_sort(__global const uint* keys_in, __global uint* keys_out, const int n_segments)
{ __local uint s[SEG]; const int seg = get_group_id(0); const int lid = get_local_id(0);
  if (seg >= n_segments) return;
  __global const uint* src = keys_in + (long)seg * SEG;
  s[lid] = src[lid]; s[lid + SEG / 2] = src[lid + SEG / 2]; barrier(CLK_LOCAL_MEM_FENCE);
  for (int size = 2; size <= SEG; size <<= 1)
    for (int stride = size / 2; stride > 0; stride >>= 1) {
      const int pos = 2 * lid - (lid & (stride - 1));
      uint a = s[pos], b = s[pos + stride];
      if ((a > b) == ((pos & size) == 0)) { s[pos] = b; s[pos + stride] = a; }
      barrier(CLK_LOCAL_MEM_FENCE); }
  keys_out[(long)seg * SEG + lid] = s[lid]; keys_out[(long)seg * SEG + lid + SEG / 2] = s[lid + SEG / 2]; }
"""
    inf, a = _infer(src, "segment_sort", "opencl")
    assert inf.block == [128] and "lid+SEG/2" in inf.launch_why
    assert a["keys_in"].shape == a["keys_out"].shape == ["256 * n_segments"]
    pairs = src.replace("s[lid + SEG / 2]", "s[2 * lid + 1]").replace("s[lid] =", "s[2 * lid] =")
    assert _infer(pairs, "segment_sort", "opencl")[0].block == [128]
    guarded = """
__global__ void rsum(float* out, const float* x, int rows)
{ __shared__ float s[256]; int t = threadIdx.x;
  s[t] = x[blockIdx.x * 256 + t]; __syncthreads();
  if (t < 128) s[t] += s[t + 128]; __syncthreads();
  if (t < 64) { s[t] += s[t + 64]; }
  __syncthreads();
  if (t == 0) out[blockIdx.x] = s[0]; }
"""
    assert _infer(guarded, "rsum")[0].block == [256]


def test_a_default_block_beside_a_local_array_is_called_a_guess(tmp_path):
    """A 3x3 convolution through an 18x18 local tile, written for 16x16 work-groups: init gave the 2-D
    default 32x8 with the comment `block: default` alone, and bench then called the kernel WRONG (5592
    elements off) where the spec's guess was wrong (a newcomer's tour). The spec and stderr now say that
    the block is a guess beside a local array; a block init found (s[t] of s[64]) gets no such note.
    (The file's own `get_group_id(0) * TS` now sets the block: here the tile's corner is gx - lx - 1.)"""
    src = (REPO / "tests/data/conv3x3.cl").read_text().replace(
        "get_group_id(0) * TS - 1, y0 = get_group_id(1) * TS - 1", "gx - lx - 1, y0 = gy - ly - 1")
    inf, _ = _infer(src, "conv3x3", "opencl")
    guess = [n for n in inf.notes if "default guess" in n]
    assert len(guess) == 1 and "launch.block [32, 8]" in guess[0] and "tile[TS + 2][TS + 2]" in guess[0]
    path = write(tmp_path, "conv3x3.cl", src)
    r = run_cli("init", str(path))
    assert r.returncode == 0, r.stderr
    assert "note: launch.block [32, 8] is a default guess" in r.stderr
    assert "# note: launch.block [32, 8] is a default guess" in (tmp_path / "conv3x3.yaml").read_text()
    found = """
__kernel void rsum(__global float* out, __global const float* x, const int rows)
{ __local float s[64]; int r = get_group_id(0), t = get_local_id(0);
  s[t] = x[r*64+t]; barrier(CLK_LOCAL_MEM_FENCE);
  if (t == 0) out[r] = s[0]; }
"""
    assert not [n for n in _infer(found, "rsum", "opencl")[0].notes if "default guess" in n]


def test_a_ternary_comparing_with_less_than_is_a_comparison_and_bounds_its_read():
    """`(ix >= 0 && ix < width && iy >= 0 && iy < height) ? img[iy * width + ix] : 0.0f` in the 3x3
    convolution: the grammar read `ix<width && iy>` as a template argument list, and the branches of
    a ternary were read without its condition, so img's shape was [TODO] (a newcomer's tour). A name
    that is a template still reads as one."""
    from kerntune.source.parse import parse, walk

    src = (REPO / "tests/data/conv3x3.cl").read_text()
    tree = parse(src, "opencl").tree
    assert not [n for n in walk(tree.root_node) if n.type == "template_function"]
    _, a = _infer(src, "conv3x3", "opencl")
    assert a["img"].shape == ["height", "width"] and a["out"].shape == ["height", "width"]
    blur = """
__global__ void blur(const float* img, float* out, int h, int w) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    float v = (x < w && y > 0) ? img[(y - 1) * w + x] : 0.0f;
    if (x < w && y < h) out[y * w + x] = clamp<float>(v, 0.0f, 1.0f);
}"""
    tree = parse(blur, "cuda").tree
    assert [n.text for n in walk(tree.root_node) if n.type == "template_function"] == [b"clamp<float>"]
    _, a = _infer(blur, "blur")
    assert a["img"].shape == ["h * w - w"]           # rows 0 .. h - 2: y > 0 reads row y - 1


def test_a_moe_topk_gating_extension_gets_its_bounds_and_intents(tmp_path):
    """A vLLM-style top-k gating extension (one block per token): its arg-max reads the logits in
    chunks of the block, `e < num_experts ? gating_output[token * num_experts + e] : -INFINITY`, and
    its renormalisation reads back the weights it wrote. init gave gating_output the extent
    `num_tokens * num_experts + 255` (the block of 256 leaking into it: a ternary's branch was read
    without its condition) and topk_weights `inout` (read and written), though the kernel never reads
    what the caller put there."""
    r = run_cli("init", str(CORPUS / "csrc/moe/topk_gating.cu"), "--stdout")
    assert r.returncode == 0, r.stderr
    a = {x["name"]: x for x in yaml.safe_load(r.stdout)["args"]}
    assert a["gating_output"]["shape"] == ["num_tokens", "num_experts"]
    assert a["topk_weights"]["intent"] == "out" and a["topk_weights"]["shape"] == ["num_tokens", "k"]
    assert "written, and read only where it was written first" in r.stdout
    # a read where the write may not have run still reads what the array held
    src = """
__global__ void k(float* out, float* upd, const float* x, int n, int flag) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (flag > 0) { out[i] = x[i]; upd[i] = x[i]; }
    out[i] *= 2.0f;
    if (flag > 0) upd[i] *= 2.0f;
}"""
    _, a = _infer(src, "k")
    assert a["out"].intent == "inout" and a["upd"].intent == "out"


def test_a_local_array_indexed_in_a_helper_sets_the_block():
    """fused_add_rmsnorm.cl keeps `__local float partial[THREADS]` (128) and indexes it by the local id
    only inside row_scale(partial, ...): init read no use of the array and gave the default block 256
    (a newcomer's tour). The array is followed into the helper; where the helper's indexing says
    nothing (an index it is given), the block stays a default, and is called a guess."""
    src = (REPO / "kernels/sglang/fused_add_rmsnorm/fused_add_rmsnorm.cl").read_text()
    for entry in ("fused_add_rmsnorm_fp32", "fused_add_rmsnorm_fp16", "fused_add_rmsnorm_bf16"):
        inf, _ = _infer(src, entry, "opencl")
        assert inf.block == [128] and "partial[THREADS]" in inf.launch_why and "row_scale()" in inf.launch_why
    opaque = """
#define N 64
inline void put(__local float* s, int at, float v) { s[at] = v; }
__kernel void k(__global float* out, __global const float* x)
{ __local float s[N]; int t = get_local_id(0);
  put(s, t, x[get_global_id(0)]); barrier(CLK_LOCAL_MEM_FENCE);
  out[get_global_id(0)] = s[N - 1 - t]; }
"""
    inf, _ = _infer(opaque, "k", "opencl")
    assert inf.block == [256] and any("default guess" in n and "s[N]" in n for n in inf.notes)


def test_a_warp_per_token_grid_covers_every_token():
    """One warp per token, 4 warps a block (token = blockIdx.x * 4 + threadIdx.x / 32, as vLLM's MoE
    top-k gating): init wrote grid ceil_div((32 * num_tokens - 31) // 32, 4), i.e. ceil((n - 1) / 4)
    blocks, which never launched the last token when n % 4 == 1 (check's held-out num_tokens=65 got 16
    blocks for 65 tokens; a newcomer's tour). The grid is ceil_div(num_tokens, 4)."""
    for token in ("blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32", "blockIdx.x * 4 + threadIdx.x / 32",
                  "(blockIdx.x * blockDim.x + threadIdx.x) / 32"):
        src = ("__global__ void __launch_bounds__(128) k(float* out, int num_tokens) {"
               f"const int token = {token}; if (token >= num_tokens) return; out[token] = 1.f; }}")
        inf, a = _infer(src, "k")
        assert inf.grid == ["ceil_div(num_tokens, 4)"], token
        assert a["out"].shape == ["num_tokens"]

def test_compare_counts_edits_by_meaning():
    truth = load_file(CORPUS / "expected/silu_and_mul_kernel.yaml").spec
    written = {"kernel": "ext::silu_and_mul_kernel<nv_bfloat16, 1>",       # aliases of the same instantiation
               "args": [{"name": "out", "dtype": "bf16", "shape": ["num_rows", "d"], "intent": "out"},
                        {"name": "input", "dtype": "bf16", "shape": ["2 * num_rows * d"], "intent": "in"},
                        {"name": "d", "dtype": "int32", "value": "d"}],
               "launch": {"grid": ["num_rows"], "block": [128]},
               "shapes": [{"num_rows": 4, "d": 64}]}
    assert compare(written, truth, free_block=True) == []        # num_rows matched to num_tokens by the grid
    written["args"][1]["intent"] = "inout"
    written["args"][0]["shape"] = ["TODO"]
    written["launch"]["block"] = [100]
    edits = {e.field for e in compare(written, truth, free_block=True)}
    assert edits == {"args.input.intent", "args.out.shape", "launch.block"}


def test_library_baselines_through_their_helpers():
    """The SGLang baselines: extern "C" wrappers calling a templated __device__ helper with
    overloads per dtype; num_tokens is passed on but never read (it counts the blocks)."""
    src = (REPO / "kernels/sglang/merge_attn_states_lse/merge_attn_states_lse.cu").read_text()
    truth = load_file(REPO / "kernels/sglang/merge_attn_states_lse/spec.yaml").spec
    inf, a = _infer(src, "merge_attn_states_lse_bf16")
    assert inf.grid == ["num_tokens"] and not inf.todos
    assert a["v"].shape == ["num_tokens", "num_heads", "head_dim"] and a["v"].intent == "out"
    assert a["s"].shape == ["num_tokens", "num_heads"] and a["v_a"].intent == "in"
    assert [x.name for x in inf.args] == [x.name for x in truth.args]
    src = (REPO / "kernels/sglang/silu_and_mul/silu_and_mul.cl").read_text()     # vload_half / vstore_half_rte
    inf, a = _infer(src, "silu_and_mul_fp16", "opencl")
    assert a["out"].intent == "out" and a["input"].shape[-1] == "2 * d"


@pytest.mark.parametrize("command", ["init", "extract"])
def test_an_output_that_is_a_folder_or_cannot_be_written_is_a_usage_error(tmp_path, command):
    """Both were tracebacks (exit 70, 'a bug in kerntune'): IsADirectoryError, FileNotFoundError."""
    source = REPO / ("kernels/examples/vector_add.cl" if command == "init" else "kernels/examples/vector_add.cu")
    (tmp_path / "adir").mkdir()
    r = run_cli(command, str(source), "-o", str(tmp_path / "adir"), "--force")
    assert r.returncode == 2 and "is a folder" in r.stderr and "Traceback" not in r.stderr, r.stderr
    name = "x.yaml" if command == "init" else "x.cu"
    r = run_cli(command, str(source), "-o", f"/proc/kerntune-cannot-write/{name}", "--force")
    assert r.returncode == 2 and "cannot write" in r.stderr and "Traceback" not in r.stderr, r.stderr
    # a file where the output's folder should be: named as such (was "[Errno 17] File exists"), with a hint
    (tmp_path / "afile").write_text("x\n")
    r = run_cli(command, str(source), "-o", str(tmp_path / "afile" / name))
    assert r.returncode == 2 and f"{tmp_path / 'afile'} is a file, not a folder" in r.stderr, r.stderr
    assert "hint:" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_reqd_work_group_size_sets_the_block_and_a_parameter_macro_is_a_todo():
    src = """
    #define KARGS __global float* out, __global const float* x
    __kernel void first(KARGS, const int n) { int i = get_global_id(0); if (i < n) out[i] = x[i]; }
    __kernel __attribute__((reqd_work_group_size(64, 1, 1))) void second(__global float* out, const int n)
    { int i = get_global_id(0); if (i < n) out[i] = 1.0f; }"""
    inf, _ = _infer(src, "second", "opencl")
    assert inf.block == [64] and "reqd_work_group_size" in inf.launch_why     # 256 failed at launch
    inf, a = _infer(src, "first", "opencl")
    assert "TODO" in a and any("'KARGS' is a macro" in t for t in inf.todos)    # was an empty name, no TODO


def test_a_guard_on_an_index_expression_sets_the_grid_and_the_shapes():
    """`if (base + j < n)` (N elements per thread) was read as `n > base + j`, a bound on n: the grid
    became a free size and the arrays 2048 * grid_x, so that the original failed its own check."""
    src = """
    #define N 8
    __kernel void vecn(__global float* out, __global const float* x, const float s, const int n) {
        int base = get_global_id(0) * N;
        for (int j = 0; j < N; ++j)
            if (base + j < n) out[base + j] = x[base + j] * s;
    }"""
    inf, a = _infer(src, "vecn", "opencl")
    assert inf.grid == ["ceil_div(n, 2048)"] and a["out"].shape == ["n"] and a["x"].shape == ["n"]


def test_extract_refuses_an_output_that_is_not_a_cu_file(tmp_path):
    r = run_cli("extract", str(REPO / "kernels/examples/vector_add.cu"), "-o", str(tmp_path / "v.cl"))
    assert r.returncode == 2 and "would be read as OpenCL" in r.stderr and "v.cu" in r.stderr, r.stderr
    assert not (tmp_path / "v.cl").exists()


@pytest.mark.parametrize("command, flags", [("init", ["--inline"]), ("init", ["--stdout"]), ("extract", ["--stdout"])])
def test_output_flags_that_conflict_are_a_usage_error(tmp_path, command, flags):
    """--inline beat -o (the kernel rewritten in place, no x.yaml) and --stdout beat -o (nothing written),
    with exit 0 both times."""
    name = "vector_add.cl" if command == "init" else "vector_add.cu"
    kernel = tmp_path / name
    shutil.copy(REPO / "kernels/examples" / name, kernel)
    out = tmp_path / ("x.yaml" if command == "init" else "x.cu")
    r = run_cli(command, str(kernel), *flags, "-o", str(out))
    assert r.returncode == 2 and f"{flags[0]} and --output cannot be used together" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and r.stdout == "" and not out.exists()
    assert kernel.read_text() == (REPO / "kernels/examples" / name).read_text()


@pytest.mark.parametrize("force", [[], ["--force"]])
def test_init_does_not_write_a_second_spec_beside_the_first(tmp_path, force):
    """init --inline wrote a block into a kernel that had a sidecar spec (plain init refused), after
    which every command refused the kernel for having both; a sidecar beside an inline block, likewise.
    --force replaces the spec where init writes, and removes none elsewhere."""
    kernel = tmp_path / "row_sum.cl"
    original = (REPO / "kernels/examples/row_sum.cl").read_text()
    kernel.write_text(original)
    side = tmp_path / "row_sum.yaml"
    side.write_text("kernel: row_sum\n")
    r = run_cli("init", str(kernel), "--inline", *force)
    assert r.returncode == 2 and "already has a sidecar spec" in r.stderr and "hint:" in r.stderr, r.stderr
    assert kernel.read_text() == original
    side.unlink()
    assert run_cli("init", str(kernel), "--inline").returncode == 0
    inlined = kernel.read_text()
    r = run_cli("init", str(kernel), *force)
    assert r.returncode == 2 and "already has an inline spec block" in r.stderr and "--inline --force" in r.stderr
    assert not side.exists() and kernel.read_text() == inlined


def test_init_of_a_second_kernel_suggests_a_file_of_its_own(tmp_path):
    """With two kernels in one file, init of the second found the first's spec at the default name and
    said 'pass --force to overwrite it', which would destroy that spec."""
    kernel = tmp_path / "ops.cl"
    kernel.write_text("""
__kernel void first(__global float* out, const int n) { int i = get_global_id(0); if (i < n) out[i] = 1.0f; }
__kernel void second(__global float* out, const int n) { int i = get_global_id(0); if (i < n) out[i] = 2.0f; }
""")
    assert run_cli("init", str(kernel), "-k", "first").returncode == 0
    spec = (tmp_path / "ops.yaml").read_text()
    r = run_cli("init", str(kernel), "-k", "second")
    assert r.returncode == 2 and "it is the spec of first" in r.stderr and "second.yaml" in r.stderr, r.stderr
    assert "pass --force" not in r.stderr and (tmp_path / "ops.yaml").read_text() == spec
    r = run_cli("init", str(kernel), "-k", "first")
    assert r.returncode == 2 and "pass --force to overwrite it" in r.stderr, r.stderr


def test_a_local_pointer_parameter_is_refused_up_front(tmp_path):
    """init dropped a `__local float*` parameter without a word (0 TODOs); check then refused the spec
    with a hint to run init again, which wrote the same spec."""
    kernel = write(tmp_path, "localarg.cl", """
        __kernel void row_sum_local(__global float* out, __global const float* x, __local float* scratch,
                                    const int cols) {
            int r = get_group_id(0), t = get_local_id(0);
            scratch[t] = x[r * cols + t];
            barrier(CLK_LOCAL_MEM_FENCE);
            if (t == 0) out[r] = scratch[0];
        }
    """)
    r = run_cli("init", str(kernel))
    assert r.returncode == 2 and "__local pointer parameters (scratch)" in r.stderr, r.stderr
    assert "__local float scratch[" in r.stderr and not (tmp_path / "localarg.yaml").exists()
    write(tmp_path, "localarg.yaml", """
        kernel: row_sum_local
        args:
          - {name: out, dtype: fp32, shape: [rows], intent: out}
          - {name: x, dtype: fp32, shape: [rows, cols], intent: in}
          - {name: cols, dtype: int32, value: cols}
        launch: {grid: [rows], block: [64]}
        shapes:
          - {label: small, rows: 4, cols: 64}
    """)
    r = run_cli("check", str(kernel))
    assert r.returncode == 2 and "__local pointer parameters" in r.stderr, r.stderr
    assert "kerntune init" not in r.stderr.split("hint:")[-1]


def test_a_global_kernel_beside_namespaced_ones_of_its_name_is_chosen_with_leading_colons(tmp_path):
    """`scale` next to fp32::scale and i32::scale: -k scale and -k ::scale were both 'ambiguous', so the
    global one could not be chosen at all."""
    kernel = write(tmp_path, "dup.cu", """
        namespace fp32 { __global__ void scale(float* y, int n) { int i = threadIdx.x; if (i < n) y[i] = 2.f; } }
        namespace i32 { __global__ void scale(int* y, int n) { int i = threadIdx.x; if (i < n) y[i] = 2; } }
        __global__ void scale(double* y, int n) { int i = threadIdx.x; if (i < n) y[i] = 2.0; }
    """)
    r = run_cli("init", str(kernel), "-k", "scale", "--stdout")
    assert r.returncode == 2 and "names 3 kernels" in r.stderr and "::scale" in r.stderr, r.stderr
    r = run_cli("init", str(kernel), "-k", "::scale")
    assert r.returncode == 0, r.stderr
    spec = load_file(tmp_path / "dup.yaml").spec
    assert spec.kernel == "::scale" and spec.args[0].dtype == "fp64"
    assert resolve(kernel.read_text(), "cuda", spec.kernel).kernel.namespace == ()


def test_kernels_defined_through_a_macro_are_named_and_do_not_hide_the_next_one(tmp_path):
    """`DEFINE_SCALE(scale_f32, float)` lines (a macro whose body is a kernel) made the parser swallow
    the ordinary kernel after them, and `-k scale_f32` said only 'no kernel named' (a user tour)."""
    write(tmp_path, "ops.cl", """
        #define DEFINE_SCALE(NAME, T) \\
        __kernel void NAME(__global T* y, __global const T* x, const float alpha, const int n) { \\
            int i = get_global_id(0); if (i < n) y[i] = (T)(alpha * (float)x[i]); }
        DEFINE_SCALE(scale_f32, float)
        DEFINE_SCALE(scale_i32, int)

        __kernel void axpy(__global float* y, __global const float* x, const float a, const int n) {
            int i = get_global_id(0);
            if (i < n) y[i] = a * x[i] + y[i];
        }
        """)
    r = run_cli("init", str(tmp_path / "ops.cl"), "--stdout")
    assert r.returncode == 0 and "kernel: axpy" in r.stdout, r.stderr
    r = run_cli("init", str(tmp_path / "ops.cl"), "-k", "scale_f32", "--stdout")
    assert r.returncode == 2, r.stdout
    assert "scale_f32 is defined through the macro DEFINE_SCALE (line 4)" in r.stderr and "Traceback" not in r.stderr
    write(tmp_path, "only.cl", (tmp_path / "ops.cl").read_text().split("__kernel void axpy")[0])
    r = run_cli("init", str(tmp_path / "only.cl"), "--stdout")
    assert r.returncode == 2 and "defines its kernels only through macros" in r.stderr, r.stderr


def test_init_takes_the_block_its_launcher_launches_with(tmp_path):
    """A launcher's constant block (`<<<(n + 511) / 512, 512>>>`, `dim3 block(128)`) became the default
    256 (a user tour); a block the launcher computes from the sizes is named in the launch's comment."""
    write(tmp_path, "ext.cu", """
        #include <torch/extension.h>
        __global__ void add_kernel(float* __restrict__ y, const float* __restrict__ x, int n) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i < n) y[i] = x[i] + 1.0f;
        }
        __global__ void row_kernel(float* __restrict__ out, const float* __restrict__ in, int cols) {
          const int r = blockIdx.x;
          for (int c = threadIdx.x; c < cols; c += blockDim.x) out[r * cols + c] = 2.0f * in[r * cols + c];
        }
        __global__ void col_kernel(float* __restrict__ out, const float* __restrict__ in, int n) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i < n) out[i] = in[i] * in[i];
        }
        void add(torch::Tensor y, torch::Tensor x) {
          const int n = x.numel();
          add_kernel<<<(n + 511) / 512, 512>>>(y.data_ptr<float>(), x.data_ptr<float>(), n);
        }
        void rows(torch::Tensor out, torch::Tensor in) {
          const int r = in.size(0), cols = in.size(1);
          dim3 block(std::min(cols, 1024));
          row_kernel<<<r, block>>>(out.data_ptr<float>(), in.data_ptr<float>(), cols);
        }
        void cols(torch::Tensor out, torch::Tensor in) {
          const int n = in.numel();
          dim3 threads(128);
          col_kernel<<<(n + 127) / 128, threads>>>(out.data_ptr<float>(), in.data_ptr<float>(), n);
        }
        """)
    for kernel, block, why in (("add_kernel", "[512]", "block: the launcher at line 16"),
                               ("col_kernel", "[128]", "block: the launcher at line 26"),
                               ("row_kernel", "[256]", "block: default (the launcher's is dim3(std::min(cols, 1024)): "
                                                       "check it)")):
        r = run_cli("init", str(tmp_path / "ext.cu"), "-k", kernel, "--stdout")
        assert r.returncode == 0, r.stderr
        assert f"  block: {block}" in r.stdout and why in r.stdout, (kernel, r.stdout)


def test_a_mode_parameter_is_not_a_size_and_a_guessed_instantiation_says_so(tmp_path):
    """An int compared only with constants (`mode == 2`) was written as a size of 1024 in every shape,
    and a template the file never launches was said to come from a launcher that dispatches over types
    (a user tour)."""
    write(tmp_path, "k.cu", """
        template <typename scalar_t>
        __global__ void scale_kernel(scalar_t* __restrict__ y, const scalar_t* __restrict__ x, const int n,
                                     const int mode) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i < n) y[i] = mode == 2 ? x[i] * (scalar_t)2 : x[i];
        }
        """)
    r = run_cli("init", str(tmp_path / "k.cu"), "--stdout")
    assert r.returncode == 0, r.stderr
    assert "{name: mode, dtype: int32, value: 2}    # int: compared only with 2: a mode, not a size" in r.stdout
    assert "mode:" not in r.stdout.split("shapes:")[1], r.stdout
    assert "instantiation guessed: the file never launches it; scalar_t chosen" in r.stdout, r.stdout
    assert "dispatches over types" not in r.stdout
    # the mode in an `if` (or, since a ternary's branches are read under its condition, in a ternary): the
    # analysis compared `mode` with its sizes and init failed with "unexpected KeyError: 'mode'"
    write(tmp_path, "k.cu", (tmp_path / "k.cu").read_text().replace(
        "if (i < n) y[i] = mode == 2 ? x[i] * (scalar_t)2 : x[i];", "if (i < n) { if (mode == 2) y[i] = x[i]; }"))
    r = run_cli("init", str(tmp_path / "k.cu"), "--stdout")
    assert r.returncode == 0 and "{name: mode, dtype: int32, value: 2}" in r.stdout, r.stderr


def test_a_struct_field_declaration_with_several_names_counts_each(tmp_path):
    """`struct f4pack { float2 a, b; };` is 16 bytes: its first name alone made it 8, and init wrote the
    arrays a copy through it reaches half as long as they are (`(n) // 2`), with no flag (a user tour)."""
    write(tmp_path, "pack.cu", """
        struct f4pack { float2 a, b; };
        __global__ void copy_f4(float* __restrict__ out, const float* __restrict__ in, int n) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i < n / 4) reinterpret_cast<f4pack*>(out)[i] = reinterpret_cast<const f4pack*>(in)[i];
        }
        """)
    r = run_cli("init", str(tmp_path / "pack.cu"), "--stdout")
    assert r.returncode == 0, r.stderr
    assert "{name: out, dtype: fp32, shape: [n], intent: out}" in r.stdout, r.stdout


VECTORS_CL = """\
__kernel void scale4(__global float4* out, __global const float4* in, __global const int4* idx,
                     __global const float2* w, const float s, const int n)
{
    int i = get_global_id(0);
    if (i < n) out[i] = in[i] * s + (float4)(w[i].x, w[i].y, 0.0f, (float)idx[i].x);
}
"""


def test_vector_pointers_are_their_element_dtype_with_a_lanes_dimension(tmp_path):
    """A float4* parameter was `dtype: TODO`, and left out of the shapes' memory budget: the large
    default shape made each float4 array 256 MiB (16M elements of 16 bytes). It is fp32 with a last
    dimension of 4, the budget holds, and the spec init writes passes check and runs."""
    inf, a = _infer(VECTORS_CL, "scale4", "opencl")
    assert (a["out"].dtype, a["out"].shape) == ("fp32", ["n", "4"])
    assert (a["idx"].dtype, a["idx"].shape) == ("int32", ["n", "4"]) and a["w"].shape == ["n", "2"]
    assert not inf.todos
    kernel = write(tmp_path, "scale4.cl", VECTORS_CL)
    r = run_cli("init", str(kernel))
    assert r.returncode == 0 and "TODO" not in r.stderr, r.stderr
    loaded = load_file(tmp_path / "scale4.yaml")
    for shape in verification_shapes(loaded.spec):
        if not shape.holdout:
            assert shape_bytes(loaded.spec, shape) <= 64 << 20, shape
    r = run_cli("bench", str(kernel), "--device", "cpu", "--repeats", "3", "--warmup", "1", "--shape", "small")
    assert r.returncode == 0, r.stderr


def test_a_ushort_array_is_remarked_to_be_maybe_bf16(tmp_path):
    """OpenCL kernels store bf16 as ushort: init called such arrays uint16 without a word."""
    kernel = write(tmp_path, "bf.cl", "__kernel void bf16_copy(__global ushort* out, __global const ushort* in, "
                                      "const int n)\n{\n    int i = get_global_id(0);\n    if (i < n) out[i] = in[i];\n}\n")
    r = run_cli("init", str(kernel))
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "bf.yaml").read_text()
    assert "{name: out, dtype: uint16, shape: [n], intent: out}" in text
    assert "# note: out, in: ushort, written as uint16; OpenCL kernels store bf16 values as ushort bits" in text
    assert "note: out, in: ushort, written as uint16" in r.stderr and "make the dtype bf16" in r.stderr
    # and with bf16 written in, the spec is valid for the kernel
    (tmp_path / "bf.yaml").write_text(text.replace("dtype: uint16", "dtype: bf16"))
    r = run_cli("check", str(kernel))
    assert r.returncode == 0 and "bf.yaml is valid" in r.stdout, r.stderr


def test_a_spec_with_todos_reports_every_problem_at_once(tmp_path):
    """`dtype: TODO` was reported alone; `shape: [TODO]` and `value: TODO` only once it was fixed."""
    kernel = write(tmp_path, "scale4.cl", VECTORS_CL)
    write(tmp_path, "spec.yaml", """\
kernel: scale4
args:
  - {name: out, dtype: TODO, shape: [n, 4], intent: out}
  - {name: in, dtype: fp32, shape: [TODO], intent: inn}
  - {name: idx, dtype: int32, shape: [n, 4], intent: in}
  - {name: w, dtype: fp32, shape: [n, 2], intent: in}
  - {name: s, dtype: fp32, value: TODO}
  - {name: n, dtype: int32, value: n}
launch:
  grid: ["ceil_div(n, 256)"]
  block: [256]
shapes:
  - {label: small, n: 16384}
""")
    r = run_cli("check", str(kernel), "--spec", str(tmp_path / "spec.yaml"))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    spec = tmp_path / "spec.yaml"
    assert f"invalid kernel spec (4 problems)\n  {spec}:3: args[0].dtype: the dtype is still TODO: write one of" \
        in r.stderr, r.stderr
    assert f"{spec}:4: args[1].intent: expected 'in', 'out' or 'inout', found 'inn'" in r.stderr
    assert f"{spec}:4: args[1].shape[0]: in's shape is still TODO: write the array's dimensions" in r.stderr
    assert f"{spec}:7: args[4].value: s's value is still TODO: write the value to pass" in r.stderr
    assert "hint: `kerntune init` marks TODO what it could not infer" in r.stderr


def test_a_leftover_todo_is_reported_as_one_to_fill_in(tmp_path):
    """A user who left init's `shape: [TODO]` in the spec got "'TODO' is not a declared size (sizes: n)"
    from bench, as if TODO were a misspelt size (a newcomer's tour): the error now says the spec still
    has a TODO to fill in, names the argument and the line, and hints at what to do."""
    kernel = write(tmp_path, "scale4.cl", VECTORS_CL)
    init = run_cli("init", str(kernel), "--stdout")
    assert init.returncode == 0, init.stderr
    text = init.stdout.replace("{name: in, dtype: fp32, shape: [n, 4]", "{name: in, dtype: fp32, shape: [TODO]")
    assert "shape: [TODO]" in text
    spec = write(tmp_path, "scale4.yaml", text)
    line = text[:text.index("shape: [TODO]")].count("\n") + 1
    for command in ("bench", "check"):
        r = run_cli(command, str(kernel), "--spec", str(spec))
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert f"error: the spec still has a TODO to fill in\n  {spec}:{line}: args[1].shape[0]: in's shape is " \
               "still TODO: write the array's dimensions" in r.stderr, r.stderr
        assert "not a declared size" not in r.stderr
        assert "hint: `kerntune init` marks TODO what it could not infer (the comment on the line says why): " \
               "replace each TODO, then run `kerntune check`" in r.stderr


def test_an_opencl_group_id_times_a_constant_sets_the_block_and_the_grid():
    """conv3x3.cl places its 18x18 tile at `get_group_id(0) * TS - 1` (TS 16): each work-group covers 16
    columns and 16 rows. init read only CUDA's `blockIdx.x * C`, guessed the 2-D default 32x8 and took the
    grid from the tile loader's check (16 columns a group), ceil_div(width - 1, 16) groups of 32 columns:
    about twice the groups needed, and a block the kernel was not written for."""
    src = (REPO / "tests/data/conv3x3.cl").read_text()
    inf, _ = _infer(src, "conv3x3", "opencl")
    assert inf.block == [16, 16]
    assert inf.grid == ["ceil_div(width, 16)", "ceil_div(height, 16)"]
    assert not [n for n in inf.notes if "default guess" in n]
    # a tile of C elements covered by fewer threads sets no block: 2 elements a work-item, a transpose's
    # 32x32 tile moved by 32x8 threads, sgemm's 64x64 tile by 16x16 (`row0 + i * 16`)
    assert _infer((REPO / "tests/data/block_trees/ew_pairs.cl").read_text(), "pairs_scale", "opencl")[0].block == [256]
    for name in ("transpose/naive.cl", "transpose/naive.cu", "transpose/optimized.cl"):
        src = (REPO / "kernels/classic" / name).read_text()
        assert _infer(src, "transpose", "opencl" if name.endswith(".cl") else "cuda")[0].block == [32, 8], name
    assert 64 not in _infer((REPO / "kernels/classic/sgemm/naive.cl").read_text(), "sgemm", "opencl")[0].block


def test_a_tile_covered_a_few_elements_a_thread_sets_the_block_from_the_stride():
    """sgemm's naive kernels place a 64x64 tile of C at `blockIdx.y * 64 + threadIdx.y` and compute rows
    `row0 + i * 16` for i < 4 (and columns alike): a 16x16 block, as its spec says. init gave the .cu a 64x8
    block (from `blockIdx.x * 64` alone: threads 16 apart then computed the same elements of C, an inout
    array, twice) with a grid of ceil_div(N - 48, 64), and the .cl the 2-D default 32x8."""
    for name, lang in (("naive.cl", "opencl"), ("naive.cu", "cuda")):
        inf, _ = _infer((REPO / "kernels/classic/sgemm" / name).read_text(), "sgemm", lang)
        assert inf.block == [16, 16], name
        assert inf.grid == ["ceil_div(N, 64)", "ceil_div(M, 64)"], name
    # used another way as well (here, compared with a size), the index says nothing exact: no block from it
    other = (REPO / "kernels/classic/sgemm/naive.cu").read_text().replace("if (row < M", "if (row0 < M && row < M")
    assert _infer(other, "sgemm", "cuda")[0].block == [16, 8]


def test_a_min_loop_bound_and_a_functional_cast_in_an_index_give_shapes():
    """`j < min(k, n)` bounds j (min's smallest value is unknown, and a bound needed both ends) and
    `int64_t(token) * k + j` is token (a functional cast read as an unknown call made the index depend on
    'loaded' data): both gave a TODO shape, and the cast made a plain write `inout`."""
    firstk = """
__global__ void firstk(const float* x, float* out, int n, int k) {
    const int row = blockIdx.x;
    for (int j = threadIdx.x; j < min(k, n); j += blockDim.x)
        out[row * k + j] = x[row * n + j];
}"""
    _, a = _infer(firstk, "firstk")
    assert a["out"].intent == "out" and a["out"].shape is not None and a["x"].shape == ["num_rows", "n"]
    gather = """
__global__ void gather_rows(const float* x, float* out, int k) {
    const int token = blockIdx.x;
    for (int j = threadIdx.x; j < k; j += blockDim.x)
        out[int64_t(token) * k + j] = x[static_cast<int64_t>(token) * k + j] * 2.0f;
}"""
    _, a = _infer(gather, "gather_rows")
    assert a["out"].shape == ["num_tokens", "k"] and a["out"].intent == "out"


def test_a_read_back_of_a_span_the_kernel_wrote_only_in_part_is_inout():
    """'Read only where it was written first' compared the first and last elements of a write and a
    read: `out[2 * i]` for i < n spans 0 .. 2n - 2 as a dense read of that span does, so the odd elements,
    never written, were called written first and the array `out`: kerntune would poison data the kernel
    reads. A write now counts only where its index takes every element of its span."""
    strided = """
__global__ void evens(float* out, const float* x, int n) {
    for (int i = 0; i < n; ++i) out[2 * i] = x[i];
    for (int j = 0; j < 2 * n - 1; ++j) out[j] *= 0.5f;
}"""
    _, a = _infer(strided, "evens")
    assert a["out"].intent == "inout", a["out"].why
    stepped = """
__global__ void every_other(float* out, const float* x, int n) {
    for (int i = 0; i < n; i += 2) out[i] = x[i];
    for (int j = 0; j < n; ++j) out[j] += 1.0f;
}"""
    _, a = _infer(stepped, "every_other")
    assert a["out"].intent == "inout", a["out"].why
    doubled = """
__global__ void doubled(float* out, const float* x, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i + i] = x[i];
    for (int j = 0; j < 2 * n - 1; ++j) out[j] *= 0.5f;
}"""
    _, a = _infer(doubled, "doubled")      # i + i takes the even elements alone
    assert a["out"].intent == "inout", a["out"].why
    dense = """
__global__ void rows(float* out, const float* x, int k) {
    const int row = blockIdx.x;
    for (int j = threadIdx.x; j < k; j += blockDim.x) out[row * k + j] = x[row * k + j];
    for (int j = threadIdx.x; j < k; j += blockDim.x) out[row * k + j] *= 0.5f;
}"""
    _, a = _infer(dense, "rows")
    assert a["out"].intent == "out" and a["out"].why == "written, and read only where it was written first"


def test_a_top_k_beside_experts_stays_at_most_the_experts_in_the_default_shapes():
    """topk_gating.cu picks k distinct experts of num_experts per token: k took GEMM's typical K, 4096,
    beside 8 experts, and every default shape asked for more picks than there are experts (the last
    k - 8 ids the invalid num_experts, their weights 0)."""
    r = run_cli("init", str(CORPUS / "csrc/moe/topk_gating.cu"), "--stdout")
    assert r.returncode == 0, r.stderr
    shapes = yaml.safe_load(r.stdout)["shapes"]
    assert shapes and all(0 < s["k"] <= s["num_experts"] for s in shapes), shapes


def test_reads_of_what_earlier_passes_of_a_loop_wrote_are_read_back():
    """topk_gating.cu's pass j reads the ids passes 0 .. j - 1 picked (`topk_ids[token * k + p]`, p < j)
    before it writes its own: the read comes first in the loop's body and spans one element less than the
    write, so 'read only where written first' never applied and topk_ids was `inout`. Variants where an
    element may be read before any pass wrote it stay inout."""
    r = run_cli("init", str(CORPUS / "csrc/moe/topk_gating.cu"), "--stdout")
    assert r.returncode == 0, r.stderr
    a = {x["name"]: x for x in yaml.safe_load(r.stdout)["args"]}
    assert a["topk_ids"]["intent"] == "out" and a["topk_weights"]["intent"] == "out"
    src = """
__global__ void picks(const float* x, int* ids, int n, int k) {
    const int row = blockIdx.x;
    for (int j = 0; j < k; ++j) {
        int best = 0;
        for (int p = 0; p < j; ++p) best += ids[row * k + p];
        if (threadIdx.x == 0) ids[row * k + j] = best + (int)x[row * n + j];
        __syncthreads();
    }
}"""
    assert _infer(src, "picks")[1]["ids"].intent == "out"
    for old, new in [("p < j", "p <= j"),                            # the current pass's element, unwritten
                     ("__syncthreads();", ""),                       # thread 0's writes never reach the others
                     ("threadIdx.x == 0", "x[row] > 0.0f"),           # written where loaded data says
                     ("int best = 0;", "int best = 0; if (x[j] < 0.0f) break;"),   # later passes may not run
                     ("ids[row * k + j] =", "ids[row * k + j + 1] ="),            # another element
                     ("const int row = blockIdx.x;", "const int row = threadIdx.x;")]:   # thread 0's row alone
        assert new != old and old in src
        assert _infer(src.replace(old, new), "picks")[1]["ids"].intent == "inout", (old, new)


def test_an_arrays_two_sizes_come_in_the_order_its_subscripts_use_them():
    """The size that multiplies an index in an array's subscripts is its row length, the last dimension.
    By the parameters' order sgemm's `B[k * N + col]` was [N, K], the transposes' `out[x * m + y]` [m, n],
    transpose_add's `b[j * rows + i]` [rows, cols] and merge_attn_states' `prefix_lse[head_idx * num_tokens
    + token_idx]` [num_tokens, num_heads]: the same count of elements, not the layout a reference is
    written for (each of their specs, written by hand, has the other order)."""
    from kerntune.spec.load import load_file as load

    cases = [("kernels/classic/sgemm/naive.cl", "sgemm", "opencl", "B", ["K", "N"]),
             ("kernels/classic/transpose/naive.cu", "transpose", "cuda", "out", ["n", "m"]),
             ("kernels/heldout4/transpose_add/transpose_add.cl", "transpose_add", "opencl", "b", ["cols", "rows"])]
    for path, name, lang, arg, dims in cases:
        _, a = _infer((REPO / path).read_text(), name, lang)
        assert a[arg].shape == dims, (path, a[arg].shape)
        truth = load(next((REPO / path).parent.glob("*.yaml"))).spec
        assert [x.shape for x in truth.args if x.name == arg] == [tuple(dims)] or \
            [list(x.shape) for x in truth.args if x.name == arg] == [dims]
    r = run_cli("init", str(CORPUS / "csrc/attention/merge_attn_states.cu"), "--stdout")
    args = {x["name"]: x for x in yaml.safe_load(r.stdout)["args"]}
    assert [args[n]["shape"] for n in ("output_lse", "prefix_lse", "suffix_lse")] == [["num_heads", "num_tokens"]] * 3
    # a subscript that multiplies neither size (a flat index) keeps the parameters' order
    _, a = _infer("__global__ void k(float* o, const float* x, int rows, int cols) {\n"
                  "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                  "    if (i < rows * cols) o[i] = x[i];\n}", "k")
    assert a["o"].shape in (["rows", "cols"], ["rows * cols"]), a["o"].shape
