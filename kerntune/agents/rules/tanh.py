"""tanh-exp: ``tanh`` written through one ``exp``, on or off.

``tanh(t) = 1 - 2 / (exp(2t) + 1)``: one exponential and a division where the library's ``tanh``
takes a longer polynomial path (OpenCL has no ``native_tanh``, and the fast-math flag leaves ``tanh``
as it is). The form does not overflow (``exp`` going to inf gives 1, to 0 gives -1) and reads its
argument once, so it is a macro that also takes OpenCL vectors (the vector rules may have made the
argument one). Near 0 it loses relative accuracy (the absolute error stays near 1e-7), so it is an
approximation: the spec's tolerance decides it, as it decides fast-math.

Hand-timed before it was built (bench/results/handmade-tanh-2026-12-04): GELU with tanh, 1.07x on
Intel's OpenCL CPU runtime and 1.22x on PoCL, interleaved with the original.
"""

from __future__ import annotations

from kerntune.agents.rules.base import Applied, Edit, Param, Rule, RewriteState, apply_edits, called_names

TANH = {"opencl": "tanh", "cuda": "tanhf"}
EXP = {"opencl": "exp", "cuda": "expf"}
MACRO = "KT_TANH"


def _tanh_calls(st: RewriteState) -> list:
    return called_names(st, (TANH[st.lang],))


class TanhExp(Rule):
    name = "tanh-exp"
    summary = "tanh through one exp (1 - 2 / (exp(2t) + 1)) instead of the library's, on or off"

    def check(self, st: RewriteState) -> str:
        if any(a.dtype == "fp64" for a in st.spec.args):
            return "fp64 kernels keep the library's tanh"
        return "" if _tanh_calls(st) else f"no call to {TANH[st.lang]}"

    def apply(self, st: RewriteState) -> Applied:
        calls = _tanh_calls(st)
        st.source = apply_edits(st.raw, [Edit(f.start_byte, f.end_byte, MACRO) for f in calls])
        exp, tanh = EXP[st.lang], TANH[st.lang]
        # an inline expression, not block tags (trim_blocks would eat the newline after the define)
        header = (f"#define {MACRO}(t) {{{{ '(1.0f - 2.0f / ({exp}(2.0f * (t)) + 1.0f))' if TANH_EXP "
                  f"else '{tanh}(t)' }}}}")
        st.add_param(Param("TANH_EXP", (False, True), header, why=f"{tanh}(t) -> 1 - 2 / ({exp}(2t) + 1)"))
        return Applied(self.name, f"{len(calls)} call(s) of {tanh} may go through {exp}", ("TANH_EXP",))
