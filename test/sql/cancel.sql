--
-- Query cancel (statement_timeout) while the engine runs: the statement ends with 57014
-- and the session stays usable. The CPU engine is chosen explicitly (every machine has it),
-- and the work (1.8e11 pairs) takes far longer than the timeout on any machine.
--
SELECT setseed(0.5);
CREATE TEMP TABLE big AS
  SELECT g AS id, random() AS x, random() AS y, random() AS z FROM generate_series(1, 600000) g;
CREATE TEMP TABLE dense AS
  SELECT g AS id, 0.5::float8 AS x, 0.5::float8 AS y FROM generate_series(1, 300000) g;
SET gpu2bs.device = cpu;
SET statement_timeout = '1s';
SELECT gpu_sdh(x, y, z, 10) FROM big;
\echo :SQLSTATE
SELECT gpu_pair_count(x, y, 'Infinity') FROM big;
\echo :SQLSTATE
-- DBSCAN on dense data: every point in one grid cell, 4.5e10 pairs in its first pass.
SELECT count(*) FROM gpu_dbscan('dense', 0.1, 5);
\echo :SQLSTATE
RESET statement_timeout;
SELECT gpu_pair_count(x, y, z, 2) FROM pts3;
SELECT count(*) FROM gpu_simjoin('pts3', 1.1);
RESET gpu2bs.device;
