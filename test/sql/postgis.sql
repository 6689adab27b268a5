--
-- PostGIS point columns: coords => '{geom}' reads x, y from geometry(Point) and x, y, z from
-- geometry(PointZ), through ST_X/ST_Y/ST_Z/ST_SRID qualified with PostGIS's own schema (here a
-- schema outside search_path). Same pairs as the float8 columns of the same points; SRIDs must
-- agree (22023); other geometries and geography are refused (22023). Runs only when PostGIS is
-- installable (test/expected/postgis_1.out is the output without it).
--
SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'postgis') AS have_postgis \gset
\if :have_postgis
SET client_min_messages = warning;
CREATE SCHEMA gis;
CREATE EXTENSION IF NOT EXISTS postgis SCHEMA gis;
RESET client_min_messages;
SET search_path = public;  -- PostGIS's schema is not on the path: gpu2bs qualifies its calls
-- look-alikes on the path are never called
CREATE FUNCTION public.st_x(anyelement) RETURNS float8 LANGUAGE sql AS 'SELECT 1e6::float8';
SET gpu2bs.precision = float8;

-- the same points as float8 columns and as 2-D and 3-D geometry
CREATE TABLE gpts (id int PRIMARY KEY, x float8, y float8, z float8,
                   g2 gis.geometry(Point, 3857), g3 gis.geometry(PointZ, 3857),
                   gm gis.geometry(PointM, 3857), gzm gis.geometry(PointZM, 3857));
INSERT INTO gpts SELECT i, (i % 7) * 0.5, (i % 5) * 0.5, (i % 3) * 0.5,
  gis.st_setsrid(gis.st_makepoint((i % 7) * 0.5, (i % 5) * 0.5), 3857),
  gis.st_setsrid(gis.st_makepoint((i % 7) * 0.5, (i % 5) * 0.5, (i % 3) * 0.5), 3857),
  gis.st_setsrid(gis.st_makepointm((i % 7) * 0.5, (i % 5) * 0.5, 99), 3857),
  gis.st_setsrid(gis.st_makepoint((i % 7) * 0.5, (i % 5) * 0.5, (i % 3) * 0.5, 99), 3857)
FROM generate_series(1, 60) i;
CREATE TABLE gpts_b AS SELECT id + 1000 AS id, x + 0.25 AS x, y, z,
  gis.st_translate(g2, 0.25, 0)::gis.geometry(Point, 3857) AS g2,
  gis.st_translate(g3, 0.25, 0, 0)::gis.geometry(PointZ, 3857) AS g3 FROM gpts;
ALTER TABLE gpts_b ADD PRIMARY KEY (id);

-- pairs only one side has (both 0) and the pair count, for both scans
CREATE FUNCTION pair_diff(a text, b text, OUT only_a bigint, OUT only_b bigint, OUT n bigint)
LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('SELECT count(*) FROM ((%s) EXCEPT ALL (%s)) d', a, b) INTO only_a;
  EXECUTE format('SELECT count(*) FROM ((%s) EXCEPT ALL (%s)) d', b, a) INTO only_b;
  EXECUTE format('SELECT count(*) FROM (%s) d', a) INTO n;
END $$;

