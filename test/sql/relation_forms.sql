--
-- Relation forms gpu_sdh(rel, nbuckets ...), gpu_sdh_fixed(rel, nbuckets, width ...) and
-- gpu_pair_count(rel, r ...): the rows are read like gpu_simjoin reads them and give the
-- aggregates' answers on the same rows.
--
-- equal to the aggregate forms (3-D, 2-D, derived and explicit width, both precisions)
SELECT gpu_pair_count('pts3', 2.5) = (SELECT gpu_pair_count(x, y, z, 2.5) FROM pts3) AS pc3,
       gpu_pair_count('pts2', 3, coords => '{x,y}') = (SELECT gpu_pair_count(x, y, 3) FROM pts2) AS pc2,
       gpu_pair_count('cloud3', 0.1) = (SELECT gpu_pair_count(x, y, z, 0.1) FROM cloud3) AS pc_cloud,
       gpu_pair_count('pts3', 0) = (SELECT gpu_pair_count(x, y, z, 0) FROM pts3) AS pc_zero,
       gpu_pair_count('pts3', 'Infinity') AS pc_all;
SELECT gpu_sdh('pts3', 7) = (SELECT gpu_sdh(x, y, z, 7) FROM pts3) AS sdh3,
       gpu_sdh('pts2', 5) = (SELECT gpu_sdh(x, y, 5) FROM pts2) AS sdh2,
       gpu_sdh_fixed('pts3', 6, 2.5) = (SELECT gpu_sdh_fixed(x, y, z, 6, 2.5) FROM pts3) AS sdh3w,
       gpu_sdh_fixed('pts2', 4, 3.5, '{x,y}') = (SELECT gpu_sdh_fixed(x, y, 4, 3.5) FROM pts2) AS sdh2w,
       gpu_sdh('pts2', 5, '{x,y}') = (SELECT gpu_sdh(x, y, 5) FROM pts2) AS sdh2_coords;
SELECT gpu_sdh('pts3', 5);
SET gpu2bs.precision = float8;
SELECT gpu_pair_count('cloud3', 0.2) = (SELECT gpu_pair_count(x, y, z, 0.2) FROM cloud3) AS pc_f64,
       gpu_sdh('cloud3', 9) = (SELECT gpu_sdh(x, y, z, 9) FROM cloud3) AS sdh_f64;
RESET gpu2bs.precision;
-- the engine ran and reported its timings under the function's name
SELECT gpu_pair_count('pts3', 1) IS NOT NULL AS ran;
SELECT value FROM gpu2bs_info() WHERE name = 'last_function';
SELECT gpu_sdh('pts3', 2) IS NOT NULL AS ran;
SELECT value FROM gpu2bs_info() WHERE name = 'last_function';
SELECT gpu_sdh_fixed('pts3', 2, 1.0) IS NOT NULL AS ran;
SELECT value FROM gpu2bs_info() WHERE name = 'last_function';
-- rows with a NULL coordinate are skipped, as by the aggregates (NULL keys do not matter)
SELECT gpu_pair_count('pts3_null', 3) = (SELECT gpu_pair_count(x, y, z, 3) FROM pts3_null) AS pc_null,
       gpu_sdh('pts3_null', 8) = (SELECT gpu_sdh(x, y, z, 8) FROM pts3_null) AS sdh_null;
