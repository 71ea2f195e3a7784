"""What the LLM is told: a system message (its job, the template format with
a complete example, the rules, the answer format) and one user message per
round (the kernel, the original, the spec, the device, the planner's
directions, the last measurements, the earlier rounds). When an answer is
unusable, the reason is sent back as the next user message."""

from __future__ import annotations

from kerntune.source.names import base_name
from kerntune.agents.generator import GenerationRequest, RoundNote
from kerntune.results import DeviceInfo
from kerntune.spec.model import LaunchSpec

LANG_NAME = {"cuda": "CUDA", "opencl": "OpenCL"}

_EXAMPLE = {
    "opencl": '''{# kerntune-template
description: scale with explicit work-group size and elements per work-item
params:
  BLOCK: [256, 64, 128, 512]     # FIRST value = the current kernel's work-group size
  EPT: [1, 2, 4, 8]              # FIRST value = the current kernel's one element per work-item
restrictions:
  - "BLOCK * EPT <= 4096"
launch:
  grid: ["ceil_div(n, BLOCK * EPT)"]
  block: [BLOCK]
#}
__kernel void {{ kernel_name }}(__global float* y, __global const float* x, const float alpha, const int n)
{
    const int base = get_global_id(0) * {{ EPT }};
{% for k in range(EPT) %}
    if (base + {{ k }} < n) y[base + {{ k }}] = alpha * x[base + {{ k }}];
{% endfor %}
}''',
    "cuda": '''{# kerntune-template
description: scale with explicit block size and elements per thread
params:
  BLOCK: [256, 64, 128, 512]     # FIRST value = the current kernel's block size
  EPT: [1, 2, 4, 8]              # FIRST value = the current kernel's one element per thread
  FAST_MATH: [false, true]       # FIRST value = the current kernel's compile options
restrictions:
  - "BLOCK * EPT <= 4096"
launch:
  grid: ["ceil_div(n, BLOCK * EPT)"]
  block: [BLOCK]
  shared_mem: 0
flags:
  cuda: {"-use_fast_math": "FAST_MATH"}
#}
extern "C" __global__ void {{ kernel_name }}(float* y, const float* x, float alpha, int n)
{
    const int base = (blockIdx.x * blockDim.x + threadIdx.x) * {{ EPT }};
#pragma unroll
    for (int k = 0; k < {{ EPT }}; ++k)
        if (base + k < n) y[base + k] = alpha * x[base + k];
}''',
}


def system_message(lang: str) -> str:
    name = LANG_NAME.get(lang, lang)
    return f"""You are a GPU performance engineer. You rewrite {name} kernels, preserving exactly what they compute, \
into a kerntune TEMPLATE: the same kernel written as Jinja2 with its execution strategy turned into a small set of \
explicit parameters (block size, elements per thread, vector width, unrolling, how a reduction is done, ...). \
kerntune then renders every configuration, compiles it, verifies it against the original kernel on many inputs and \
shapes, and times it on the device. You do not pick the values: you expose good choices.

TEMPLATE FORMAT
A template opens with a Jinja comment holding a YAML declaration, followed by the kernel body:
- `params`: name -> list of candidate values (numbers, booleans or strings). The FIRST value of every parameter must \
reproduce the current kernel exactly (same launch, same work per thread, same result): the configuration of first \
values is the baseline and the template is rejected if it does not compile and verify.
- `restrictions`: expressions that must all hold for a configuration (optional).
- `launch`: `grid` and `block` (lists of expressions, CUDA terms: OpenCL global size = grid * block) and \
`shared_mem` (dynamic shared memory bytes). Expressions may use the parameters and the spec's sizes, integer \
arithmetic, comparisons, `x if c else y` and the functions ceil_div min max round_up next_pow2 is_pow2 log2 sqrt \
abs int. The baseline's launch must equal the current kernel's launch.
- `flags`: compiler options switched on by a parameter expression, per language (optional).
- `kernel`: the entry function name (optional; default the spec's kernel name).
In the body, every parameter is a Jinja variable, plus `kernel_name` (write the entry point as \
`{{{{ kernel_name }}}}`), `lang`, and `args.X.ctype` / `args.X.dtype` / `args.X.itemsize` per spec argument. Use \
`{{% if %}}`, `{{% for k in range(N) %}}` and `{{{{ }}}}` only; trim_blocks and lstrip_blocks are on. The \
template renders in a sandbox with strict undefined variables: any name that is not a parameter or one of the \
variables above is an error, and Python attributes (`__class__` and the like) are refused. Parameter names must not \
be spec size names. The kernel's signature (argument order and types) must stay the same as the current kernel's.

A complete example ({name}):
{_EXAMPLE.get(lang, _EXAMPLE["cuda"])}

RULES
- Preserve semantics on every shape, including tails (sizes that are not multiples of your tile): guard them.
- Every output element must be written; inputs must not be modified.
- Mark pointers restrict only if the spec says `noalias: true`.
- Prefer a few parameters with a few values each that really change performance, over many.
- The kernel must compile with the device's compiler as is (no host code, no includes of external files).

ANSWER
Reply with exactly one JSON object, and nothing else, with the keys:
  "template": the whole template file as a string (declaration comment and body),
  "rationale": why these parameters should make it faster on this device (a few sentences),
  "transformations": a list of short strings, one per semantics-preserving transformation applied."""


