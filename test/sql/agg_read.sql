--
-- Whole-relation aggregates read as the relation forms (planner/agg_read.cpp): with
-- gpu2bs.direct_scan on and the library loaded, SELECT gpu_pair_count(x, y, z, r) FROM t and
-- SELECT gpu_sdh(x, y, z, nbuckets) FROM t (2-D too) are planned as the relation-form calls;
-- results equal the aggregates' (gpu2bs.direct_scan = off) and, for pair counts over lattice
-- points, float64 SQL. Queries that are not such whole-relation aggregates keep their plans.
--
LOAD 'gpu2bs';
SELECT setseed(0.2727);
CREATE TABLE ar (id int PRIMARY KEY, x float8, y float8, z float8, f float4);
INSERT INTO ar SELECT g, floor(random() * 40) / 2, floor(random() * 40) / 2,
                      CASE WHEN g % 17 = 0 THEN NULL ELSE floor(random() * 40) / 2 END, g % 10
  FROM generate_series(1, 3000) g;
-- statistics now, not whenever autovacuum gets to the table: the plans below depend on them
ANALYZE ar;
-- Runs query `q` with the rewrite (direct_scan on) and as the aggregate (off): equal results?
CREATE FUNCTION ar_compare(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE a text; b text;
BEGIN
  PERFORM set_config('gpu2bs.direct_scan', 'on', true);
  EXECUTE format('SELECT (%s)::text', q) INTO a;
  PERFORM set_config('gpu2bs.direct_scan', 'off', true);
  EXECUTE format('SELECT (%s)::text', q) INTO b;
  PERFORM set_config('gpu2bs.direct_scan', 'on', true);
  RETURN CASE WHEN a IS NOT DISTINCT FROM b THEN 'equal: ' || left(coalesce(a, 'NULL'), 40) ELSE format('DIFFERENT: %s / %s', a, b) END;
END $$;

-- rewritten: the relation-form call in a Result
EXPLAIN (COSTS OFF, VERBOSE) SELECT gpu_pair_count(x, y, z, 1.5) FROM ar;
EXPLAIN (COSTS OFF, VERBOSE) SELECT (gpu_sdh(x, y, 16))[1] AS first, gpu_pair_count(y, x, 1.0) + 1 AS plus FROM ar;
SELECT ar_compare($$SELECT gpu_pair_count(x, y, z, 1.5) FROM ar$$);
SELECT ar_compare($$SELECT gpu_pair_count(x, y, 1.0) FROM ar$$);
SELECT ar_compare($$SELECT gpu_pair_count(x, y, z, 'Infinity') FROM ar$$);
SELECT ar_compare($$SELECT gpu_sdh(x, y, z, 50) FROM ar$$);
SELECT ar_compare($$SELECT gpu_sdh(z, x, 7) FROM ar$$);
SELECT ar_compare($$SELECT (gpu_sdh(x, y, 16))[1] + gpu_pair_count(y, x, 1.0) FROM ar$$);
-- against float64 SQL (rows with a NULL coordinate skipped)
SELECT gpu_pair_count(x, y, z, 1.5) AS pc FROM ar \gset
SELECT name, value FROM gpu2bs_info() WHERE name IN ('last_function', 'last_scan_path') ORDER BY name;
SET gpu2bs.enable_join = off;
SELECT :pc = count(*) AS matches_sql FROM ar a JOIN ar b ON a.id < b.id
  WHERE (a.x - b.x)^2 + (a.y - b.y)^2 + (a.z - b.z)^2 <= 2.25;
RESET gpu2bs.enable_join;

-- not rewritten: a filter, grouping, a cast column, another aggregate beside, FILTER, a bad
-- parameter (the aggregate's own behaviour), ONLY over a table with children, the setting off
EXPLAIN (COSTS OFF) SELECT gpu_pair_count(x, y, z, 1.5) FROM ar WHERE id > 10;
-- grouped: the aggregate plan (sorted grouping, whatever work_mem makes of hashing)
SET enable_hashagg = off;
EXPLAIN (COSTS OFF) SELECT id % 2, gpu_pair_count(x, y, 1.5) FROM ar GROUP BY 1;
RESET enable_hashagg;
EXPLAIN (COSTS OFF) SELECT gpu_pair_count(x, f, 1.5) FROM ar;
EXPLAIN (COSTS OFF) SELECT gpu_pair_count(x, y, 1.5), count(*) FROM ar;
EXPLAIN (COSTS OFF) SELECT gpu_pair_count(x, y, 1.5) FILTER (WHERE id > 5) FROM ar;
EXPLAIN (COSTS OFF) SELECT gpu_pair_count(x, x, 1.5) FROM ar;
EXPLAIN (COSTS OFF) SELECT gpu_sdh(x, y, 0) FROM ar;
CREATE TABLE ar_child () INHERITS (ar);
INSERT INTO ar_child SELECT id + 10000, x + 0.5, y, z, f FROM ar WHERE id <= 100;
EXPLAIN (COSTS OFF) SELECT gpu_pair_count(x, y, 1.5) FROM ONLY ar;
EXPLAIN (COSTS OFF) SELECT gpu_pair_count(x, y, 1.5) FROM ar;
SELECT ar_compare($$SELECT gpu_pair_count(x, y, 1.5) FROM ar$$);
SELECT ar_compare($$SELECT gpu_pair_count(x, y, 1.5) FROM ONLY ar$$);
DROP TABLE ar_child;
SET gpu2bs.direct_scan = off;
EXPLAIN (COSTS OFF) SELECT gpu_pair_count(x, y, z, 1.5) FROM ar;
RESET gpu2bs.direct_scan;

-- no rows: NULL either way
CREATE TABLE ar_empty (x float8, y float8);
SELECT ar_compare($$SELECT gpu_pair_count(x, y, 1.0) FROM ar_empty$$);
SELECT ar_compare($$SELECT gpu_sdh(x, y, 4) FROM ar_empty$$);

-- privileges: the executor checks the aggregate's column privileges on the relation (the same
-- error either way); row-level security: the policy's rows either way
SET client_min_messages = warning;
DROP ROLE IF EXISTS regress_gpu2bs_ar;
RESET client_min_messages;
CREATE ROLE regress_gpu2bs_ar;
GRANT SELECT (id, x, y) ON ar TO regress_gpu2bs_ar;
CREATE TABLE ar_rls AS SELECT id, x, y FROM ar;
ALTER TABLE ar_rls ENABLE ROW LEVEL SECURITY;
CREATE POLICY ar_odd ON ar_rls FOR SELECT USING (id % 2 = 1);
GRANT SELECT ON ar_rls TO regress_gpu2bs_ar;
SET ROLE regress_gpu2bs_ar;
SELECT gpu_pair_count(x, y, 1.0) FROM ar;
SELECT gpu_pair_count(x, z, 1.0) FROM ar;
SET gpu2bs.direct_scan = off;
SELECT gpu_pair_count(x, z, 1.0) FROM ar;
RESET gpu2bs.direct_scan;
SELECT ar_compare($$SELECT gpu_pair_count(x, y, 1.0) FROM ar_rls$$);
SELECT gpu_pair_count(x, y, 1.0) FROM ar_rls;
SELECT name, value FROM gpu2bs_info() WHERE name = 'last_scan_path';
RESET ROLE;
SELECT gpu_pair_count(x, y, 1.0) AS all_rows FROM ar_rls;
-- EXECUTE on the aggregate itself: refused either way (the rewrite needs it too)
REVOKE EXECUTE ON FUNCTION gpu_pair_count(float8, float8, float8) FROM PUBLIC;
SET ROLE regress_gpu2bs_ar;
SELECT gpu_pair_count(x, y, 1.0) FROM ar;
SET gpu2bs.direct_scan = off;
SELECT gpu_pair_count(x, y, 1.0) FROM ar;
RESET gpu2bs.direct_scan;
RESET ROLE;
GRANT EXECUTE ON FUNCTION gpu_pair_count(float8, float8, float8) TO PUBLIC;

-- a NaN coordinate: 22023 either way (the relation form's message names the column)
INSERT INTO ar VALUES (5000, 'NaN', 1, 1, 1);
\set VERBOSITY terse
SELECT gpu_pair_count(x, y, 1.0) FROM ar;
SET gpu2bs.direct_scan = off;
SELECT gpu_pair_count(x, y, 1.0) FROM ar;
RESET gpu2bs.direct_scan;
\set VERBOSITY default

DROP TABLE ar, ar_empty, ar_rls;
DROP ROLE regress_gpu2bs_ar;
DROP FUNCTION ar_compare(text);
