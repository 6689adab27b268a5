#!/usr/bin/env bash
# Device run of the angular histogram work (kernels/expr/, the threshold table): builds test/gpu's
# test_gpu and bench_expr (or takes PREBUILT=<dir> with both), runs the ExprGpu tests,
# bench_expr hist (the Hipparcos stars of .devdata with G2_STARS; the generated float32
# histograms to $OUT/hist-*.txt) and bench_expr programs (cold compiles), then TreeCorr's
# bench_expr histsweep (the table histogram over tile configurations and private copies),
# bench_expr cold <k> for every program shape k, three fresh processes each (cold compiles), the
# instruction mix of the tile kernel's loops in the cubins of CUBINS=<dir> (*.cubin, compiled
# from the generated sources by NVRTC elsewhere; cuobjdump + sass_loops.py), Nsight Compute's
# counters of the default table kernel (bench_expr histone, where ncu is installed), then TreeCorr's
# NNCorrelation on the same stars (wheels from WHEELS=<dir>, installed without network) with
# test/bench/angular_treecorr.py (metric Arc unless TC_METRIC says otherwise), compared with the
# GPU histogram. Logs under $OUT.
#   OUT=/tmp/o WHEELS=../.angular15-whl bash test/gpu/angular_device.sh
# SKIP=<words>: leaves out steps (build tests hist histsweep sass programs cold prof treecorr slop0). Each
# step stops at DEADLINE seconds after the start (default 570).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
T0=$(date +%s)
DEADLINE=${DEADLINE:-570}
SKIP=${SKIP:-}
skip() { case " $SKIP " in *" $1 "*) return 0 ;; esac; return 1; }
source test/gpu/run_step.sh
export PATH=/usr/local/cuda/bin:$PATH
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; nproc; cat COMMIT 2>/dev/null; python3 --version; } >"$OUT/steps.log" 2>&1
B=test/gpu/build
if [ -n "${PREBUILT:-}" ]; then
  B=$PREBUILT
elif ! skip build; then
  step "build test_gpu bench_expr" 300 "$OUT/build.log" make -C test/gpu -j16 build/test_gpu build/bench_expr
fi
if ! skip tests; then
  step "test_gpu Expr*:*Angular*" 200 "$OUT/test_expr.log" $B/test_gpu --gtest_filter='Expr*:*Angular*'
fi
STARS=.devdata/stars3d.csv.gz
[ -f "$STARS" ] || STARS=../.devdata/stars3d.csv.gz
if ! skip hist; then
  step "bench_expr hist 3" 200 "$OUT/bench_hist.log" env G2_STARS="$STARS" G2_HIST_OUT="$OUT/hist" $B/bench_expr hist 3
fi
if ! skip histsweep; then
  step "bench_expr histsweep 3" 120 "$OUT/bench_histsweep.log" env G2_STARS="$STARS" $B/bench_expr histsweep 3
fi
if ! skip sass && [ -n "${CUBINS:-}" ]; then
  for f in "$CUBINS"/*.cubin; do
    n=$(basename "$f" .cubin)
    { echo "== $n"; cuobjdump -sass "$f" | python3 test/gpu/sass_loops.py --match g2_kernel; } >"$OUT/sass-$n.txt" 2>&1
  done
  echo "sass: $(ls "$CUBINS"/*.cubin | wc -l) cubins" | tee -a "$OUT/steps.log"
fi
if ! skip programs; then
  step "bench_expr programs 3" 200 "$OUT/bench_programs.log" $B/bench_expr programs 3
fi
if ! skip cold; then
  t=$(date +%s)
  for r in 1 2 3; do
    for k in $(seq 0 13); do
      [ "$(left)" -gt 5 ] && timeout 20 $B/bench_expr cold $k >>"$OUT/cold.log" 2>&1
    done
  done
  echo "cold: $(grep -c '^cold' "$OUT/cold.log") lines in $(( $(date +%s) - t )) s" | tee -a "$OUT/steps.log"
fi
if ! skip prof; then
  # Nsight Compute's counters of the default table kernel on the stars (bench_expr histone: the
  # warm-up call's second launch, the bulk of its pairs): instructions, issue rate, occupancy and
  # the shared-memory wavefronts and bank conflicts of the loads and atomics.
  NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  if [ -n "$NCU" ]; then
    step "ncu histone" 60 "$OUT/ncu.log" env G2_STARS="$STARS" "$NCU" -k g2_kernel --launch-skip 1 --launch-count 1 \
      --metrics smsp__inst_executed.sum,sm__cycles_elapsed.max,smsp__issue_active.avg.per_cycle_active,sm__warps_active.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_atom.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_atom.sum,launch__registers_per_thread,launch__occupancy_limit_shared_mem \
      $B/bench_expr histone 1
  else
    echo "prof: no ncu on this machine" | tee -a "$OUT/steps.log"
  fi
fi
if ! skip treecorr && [ -n "${WHEELS:-}" ]; then
  {
    python3 -c 'import numpy; print("numpy", numpy.__version__, "present")' ||
      pip install --no-index --no-deps --target=/tmp/tcpy "$WHEELS"/numpy-*.whl
    # TreeCorr and Coord are what process() imports; PyYAML and pybind11 where present.
    pip install --no-index --no-deps --target=/tmp/tcpy $(ls "$WHEELS"/treecorr-*.whl "$WHEELS"/lsstdesc_coord-*.whl \
      "$WHEELS"/pyyaml-*.whl "$WHEELS"/pybind11-*.whl 2>/dev/null)
  } >"$OUT/treecorr_install.log" 2>&1
  export PYTHONPATH=/tmp/tcpy${PYTHONPATH:+:$PYTHONPATH}
  step "treecorr bin_slop 1" 150 "$OUT/treecorr.log" python3 test/bench/angular_treecorr.py "$STARS" 1000 "$(nproc)" 1 "$OUT/hist-stars.txt"
  if ! skip slop0; then
    step "treecorr bin_slop 0" ${SLOP0_MAX:-60} "$OUT/treecorr_slop0.log" python3 test/bench/angular_treecorr.py "$STARS" 1000 "$(nproc)" 0 "$OUT/hist-stars.txt"
  fi
fi
if [ -z "${PREBUILT:-}" ] && [ -x $B/test_gpu ] && [ -n "${KEEP_BUILD:-}" ]; then
  # The objects (a later run rebuilds what changed) and the stripped binaries.
  (cd test/gpu && tar -czf "$OUT/objs.tgz" build/*.o && mkdir -p /tmp/bins && cp build/test_gpu build/bench_expr /tmp/bins/ &&
   strip /tmp/bins/* && tar -C /tmp -czf "$OUT/bins.tgz" bins)
  ls -la "$OUT"/*.tgz >>"$OUT/steps.log"
fi
echo "done at $(( $(date +%s) - T0 )) s" >>"$OUT/steps.log"
