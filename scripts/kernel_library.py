"""The kernel library's baselines, as the batch scripts run them."""

# (name, kernel file without extension, spec, CPU shape set)
LIBRARY = [
    ("silu_and_mul (bf16)", "kernels/sglang/silu_and_mul/silu_and_mul", "kernels/sglang/silu_and_mul/spec.yaml", "cpu"),
    ("fused_add_rmsnorm (bf16)", "kernels/sglang/fused_add_rmsnorm/fused_add_rmsnorm",
     "kernels/sglang/fused_add_rmsnorm/spec.yaml", "cpu"),
    ("merge_attn_states_lse (bf16)", "kernels/sglang/merge_attn_states_lse/merge_attn_states_lse",
     "kernels/sglang/merge_attn_states_lse/spec.yaml", "cpu"),
    ("sgemm naive", "kernels/classic/sgemm/naive", "kernels/classic/sgemm/spec.yaml", "cpu"),
    ("stencil7 naive", "kernels/classic/stencil7/naive", "kernels/classic/stencil7/spec.yaml", "cpu"),
    ("reduce_sum naive", "kernels/classic/reduce_sum/naive", "kernels/classic/reduce_sum/spec.yaml", "cpu"),
    ("transpose naive", "kernels/classic/transpose/naive", "kernels/classic/transpose/spec.yaml", "cpu"),
    ("histogram naive", "kernels/classic/histogram/naive", "kernels/classic/histogram/spec.yaml", "cpu"),
    ("spmv_csr naive", "kernels/classic/spmv_csr/naive", "kernels/classic/spmv_csr/spec.yaml", "cpu"),
    ("row_sum (example)", "kernels/examples/row_sum", "kernels/examples/row_sum.yaml", None),
]
