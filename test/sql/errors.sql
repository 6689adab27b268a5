--
-- Errors: each case shows the message and pins the SQLSTATE (\echo :SQLSTATE).
--
CREATE TABLE bad (id int, x float8, y float8, z float8);
INSERT INTO bad VALUES (1, 0, 0, 0), (2, 1, 1, 1);

-- NaN, Infinity and -Infinity coordinates: 22023, for every function and argument position.
-- The aggregates' own messages: with gpu2bs.direct_scan off whole-table aggregates are not
-- planned as the relation forms (whose message test/sql/agg_read.sql shows); the relation forms
-- give the same errors on both reading paths.
SET gpu2bs.direct_scan = off;
INSERT INTO bad VALUES (3, 'NaN', 0, 0);
SELECT gpu_sdh(x, y, z, 4) FROM bad;
\echo :SQLSTATE
SELECT gpu_sdh(x, y, z, 4, 1) FROM bad;
\echo :SQLSTATE
SELECT gpu_sdh(x, y, 4) FROM bad;
\echo :SQLSTATE
SELECT gpu_sdh_fixed(x, y, 4, 1.0) FROM bad;
\echo :SQLSTATE
SELECT gpu_sdh_width(x, y, z, 4) FROM bad;
\echo :SQLSTATE
SELECT gpu_sdh_width(x, y, 4) FROM bad;
\echo :SQLSTATE
SELECT gpu_pair_count(x, y, z, 1) FROM bad;
\echo :SQLSTATE
SELECT gpu_pair_count(x, y, 1) FROM bad;
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('bad', 1);
\echo :SQLSTATE
UPDATE bad SET x = 0, y = 'Infinity' WHERE id = 3;
SELECT gpu_sdh(x, y, z, 4) FROM bad;
\echo :SQLSTATE
SELECT gpu_sdh(y, x, 4) FROM bad;
\echo :SQLSTATE
SELECT gpu_pair_count(x, y, z, 1) FROM bad;
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('bad', 1);
\echo :SQLSTATE
UPDATE bad SET y = 0, z = '-Infinity' WHERE id = 3;
SELECT gpu_sdh(x, y, z, 4) FROM bad;
\echo :SQLSTATE
SELECT gpu_sdh_width(x, y, z, 4) FROM bad;
\echo :SQLSTATE
SELECT gpu_pair_count(x, y, z, 'Infinity') FROM bad;
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('bad', 1);
\echo :SQLSTATE
-- 2 coordinates not including the bad one are fine
SELECT * FROM gpu_simjoin('bad', 1, '{x,y}') ORDER BY id1, id2;
-- the bad row is found in the second relation too, and in a numeric column
SELECT * FROM gpu_simjoin('pts3', 'bad', 1);
\echo :SQLSTATE
CREATE TABLE bad_numeric (id int, a numeric, b numeric);
INSERT INTO bad_numeric VALUES (1, 0, 0), (2, 'NaN', 1);
SELECT * FROM gpu_simjoin('bad_numeric', 1, '{a,b}');
\echo :SQLSTATE
RESET gpu2bs.direct_scan;

-- eps must be positive: 0, negative, -Infinity and NaN are 22023
SELECT * FROM gpu_simjoin('pts3', 0);
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('pts3', -1);
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('pts3', -1e-300);
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('pts3', '-Infinity');
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('pts3', 'NaN');
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('pts3', 'pts3', 'NaN'::float8);
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('empty3', 0);
\echo :SQLSTATE

-- r must be >= 0 (0 and Infinity are fine): negative, -Infinity, NaN are 22023
SELECT gpu_pair_count(x, y, z, -1) FROM pts3;
\echo :SQLSTATE
SELECT gpu_pair_count(x, y, z, -1e-300) FROM pts3;
\echo :SQLSTATE
SELECT gpu_pair_count(x, y, z, '-Infinity') FROM pts3;
\echo :SQLSTATE
SELECT gpu_pair_count(x, y, z, 'NaN') FROM pts3;
\echo :SQLSTATE
SELECT gpu_pair_count(x, y, 'NaN') FROM pts3;
\echo :SQLSTATE
SELECT gpu_pair_count(x, y, -2) FROM pts2;
\echo :SQLSTATE
-- r must be the same in every row
SELECT gpu_pair_count(x, y, z, id) FROM pts3;
\echo :SQLSTATE

