file(REMOVE_RECURSE
  "CMakeFiles/bench_cpu.dir/work/main/test/bench/bench_cpu.cpp.o"
  "CMakeFiles/bench_cpu.dir/work/main/test/bench/bench_cpu.cpp.o.d"
  "bench_cpu"
  "bench_cpu.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/bench_cpu.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