SELECT scan, c.* FROM (VALUES ('on'), ('off')) s(scan),
  LATERAL (SELECT set_config('gpu2bs.enable_customscan', scan, false)) cfg,
  LATERAL (
    SELECT '2-D self' AS form, * FROM pair_diff(
      $$SELECT id1, id2, dist FROM gpu_simjoin('gpts', 0.8, '{g2}')$$,
      $$SELECT id1, id2, dist FROM gpu_simjoin('gpts', 0.8, '{x,y}')$$)
    UNION ALL
    SELECT '3-D self', * FROM pair_diff(
      $$SELECT id1, id2, dist FROM gpu_simjoin('gpts', 0.8, '{g3}')$$,
      $$SELECT id1, id2, dist FROM gpu_simjoin('gpts', 0.8, '{x,y,z}')$$)
    UNION ALL
    SELECT 'PointM as 2-D', * FROM pair_diff(
      $$SELECT id1, id2, dist FROM gpu_simjoin('gpts', 0.8, '{gm}')$$,
      $$SELECT id1, id2, dist FROM gpu_simjoin('gpts', 0.8, '{x,y}')$$)
    UNION ALL
    SELECT 'PointZM as 3-D', * FROM pair_diff(
      $$SELECT id1, id2, dist FROM gpu_simjoin('gpts', 0.8, '{gzm}')$$,
      $$SELECT id1, id2, dist FROM gpu_simjoin('gpts', 0.8, '{x,y,z}')$$)
    UNION ALL
    SELECT '2-D two relations', * FROM pair_diff(
      $$SELECT id1, id2, dist FROM gpu_simjoin('gpts', 'gpts_b', 0.6, '{g2}')$$,
      $$SELECT id1, id2, dist FROM gpu_simjoin('gpts', 'gpts_b', 0.6, '{x,y}')$$)
    UNION ALL
    SELECT '3-D two relations', * FROM pair_diff(
      $$SELECT id1, id2, dist FROM gpu_simjoin('gpts', 'gpts_b', 0.6, '{g3}')$$,
      $$SELECT id1, id2, dist FROM gpu_simjoin('gpts', 'gpts_b', 0.6, '{x,y,z}')$$)
  ) c ORDER BY scan DESC, form;
RESET gpu2bs.enable_customscan;

-- a view, a domain over geometry(Point), a mixed-case quoted column name
CREATE VIEW gpts_v AS SELECT id, g2 AS "Geom Col" FROM gpts;
CREATE DOMAIN gpoint AS gis.geometry(Point, 3857);
CREATE TABLE gdom (id int PRIMARY KEY, p gpoint);
INSERT INTO gdom SELECT id, g2 FROM gpts;
SELECT (SELECT count(*) FROM gpu_simjoin('gpts_v', 0.8, '{Geom Col}', 'id')) AS view_pairs,
       (SELECT count(*) FROM gpu_simjoin('gdom', 0.8, '{p}')) AS domain_pairs,
       (SELECT count(*) FROM gpu_simjoin('gpts', 0.8, '{x,y}')) AS float_pairs;

-- NULL geometries and empty points are skipped, like NULL coordinates
CREATE TABLE gnull (id int PRIMARY KEY, g gis.geometry(Point, 4326));
INSERT INTO gnull VALUES (1, 'SRID=4326;POINT(0 0)'), (2, NULL), (3, 'SRID=4326;POINT EMPTY'),
  (4, 'SRID=4326;POINT(0.5 0)'), (5, 'SRID=4326;POINT(0 0.5)');
SELECT * FROM gpu_simjoin('gnull', 0.6, '{g}') ORDER BY id1, id2;

-- an unconstrained geometry column: 2-D points of one SRID are read
CREATE TABLE gany (id int PRIMARY KEY, g gis.geometry);
INSERT INTO gany VALUES (1, 'SRID=4326;POINT(0 0)'), (2, 'SRID=4326;POINT(1 0)'), (3, 'SRID=4326;POINT(5 5)');
SELECT * FROM gpu_simjoin('gany', 1.5, '{g}') ORDER BY id1, id2;