-- nbuckets must be 1 .. 1048576: 22023
SELECT gpu_sdh(x, y, z, 0) FROM pts3;
\echo :SQLSTATE
SELECT gpu_sdh(x, y, z, -1) FROM pts3;
\echo :SQLSTATE
SELECT gpu_sdh(x, y, z, 2147483647) FROM pts3;
\echo :SQLSTATE
SELECT gpu_sdh(x, y, z, 1048577) FROM pts3;
\echo :SQLSTATE
SELECT gpu_sdh(x, y, 0) FROM pts2;
\echo :SQLSTATE
SELECT gpu_sdh(x, y, z, 0, 1.0) FROM pts3;
\echo :SQLSTATE
SELECT gpu_sdh_fixed(x, y, -5, 1.0) FROM pts2;
\echo :SQLSTATE
SELECT gpu_sdh_width(x, y, z, 0) FROM pts3;
\echo :SQLSTATE
SELECT gpu_sdh_width(x, y, -1) FROM pts2;
\echo :SQLSTATE
-- nbuckets must be the same in every row
SELECT gpu_sdh(x, y, z, 1 + id % 2) FROM pts3;
\echo :SQLSTATE

-- width must be positive and finite: 22023
SELECT gpu_sdh(x, y, z, 4, 0) FROM pts3;
\echo :SQLSTATE
SELECT gpu_sdh(x, y, z, 4, -1) FROM pts3;
\echo :SQLSTATE
SELECT gpu_sdh(x, y, z, 4, 'NaN') FROM pts3;
\echo :SQLSTATE
SELECT gpu_sdh(x, y, z, 4, 'Infinity') FROM pts3;
\echo :SQLSTATE
SELECT gpu_sdh(x, y, z, 4, '-Infinity') FROM pts3;
\echo :SQLSTATE
SELECT gpu_sdh_fixed(x, y, 4, 0.0) FROM pts2;
\echo :SQLSTATE
SELECT gpu_sdh_fixed(x, y, 4, -0.5) FROM pts2;
\echo :SQLSTATE
-- width must be the same in every row
SELECT gpu_sdh(x, y, z, 4, id) FROM pts3;
\echo :SQLSTATE
-- a width so small that its reciprocal overflows (terse: the details print numbers)
\set VERBOSITY terse
SET gpu2bs.precision = float8;
SELECT gpu_sdh(x, y, z, 4, 1e-320) FROM pts3;
\echo :SQLSTATE
SET gpu2bs.precision = float4;
SELECT gpu_sdh(x, y, z, 4, 1e-39) FROM pts3;
\echo :SQLSTATE
-- eps, r and width whose square underflows or overflows the precision: 22023 with a hint (a pair
-- then passes by its distance alone, never by rounding that depends on other rows)
\set VERBOSITY default
SELECT * FROM gpu_simjoin('pts3', 1e-25);
\echo :SQLSTATE
SELECT gpu_pair_count(x, y, z, 1e-20) FROM pts3;
\echo :SQLSTATE
SELECT gpu_sdh(x, y, z, 4, 1e-20) FROM pts3;
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('pts3', 'pts3', 2e19);
\echo :SQLSTATE
SELECT gpu_pair_count(x, y, 1e20) FROM pts2;
\echo :SQLSTATE
SELECT gpu_sdh_fixed(x, y, 4, 1e20) FROM pts2;
\echo :SQLSTATE
SELECT gpu_sdh(x * 1e-30, y * 1e-30, z * 1e-30, 4) FROM pts3;
\echo :SQLSTATE
SET gpu2bs.precision = float8;
SELECT * FROM gpu_simjoin('pts3', 1e-300);
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('pts3', 1e-160);
\echo :SQLSTATE
SELECT gpu_pair_count(x, y, z, 1e-300) FROM pts3;
\echo :SQLSTATE
SELECT gpu_pair_count(x, y, z, 1e300) FROM pts3;
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('pts3', 1e300);
\echo :SQLSTATE
SELECT gpu_sdh(x, y, z, 4, 1e-160) FROM pts3;
\echo :SQLSTATE
SELECT gpu_sdh(x, y, z, 4, 1e200) FROM pts3;
\echo :SQLSTATE
-- the smallest accepted values still work (float8: eps 1.5e-154, float4: eps 1.1e-19)
SELECT count(*) FROM gpu_simjoin('pts3', 1.5e-154);
SET gpu2bs.precision = float4;
SELECT count(*) FROM gpu_simjoin('pts3', 1.1e-19);
SELECT * FROM gpu_simjoin('pts3', 1e-19);
\echo :SQLSTATE
\set VERBOSITY terse
-- coordinates beyond the range of the precision
SELECT gpu_sdh(x * 1e39, y, z, 4) FROM pts3;
\echo :SQLSTATE
SELECT gpu_pair_count(x * 1e17, y, z, 1) FROM pts3;
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('bad', 1, '{x,y}') WHERE false;
SET gpu2bs.precision = float8;
SELECT gpu_pair_count(x * 1e17, y, z, 1) FROM pts3;
SELECT gpu_pair_count(x * 1e150, y, z, 1) FROM pts3;
\echo :SQLSTATE
RESET gpu2bs.precision;
\set VERBOSITY default

