file(REMOVE_RECURSE
  "CMakeFiles/gpu2bs_core.dir/work/main/src/core/cpu_engine.cpp.o"
  "CMakeFiles/gpu2bs_core.dir/work/main/src/core/cpu_engine.cpp.o.d"
  "CMakeFiles/gpu2bs_core.dir/work/main/src/core/cpu_kernels_avx2.cpp.o"
  "CMakeFiles/gpu2bs_core.dir/work/main/src/core/cpu_kernels_avx2.cpp.o.d"
  "CMakeFiles/gpu2bs_core.dir/work/main/src/core/cpu_kernels_generic.cpp.o"
  "CMakeFiles/gpu2bs_core.dir/work/main/src/core/cpu_kernels_generic.cpp.o.d"
  "CMakeFiles/gpu2bs_core.dir/work/main/src/core/grid.cpp.o"
  "CMakeFiles/gpu2bs_core.dir/work/main/src/core/grid.cpp.o.d"
  "CMakeFiles/gpu2bs_core.dir/work/main/src/core/no_cuda.cpp.o"
  "CMakeFiles/gpu2bs_core.dir/work/main/src/core/no_cuda.cpp.o.d"
  "CMakeFiles/gpu2bs_core.dir/work/main/src/core/parallel.cpp.o"
  "CMakeFiles/gpu2bs_core.dir/work/main/src/core/parallel.cpp.o.d"
  "CMakeFiles/gpu2bs_core.dir/work/main/src/core/problem.cpp.o"
  "CMakeFiles/gpu2bs_core.dir/work/main/src/core/problem.cpp.o.d"
  "libgpu2bs_core.a"
  "libgpu2bs_core.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/gpu2bs_core.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
