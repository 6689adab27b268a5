-- gpu2bs 0.1 -> 0.2 upgrade: run by ALTER EXTENSION gpu2bs UPDATE TO '0.2'.
-- Every object that 0.2 adds or changes relative to 0.1 is created or replaced here, in the same
-- form as in gpu2bs--0.2.sql, so that a fresh 0.2 install and an upgraded 0.1 install are equal.
\echo Use "ALTER EXTENSION gpu2bs UPDATE TO '0.2'" to load this file. \quit

COMMENT ON FUNCTION gpu2bs_info() IS
'Which engine answers now and why (gpu2bs.device), CPU instruction set and threads, precision, whether the library was built with CUDA, the bytes the backend''s C allocator has in use, the GPU (name, SMs, memory in use and free, driver and runtime versions) when one is usable, and the timings of this session''s last gpu2bs call.';
