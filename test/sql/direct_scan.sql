--
-- The direct heap reader (gpu2bs.direct_scan): every relation form gives the same rows with the
-- direct reader on and off (the SPI query), gpu2bs_info() names the path that read the
-- relation, and privileges, row-level security, inheritance, views, materialized views, NULLs,
-- dropped and added columns, integer and float4 columns and in-transaction changes behave as
-- the SQL query does. Pair counts are also checked against float64 SQL over lattice points
-- (squared distances exact in float4 and float8).
--
SELECT setseed(0.6061);
-- Runs query `q` with the direct reader on, then off; says whether the results (as a multiset
-- of rows) are equal, and which path read the relations each time.
CREATE FUNCTION ds_compare(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  n1 bigint; n2 bigint; h1 text; h2 text; p1 text; p2 text;
  agg text := format('SELECT count(*), md5(coalesce(string_agg(t::text, %L ORDER BY t::text), %L)) FROM (%s) t', ';', '', q);
BEGIN
  PERFORM set_config('gpu2bs.direct_scan', 'on', true);
  EXECUTE agg INTO n1, h1;
  SELECT value INTO p1 FROM gpu2bs_info() WHERE name = 'last_scan_path';
  PERFORM set_config('gpu2bs.direct_scan', 'off', true);
  EXECUTE agg INTO n2, h2;
  SELECT value INTO p2 FROM gpu2bs_info() WHERE name = 'last_scan_path';
  PERFORM set_config('gpu2bs.direct_scan', 'on', true);
  RETURN format('%s rows, %s; on: %s, off: %s', n1,
                CASE WHEN n1 = n2 AND h1 = h2 THEN 'equal' ELSE 'DIFFERENT' END, p1, p2);
END $$;
-- Pairs within r of relation `rel` (columns id, x, y) by float64 SQL: the reference.
CREATE FUNCTION ds_ref_pairs(rel regclass, r float8) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM %s a JOIN %s b ON a.id < b.id
                  WHERE (a.x - b.x)^2 + (a.y - b.y)^2 <= %s', rel, rel, r * r) INTO n;
  RETURN n;
END $$;

-- NULL keys and coordinates: the rows are skipped on both paths
CREATE TABLE ds_null (id int, x float8, y float8);
INSERT INTO ds_null
  SELECT CASE WHEN g % 13 = 0 THEN NULL ELSE g END,
         CASE WHEN g % 7 = 1 THEN NULL ELSE floor(random() * 40) / 2 END,
         CASE WHEN g % 11 = 2 THEN NULL ELSE floor(random() * 40) / 2 END
  FROM generate_series(1, 600) g;
SELECT ds_compare($$SELECT * FROM gpu_simjoin('ds_null', 1.5)$$);
SELECT ds_compare($$SELECT gpu_pair_count('ds_null', 1.5, '{x,y}')$$);
SELECT ds_compare($$SELECT gpu_sdh('ds_null', 16, '{x,y}')$$);
SELECT ds_compare($$SELECT * FROM gpu_dbscan('ds_null', 1.0, 4)$$);
SELECT (SELECT count(*) FROM gpu_simjoin('ds_null', 1.5)) AS pairs,
       (SELECT count(*) FROM ds_null a JOIN ds_null b ON a.id < b.id
         WHERE (a.x - b.x)^2 + (a.y - b.y)^2 <= 2.25) AS reference;

-- a table without NULLs: the fixed-offset path; pair counts against float64 SQL
CREATE TABLE ds_plain (id bigint PRIMARY KEY, x float8, y float8);
INSERT INTO ds_plain SELECT g, floor(random() * 60) / 2, floor(random() * 60) / 2 FROM generate_series(1, 800) g;
SELECT ds_compare($$SELECT * FROM gpu_simjoin('ds_plain', 1.0)$$);
SELECT ds_compare($$SELECT * FROM gpu_simjoin('ds_plain', 'ds_plain', 0.5)$$);
SELECT gpu_pair_count('ds_plain', 1.0) = ds_ref_pairs('ds_plain', 1.0) AS pair_count_matches_sql;
SET gpu2bs.direct_scan = off;
SELECT gpu_pair_count('ds_plain', 1.0) = ds_ref_pairs('ds_plain', 1.0) AS pair_count_matches_sql;
RESET gpu2bs.direct_scan;

-- dropped columns, a variable-width column before the coordinates, a column added with a
-- default (older rows do not store it)
CREATE TABLE ds_drop (note text, junk float8, id int PRIMARY KEY, gone int, x float8, y float8);
INSERT INTO ds_drop SELECT repeat('n', g % 50), g, g, g, floor(random() * 40) / 2, floor(random() * 40) / 2
  FROM generate_series(1, 300) g;
ALTER TABLE ds_drop DROP COLUMN junk;
ALTER TABLE ds_drop DROP COLUMN gone;
INSERT INTO ds_drop (note, id, x, y) SELECT NULL, g, floor(random() * 40) / 2, floor(random() * 40) / 2
  FROM generate_series(301, 600) g;
ALTER TABLE ds_drop ADD COLUMN z float8 DEFAULT 2.5;
INSERT INTO ds_drop (id, x, y, z) SELECT g, floor(random() * 40) / 2, floor(random() * 40) / 2, floor(random() * 40) / 2
  FROM generate_series(601, 700) g;
SELECT ds_compare($$SELECT * FROM gpu_simjoin('ds_drop', 1.5)$$);
SELECT ds_compare($$SELECT * FROM gpu_simjoin('ds_drop', 1.5, coords => '{x,y,z}')$$);
SELECT ds_compare($$SELECT gpu_sdh('ds_drop', 8, '{z,x,y}')$$);
SELECT (SELECT count(*) FROM gpu_simjoin('ds_drop', 1.5, coords => '{x,y,z}')) AS pairs,
       (SELECT count(*) FROM ds_drop a JOIN ds_drop b ON a.id < b.id
         WHERE (a.x - b.x)^2 + (a.y - b.y)^2 + (a.z - b.z)^2 <= 2.25) AS reference;

-- float4, smallint, integer and bigint coordinates (converted as the cast to float8 does,
-- including bigints that float8 rounds) and a smallint key
CREATE TABLE ds_types (id int2 PRIMARY KEY, a float4, b int2, c int4, d int8);
INSERT INTO ds_types SELECT g, (floor(random() * 40) / 2)::float4, (random() * 30)::int2, (random() * 30)::int4,
                            9007199254740993 + (random() * 30)::int8 * 2
  FROM generate_series(1, 400) g;
SELECT ds_compare($$SELECT * FROM gpu_simjoin('ds_types', 2.0, coords => '{a,b}')$$);
SELECT ds_compare($$SELECT * FROM gpu_simjoin('ds_types', 3.0, coords => '{b,c}')$$);
SELECT ds_compare($$SELECT * FROM gpu_simjoin('ds_types', 4.0, coords => '{c,d}')$$);
SELECT ds_compare($$SELECT gpu_pair_count('ds_types', 3.0, '{a,b,c}')$$);
SELECT (SELECT count(*) FROM gpu_simjoin('ds_types', 3.0, coords => '{b,c}')) AS pairs,
       (SELECT count(*) FROM ds_types s JOIN ds_types t ON s.id < t.id
         WHERE (s.b::float8 - t.b)^2 + (s.c::float8 - t.c)^2 <= 9) AS reference;
-- domains over float8 and int4, a temporary and an unlogged table, a partition read by itself
-- (direct) and its partitioned parent (the SQL query)
CREATE DOMAIN ds_coord AS float8 CHECK (VALUE >= 0);
CREATE DOMAIN ds_key AS int4;
CREATE TABLE ds_dom (id ds_key, x ds_coord, y ds_coord);
INSERT INTO ds_dom SELECT id, x, y FROM ds_plain WHERE id <= 300;
SELECT ds_compare($$SELECT * FROM gpu_simjoin('ds_dom', 1.0, coords => '{x,y}')$$);
CREATE TEMP TABLE ds_temp AS SELECT * FROM ds_plain WHERE id <= 300;
SELECT ds_compare($$SELECT * FROM gpu_simjoin('ds_temp', 1.0)$$);
CREATE UNLOGGED TABLE ds_unlogged AS SELECT * FROM ds_plain WHERE id <= 300;
SELECT ds_compare($$SELECT * FROM gpu_simjoin('ds_unlogged', 1.0)$$);
CREATE TABLE ds_part (id bigint, x float8, y float8) PARTITION BY RANGE (id);
CREATE TABLE ds_part_lo PARTITION OF ds_part FOR VALUES FROM (1) TO (400);
CREATE TABLE ds_part_hi PARTITION OF ds_part FOR VALUES FROM (400) TO (100000);
INSERT INTO ds_part SELECT * FROM ds_plain;
SELECT ds_compare($$SELECT * FROM gpu_simjoin('ds_part_lo', 1.0)$$);
SELECT ds_compare($$SELECT * FROM gpu_simjoin('ds_part', 1.0)$$);
SELECT (SELECT count(*) FROM gpu_simjoin('ds_part', 1.0)) = (SELECT count(*) FROM gpu_simjoin('ds_plain', 1.0)) AS partitioned_equals_plain;
DROP TABLE ds_dom, ds_temp, ds_unlogged, ds_part;
DROP DOMAIN ds_coord, ds_key;
-- numeric coordinates: the SQL query (path spi)
CREATE TABLE ds_numeric (id int PRIMARY KEY, x numeric, y numeric);
INSERT INTO ds_numeric SELECT id, x, y FROM ds_plain WHERE id <= 300;
SELECT ds_compare($$SELECT * FROM gpu_simjoin('ds_numeric', 1.0, coords => '{x,y}')$$);

-- NaN and infinite coordinates: the same error on both paths
CREATE TABLE ds_nan (id int PRIMARY KEY, x float4, y float8);
INSERT INTO ds_nan VALUES (1, 0, 0), (2, 1, 1), (3, 'NaN', 2), (4, 3, 'Infinity');
SELECT count(*) FROM gpu_simjoin('ds_nan', 1, coords => '{x,y}');
SET gpu2bs.direct_scan = off;
SELECT count(*) FROM gpu_simjoin('ds_nan', 1, coords => '{x,y}');
RESET gpu2bs.direct_scan;
DELETE FROM ds_nan WHERE id = 3;
SELECT gpu_pair_count('ds_nan', 1, '{x,y}');
SET gpu2bs.direct_scan = off;
SELECT gpu_pair_count('ds_nan', 1, '{x,y}');
RESET gpu2bs.direct_scan;

-- materialized views: populated (direct), not populated (the SQL query's error on both paths)
CREATE MATERIALIZED VIEW ds_mv AS SELECT id, x, y FROM ds_plain WHERE id % 3 <> 0;
SELECT ds_compare($$SELECT * FROM gpu_simjoin('ds_mv', 1.0, id => 'id')$$);
CREATE MATERIALIZED VIEW ds_mv_empty AS SELECT id, x, y FROM ds_plain WITH NO DATA;
SELECT count(*) FROM gpu_simjoin('ds_mv_empty', 1.0, id => 'id');
SET gpu2bs.direct_scan = off;
SELECT count(*) FROM gpu_simjoin('ds_mv_empty', 1.0, id => 'id');
RESET gpu2bs.direct_scan;

-- a view: the SQL query; a table and a view in one call: both paths
CREATE VIEW ds_view AS SELECT id, x, y FROM ds_plain WHERE id <= 500;
SELECT ds_compare($$SELECT * FROM gpu_simjoin('ds_view', 1.0, id => 'id')$$);
SELECT ds_compare($$SELECT * FROM gpu_simjoin('ds_plain', 'ds_view', 0.5, id => 'id')$$);
-- EXPLAIN ANALYZE of the custom scan names the path
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM gpu_simjoin('ds_plain', 1.0);
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT * FROM gpu_simjoin('ds_plain', 'ds_view', 0.5, id => 'id') LIMIT 1;
SET gpu2bs.direct_scan = off;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM gpu_simjoin('ds_plain', 1.0);
RESET gpu2bs.direct_scan;

-- inheritance: a parent is read with its children (the SQL query)
CREATE TABLE ds_parent (id int, x float8, y float8);
CREATE TABLE ds_child (extra text) INHERITS (ds_parent);
INSERT INTO ds_parent SELECT id, x, y FROM ds_plain WHERE id <= 200;
INSERT INTO ds_child SELECT id, x, y, 'c' FROM ds_plain WHERE id > 200 AND id <= 400;
SELECT ds_compare($$SELECT * FROM gpu_simjoin('ds_parent', 1.0)$$);
SELECT (SELECT count(*) FROM gpu_simjoin('ds_parent', 1.0)) AS pairs,
       (SELECT count(*) FROM gpu_simjoin('ds_plain', 1.0) WHERE id2 <= 400) AS reference;
SELECT ds_compare($$SELECT * FROM gpu_simjoin('ds_child', 1.0)$$);

-- rows deleted and updated earlier in the same transaction, and rows of an aborted
-- subtransaction: the snapshot's rows on both paths
BEGIN;
DELETE FROM ds_plain WHERE id % 5 = 0;
UPDATE ds_plain SET x = x + 0.5 WHERE id % 7 = 0;
SAVEPOINT s;
INSERT INTO ds_plain SELECT g, 1, 1 FROM generate_series(10001, 10100) g;
ROLLBACK TO s;
SELECT ds_compare($$SELECT * FROM gpu_simjoin('ds_plain', 1.0)$$);
SELECT gpu_pair_count('ds_plain', 1.0) = ds_ref_pairs('ds_plain', 1.0) AS pair_count_matches_sql;
ROLLBACK;

-- privileges and row-level security
SET client_min_messages = warning;
DROP ROLE IF EXISTS regress_gpu2bs_direct;
DROP ROLE IF EXISTS regress_gpu2bs_direct_owner;
RESET client_min_messages;
CREATE ROLE regress_gpu2bs_direct;
CREATE ROLE regress_gpu2bs_direct_owner;
CREATE TABLE ds_rls (id int PRIMARY KEY, x float8, y float8);
INSERT INTO ds_rls SELECT id, x, y FROM ds_plain WHERE id <= 400;
ALTER TABLE ds_rls ENABLE ROW LEVEL SECURITY;
CREATE POLICY ds_even ON ds_rls FOR SELECT USING (id % 2 = 0);
GRANT SELECT ON ds_rls TO regress_gpu2bs_direct;
CREATE TABLE ds_cols (id int PRIMARY KEY, x float8, y float8, z float8);
INSERT INTO ds_cols SELECT id, x, y, x + y FROM ds_plain WHERE id <= 400;
GRANT SELECT (id, x, y) ON ds_cols TO regress_gpu2bs_direct;
CREATE TABLE ds_none (id int PRIMARY KEY, x float8, y float8);
INSERT INTO ds_none SELECT id, x, y FROM ds_plain WHERE id <= 100;
CREATE SCHEMA ds_hidden;
CREATE TABLE ds_hidden.t (id int PRIMARY KEY, x float8, y float8);
INSERT INTO ds_hidden.t SELECT id, x, y FROM ds_plain WHERE id <= 100;
GRANT SELECT ON ds_hidden.t TO regress_gpu2bs_direct;
CREATE TABLE ds_int (id int PRIMARY KEY, x int4, y int4);
INSERT INTO ds_int SELECT id, x::int4, y::int4 FROM ds_plain WHERE id <= 100;
GRANT SELECT ON ds_int TO regress_gpu2bs_direct;
SELECT 'ds_hidden.t'::regclass::oid AS ds_hidden_oid \gset
-- a superuser is not subject to the policy: direct
SELECT ds_compare($$SELECT * FROM gpu_simjoin('ds_rls', 1.0)$$);
SELECT count(*) AS all_pairs FROM gpu_simjoin('ds_rls', 1.0);
SET ROLE regress_gpu2bs_direct;
-- the policy applies: the SQL query on both settings, fewer rows, only even ids
SELECT ds_compare($$SELECT * FROM gpu_simjoin('ds_rls', 1.0)$$);
SELECT count(*) AS restricted_pairs, bool_and(id1 % 2 = 0 AND id2 % 2 = 0) AS even_only
  FROM gpu_simjoin('ds_rls', 1.0);
-- SELECT on the columns read only: direct
SELECT ds_compare($$SELECT * FROM gpu_simjoin('ds_cols', 1.0, coords => '{x,y}')$$);
SELECT ds_compare($$SELECT gpu_pair_count('ds_cols', 1.0, '{x,y}')$$);
-- a column not granted, or no privilege at all: the SQL query's error on both settings
SELECT count(*) FROM gpu_simjoin('ds_cols', 1.0, coords => '{x,z}');
SET gpu2bs.direct_scan = off;
SELECT count(*) FROM gpu_simjoin('ds_cols', 1.0, coords => '{x,z}');
RESET gpu2bs.direct_scan;
SELECT gpu_pair_count('ds_none', 1.0);
SET gpu2bs.direct_scan = off;
SELECT gpu_pair_count('ds_none', 1.0);
RESET gpu2bs.direct_scan;
-- SELECT on a table in a schema without USAGE: the SQL query's error on both settings
SELECT count(*) FROM gpu_simjoin(:ds_hidden_oid, 1.0);
SET gpu2bs.direct_scan = off;
SELECT count(*) FROM gpu_simjoin(:ds_hidden_oid, 1.0);
RESET gpu2bs.direct_scan;
-- integer coordinates: direct while the cast to float8 may be executed; its EXECUTE privilege
-- revoked, the SQL query's error on both settings
SELECT ds_compare($$SELECT * FROM gpu_simjoin('ds_int', 1.0, coords => '{x,y}')$$);
RESET ROLE;
BEGIN;
REVOKE EXECUTE ON FUNCTION pg_catalog.float8(int4) FROM PUBLIC;
SET LOCAL ROLE regress_gpu2bs_direct;
SAVEPOINT s;
SELECT count(*) FROM gpu_simjoin('ds_int', 1.0, coords => '{x,y}');
ROLLBACK TO s;
SET LOCAL gpu2bs.direct_scan = off;
SELECT count(*) FROM gpu_simjoin('ds_int', 1.0, coords => '{x,y}');
ROLLBACK;
SET ROLE regress_gpu2bs_direct;
-- row_security = off where a policy applies: the SQL query's error on both settings
SET row_security = off;
SELECT count(*) FROM gpu_simjoin('ds_rls', 1.0);
SET gpu2bs.direct_scan = off;
SELECT count(*) FROM gpu_simjoin('ds_rls', 1.0);
RESET gpu2bs.direct_scan;
RESET row_security;
RESET ROLE;
-- the owner (not a superuser) is not subject to the policy: direct; with FORCE ROW LEVEL
-- SECURITY it is: the SQL query
ALTER TABLE ds_rls OWNER TO regress_gpu2bs_direct_owner;
SET ROLE regress_gpu2bs_direct_owner;
SELECT ds_compare($$SELECT * FROM gpu_simjoin('ds_rls', 1.0)$$);
RESET ROLE;
ALTER TABLE ds_rls FORCE ROW LEVEL SECURITY;
SET ROLE regress_gpu2bs_direct_owner;
SELECT ds_compare($$SELECT * FROM gpu_simjoin('ds_rls', 1.0)$$);
RESET ROLE;

DROP TABLE ds_rls, ds_cols, ds_none, ds_int;
DROP SCHEMA ds_hidden CASCADE;
DROP ROLE regress_gpu2bs_direct, regress_gpu2bs_direct_owner;
DROP VIEW ds_view;
DROP MATERIALIZED VIEW ds_mv, ds_mv_empty;
DROP TABLE ds_null, ds_plain, ds_drop, ds_types, ds_numeric, ds_nan, ds_parent CASCADE;
DROP FUNCTION ds_compare(text), ds_ref_pairs(regclass, float8);
