--
-- MACHINE-DEPENDENT: run only where no GPU is usable (or the build has no CUDA engine);
-- exclude this test on GPU machines. gpu2bs.device = gpu is then an error (55000) for every
-- function that runs an engine, and auto or cpu answer on the CPU engine. The DETAIL (why no
-- GPU is usable) varies between machines, hence terse.
--
\set VERBOSITY terse
SET gpu2bs.device = gpu;
SELECT gpu_sdh(x, y, z, 4) FROM pts3;
\echo :SQLSTATE
SELECT gpu_sdh_fixed(x, y, 4, 1.0) FROM pts2;
\echo :SQLSTATE
SELECT gpu_pair_count(x, y, z, 1) FROM pts3;
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('pts3', 1);
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('pts3', 'two3', 1);
\echo :SQLSTATE
-- no engine runs for the width, nor for an aggregate without rows: no error
SELECT gpu_sdh_width(x, y, z, 4) = (SELECT sqrt(3 * 19.5::float8 * 19.5) / 4) AS width_ok FROM pts3;
SELECT gpu_sdh(x, y, z, 4) FROM empty3;
-- (gpu_simjoin chooses its engine before it looks at the rows)
SELECT count(*) FROM gpu_simjoin('empty3', 1);
\echo :SQLSTATE
-- argument errors still come first
SELECT gpu_pair_count(x, y, z, -1) FROM pts3;
\echo :SQLSTATE
SET gpu2bs.device = auto;
SELECT gpu_pair_count(x, y, z, 2) FROM pts3;
SET gpu2bs.device = cpu;
SELECT gpu_pair_count(x, y, z, 2) FROM pts3;
RESET gpu2bs.device;
