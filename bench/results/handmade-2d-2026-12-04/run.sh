#!/bin/sh
# Hand-written 2-D variants of kernels/heldout2's two weakest kernels, timed one after another with
# `kerntune bench` (each verified against the NumPy reference first). A variant that changes the grid
# has its own spec (spec_*.yaml), so each is timed alone, not interleaved with the original; the
# original is timed first and last to bracket the drift. Run from this directory:  sh run.sh > run.log 2>&1
KT=${KT:-kerntune}
for k in embedding_gather avg_pool2d; do
  cd "$k"
  for v in orig:spec ept:spec_ept ept2:spec_ept2 epty:spec_epty ver:spec orig:spec; do
    f=${v%%:*}; s=${v##*:}
    [ -f "$f.cl" ] && [ -f "$s.yaml" ] || continue
    echo "== $k $f.cl ($s.yaml)"
    $KT bench "$f.cl" --spec "$s.yaml" --device cpu --repeats 50 --seed 1 2>&1 | grep -E "^(verify|check)|^[a-z]*[0-9].*(µs|ms)" 
  done
  cd ..
done
