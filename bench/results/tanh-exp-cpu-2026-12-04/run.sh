#!/bin/sh
# tanh-exp's share of the tuned gelu_tanh: the winner of `kerntune optimize` (block 1024, TANH_EXP on;
# optimize-gelu_tanh.md) against the same file with its KT_TANH macro set back to the library's tanh,
# interleaved by `kerntune bench`, on Intel's OpenCL CPU runtime and on PoCL.
# Run from this directory:  sh run.sh > run.log 2>&1
KT=${KT:-kerntune}
for device in ${DEVICES:-cpu opencl:1:0}; do
  echo "== $device"
  $KT bench winner_builtin_tanh.cl --against winner.cl --spec spec.yaml --device "$device" --seed 2 2>&1 |
    grep -Ev "^(inputs)"
done
