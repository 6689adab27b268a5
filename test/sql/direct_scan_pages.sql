--
-- The direct heap reader on tables of many pages: pages pinned in chunks, all-visible pages
-- read without per-tuple visibility checks, tuples without NULLs parsed at fixed offsets on
-- worker threads (gpu2bs.cpu_threads > 1), pages holding a NULL, a short tuple or a non-finite
-- value read again tuple by tuple on the backend thread. Every case gives the rows of the SQL
-- query (gpu2bs.direct_scan = off) in the same order, with one worker thread and with several;
-- pair counts are checked against float64 SQL over lattice points.
--
SELECT setseed(0.3131);
-- Runs query `q` with the direct reader on (gpu2bs.cpu_threads = 1, then 4) and off; says
-- whether the results (as a multiset of rows) are equal, and which path read the relation.
CREATE FUNCTION dp_compare(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  n1 bigint; n2 bigint; n3 bigint; h1 text; h2 text; h3 text; p1 text; p3 text;
  agg text := format('SELECT count(*), md5(coalesce(string_agg(t::text, %L ORDER BY t::text), %L)) FROM (%s) t', ';', '', q);
BEGIN
  PERFORM set_config('gpu2bs.direct_scan', 'on', true);
  PERFORM set_config('gpu2bs.cpu_threads', '1', true);
  EXECUTE agg INTO n1, h1;
  SELECT value INTO p1 FROM gpu2bs_info() WHERE name = 'last_scan_path';
  PERFORM set_config('gpu2bs.cpu_threads', '4', true);
  EXECUTE agg INTO n2, h2;
  PERFORM set_config('gpu2bs.direct_scan', 'off', true);
  EXECUTE agg INTO n3, h3;
  SELECT value INTO p3 FROM gpu2bs_info() WHERE name = 'last_scan_path';
  PERFORM set_config('gpu2bs.direct_scan', 'on', true);
  PERFORM set_config('gpu2bs.cpu_threads', '0', true);
  RETURN format('%s rows, %s; on: %s, off: %s', n1,
                CASE WHEN n1 = n2 AND n1 = n3 AND h1 = h2 AND h1 = h3 THEN 'equal' ELSE 'DIFFERENT' END, p1, p3);
END $$;
-- Pairs within 0.5 among lattice points (multiples of 0.5) of relation `rel` (columns id, x, y,
-- no NULLs) by float64 SQL: at distance 0 or 0.5 the two points share x or y.
CREATE FUNCTION dp_ref_pairs(rel regclass) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  EXECUTE format('SELECT (SELECT count(*) FROM %1$s a JOIN %1$s b ON a.x = b.x
                           WHERE a.id < b.id AND (a.y - b.y)^2 <= 0.25)
                       + (SELECT count(*) FROM %1$s a JOIN %1$s b ON a.y = b.y
                           WHERE a.id < b.id AND (a.x - b.x)^2 = 0.25)', rel) INTO n;
  RETURN n;
END $$;

-- 20,000 rows over about 140 pages, frozen all-visible by VACUUM: the page-at-a-time path
CREATE TABLE dp_big (id int PRIMARY KEY, x float8, y float8);
INSERT INTO dp_big SELECT g, floor(random() * 200) / 2, floor(random() * 200) / 2 FROM generate_series(1, 20000) g;
VACUUM (FREEZE, ANALYZE) dp_big;
SELECT pg_relation_size('dp_big') / current_setting('block_size')::int >= 64 AS many_pages;
SELECT dp_compare($$SELECT * FROM gpu_simjoin('dp_big', 0.5)$$);
SELECT dp_compare($$SELECT gpu_pair_count('dp_big', 0.5, '{x,y}')$$);
SELECT dp_compare($$SELECT gpu_sdh('dp_big', 40, '{x,y}')$$);
SELECT gpu_pair_count('dp_big', 0.5, '{x,y}') = dp_ref_pairs('dp_big') AS pair_count_matches_sql;
SET gpu2bs.cpu_threads = 1;
SELECT gpu_pair_count('dp_big', 0.5, '{x,y}') = dp_ref_pairs('dp_big') AS pair_count_matches_sql_one_thread;
RESET gpu2bs.cpu_threads;
-- the relation form and the aggregate form count the same pairs
SELECT gpu_pair_count('dp_big', 0.5, '{x,y}') = (SELECT gpu_pair_count(x, y, 0.5) FROM dp_big) AS same_as_aggregate;

-- rows updated, deleted and inserted in this transaction: those pages are no longer
-- all-visible and are checked tuple by tuple; the others keep the fast path
BEGIN;
UPDATE dp_big SET x = x + 0.5 WHERE id % 97 = 0;
DELETE FROM dp_big WHERE id % 89 = 0;
INSERT INTO dp_big SELECT g, floor(random() * 200) / 2, floor(random() * 200) / 2 FROM generate_series(20001, 20300) g;
SELECT dp_compare($$SELECT * FROM gpu_simjoin('dp_big', 0.5)$$);
SELECT gpu_pair_count('dp_big', 0.5, '{x,y}') = dp_ref_pairs('dp_big') AS pair_count_matches_sql;
ROLLBACK;
-- a serializable transaction: every page checked for serialization conflicts
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT dp_compare($$SELECT * FROM gpu_simjoin('dp_big', 0.5)$$);
SELECT gpu_pair_count('dp_big', 0.5, '{x,y}') = dp_ref_pairs('dp_big') AS pair_count_matches_sql;
COMMIT;

-- NULL keys and coordinates scattered over the pages: those pages are read tuple by tuple and
-- the rows after them close the gaps of the skipped rows
CREATE TABLE dp_null (id int, x float8, y float8);
INSERT INTO dp_null
  SELECT CASE WHEN g % 1301 = 0 THEN NULL ELSE g END,
         CASE WHEN g % 977 = 1 THEN NULL ELSE floor(random() * 200) / 2 END,
         CASE WHEN g % 3001 = 2 THEN NULL ELSE floor(random() * 200) / 2 END
  FROM generate_series(1, 20000) g;
VACUUM dp_null;
SELECT dp_compare($$SELECT * FROM gpu_simjoin('dp_null', 0.5)$$);
SELECT dp_compare($$SELECT gpu_pair_count('dp_null', 0.5, '{x,y}')$$);
SELECT (SELECT count(*) FROM gpu_simjoin('dp_null', 0.5)) AS pairs,
       (SELECT count(*) FROM dp_null a JOIN dp_null b ON a.x = b.x
         WHERE a.id < b.id AND (a.y - b.y)^2 <= 0.25)
     + (SELECT count(*) FROM dp_null a JOIN dp_null b ON a.y = b.y
         WHERE a.id < b.id AND (a.x - b.x)^2 = 0.25) AS reference;

-- a dropped fixed-width column before the coordinates (fixed offsets past it), a dropped
-- variable-width column (every tuple deformed), a column added later with a default (older
-- tuples are shorter: read tuple by tuple)
CREATE TABLE dp_drop (gone int8, id int PRIMARY KEY, x float8, y float8);
INSERT INTO dp_drop SELECT g, g, floor(random() * 200) / 2, floor(random() * 200) / 2 FROM generate_series(1, 20000) g;
ALTER TABLE dp_drop DROP COLUMN gone;
VACUUM dp_drop;
SELECT dp_compare($$SELECT * FROM gpu_simjoin('dp_drop', 0.5)$$);
SELECT gpu_pair_count('dp_drop', 0.5, '{x,y}') = dp_ref_pairs('dp_drop') AS pair_count_matches_sql;
CREATE TABLE dp_var (note text, id int PRIMARY KEY, x float8, y float8);
INSERT INTO dp_var SELECT repeat('v', g % 30), g, floor(random() * 200) / 2, floor(random() * 200) / 2 FROM generate_series(1, 20000) g;
ALTER TABLE dp_var DROP COLUMN note;
VACUUM dp_var;
SELECT dp_compare($$SELECT * FROM gpu_simjoin('dp_var', 0.5)$$);
SELECT gpu_pair_count('dp_var', 0.5, '{x,y}') = dp_ref_pairs('dp_var') AS pair_count_matches_sql;
ALTER TABLE dp_drop ADD COLUMN z float8 DEFAULT 1.5;
INSERT INTO dp_drop (id, x, y, z) SELECT g, floor(random() * 200) / 2, floor(random() * 200) / 2, 2 FROM generate_series(20001, 30000) g;
VACUUM dp_drop;
SELECT dp_compare($$SELECT * FROM gpu_simjoin('dp_drop', 0.5, coords => '{x,y,z}')$$);
SELECT dp_compare($$SELECT gpu_sdh('dp_drop', 16, '{z,x,y}')$$);

-- float4 and integer coordinates, a bigint key, converted as the casts convert them
CREATE TABLE dp_types (id int8 PRIMARY KEY, a float4, b int2, c int4);
INSERT INTO dp_types SELECT g * 3, (floor(random() * 200) / 2)::float4, (random() * 100)::int2, (random() * 100)::int4
  FROM generate_series(1, 20000) g;
VACUUM dp_types;
SELECT dp_compare($$SELECT * FROM gpu_simjoin('dp_types', 1.0, coords => '{a,b}')$$);
SELECT dp_compare($$SELECT * FROM gpu_simjoin('dp_types', 1.0, coords => '{b,c}')$$);

-- a NaN and an infinite coordinate deep in the table: the first one in the table's order is
-- the error on both paths, with one and with several threads
CREATE TABLE dp_nan (id int PRIMARY KEY, x float8, y float4);
INSERT INTO dp_nan SELECT g, floor(random() * 200) / 2, floor(random() * 200) / 2 FROM generate_series(1, 20000) g;
UPDATE dp_nan SET y = 'Infinity' WHERE id = 15000;
UPDATE dp_nan SET x = 'NaN' WHERE id = 12000;
VACUUM dp_nan;
SELECT gpu_pair_count('dp_nan', 0.5, '{x,y}');
SET gpu2bs.cpu_threads = 1;
SELECT gpu_pair_count('dp_nan', 0.5, '{x,y}');
SET gpu2bs.direct_scan = off;
SELECT gpu_pair_count('dp_nan', 0.5, '{x,y}');
RESET gpu2bs.direct_scan;
RESET gpu2bs.cpu_threads;
DELETE FROM dp_nan WHERE id = 12000;
SELECT count(*) FROM gpu_simjoin('dp_nan', 0.5, coords => '{x,y}');
SET gpu2bs.direct_scan = off;
SELECT count(*) FROM gpu_simjoin('dp_nan', 0.5, coords => '{x,y}');
RESET gpu2bs.direct_scan;

DROP TABLE dp_big, dp_null, dp_drop, dp_var, dp_types, dp_nan;
DROP FUNCTION dp_compare(text), dp_ref_pairs(regclass);