-- With a relation name and a coordinate list given as literals, the 3-argument call
-- gpu_pair_count('t', r, '{x,y}') resolves to the 2-D aggregate gpu_pair_count(x, y, r):
-- coords is passed by name (or the name cast to regclass).
SELECT gpu_pair_count('pts2'::regclass, 3, '{x,y}') = gpu_pair_count('pts2', 3, coords => '{x,y}') AS same;
-- named coordinates of any numeric type; 4 to 6 coordinates (the pair count equals the
-- self-join's pair count, every SDH counts all pairs)
CREATE TABLE mixed6 (k int, a int, b numeric, c float4, d float8, e bigint, f smallint);
INSERT INTO mixed6
  SELECT g, g % 7, (g % 5) / 2.0, (g % 3)::float4, (g % 11) / 4.0, g % 2, (g % 13)::smallint
  FROM generate_series(1, 300) g;
SELECT gpu_pair_count('mixed6', 1.5, coords => '{a,b}') =
         (SELECT gpu_pair_count(a, b::float8, 1.5) FROM mixed6) AS pc_numeric,
       gpu_pair_count('mixed6', 2, coords => '{a,b,c,d}') =
         (SELECT count(*) FROM gpu_simjoin('mixed6', 2, '{a,b,c,d}', 'k')) AS pc4,
       gpu_pair_count('mixed6', 3, coords => '{a,b,c,d,e}') =
         (SELECT count(*) FROM gpu_simjoin('mixed6', 3, '{a,b,c,d,e}', 'k')) AS pc5,
       gpu_pair_count('mixed6', 4, coords => '{a,b,c,d,e,f}') =
         (SELECT count(*) FROM gpu_simjoin('mixed6', 4, '{a,b,c,d,e,f}', 'k')) AS pc6,
       (SELECT sum(v) FROM unnest(gpu_sdh('mixed6', 10, '{a,b,c,d,e,f}')) v) = 300 * 299 / 2 AS sdh6;
-- default coordinates: every float8 column (here d only: fewer than 2 is 22023)
SELECT gpu_pair_count('mixed6', 1);
\echo :SQLSTATE
-- a view, and a relation with the key left out of the coordinates by type
CREATE VIEW pts3_v AS SELECT x, y, z FROM pts3 WHERE id <= 300;
SELECT gpu_pair_count('pts3_v', 2) = (SELECT gpu_pair_count(x, y, z, 2) FROM pts3 WHERE id <= 300) AS pc_view;
-- no rows: NULL (as the aggregates); one row: no pairs
SELECT gpu_pair_count('empty3', 1) IS NULL AS pc_empty, gpu_sdh('empty3', 4) IS NULL AS sdh_empty;
CREATE TABLE allnull3 (x float8, y float8, z float8);
INSERT INTO allnull3 VALUES (NULL, 1, 2), (3, NULL, 4);
SELECT gpu_pair_count('allnull3', 1) IS NULL AS pc_allnull, gpu_sdh('allnull3', 4) IS NULL AS sdh_allnull;
SELECT gpu_pair_count('one3', 1) AS pc_one, gpu_sdh('one3', 3) AS sdh_one;
-- NULL arguments: NULL
SELECT gpu_pair_count(NULL::regclass, 1) IS NULL AS a, gpu_pair_count('pts3', NULL) IS NULL AS b,
       gpu_sdh(NULL::regclass, 3) IS NULL AS c, gpu_sdh('pts3', NULL) IS NULL AS d,
       gpu_sdh_fixed('pts3', 3, NULL) IS NULL AS e;
-- NaN and infinite coordinates are refused
CREATE TABLE nan3 (x float8, y float8, z float8);
INSERT INTO nan3 VALUES (0, 0, 0), (1, 'NaN', 1);
SELECT gpu_pair_count('nan3', 1);
\echo :SQLSTATE
SELECT gpu_sdh('nan3', 4);
\echo :SQLSTATE
UPDATE nan3 SET y = '-Infinity' WHERE x = 1;
SELECT gpu_pair_count('nan3', 1);
\echo :SQLSTATE
-- bad arguments: 22023 (checked before the relation is read)
SELECT gpu_pair_count('pts3', -1);
\echo :SQLSTATE
SELECT gpu_pair_count('pts3', 'NaN');
\echo :SQLSTATE
SELECT gpu_sdh('pts3', 0);
\echo :SQLSTATE
SELECT gpu_sdh('pts3', 1048577);
\echo :SQLSTATE
SELECT gpu_sdh_fixed('pts3', 4, 0);
\echo :SQLSTATE
SELECT gpu_sdh_fixed('pts3', 4, 'Infinity');
\echo :SQLSTATE
SELECT gpu_pair_count('pts3', 1, coords => '{x}');
\echo :SQLSTATE
SELECT gpu_pair_count('mixed6', 1, coords => '{a,b,c,d,e,f,k}');
\echo :SQLSTATE
-- bad relations and columns, as gpu_simjoin
SELECT gpu_pair_count('pts3', 1, coords => '{x,nope}');
\echo :SQLSTATE
CREATE TABLE texty (x float8, y text);
SELECT gpu_sdh('texty', 4, '{x,y}');
\echo :SQLSTATE
SELECT gpu_pair_count(0::oid::regclass, 1);
\echo :SQLSTATE
SELECT gpu_pair_count('pts3_pkey', 1);
\echo :SQLSTATE
-- privileges: read as the calling user (table, column and row-level security)
SET client_min_messages = warning;
DROP ROLE IF EXISTS regress_gpu2bs_relreader;
RESET client_min_messages;
CREATE ROLE regress_gpu2bs_relreader;
CREATE TABLE relsecret (x float8, y float8);
INSERT INTO relsecret SELECT x, y FROM pts2;
CREATE TABLE relcols (id int, x float8, y float8, z float8);
INSERT INTO relcols SELECT * FROM pts3;
GRANT SELECT (x, y) ON relcols TO regress_gpu2bs_relreader;
CREATE TABLE relrls (id int, x float8, y float8, z float8);
INSERT INTO relrls SELECT * FROM pts3;
ALTER TABLE relrls ENABLE ROW LEVEL SECURITY;
CREATE POLICY odd_rows ON relrls FOR SELECT USING (id % 2 = 1);
GRANT SELECT ON relrls TO regress_gpu2bs_relreader;
SELECT gpu_pair_count(x, y, z, 2) AS odd_pairs FROM pts3 WHERE id % 2 = 1;
SET ROLE regress_gpu2bs_relreader;
SELECT gpu_pair_count('relsecret', 1);
\echo :SQLSTATE
SELECT gpu_sdh('relsecret', 4);
\echo :SQLSTATE
SELECT gpu_pair_count('relcols', 1);
\echo :SQLSTATE
SELECT gpu_pair_count('relcols', 1, coords => '{x,y}') IS NOT NULL AS granted_columns;
SELECT gpu_pair_count('relrls', 2) AS visible_odd_pairs;
RESET ROLE;
DROP TABLE relsecret, relcols, relrls, mixed6, allnull3, nan3, texty;
DROP VIEW pts3_v;
DROP ROLE regress_gpu2bs_relreader;
