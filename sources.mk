# One list of the engine's sources and compiler flags, included by the Makefile and
# test/gpu/Makefile and read by test/unit/CMakeLists.txt (which parses the `NAME := value`
# lines below: keep each on one line, without make functions).
#
# Core engine (src/core: no PostgreSQL, no CUDA), by base name.
CORE_SOURCES := problem admission split parallel grid density_map resolve_cpu pair_ir pair_expr pair_expr_cpu_generic pair_expr_cpu_avx2 pair_expr_cpu_avx512 pair_expr_codegen pipeline dbscan rdf periodic rdf_cpu_generic rdf_cpu_avx2 xi weights weights_cpu_generic weights_cpu_avx2 cpu_engine cpu_kernels_generic cpu_kernels_avx2 pairwise pairwise_cpu_generic pairwise_cpu_avx2 pairwise_cpu_avx512
# Exact IEEE arithmetic (no contraction, no fast math) on every host translation unit.
CORE_CXXFLAGS := -std=c++17 -O3 -ffp-contract=off -fno-fast-math -fno-math-errno -Wall
# The CPU kernels (cpu_kernels_*, pairwise_cpu_*, pair_expr_cpu_*): one variant per instruction set, chosen at
# run time.
CORE_AVX2_FLAGS := -mavx2 -mfma -DG2_HAVE_AVX2_VARIANT
CORE_GENERIC_FLAGS := -DG2_HAVE_AVX2_VARIANT
CORE_AVX512_FLAGS := -mavx512f -mfma -mprefer-vector-width=512
# The stand-in for the CUDA engine in builds without CUDA.
CORE_NO_CUDA := no_cuda
# CUDA engine: every kernels/**/*.cu, relocatable device code, no fused multiply-adds.
CUDA_FLAGS := -O3 -std=c++17 --fmad=false -Xcompiler -fPIC,-ffp-contract=off -rdc=true
