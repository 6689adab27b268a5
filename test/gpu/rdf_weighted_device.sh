#!/usr/bin/env bash
# Device check and timing of the weighted RDF, run on the GPU machine from the repository root
# with a folder (default .rdfw17) that holds test_rdf_gpu and bench_rdf, built on the
# development machine by `make -C test/gpu rdfw` (sm_90), and .devdata carried: the RDF and
# weights GoogleTest cases (CUDA engine against the CPU engine, bit for bit), then
# `bench_rdf weighted` (weighted CUDA = CPU checks, weighted vs unweighted timings on the water
# set replicated to 1,000,000 atoms). Logs under $OUT.
#   bash test/gpu/rdf_weighted_device.sh [FOLDER]
set -u
dir=${1:-.rdfw17}
{ nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv; nproc; } > "$OUT/gpu.txt" 2>&1
zcat .devdata/atoms.csv.gz > /tmp/atoms.csv
SECONDS=0
timeout 150 "$dir/test_rdf_gpu" > "$OUT/test_rdf_gpu.log" 2>&1
echo "exit $? after ${SECONDS} s" >> "$OUT/test_rdf_gpu.log"
tail -4 "$OUT/test_rdf_gpu.log"
SECONDS=0
timeout 240 "$dir/bench_rdf" weighted /tmp/atoms.csv 15 10 > "$OUT/bench_rdf_weighted.log" 2>&1
echo "exit $? after ${SECONDS} s" >> "$OUT/bench_rdf_weighted.log"
cat "$OUT/gpu.txt" "$OUT/bench_rdf_weighted.log"