-- mixed SRIDs between rows: 22023
INSERT INTO gany VALUES (4, 'SRID=3857;POINT(0 1)');
SELECT * FROM gpu_simjoin('gany', 1.5, '{g}');
\echo :SQLSTATE
DELETE FROM gany WHERE id = 4;
-- mixed SRIDs between the two relations: 22023
CREATE TABLE g4326 (id int PRIMARY KEY, g gis.geometry(Point, 4326));
INSERT INTO g4326 VALUES (10, 'SRID=4326;POINT(0.5 0)');
CREATE TABLE g3857 (id int PRIMARY KEY, g gis.geometry(Point, 3857));
INSERT INTO g3857 VALUES (20, 'SRID=3857;POINT(0.5 0)');
SELECT * FROM gpu_simjoin('gany', 'g4326', 1.5, '{g}') ORDER BY id1, id2;
SELECT * FROM gpu_simjoin('gany', 'g3857', 1.5, '{g}');
\echo :SQLSTATE
SET gpu2bs.enable_customscan = off;
SELECT * FROM gpu_simjoin('g3857', 'gany', 1.5, '{g}');
\echo :SQLSTATE
RESET gpu2bs.enable_customscan;

-- a geometry that is not a point in an unconstrained column: 22023, naming the row
INSERT INTO gany VALUES (7, 'SRID=4326;LINESTRING(0 0, 1 1)');
SELECT * FROM gpu_simjoin('gany', 1.5, '{g}');
\echo :SQLSTATE
UPDATE gany SET g = 'SRID=4326;MULTIPOINT((0 0))' WHERE id = 7;
SELECT * FROM gpu_simjoin('gany', 1.5, '{g}');
\echo :SQLSTATE
-- a 3-D point in an unconstrained (2-D) column: 22023
UPDATE gany SET g = 'SRID=4326;POINT(0 0 1)' WHERE id = 7;
SELECT * FROM gpu_simjoin('gany', 1.5, '{g}');
\echo :SQLSTATE
-- a non-finite coordinate: 22023
UPDATE gany SET g = gis.st_setsrid(gis.st_makepoint('NaN', 0), 4326) WHERE id = 7;
SELECT * FROM gpu_simjoin('gany', 1.5, '{g}');
\echo :SQLSTATE
DELETE FROM gany WHERE id = 7;

-- a column typed for other geometries: 22023 before reading
CREATE TABLE gpoly (id int PRIMARY KEY, g gis.geometry(Polygon, 4326), l gis.geometry(LineStringZ));
SELECT * FROM gpu_simjoin('gpoly', 1, '{g}');
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('gpoly', 1, '{l}');
\echo :SQLSTATE
-- geography: refused with a hint to project to geometry
CREATE TABLE ggeog (id int PRIMARY KEY, g gis.geography(Point, 4326));
SELECT * FROM gpu_simjoin('ggeog', 1, '{g}');
\echo :SQLSTATE
-- a geometry named with other columns, or a 2-element geometry list: 42804
SELECT * FROM gpu_simjoin('gpts', 1, '{g2,x}');
\echo :SQLSTATE
SELECT * FROM gpu_simjoin('gpts', 1, '{g2,g3}');
\echo :SQLSTATE
-- a type named geometry that is not PostGIS's
CREATE SCHEMA fake;
CREATE DOMAIN fake.geometry AS float8;
CREATE TABLE gfake (id int PRIMARY KEY, g fake.geometry);
SELECT * FROM gpu_simjoin('gfake', 1, '{g}');
\echo :SQLSTATE

-- the aggregates take coordinates: pass ST_X(geom), ST_Y(geom) [, ST_Z(geom)]
SELECT gpu_sdh(gis.st_x(g3), gis.st_y(g3), gis.st_z(g3), 8) = gpu_sdh(x, y, z, 8) AS sdh_same,
       gpu_pair_count(gis.st_x(g2), gis.st_y(g2), 0.8) = gpu_pair_count(x, y, 0.8) AS count_same
FROM gpts;

DROP TABLE gpts, gpts_b, gdom, gnull, gany, g4326, g3857, gpoly, ggeog, gfake CASCADE;
DROP DOMAIN gpoint;
DROP FUNCTION pair_diff(text, text);
DROP FUNCTION public.st_x(anyelement);
DROP SCHEMA fake CASCADE;
DROP EXTENSION postgis;
DROP SCHEMA gis;
\else
\echo PostGIS is not installed: the PostGIS tests are skipped
\endif