-- relations: missing (42P01), a dropped relation's OID (42P01), not a table (42809)
SELECT * FROM gpu_simjoin('no_such_table', 1);
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('no_such_schema.pts3', 1);
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('pts3', 'no_such_table', 1);
\echo :SQLSTATE
CREATE TABLE dropped_soon (id int PRIMARY KEY, x float8, y float8);
SELECT 'dropped_soon'::regclass::oid AS dropped_oid \gset
DROP TABLE dropped_soon;
SELECT sqlstate_of(format('SELECT * FROM gpu_simjoin(%s, 1)', :dropped_oid));
SELECT * FROM gpu_simjoin('pts3_pkey', 1);
\echo :SQLSTATE
CREATE SEQUENCE a_sequence;
SELECT * FROM gpu_simjoin('a_sequence', 1);
\echo :SQLSTATE
DROP SEQUENCE a_sequence;

-- keys: no integer key (42703), a named key that is missing (42703) or not an integer (42804)
CREATE TABLE nokey (name text PRIMARY KEY, x float8, y float8);
INSERT INTO nokey VALUES ('a', 0, 0), ('b', 1, 1);
SELECT * FROM gpu_simjoin('nokey', 1);
\echo :SQLSTATE
CREATE TABLE compositekey (a int, b int, x float8, y float8, PRIMARY KEY (a, b));
SELECT * FROM gpu_simjoin('compositekey', 1);
\echo :SQLSTATE
CREATE TABLE textid (id text, x float8, y float8);
SELECT * FROM gpu_simjoin('textid', 1);
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('pts3', 1, id => 'no_such_column');
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('pts3', 1, id => 'x');
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('nokey', 1, id => 'name');
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('pts3', 1, id => 'ID');
\echo :SQLSTATE
-- a composite key whose first column is given works
SELECT * FROM gpu_simjoin('compositekey', 1, id => 'a');

