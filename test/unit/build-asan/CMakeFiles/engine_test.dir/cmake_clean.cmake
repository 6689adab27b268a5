file(REMOVE_RECURSE
  "CMakeFiles/engine_test.dir/engine_test.cpp.o"
  "CMakeFiles/engine_test.dir/engine_test.cpp.o.d"
  "CMakeFiles/engine_test.dir/grid_test.cpp.o"
  "CMakeFiles/engine_test.dir/grid_test.cpp.o.d"
  "engine_test"
  "engine_test.pdb"
  "engine_test[1]_tests.cmake"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/engine_test.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