def _device(d: DeviceInfo) -> str:
    parts = [f"{d.name} ({d.kind}, {LANG_NAME.get(d.lang, d.lang)} via {d.backend})"]
    if d.arch:
        parts.append(f"arch {d.arch}")
    parts.append(f"{d.sm_count} {'SMs' if d.lang == 'cuda' else 'compute units'}")
    parts.append(f"warp/sub-group {d.warp_size}")
    parts.append(f"max {d.max_threads_per_block} threads per block, block dims {tuple(d.max_block_dims)}")
    parts.append(f"shared/local memory {d.max_shared_per_block // 1024} KiB per block"
                 + (f" ({d.max_shared_per_block_optin // 1024} KiB opt-in)" if d.max_shared_per_block_optin else "")
                 + (f", {d.max_shared_per_sm // 1024} KiB per SM" if d.max_shared_per_sm else ""))
    if d.registers_per_block:
        parts.append(f"{d.registers_per_block} registers per block")
    if d.registers_per_sm:
        parts.append(f"{d.registers_per_sm} registers per SM")
    if d.max_threads_per_sm:
        parts.append(f"{d.max_threads_per_sm} threads per SM")
    if d.l2_bytes:
        parts.append(f"L2 {d.l2_bytes / 2**20:.0f} MiB")
    if d.peak_bandwidth_gbs:
        parts.append(f"peak bandwidth {d.peak_bandwidth_gbs:.0f} GB/s")
    return ", ".join(parts)


def _launch(launch: LaunchSpec) -> str:
    def dims(values) -> str:
        return "[" + ", ".join(str(v) for v in values) + "]"

    return f"grid {dims(launch.grid)}, block {dims(launch.block)}, shared_mem {launch.shared_mem}"


def _round(n: RoundNote) -> str:
    best = f"best speedup {n.best_speedup:.3f}x over the original" if n.best_speedup else "no valid faster candidate"
    fails = ", ".join(f"{k}: {v}" for k, v in sorted(n.failures.items())) or "none"
    config = ", ".join(f"{k}={v}" for k, v in n.best_config.items()) or "-"
    return (f"- round {n.round} ({n.source}): {n.description or 'no description'}; space {n.space_size} "
            f"configurations, {n.measured} measured; {best} (configuration {config}); failures by reason: {fails}"
            + ("; set aside after failing verification: " + "; ".join(n.set_aside) if n.set_aside else ""))


def _fence(text: str, lang: str) -> str:
    tag = {"cuda": "cuda", "opencl": "c"}.get(lang, "")
    return f"```{tag}\n{text.rstrip()}\n```"


def user_message(req: GenerationRequest) -> str:
    name = req.kernel or req.spec.kernel
    if "<" in name:       # a C++ template instantiation: the template stays a template
        entry = (f"its entry point is the instantiation `{name}`: keep the C++ template and its parameters, define "
                 f"it as `{{{{ kernel_function }}}}` (= `{base_name(name)}`), and set the declaration's `kernel` to "
                 "the instantiation (its template arguments may use parameters, e.g. `ns::k<float, {{{{ BLOCK }}}}>`)")
    else:
        entry = f"its entry point is `{{{{ kernel_name }}}}` (= `{name}`)"
    parts: list[str] = [f"Round {req.round}. Write a template for the {LANG_NAME.get(req.lang, req.lang)} kernel "
                        f"`{name}` below: its FIRST parameter values must reproduce this kernel exactly, launched "
                        f"with {_launch(req.launch)}; {entry}; its launch is given in the declaration."]
    parts += ["", "The current kernel (the best so far, parameters baked in):", _fence(req.kernel_source, req.lang)]
    if req.original_source.strip() != req.kernel_source.strip():
        parts += ["", "The original kernel (the reference every candidate is verified against):",
                  _fence(req.original_source, req.lang)]
    parts += ["", "The spec (arguments, sizes, shapes, tolerances):", "```yaml", req.spec_text.rstrip(), "```",
              "", f"The device: {_device(req.device)}."]
    if req.directions:
        parts += ["", "Directions for this round, most important first:"]
        parts += [f"{i}. {d}" for i, d in enumerate(req.directions, 1)]
    if req.measurements.strip():
        parts += ["", "The last measurements of the current kernel:", req.measurements.rstrip()]
    if req.history:
        parts += ["", "Earlier rounds:"] + [_round(n) for n in req.history]
        parts.append("Do not repeat a template that was already tried; build on what worked.")
    parts += ["", "Answer with the JSON object only."]
    return "\n".join(parts)


def build_messages(req: GenerationRequest) -> list[dict[str, str]]:
    return [{"role": "system", "content": system_message(req.lang)}, {"role": "user", "content": user_message(req)}]


def feedback_message(why: str, attempts_left: int, finish_reason: str = "") -> str:
    if len(why) > 6000:
        why = why[:6000] + "\n... (truncated)"
    cut = (" Your answer was cut off (the output length limit was reached): make the template shorter."
           if finish_reason == "length" else "")
    return (f"That answer could not be used: {why}{cut}\n\nFix the problem and answer again with the whole JSON "
            f"object (template, rationale, transformations). {attempts_left} attempt(s) left for this round.")

