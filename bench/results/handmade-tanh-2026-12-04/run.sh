#!/bin/sh
# tanh computed through exp, hand-timed before building a rule for it (kernels/heldout3/gelu_tanh):
# tanh(t) = sign(t) * (1 - e) / (1 + e) with e = exp(-2|t|), against OpenCL's tanh, each pair timed
# interleaved by `kerntune bench --against` after verifying against the NumPy reference.
# plain.yaml: the spec as written (reference path from here); tanh_fastflags.cl: tanh.cl with
# -cl-fast-relaxed-math in its kerntune header (compiler-flags' value, which gelu_tanh's winner took).
# Run from this directory:  sh run.sh > run.log 2>&1   (PoCL: DEVICE=opencl:1:0 sh run.sh > run-pocl.log 2>&1)
KT=${KT:-kerntune}
for pair in tanh:exp_precise:plain tanh:exp_native:plain tanh:tanh_fastflags:plain tanh_fastflags:exp_precise:plain; do
  a=${pair%%:*}; rest=${pair#*:}; b=${rest%%:*}; s=${rest#*:}
  echo "== $a.cl against $b.cl ($s.yaml)"
  $KT bench "$a.cl" --against "$b.cl" --spec "$s.yaml" --device "${DEVICE:-cpu}" --seed 1 2>&1 | grep -Ev "^(inputs|device)"
done
