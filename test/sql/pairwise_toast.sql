--
-- gpu_pairwise's direct reader on vectors stored every way PostgreSQL stores them: out of line
-- uncompressed (assembled from the TOAST relation's pages), out of line compressed, inline
-- compressed, inline plain, short inline arrays, NULL rows and keys, rows updated and deleted
-- (dead toast chunks left in the TOAST relation), double precision[]. Each result equals the
-- SQL path's (gpu2bs.direct_scan = off) with one worker thread and with several, and the kNN
-- lists equal a float64 reference.
--
SET extra_float_digits = 0;
SELECT setseed(0.1818);
-- Runs query `q` with the direct reader on (gpu2bs.cpu_threads = 1, then 4) and off; says
-- whether the results (as a multiset of rows) are equal, which path read the relations and how
-- the direct reader reached out-of-line values (from TOAST pages / through detoast_attr).
CREATE FUNCTION pt_compare(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  n1 bigint; n2 bigint; n3 bigint; h1 text; h2 text; h3 text; p1 text; p3 text; tp text; dt text;
  agg text := format('SELECT count(*), md5(coalesce(string_agg(t::text, %L ORDER BY t::text), %L)) FROM (%s) t', ';', '', q);
BEGIN
  PERFORM set_config('gpu2bs.direct_scan', 'on', true);
  PERFORM set_config('gpu2bs.cpu_threads', '1', true);
  EXECUTE agg INTO n1, h1;
  PERFORM set_config('gpu2bs.cpu_threads', '4', true);
  EXECUTE agg INTO n2, h2;
  SELECT value INTO p1 FROM gpu2bs_info() WHERE name = 'last_scan_path';
  SELECT value INTO tp FROM gpu2bs_info() WHERE name = 'last_toast_values_from_pages';
  SELECT value INTO dt FROM gpu2bs_info() WHERE name = 'last_toast_values_detoasted';
  PERFORM set_config('gpu2bs.direct_scan', 'off', true);
  EXECUTE agg INTO n3, h3;
  SELECT value INTO p3 FROM gpu2bs_info() WHERE name = 'last_scan_path';
  PERFORM set_config('gpu2bs.direct_scan', 'on', true);
  PERFORM set_config('gpu2bs.cpu_threads', '0', true);
  RETURN format('%s rows, %s; on: %s (pages %s, detoasted %s), off: %s', n1,
                CASE WHEN n1 = n2 AND n1 = n3 AND h1 = h2 AND h1 = h3 THEN 'equal' ELSE 'DIFFERENT' END,
                p1, coalesce(tp, '0'), coalesce(dt, '0'), p3);
END $$;
-- The error of query `q` (SQLSTATE, message and detail) with the direct reader on and off.
CREATE FUNCTION pt_error(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE e1 text := 'no error'; e2 text := 'no error'; det text;
BEGIN
  PERFORM set_config('gpu2bs.direct_scan', 'on', true);
  BEGIN EXECUTE q; EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS det = PG_EXCEPTION_DETAIL;
    e1 := SQLSTATE || ' ' || SQLERRM || ' (' || det || ')';
  END;
  PERFORM set_config('gpu2bs.direct_scan', 'off', true);
  BEGIN EXECUTE q; EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS det = PG_EXCEPTION_DETAIL;
    e2 := SQLSTATE || ' ' || SQLERRM || ' (' || det || ')';
  END;
  PERFORM set_config('gpu2bs.direct_scan', 'on', true);
  RETURN CASE WHEN e1 = e2 THEN 'same: ' || e1 ELSE 'DIFFERENT: ' || e1 || ' / ' || e2 END;
END $$;
-- A random real[] of d elements in [-1, 1), and one of d elements from a 4-value alphabet
-- (compresses well).
CREATE FUNCTION pt_vec(d int) RETURNS real[] LANGUAGE sql VOLATILE AS
  $$ SELECT array_agg((random() * 2 - 1)::real) FROM generate_series(1, d) $$;
CREATE FUNCTION pt_rep(d int) RETURNS real[] LANGUAGE sql VOLATILE AS
  $$ SELECT array_agg((floor(random() * 4) / 4)::real) FROM generate_series(1, d) $$;

-- d = 1200 (4.8 KB a vector): inline plain, out of line uncompressed (3 chunks), out of line
-- compressed (half random, half repetitive), inline compressed (repetitive), NULLs.
CREATE TABLE pt_items (id int, tag int, e real[]);
ALTER TABLE pt_items ALTER COLUMN e SET STORAGE PLAIN;
INSERT INTO pt_items SELECT g, 0, pt_vec(1200) FROM generate_series(1, 20) g;
ALTER TABLE pt_items ALTER COLUMN e SET STORAGE EXTENDED;
INSERT INTO pt_items SELECT g, 0, pt_vec(1200) FROM generate_series(21, 300) g;
INSERT INTO pt_items SELECT g, 0, pt_vec(600) || pt_rep(600) FROM generate_series(301, 330) g;
INSERT INTO pt_items SELECT g, 0, pt_rep(1200) FROM generate_series(331, 360) g;
INSERT INTO pt_items VALUES (361, 0, NULL), (NULL, 0, pt_vec(1200));
-- How the values are stored: compressed or not, by stored size (pg_column_size).
SELECT pg_column_compression(e) IS NOT NULL AS compressed, pg_column_size(e) > 4000 AS full_size, count(*)
FROM pt_items WHERE e IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2;
SELECT count(*) > 0 AS has_toast FROM pg_class WHERE oid = (SELECT reltoastrelid FROM pg_class WHERE relname = 'pt_items');
-- Dead chunks: new vectors for some rows, other rows updated without touching the vector (the
-- new version keeps the toast pointer), some rows deleted; no vacuum.
UPDATE pt_items SET e = pt_vec(1200) WHERE id % 7 = 0 AND id <= 300;
UPDATE pt_items SET tag = 1 WHERE id % 5 = 0;
DELETE FROM pt_items WHERE id % 11 = 0;
CREATE TABLE pt_queries (id int PRIMARY KEY, e real[]);
INSERT INTO pt_queries SELECT g, pt_vec(1200) FROM generate_series(1, 12) g;
INSERT INTO pt_queries SELECT 100 + id, e FROM pt_items WHERE id IN (25, 312, 340);

-- kNN, threshold, self kNN: the same rows on both paths.
SELECT pt_compare($$SELECT * FROM gpu_pairwise('pt_queries', 'pt_items', 'e', 'l2', k => 5)$$);
SELECT pt_compare($$SELECT * FROM gpu_pairwise('pt_queries', 'pt_items', 'e', 'cosine', k => 3)$$);
SELECT pt_compare($$SELECT * FROM gpu_pairwise('pt_items', 'pt_items', 'e', 'l1', k => 2)$$);
SELECT pt_compare($$SELECT * FROM gpu_pairwise('pt_queries', 'pt_items', 'e', 'l2', threshold => 19.5)$$);
-- A key NULL in the middle of the scan and an id column named explicitly.
SELECT pt_compare($$SELECT * FROM gpu_pairwise('pt_items', 'pt_queries', 'e', 'dot', k => 2, id => 'id')$$);

-- float64 reference: l2 of every returned pair, and the lists equal the float64 top 5.
CREATE FUNCTION pt_l2(a real[], b real[]) RETURNS float8 LANGUAGE sql IMMUTABLE AS
  $$ SELECT sqrt(sum((x::float8 - y::float8) ^ 2)) FROM unnest(a, b) AS t(x, y) $$;
CREATE TEMP TABLE pt_got AS SELECT * FROM gpu_pairwise('pt_queries', 'pt_items', 'e', 'l2', k => 5);
SELECT count(*) AS pairs,
       count(*) FILTER (WHERE abs(g.value - pt_l2(q.e, i.e)) > 1e-5 * (1 + pt_l2(q.e, i.e))) AS bad_values
FROM pt_got g JOIN pt_queries q ON q.id = g.id1 JOIN pt_items i ON i.id = g.id2;
WITH ref AS (
  SELECT q.id AS id1, i.id AS id2,
         row_number() OVER (PARTITION BY q.id ORDER BY pt_l2(q.e, i.e), i.id) AS rk
  FROM pt_queries q, pt_items i WHERE i.e IS NOT NULL AND i.id IS NOT NULL)
SELECT (SELECT count(*) FROM (SELECT id1, id2 FROM ref WHERE rk <= 5 EXCEPT SELECT id1, id2 FROM pt_got) x) AS missing,
       (SELECT count(*) FROM (SELECT id1, id2 FROM pt_got EXCEPT SELECT id1, id2 FROM ref WHERE rk <= 5) x) AS extra;
-- The stored copies of items 25, 312, 340 find themselves at distance 0.
SELECT id1, id2, value FROM pt_got WHERE id1 > 100 AND value = 0 ORDER BY id1;

-- double precision[] out of line (d = 400, 3.2 KB of random doubles, which do not compress),
-- with a few inline compressed rows.
CREATE FUNCTION pt_vec8(d int) RETURNS float8[] LANGUAGE sql VOLATILE AS
  $$ SELECT array_agg(random() * 2 - 1) FROM generate_series(1, d) $$;
CREATE TABLE pt_f8 (id bigint, e double precision[]);
INSERT INTO pt_f8 SELECT g, pt_vec8(400) FROM generate_series(1, 150) g;
INSERT INTO pt_f8 SELECT g, pt_rep(400)::float8[] FROM generate_series(151, 160) g;
UPDATE pt_f8 SET e = pt_vec8(400) WHERE id % 9 = 0;
SELECT pt_compare($$SELECT * FROM gpu_pairwise('pt_f8', 'pt_f8', 'e', 'l2', k => 4)$$);
SELECT pt_compare($$SELECT * FROM gpu_pairwise('pt_f8', 'pt_f8', 'e', 'sqeuclidean', threshold => 270)$$);
-- An element beyond the float4 range in an out-of-line float8 row.
UPDATE pt_f8 SET e = pt_vec8(200) || 1e39::float8 || pt_vec8(199) WHERE id = 77;
SELECT pt_error($$SELECT count(*) FROM gpu_pairwise('pt_f8', 'pt_f8', 'e', 'l2', k => 4)$$);

-- Small vectors (d = 8): short inline arrays only, no TOAST.
CREATE TABLE pt_small (id int, e real[]);
INSERT INTO pt_small SELECT g, pt_vec(8) FROM generate_series(1, 500) g;
SELECT pt_compare($$SELECT * FROM gpu_pairwise('pt_small', 'pt_small', 'e', 'l2', k => 3)$$);

-- Bad rows give the SQL path's error, the first in scan order: a ragged row, a non-finite
-- element, a NULL element, a multi-dimensional array, each stored out of line (an updated row
-- moves to the end of the table).
CREATE TABLE pt_bad (id int, e real[]);
INSERT INTO pt_bad SELECT g, pt_vec(1200) FROM generate_series(1, 40) g;
INSERT INTO pt_bad VALUES (41, pt_vec(1199));
SELECT pt_error($$SELECT count(*) FROM gpu_pairwise('pt_bad', 'pt_bad', 'e', 'l2', k => 2)$$);
DELETE FROM pt_bad WHERE id = 41;
UPDATE pt_bad SET e = pt_vec(700) || 'NaN'::real || pt_vec(499) WHERE id = 30;
SELECT pt_error($$SELECT count(*) FROM gpu_pairwise('pt_bad', 'pt_bad', 'e', 'l2', k => 2)$$);
DELETE FROM pt_bad WHERE id = 30;
UPDATE pt_bad SET e = pt_vec(700) || NULL::real || pt_vec(499) WHERE id = 20;
SELECT pt_error($$SELECT count(*) FROM gpu_pairwise('pt_bad', 'pt_bad', 'e', 'l2', k => 2)$$);
DELETE FROM pt_bad WHERE id = 20;
UPDATE pt_bad SET e = (SELECT array_agg(ARRAY[x, x]) FROM unnest(pt_vec(600)) x) WHERE id = 10;
SELECT pt_error($$SELECT count(*) FROM gpu_pairwise('pt_bad', 'pt_bad', 'e', 'l2', k => 2)$$);
DELETE FROM pt_bad WHERE id = 10;
SELECT pt_compare($$SELECT * FROM gpu_pairwise('pt_bad', 'pt_bad', 'e', 'l2', k => 2)$$);
-- An out-of-line row with an infinite element before an inline ragged row: the first one counts
-- although its values are checked only once the TOAST pages are read.
UPDATE pt_bad SET e = pt_vec(5) || '-Infinity'::real || pt_vec(1194) WHERE id = 5;
INSERT INTO pt_bad VALUES (50, '{1,2,3}');
SELECT pt_error($$SELECT count(*) FROM gpu_pairwise('pt_bad', 'pt_bad', 'e', 'l2', k => 2)$$);
-- A ragged first row (its length fixes d) against out-of-line rows after it.
CREATE TABLE pt_first (id int, e real[]);
INSERT INTO pt_first VALUES (1, pt_vec(1100));
INSERT INTO pt_first SELECT g, pt_vec(1200) FROM generate_series(2, 10) g;
SELECT pt_error($$SELECT count(*) FROM gpu_pairwise('pt_first', 'pt_first', 'e', 'l2', k => 2)$$);

DROP TABLE pt_items, pt_queries, pt_f8, pt_small, pt_bad, pt_first;
DROP FUNCTION pt_compare(text), pt_error(text), pt_vec(int), pt_vec8(int), pt_rep(int), pt_l2(real[], real[]);
