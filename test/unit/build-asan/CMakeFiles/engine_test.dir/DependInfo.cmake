
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/test/unit/engine_test.cpp" "CMakeFiles/engine_test.dir/engine_test.cpp.o" "gcc" "CMakeFiles/engine_test.dir/engine_test.cpp.o.d"
  "/work/main/test/unit/grid_test.cpp" "CMakeFiles/engine_test.dir/grid_test.cpp.o" "gcc" "CMakeFiles/engine_test.dir/grid_test.cpp.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  "/work/main/test/unit/build-asan/CMakeFiles/gpu2bs_core.dir/DependInfo.cmake"
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
