--
-- gpu_dbscan against PostGIS ST_ClusterDBSCAN on the same geometry(Point) column (read with
-- coords => '{geom}'), in float8: the noise points are the same, the core points (at least
-- minpoints points within ST_DWithin eps, itself included) fall into the same partition, and
-- every border point is in the cluster of its nearest core point (ST_Distance, ties by the
-- smaller id), which is one of the clusters ST_ClusterDBSCAN could give it (a cluster of a core
-- point within eps). ST_ClusterDBSCAN gives a border point the first cluster that reaches it,
-- which depends on row order, so border clusters are not compared one to one. Runs only when
-- PostGIS is installable (test/expected/dbscan_postgis_1.out is the output without it).
--
SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'postgis') AS have_postgis \gset
\if :have_postgis
SET client_min_messages = warning;
CREATE SCHEMA gis;
CREATE EXTENSION IF NOT EXISTS postgis SCHEMA gis;
RESET client_min_messages;
SET gpu2bs.precision = float8;

-- Gaussian-like blobs and uniform noise in the unit square
SELECT setseed(0.31);
CREATE TABLE gblobs (id int PRIMARY KEY, geom gis.geometry(Point, 3857));
INSERT INTO gblobs
  SELECT g, gis.st_setsrid(gis.st_makepoint(
              0.1 + (g % 7) * 0.13 + 0.015 * (random() + random() + random() + random() - 2),
              0.1 + (g % 4) * 0.25 + 0.015 * (random() + random() + random() + random() - 2)), 3857)
  FROM generate_series(1, 1800) g;
INSERT INTO gblobs
  SELECT 1800 + g, gis.st_setsrid(gis.st_makepoint(random(), random()), 3857) FROM generate_series(1, 200) g;
CREATE INDEX ON gblobs USING gist (geom);
ANALYZE gblobs;

-- One comparison: counts of gpu_dbscan's result and of every disagreement (all but the first
-- five columns must be 0).
CREATE FUNCTION cmp_postgis(eps float8, minpoints int,
  OUT n bigint, OUT core bigint, OUT clusters bigint, OUT border bigint, OUT noise bigint,
  OUT noise_differs bigint, OUT core_partition_differs bigint, OUT border_not_adjacent bigint,
  OUT border_not_nearest bigint, OUT postgis_border_not_adjacent bigint)
LANGUAGE plpgsql AS $$
BEGIN
  CREATE TEMP TABLE c AS
    SELECT b.id, g.cluster AS gc, p.cluster AS pc,
           (SELECT count(*) FROM gblobs o WHERE gis.st_dwithin(o.geom, b.geom, eps)) >= minpoints AS is_core
    FROM gblobs b
    JOIN gpu_dbscan('gblobs', eps, minpoints, '{geom}') g USING (id)
    JOIN (SELECT id, gis.st_clusterdbscan(geom, eps, minpoints) OVER () AS cluster FROM gblobs) p USING (id);
  SELECT count(*), count(*) FILTER (WHERE is_core), count(DISTINCT gc),
         count(*) FILTER (WHERE NOT is_core AND gc IS NOT NULL), count(*) FILTER (WHERE gc IS NULL),
         count(*) FILTER (WHERE (gc IS NULL) <> (pc IS NULL))
    INTO n, core, clusters, border, noise, noise_differs FROM c;
  -- the same partition of the core points: cluster numbers map one to one
  SELECT greatest(count(DISTINCT (gc, pc)) - count(DISTINCT gc), count(DISTINCT (gc, pc)) - count(DISTINCT pc))
         + count(*) FILTER (WHERE gc IS NULL OR pc IS NULL)
    INTO core_partition_differs FROM c WHERE is_core;
  -- border points: a cluster of an adjacent core point, the one of the nearest core point
  SELECT count(*) FILTER (WHERE NOT EXISTS (
           SELECT 1 FROM c k JOIN gblobs kb ON kb.id = k.id
           WHERE k.is_core AND k.gc = b.gc AND gis.st_dwithin(kb.geom, bb.geom, eps))),
         count(*) FILTER (WHERE b.gc IS DISTINCT FROM (
           SELECT k.gc FROM c k JOIN gblobs kb ON kb.id = k.id
           WHERE k.is_core AND gis.st_dwithin(kb.geom, bb.geom, eps)
           ORDER BY gis.st_distance(kb.geom, bb.geom), k.id LIMIT 1)),
         count(*) FILTER (WHERE NOT EXISTS (
           SELECT 1 FROM c k JOIN gblobs kb ON kb.id = k.id
           WHERE k.is_core AND k.pc = b.pc AND gis.st_dwithin(kb.geom, bb.geom, eps)))
    INTO border_not_adjacent, border_not_nearest, postgis_border_not_adjacent
    FROM c b JOIN gblobs bb ON bb.id = b.id WHERE NOT b.is_core AND b.gc IS NOT NULL;
  DROP TABLE c;
END $$;

SELECT eps, minpoints, r.*
FROM (VALUES (0.01, 5), (0.01, 10), (0.02, 20), (0.005, 3), (0.05, 40), (2.0, 5), (0.02, 1)) v(eps, minpoints),
     LATERAL cmp_postgis(eps, minpoints) r;

-- the same clusters from float8 coordinate columns of the same points
CREATE TABLE gxy AS SELECT id, gis.st_x(geom) AS x, gis.st_y(geom) AS y FROM gblobs;
SELECT count(*) AS differ FROM (
  (SELECT * FROM gpu_dbscan('gblobs', 0.01, 5, '{geom}') EXCEPT SELECT * FROM gpu_dbscan('gxy', 0.01, 5, '{x,y}'))
  UNION ALL
  (SELECT * FROM gpu_dbscan('gxy', 0.01, 5, '{x,y}') EXCEPT SELECT * FROM gpu_dbscan('gblobs', 0.01, 5, '{geom}'))) d;

-- NULL geometries are skipped; mixed SRIDs are 22023
INSERT INTO gblobs VALUES (5000, NULL);
SELECT count(*) FROM gpu_dbscan('gblobs', 0.01, 5, '{geom}');
CREATE TABLE gmixed (id int PRIMARY KEY, geom gis.geometry(Point));
INSERT INTO gmixed VALUES (1, gis.st_setsrid(gis.st_makepoint(0, 0), 4326)), (2, gis.st_setsrid(gis.st_makepoint(0, 0), 3857));
SELECT * FROM gpu_dbscan('gmixed', 1, 1, '{geom}');

RESET gpu2bs.precision;
DROP TABLE gblobs, gxy, gmixed;
DROP FUNCTION cmp_postgis(float8, int);
DROP EXTENSION postgis;
DROP SCHEMA gis;
\else
\echo PostGIS is not installed: the PostGIS tests are skipped
\endif
