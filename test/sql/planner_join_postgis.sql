--
-- Planner integration with PostGIS: ST_DWithin (2-D) and ST_3DDWithin (3-D, PointZ) between
-- geometry(Point[Z]) columns of two tables run as the gpu2bs join; the same rows as PostGIS's
-- own evaluation (gpu2bs.enable_join = off), float8. PostGIS lives in a schema outside
-- search_path. Runs only when PostGIS is installable (test/expected/planner_join_postgis_1.out
-- is the output without it).
--
SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'postgis') AS have_postgis \gset
\if :have_postgis
LOAD 'gpu2bs';
SET client_min_messages = warning;
CREATE SCHEMA gis;
CREATE EXTENSION IF NOT EXISTS postgis SCHEMA gis;
RESET client_min_messages;
SET search_path = public;
SET gpu2bs.precision = float8;
SET max_parallel_workers_per_gather = 0;

-- points on a 0.05 lattice (distances exactly at the bounds), NULL and empty geometries
CREATE TABLE pjg_a (id int PRIMARY KEY, t float8, g gis.geometry(Point, 3857), g3 gis.geometry(PointZ, 3857),
                    g0 gis.geometry(Point), ga gis.geometry);
INSERT INTO pjg_a SELECT i, (i * 37 % 101)::float8,
  gis.st_setsrid(gis.st_makepoint((i % 20) * 0.05, (i / 20 % 20) * 0.05), 3857),
  gis.st_setsrid(gis.st_makepoint((i % 20) * 0.05, (i / 20 % 20) * 0.05, (i % 7) * 0.05), 3857),
  gis.st_makepoint((i % 20) * 0.05, (i / 20 % 20) * 0.05),
  gis.st_makepoint((i % 20) * 0.05, (i / 20 % 20) * 0.05)
FROM generate_series(1, 400) i;
UPDATE pjg_a SET g = NULL, g3 = NULL, g0 = NULL WHERE id % 50 = 1;
UPDATE pjg_a SET g = 'SRID=3857;POINT EMPTY', g0 = 'POINT EMPTY' WHERE id % 50 = 2;
CREATE TABLE pjg_b (id int PRIMARY KEY, g gis.geometry(Point, 3857), g3 gis.geometry(PointZ, 3857));
INSERT INTO pjg_b SELECT i,
  gis.st_setsrid(gis.st_makepoint((i % 15) * 0.07 + 0.01, (i / 15 % 20) * 0.05), 3857),
  gis.st_setsrid(gis.st_makepoint((i % 15) * 0.07 + 0.01, (i / 15 % 20) * 0.05, (i % 5) * 0.1), 3857)
FROM generate_series(1, 300) i;
ANALYZE pjg_a, pjg_b;

CREATE FUNCTION pjg_check(q text, OUT fired bool, OUT only_on bigint, OUT only_off bigint, OUT n bigint)
LANGUAGE plpgsql AS $$
DECLARE
  plan text := '';
  l text;
BEGIN
  PERFORM set_config('gpu2bs.enable_join', 'on', true);
  FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP plan := plan || l || E'\n'; END LOOP;
  fired := plan LIKE '%gpu2bs join%';
  EXECUTE 'CREATE TEMP TABLE pjg_on AS ' || q;
  PERFORM set_config('gpu2bs.enable_join', 'off', true);
  EXECUTE 'CREATE TEMP TABLE pjg_off AS ' || q;
  PERFORM set_config('gpu2bs.enable_join', 'on', true);
  EXECUTE 'SELECT count(*) FROM (TABLE pjg_on EXCEPT ALL TABLE pjg_off) d' INTO only_on;
  EXECUTE 'SELECT count(*) FROM (TABLE pjg_off EXCEPT ALL TABLE pjg_on) d' INTO only_off;
  EXECUTE 'SELECT count(*) FROM pjg_on' INTO n;
  DROP TABLE pjg_on;
  DROP TABLE pjg_off;
END $$;

SELECT shape, c.* FROM (VALUES
  ('ST_DWithin, self, id <', $$SELECT a.id, b.id AS bid FROM pjg_a a JOIN pjg_a b ON gis.st_dwithin(a.g, b.g, 0.1) AND a.id < b.id$$),
  ('ST_DWithin, self, t <', $$SELECT a.id, b.id AS bid, a.t FROM pjg_a a JOIN pjg_a b ON gis.st_dwithin(b.g, a.g, 0.05) AND a.t < b.t$$),
  ('ST_DWithin, two relations', $$SELECT a.id, b.id AS bid FROM pjg_a a JOIN pjg_b b ON gis.st_dwithin(a.g, b.g, 0.06)$$),
  ('ST_DWithin on PointZ (2-D)', $$SELECT a.id, b.id AS bid FROM pjg_a a JOIN pjg_b b ON gis.st_dwithin(a.g3, b.g3, 0.06)$$),
  ('ST_3DDWithin', $$SELECT a.id, b.id AS bid FROM pjg_a a JOIN pjg_b b ON gis.st_3ddwithin(a.g3, b.g3, 0.12)$$),
  ('ST_DWithin, SRID open', $$SELECT a.id, b.id AS bid FROM pjg_a a JOIN pjg_a b ON gis.st_dwithin(a.g0, b.g0, 0.1) AND a.id < b.id$$),
  ('count', $$SELECT count(*) FROM pjg_a a JOIN pjg_b b ON gis.st_dwithin(a.g, b.g, 0.1)$$),
  ('any geometry (not fired)', $$SELECT a.id, b.id AS bid FROM pjg_a a JOIN pjg_a b ON gis.st_dwithin(a.ga, b.ga, 0.1) AND a.id < b.id$$),
  ('left join (not fired)', $$SELECT a.id, b.id AS bid FROM pjg_a a LEFT JOIN pjg_b b ON gis.st_dwithin(a.g, b.g, 0.06)$$)
) s(shape, q), LATERAL pjg_check(q) c ORDER BY shape COLLATE "C";

EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM pjg_a a JOIN pjg_b b ON gis.st_dwithin(a.g, b.g, 0.06) AND a.id < b.id;

-- an open SRID is checked on every row (PostGIS raises an error for mixed SRIDs too)
UPDATE pjg_a SET g0 = gis.st_setsrid(g0, 4326) WHERE id = 5;
SELECT count(*) FROM pjg_a a JOIN pjg_a b ON gis.st_dwithin(a.g0, b.g0, 0.1) AND a.id < b.id;

DROP TABLE pjg_a, pjg_b;
DROP FUNCTION pjg_check(text);
DROP EXTENSION postgis;
DROP SCHEMA gis;
\else
\echo PostGIS is not installed: the PostGIS tests are skipped
\endif
