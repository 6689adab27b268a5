--
-- Privileges: gpu_simjoin reads the relation as the calling user, so table and column
-- privileges, schema USAGE and row-level security apply; names are quoted (no injection),
-- and the search_path cannot change what the extension runs.
--
SET client_min_messages = warning;
DROP ROLE IF EXISTS regress_gpu2bs_reader;
RESET client_min_messages;
CREATE ROLE regress_gpu2bs_reader;

CREATE TABLE secret3 (id int PRIMARY KEY, x float8, y float8, z float8);
INSERT INTO secret3 SELECT * FROM pts3 WHERE id <= 200;
CREATE TABLE colgrant (id int PRIMARY KEY, x float8, y float8, z float8);
INSERT INTO colgrant SELECT * FROM pts3 WHERE id <= 200;
GRANT SELECT (id, x, y) ON colgrant TO regress_gpu2bs_reader;
CREATE TABLE colgrant_noid (id int PRIMARY KEY, x float8, y float8);
INSERT INTO colgrant_noid SELECT id, x, y FROM pts3 WHERE id <= 200;
GRANT SELECT (x, y) ON colgrant_noid TO regress_gpu2bs_reader;
CREATE TABLE rls3 (id int PRIMARY KEY, x float8, y float8, z float8);
INSERT INTO rls3 SELECT * FROM pts3;
ALTER TABLE rls3 ENABLE ROW LEVEL SECURITY;
CREATE POLICY even_rows ON rls3 FOR SELECT USING (id % 2 = 0);
GRANT SELECT ON rls3 TO regress_gpu2bs_reader;
CREATE VIEW secret3_v AS SELECT id, x, y, z FROM secret3 WHERE id <= 100;
GRANT SELECT ON secret3_v TO regress_gpu2bs_reader;
CREATE SCHEMA hidden;
CREATE TABLE hidden.t (id int PRIMARY KEY, x float8, y float8);
INSERT INTO hidden.t SELECT id, x, y FROM pts2 WHERE id <= 50;
GRANT SELECT ON hidden.t TO regress_gpu2bs_reader;
SELECT 'hidden.t'::regclass::oid AS hidden_oid \gset
-- reference results, as the owner
CREATE TABLE rls_even_pairs AS
  SELECT * FROM gpu_simjoin('rls3', 2.1) WHERE id1 % 2 = 0 AND id2 % 2 = 0;
CREATE TABLE view_pairs AS SELECT * FROM gpu_simjoin('pts3', 2.1) WHERE id2 <= 100;
GRANT SELECT ON rls_even_pairs, view_pairs, pts3 TO regress_gpu2bs_reader;
SELECT count(*) AS all_pairs, (SELECT count(*) FROM rls_even_pairs) AS even_pairs FROM gpu_simjoin('rls3', 2.1);

SET ROLE regress_gpu2bs_reader;
-- no SELECT on the table: 42501, in both forms and for the aggregates (SELECT on pts3 is
-- granted)
SELECT * FROM gpu_simjoin('secret3', 1);
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('pts3', 'secret3', 1);
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('secret3', 'pts3', 1);
\echo :SQLSTATE
SELECT gpu_sdh(x, y, z, 4) FROM secret3;
\echo :SQLSTATE
-- a system catalog
SELECT * FROM gpu_simjoin('pg_authid', 1, '{rolconnlimit,rolconnlimit}', 'rolconnlimit');
\echo :SQLSTATE
-- column privileges: the coordinates read must all be granted, and the key too
SELECT * FROM gpu_simjoin('colgrant', 1);
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('colgrant', 1, '{x,z}');
\echo :SQLSTATE
SELECT count(*) FROM gpu_simjoin('colgrant', 1.1, '{x,y}');
SELECT count(*) FROM gpu_simjoin('colgrant', 1.1, '{x,y}', 'id');
SELECT * FROM gpu_simjoin('colgrant_noid', 1);
\echo :SQLSTATE
-- row-level security: only the visible (even) rows take part
SELECT * FROM cmp_pairs($$SELECT id1, id2 FROM gpu_simjoin('rls3', 2.1)$$,
                        $$SELECT id1, id2 FROM rls_even_pairs$$);
SELECT count(*) AS odd_ids FROM gpu_simjoin('rls3', 'Infinity') WHERE id1 % 2 = 1 OR id2 % 2 = 1;
SELECT count(*) AS n_pairs, 300 * 299 / 2 AS want FROM gpu_simjoin('rls3', 'Infinity');
SELECT gpu_pair_count(x, y, z, 'Infinity') AS visible_pairs FROM rls3;
-- a view runs with its owner's privileges on the table below it
SELECT * FROM cmp_pairs($$SELECT id1, id2 FROM gpu_simjoin('secret3_v', 2.1)$$,
                        $$SELECT id1, id2 FROM view_pairs$$);
-- no USAGE on the schema: by name, and by OID
SELECT * FROM gpu_simjoin('hidden.t', 1);
\echo :SQLSTATE
SELECT sqlstate_of(format('SELECT * FROM gpu_simjoin(%s, 1)', :hidden_oid));
RESET ROLE;
SELECT count(*) FROM gpu_simjoin('hidden.t', 1.1);

