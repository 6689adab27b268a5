# Empty compiler generated dependencies file for bench_cpu.
# This may be replaced when dependencies are built.
