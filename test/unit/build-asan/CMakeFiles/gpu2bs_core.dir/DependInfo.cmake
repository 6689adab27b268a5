
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/src/core/cpu_engine.cpp" "CMakeFiles/gpu2bs_core.dir/work/main/src/core/cpu_engine.cpp.o" "gcc" "CMakeFiles/gpu2bs_core.dir/work/main/src/core/cpu_engine.cpp.o.d"
  "/work/main/src/core/cpu_kernels_avx2.cpp" "CMakeFiles/gpu2bs_core.dir/work/main/src/core/cpu_kernels_avx2.cpp.o" "gcc" "CMakeFiles/gpu2bs_core.dir/work/main/src/core/cpu_kernels_avx2.cpp.o.d"
  "/work/main/src/core/cpu_kernels_generic.cpp" "CMakeFiles/gpu2bs_core.dir/work/main/src/core/cpu_kernels_generic.cpp.o" "gcc" "CMakeFiles/gpu2bs_core.dir/work/main/src/core/cpu_kernels_generic.cpp.o.d"
  "/work/main/src/core/grid.cpp" "CMakeFiles/gpu2bs_core.dir/work/main/src/core/grid.cpp.o" "gcc" "CMakeFiles/gpu2bs_core.dir/work/main/src/core/grid.cpp.o.d"
  "/work/main/src/core/no_cuda.cpp" "CMakeFiles/gpu2bs_core.dir/work/main/src/core/no_cuda.cpp.o" "gcc" "CMakeFiles/gpu2bs_core.dir/work/main/src/core/no_cuda.cpp.o.d"
  "/work/main/src/core/parallel.cpp" "CMakeFiles/gpu2bs_core.dir/work/main/src/core/parallel.cpp.o" "gcc" "CMakeFiles/gpu2bs_core.dir/work/main/src/core/parallel.cpp.o.d"
  "/work/main/src/core/problem.cpp" "CMakeFiles/gpu2bs_core.dir/work/main/src/core/problem.cpp.o" "gcc" "CMakeFiles/gpu2bs_core.dir/work/main/src/core/problem.cpp.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
