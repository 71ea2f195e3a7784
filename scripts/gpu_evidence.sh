#!/usr/bin/env bash
# The GPU evidence run (issue 13), in one command on a CUDA machine with no package index:
#   scripts/gpu_evidence.sh smoke|full SECONDS OUTDIR
# smoke: the machine and its packages, `pytest -m gpu`, and a few evaluations of every benchmark
#        script (so a bug shows before the long run);
# full:  `pytest -m gpu`, scripts/bench_library.py beside PyTorch's implementations, the decode
#        shapes timed three ways (scripts/launch_modes.py), and (KT_STEPS=optimize) `kerntune optimize`
#        with the rule catalog on the SGLang kernels (scripts/optimize_library.py).
# Every step has its own time limit inside SECONDS, so one that hangs or fails leaves the others
# their time; logs and results go to OUTDIR,
# packed into one archive at the end (OUTDIR/evidence-PHASE.tgz). Packages the machine lacks travel as wheels in .whl/
# (scripts/wheelhouse.py builds them); they are installed into /tmp/site.
set -u
PHASE="${1:?smoke or full}"; BUDGET="${2:?seconds}"; OUTDIR="${3:?output folder}"
case "$PHASE" in smoke|full) ;; *) echo "error: the phase is 'smoke' or 'full', not '$PHASE'" >&2; exit 2 ;; esac
case "$BUDGET" in ''|*[!0-9]*) echo "error: SECONDS is a whole number of seconds, not '$BUDGET'" >&2; exit 2 ;; esac
mkdir -p "$OUTDIR"
END=$(( $(date +%s) + BUDGET ))
export PYTHONUNBUFFERED=1
STAMP="$(date +%F)"

left() { echo $(( END - $(date +%s) )); }
# step NAME MAX_SECONDS COMMAND...: runs COMMAND with at most MAX_SECONDS (and what is left), logged
step() {
    local name="$1" max="$2"; shift 2
    local t; t=$(left); [ "$max" -lt "$t" ] && t="$max"
    if [ "$t" -lt 10 ]; then echo "=== $name: skipped, $(left) s left"; return; fi
    echo "=== $name (at most $t s): $*"
    local t0; t0=$(date +%s)
    timeout -k 10 "$t" "$@" > "$OUTDIR/$name.log" 2>&1
    local rc=$?
    echo "=== $name: rc=$rc in $(( $(date +%s) - t0 )) s"
    tail -n 15 "$OUTDIR/$name.log"
}

# --library FILE when an earlier step wrote FILE (the later steps run whatever the earlier did)
have() { [ -f "$1" ] && echo "--library $1"; }

WHEELS="${KT_WHEELS:-.whl}"     # KT_WHEELS=none: use the packages installed (a rehearsal on this machine)
if ls "$WHEELS"/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$WHEELS"/*.whl \
        || { echo "error: the wheels in $WHEELS/ did not install"; exit 1; }
    export PYTHONPATH="/tmp/site:$PWD"
else
    export PYTHONPATH="$PWD"
fi

if [ "$PHASE" = smoke ]; then
    step env 60 bash -c 'nvidia-smi; python3 -c "import sys, cupy, torch, numpy, pydantic; print(sys.version); print(\"cupy\", cupy.__version__, \"torch\", torch.__version__, \"numpy\", numpy.__version__, \"pydantic\", pydantic.__version__)"; python3 -m kerntune devices; which compute-sanitizer ncu nvcc'
    step pytest-gpu 150 python3 -m pytest -m gpu tests/test_gpu_cupy.py -p no:cacheprovider -q -rs --timeout 120
    step library-smoke 100 python3 scripts/bench_library.py --device 0 --kernels silu_and_mul,merge_attn_states_lse \
        --strategy surrogate --budget 3 --repeats 10 --warmup 3 --out "$OUTDIR/library-smoke"
    step modes-smoke 60 python3 scripts/launch_modes.py --kernels silu_and_mul --shapes 7b-decode-T1 $(have "$OUTDIR/library-smoke.json") \
        --launches 20 --repeats 5 --out "$OUTDIR/modes-smoke"
else
    # serving shapes cost seconds of host time per candidate (inputs and reference on the host): the
    # short set of four per kernel unless KT_SHAPES names another (empty: every serving shape).
    # KT_STEPS picks the steps (a 10-minute call holds about three): library, modes, pytest, optimize.
    # KT_DEVICE=cpu KT_SHAPES=cpu KT_WHEELS=none rehearses the run on the CPU (CUDA-only steps then say so).
    DEV="${KT_DEVICE:-0}"; STEPS=",${KT_STEPS:-library,modes,pytest},"
    LIB="$OUTDIR/library-gpu-$STAMP"
    case "$STEPS" in *,library,*)
        step library 190 python3 scripts/bench_library.py --device "$DEV" --dtype bf16 --strategy surrogate \
            --budget "${KT_BUDGET:-12}" ${KT_KERNELS:+--kernels "$KT_KERNELS"} \
            --shape-set "${KT_SHAPES-gpu_short}" --repeats 50 --warmup 10 --out "$LIB" ;; esac
    case "$STEPS" in *,modes,*)
        step launch-modes 90 python3 scripts/launch_modes.py $(have "$LIB.json") --out "$OUTDIR/launch-modes-$STAMP" ;; esac
    case "$STEPS" in *,pytest,*)
        step pytest-gpu 110 python3 -m pytest -m gpu tests/test_gpu_cupy.py -p no:cacheprovider -q -rs --timeout 90 ;; esac
    # kerntune optimize with the rule catalog on the three SGLang kernels (issue 13, item 2)
    case "$STEPS" in *,optimize,*)
        step optimize 480 python3 scripts/optimize_library.py --device "$DEV" --only silu_and_mul,fused_add,merge_attn \
            --shape-set "${KT_SHAPES-gpu_short}" --rounds 1 --evaluations "${KT_BUDGET:-12}" \
            --time-limit "${KT_OPTIMIZE_S:-120}" --repeats 30 --final-repeats 40 --out "$OUTDIR/optimize-gpu-$STAMP" ;; esac
fi
echo "=== done, $(left) s of $BUDGET left"
# logs, tables and run folders are many files: one archive comes back
tar czf "/tmp/evidence-$PHASE.tgz" -C "$OUTDIR" . && rm -rf "${OUTDIR:?}"/* && mv "/tmp/evidence-$PHASE.tgz" "$OUTDIR/"
