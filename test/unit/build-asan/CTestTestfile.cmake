# CMake generated Testfile for 
# Source directory: /work/main/test/unit
# Build directory: /work/main/test/unit/build-asan
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
include("/work/main/test/unit/build-asan/engine_test[1]_include.cmake")