-- SQL injection attempts in column names are only names: undefined column (42703)
SELECT * FROM gpu_simjoin('pts3', 1, coords => '{"x) FROM pg_authid --", y}');
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('pts3', 1, coords => '{x, "y)::float8 FROM pg_authid; SELECT (1"}');
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('pts3', 1, id => 'id) FROM pg_authid --');
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('pts3', 1, '{x,y}', '"id"');
\echo :SQLSTATE
-- ... and columns that really have such names work
CREATE TABLE "inj"")--" ("id) FROM pg_authid --" int PRIMARY KEY, "x"", 1e300::float8 AS y --" float8, "y;DROP TABLE pts3" float8);
INSERT INTO "inj"")--" SELECT id, x, y FROM pts2;
SELECT * FROM cmp_pairs($$SELECT id1, id2 FROM gpu_simjoin('"inj"")--"', 1.6)$$,
                        $$SELECT id1, id2 FROM gpu_simjoin('pts2', 1.6)$$);
SELECT count(*) FROM gpu_simjoin('"inj"")--"', 1.6, '{"x\", 1e300::float8 AS y --","y;DROP TABLE pts3"}', 'id) FROM pg_authid --');
SELECT count(*) AS pts3_still_there FROM pts3;

-- a hostile search_path: a schema ahead of pg_catalog with look-alike types, functions and
-- operators changes nothing the extension runs
CREATE TEMP TABLE sp_before AS SELECT * FROM gpu_simjoin('pts3', 2.1);
CREATE TEMP TABLE sp_before_agg AS
  SELECT gpu_sdh(x, y, z, 10) AS h, gpu_pair_count(x, y, z, 2.5) AS pc, gpu_sdh_width(x, y, z, 10) AS w FROM pts3;
CREATE TEMP TABLE sp_before_mixed AS SELECT * FROM gpu_simjoin('"My Schema"."Pts"', 2.1, '{X,"y Y"}', 'Key');
CREATE SCHEMA evil;
CREATE DOMAIN evil.float8 AS pg_catalog.int4;
CREATE DOMAIN evil.int8 AS pg_catalog.int2;
CREATE FUNCTION evil.float8(pg_catalog.int4) RETURNS pg_catalog.float8 LANGUAGE sql AS 'SELECT 0::pg_catalog.float8';
CREATE FUNCTION evil.float8(pg_catalog.numeric) RETURNS pg_catalog.float8 LANGUAGE sql AS 'SELECT 0::pg_catalog.float8';
CREATE FUNCTION evil.int8(pg_catalog.int4) RETURNS pg_catalog.int8 LANGUAGE sql AS 'SELECT 0::pg_catalog.int8';
CREATE FUNCTION evil.sqrt(pg_catalog.float8) RETURNS pg_catalog.float8 LANGUAGE sql AS 'SELECT 0::pg_catalog.float8';
CREATE FUNCTION evil.minus(pg_catalog.float8, pg_catalog.float8) RETURNS pg_catalog.float8 LANGUAGE sql AS 'SELECT 0::pg_catalog.float8';
CREATE OPERATOR evil.- (LEFTARG = pg_catalog.float8, RIGHTARG = pg_catalog.float8, FUNCTION = evil.minus);
CREATE OPERATOR evil.* (LEFTARG = pg_catalog.float8, RIGHTARG = pg_catalog.float8, FUNCTION = evil.minus);
CREATE OPERATOR evil.<= (LEFTARG = pg_catalog.float8, RIGHTARG = pg_catalog.float8, FUNCTION = evil.minus);
CREATE TABLE evil.pts3_decoy (id int PRIMARY KEY, x float8, y float8, z float8);
SET search_path = evil, pg_catalog, public;
CREATE TEMP TABLE sp_after AS SELECT * FROM public.gpu_simjoin('public.pts3', 2.1);
CREATE TEMP TABLE sp_after_agg AS
  SELECT public.gpu_sdh(x, y, z, 10) AS h, public.gpu_pair_count(x, y, z, 2.5) AS pc,
         public.gpu_sdh_width(x, y, z, 10) AS w FROM public.pts3;
CREATE TEMP TABLE sp_after_mixed AS SELECT * FROM public.gpu_simjoin('"My Schema"."Pts"', 2.1, '{X,"y Y"}', 'Key');
CREATE TEMP TABLE sp_after_numeric AS SELECT * FROM public.gpu_simjoin('public.mixed', 4.2, '{a,b,d}');
RESET search_path;
SELECT (SELECT count(*) FROM sp_before) AS n,
       (SELECT count(*) FROM (SELECT * FROM sp_before EXCEPT ALL SELECT * FROM sp_after) a) AS only_before,
       (SELECT count(*) FROM (SELECT * FROM sp_after EXCEPT ALL SELECT * FROM sp_before) b) AS only_after,
       (SELECT count(*) FROM (SELECT * FROM sp_before_mixed EXCEPT ALL SELECT * FROM sp_after_mixed) c) AS only_before_mixed,
       (SELECT count(*) FROM (SELECT * FROM sp_after_mixed EXCEPT ALL SELECT * FROM sp_before_mixed) d) AS only_after_mixed;
SELECT a.h = b.h AS same_sdh, a.pc = b.pc AS same_count, a.w = b.w AS same_width FROM sp_before_agg a, sp_after_agg b;
SELECT * FROM cmp_pairs($$SELECT id1, id2 FROM sp_after_numeric$$,
                        $$SELECT id1, id2 FROM gpu_simjoin('mixed', 4.2, '{a,b,d}')$$);

DROP SCHEMA evil CASCADE;
DROP TABLE "inj"")--";
DROP TABLE secret3, colgrant, colgrant_noid, rls3, rls_even_pairs, view_pairs CASCADE;
DROP SCHEMA hidden CASCADE;
DROP OWNED BY regress_gpu2bs_reader;
DROP ROLE regress_gpu2bs_reader;