-- coordinates: non-numeric (42804), missing (42703), too few or too many (22023), NULL (22004)
CREATE TABLE labelled (id int PRIMARY KEY, x float8, y float8, label text, at timestamptz, b boolean);
SELECT * FROM gpu_simjoin('labelled', 1, '{x,label}');
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('labelled', 1, '{at,x}');
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('labelled', 1, '{x,b}');
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('pts3', 1, '{x,w}');
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('pts3', 1, '{x,X}');
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('pts3', 1, '{x,ctid}');
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('pts3', 1, '{x}');
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('pts3', 1, '{}');
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('pts3', 1, '{x,y,z,x,y,z,x}');
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('pts3', 1, '{x,NULL}');
\echo :SQLSTATE
ALTER TABLE labelled DROP COLUMN label;
SELECT * FROM gpu_simjoin('labelled', 1, '{x,label}');
\echo :SQLSTATE
-- default coordinates: fewer than 2 float8 columns, or more than 6 (22023)
CREATE TABLE onecoord (id int PRIMARY KEY, x float8, y int, z real);
SELECT * FROM gpu_simjoin('onecoord', 1);
\echo :SQLSTATE
CREATE TABLE sevencoords (id int PRIMARY KEY, a float8, b float8, c float8, d float8, e float8, f float8, g float8);
SELECT * FROM gpu_simjoin('sevencoords', 1);
\echo :SQLSTATE
SELECT count(*) FROM gpu_simjoin('sevencoords', 1, '{a,b,c,d,e,f}');
INSERT INTO sevencoords VALUES (1, 0, 0, 0, 0, 0, 0, 0), (2, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 9);
SELECT * FROM gpu_simjoin('sevencoords', 1.3, '{a,b,c,d,e,f}');
SELECT * FROM gpu_simjoin('sevencoords', 1.2, '{a,b,c,d,e,f}');

-- two relations with different numbers of coordinates: 22023
SELECT * FROM gpu_simjoin('pts3', 'pts2', 1);
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('pts3', 'empty3', 1, '{x,y}');
SELECT * FROM gpu_simjoin('pts2', 'sevencoords', 1);
\echo :SQLSTATE

-- settings: unknown values and out-of-range numbers are refused (22023), and the prefix is
-- reserved (42602)
SET gpu2bs.device = 'tpu';
\echo :SQLSTATE
SET gpu2bs.precision = 'float16';
\echo :SQLSTATE
SET gpu2bs.cpu_threads = -1;
\echo :SQLSTATE
SET gpu2bs.cpu_threads = 1025;
\echo :SQLSTATE
SET gpu2bs.result_page_pairs = 63;
\echo :SQLSTATE
SET gpu2bs.max_result_rows = -1;
\echo :SQLSTATE
SET gpu2bs.gpu_memory_limit = -1;
\echo :SQLSTATE
-- lanes per query point: 0 or a power of two up to 32 (check hook)
SET gpu2bs.join_threads_per_point = 3;
\echo :SQLSTATE
SET gpu2bs.join_threads_per_point = 64;
\echo :SQLSTATE
SET gpu2bs.join_threads_per_point = 8;
SHOW gpu2bs.join_threads_per_point;
RESET gpu2bs.join_threads_per_point;
SET gpu2bs.no_such_setting = 1;
\echo :SQLSTATE
-- accepted spellings
SET gpu2bs.precision = 'FLOAT8';
SHOW gpu2bs.precision;
SET gpu2bs.precision = float64;
SHOW gpu2bs.precision;
SET gpu2bs.precision = float32;
SHOW gpu2bs.precision;
RESET gpu2bs.precision;
SHOW gpu2bs.precision;
SET gpu2bs.cpu_threads = 1;
SELECT gpu_pair_count(x, y, z, 2) FROM pts3;
RESET gpu2bs.cpu_threads;

-- an error inside a subtransaction leaves the session usable
DO $$
BEGIN
  PERFORM * FROM gpu_simjoin('bad', 1);
EXCEPTION WHEN invalid_parameter_value THEN
  RAISE NOTICE 'caught % (%)', SQLSTATE, SQLERRM;
END $$;
SELECT count(*) FROM gpu_simjoin('pts3', 1.1);
BEGIN;
SAVEPOINT s;
SELECT * FROM gpu_simjoin('bad', 1);
ROLLBACK TO SAVEPOINT s;
SELECT count(*) FROM gpu_simjoin('pts3', 1.1);
COMMIT;

DROP TABLE bad, bad_numeric, nokey, compositekey, textid, labelled, onecoord, sevencoords;
