--
-- The SQL boundary's small promises: whole-number settings, the shape of coords, long names in
-- messages, and gpu2bs_info() after a call that ran in a parallel worker. (Engine errors report
-- their throw site as the error location: test/reliability/test_boundary.py reads it from the
-- error fields, which pg_regress output cannot show without line numbers.)
--
CREATE TABLE bnd (id int PRIMARY KEY, x float8, y float8, z float8);
INSERT INTO bnd VALUES (1, 0, 0, 0), (2, 1, 0, 0), (3, 0, 1, 0), (4, 5, 5, 5);

-- gpu2bs.max_result_rows is a whole number of rows: fractions are refused (0.5 would otherwise
-- truncate to 0, which means no limit), as are values out of [0, 1e15]. A value SET before the
-- library is loaded is checked when it loads: a WARNING, and the default stays.
SET gpu2bs.max_result_rows = 0.5;
SELECT count(*) FROM gpu_simjoin('bnd', 1.5);
SHOW gpu2bs.max_result_rows;
SET gpu2bs.max_result_rows = 0.5;
\echo :SQLSTATE
SET gpu2bs.max_result_rows = 1.5;
SET gpu2bs.max_result_rows = 1e-300;
SET gpu2bs.max_result_rows = -1;
SET gpu2bs.max_result_rows = 1e16;
SET gpu2bs.max_result_rows = 'NaN';
SHOW gpu2bs.max_result_rows;
SET gpu2bs.max_result_rows = 2.0;
SHOW gpu2bs.max_result_rows;
\set VERBOSITY terse
SELECT count(*) FROM gpu_simjoin('bnd', 1.5);  -- (the detail differs between engines)
\set VERBOSITY default
\echo :SQLSTATE
SET gpu2bs.max_result_rows = 1e3;
SELECT count(*) FROM gpu_simjoin('bnd', 1.5);
SET gpu2bs.max_result_rows = 0;  -- no limit
SELECT count(*) FROM gpu_simjoin('bnd', 1.5);
RESET gpu2bs.max_result_rows;

-- coords is a one-dimensional array: a 2-D or 3-D array is refused, not flattened (22023)
SELECT * FROM gpu_simjoin('bnd', 1, '{{x,y},{y,z}}');
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('bnd', 1, '{{x},{y}}');
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('bnd', 1, '{{{x,y}}}');
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('bnd', 'bnd', 1, ARRAY[ARRAY['x', 'y'], ARRAY['y', 'x']]);
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('bnd', 1, '[0:1]={x,y}');  -- one dimension, any lower bound: accepted
SELECT count(*) FROM gpu_simjoin('bnd', 1, '{}');
\echo :SQLSTATE

-- a user-supplied name is cut to 63 bytes (whole characters) with "..." in messages
SELECT * FROM gpu_simjoin('bnd', 1, ARRAY[repeat('n', 100000), 'y']);
SELECT * FROM gpu_simjoin('bnd', 1, ARRAY['x', repeat('é', 50000)]);
SELECT * FROM gpu_simjoin('bnd', 1, ARRAY['x', 'y'], repeat('k', 100000));
SELECT * FROM gpu_simjoin('bnd', 'bnd', 1, ARRAY[repeat('w', 64), 'y']);
SELECT * FROM gpu_simjoin('bnd', 1, ARRAY[repeat('w', 63), 'y']);  -- 63 bytes: shown whole
-- a 100 KB relation name: PostgreSQL's regclass input cuts it to 63 bytes itself (42P01)
SELECT * FROM gpu_simjoin(repeat('r', 100000), 1);
SELECT * FROM gpu_simjoin('bnd', repeat('s', 100000), 1);

-- gpu2bs_info() after a call that ran in a parallel worker: the whole aggregate below a
-- single-copy Gather (force_parallel_mode) in a fresh backend that has not loaded gpu2bs
\c -
SET force_parallel_mode = on;
EXPLAIN (COSTS OFF) SELECT gpu_pair_count(x, y, z, 1.5) FROM bnd;
SELECT gpu_pair_count(x, y, z, 1.5) FROM bnd;
SELECT value FROM gpu2bs_info() WHERE name = 'last_function';
SELECT gpu_sdh(x, y, 4) FROM bnd;
SELECT value FROM gpu2bs_info() WHERE name = 'last_function';
-- the leader's own later run replaces it
RESET force_parallel_mode;
SELECT count(*) FROM gpu_simjoin('bnd', 1.5);
SELECT value FROM gpu2bs_info() WHERE name = 'last_function';
-- and a worker's run after that replaces the leader's
SET force_parallel_mode = on;
SELECT gpu_sdh(x, y, z, 4) FROM bnd;
SELECT value FROM gpu2bs_info() WHERE name = 'last_function';
-- a sub-plan run by parallel workers
SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;
SELECT b.id, (SELECT gpu_pair_count(x, y, z, 2) FROM bnd c WHERE c.id <= b.id) AS pc FROM bnd b ORDER BY b.id;
SELECT value FROM gpu2bs_info() WHERE name = 'last_function';
RESET ALL;

DROP TABLE bnd;
