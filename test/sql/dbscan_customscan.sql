--
-- gpu_dbscan in FROM as the custom scan `gpu2bs dbscan` (gpu2bs.enable_customscan): the same
-- rows in the same order (ascending id) as the function scan, quals and projections on top,
-- rescans with and without new parameter values, the periodic form, the errors; LATERAL calls
-- and whole-row references keep the function scan.
--
SET client_min_messages = warning;
-- 3,000 points: 30 blobs of 90 points (a 1e-4 lattice jitter around each centre) and 300
-- points of noise; ids not in read order.
CREATE TABLE dcs AS
  SELECT (g * 7919) % 3001 AS id,
         CASE WHEN g <= 2700 THEN ((g % 30) * 0.031 + 0.05) + ((g * 37) % 101 - 50) * 1e-4
              ELSE ((g * 613) % 997) / 997.0 END::float8 AS x,
         CASE WHEN g <= 2700 THEN ((g % 30) * 0.029 + 0.05) + ((g * 53) % 103 - 51) * 1e-4
              ELSE ((g * 331) % 991) / 991.0 END::float8 AS y
  FROM generate_series(1, 3000) g;
ALTER TABLE dcs ADD PRIMARY KEY (id);

EXPLAIN (COSTS OFF) SELECT * FROM gpu_dbscan('dcs', 0.004, 5);
EXPLAIN (COSTS OFF) SELECT count(*), count(cluster) FROM gpu_dbscan('dcs', 0.004, 5) WHERE cluster > 2;
-- whole-row reference, LATERAL and the setting off: the function scan
EXPLAIN (COSTS OFF) SELECT d FROM gpu_dbscan('dcs', 0.004, 5) d;
EXPLAIN (COSTS OFF) SELECT * FROM (VALUES (0.004), (0.02)) v(e), LATERAL gpu_dbscan('dcs', v.e, 5);
-- a function with its own settings runs through the function call, which applies them; so do
-- the similarity join's
ALTER FUNCTION gpu_dbscan(regclass, float8, int4, text[], text) SET gpu2bs.precision = float8;
EXPLAIN (COSTS OFF) SELECT * FROM gpu_dbscan('dcs', 0.004, 5);
ALTER FUNCTION gpu_dbscan(regclass, float8, int4, text[], text) RESET ALL;
ALTER FUNCTION gpu_simjoin(regclass, float8, text[], text) SET gpu2bs.precision = float8;
EXPLAIN (COSTS OFF) SELECT count(*) FROM gpu_simjoin('dcs', 0.004);
ALTER FUNCTION gpu_simjoin(regclass, float8, text[], text) RESET ALL;
EXPLAIN (COSTS OFF) SELECT * FROM gpu_dbscan('dcs', 0.004, 5);
SET gpu2bs.enable_customscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM gpu_dbscan('dcs', 0.004, 5);

-- The function scan's rows, with their position, for each precision and setting.
CREATE TABLE ref_rows AS
  SELECT p.prec, e.eps, m.mp, r.*
  FROM (VALUES ('float4'), ('float8')) p(prec),
       (VALUES (0.004::float8), (0.02)) e(eps),
       (VALUES (1), (5), (40)) m(mp),
       LATERAL (SELECT set_config('gpu2bs.precision', p.prec, false)) s,
       LATERAL (SELECT row_number() OVER () AS pos, d.id, d.cluster
                FROM gpu_dbscan('dcs', e.eps, m.mp) d) r;
SELECT prec, eps, mp, count(*), count(DISTINCT cluster) AS clusters, count(*) - count(cluster) AS noise
FROM ref_rows GROUP BY 1, 2, 3 ORDER BY 1, 2, 3;
RESET gpu2bs.enable_customscan;

-- The custom scan: the same rows at the same positions.
CREATE FUNCTION cs_rows(prec text, eps float8, mp int) RETURNS TABLE(pos bigint, id bigint, cluster int)
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('gpu2bs.precision', prec, true);
  RETURN QUERY SELECT row_number() OVER (), d.id, d.cluster FROM gpu_dbscan('dcs', eps, mp) d;
END $$;
EXPLAIN (COSTS OFF) SELECT row_number() OVER (), d.id, d.cluster FROM gpu_dbscan('dcs', 0.004, 5) d;
SELECT k.prec, k.eps, k.mp, j.rows, j.differ
FROM (SELECT DISTINCT prec, eps, mp FROM ref_rows) k,
     LATERAL (SELECT count(*) AS rows,
                     count(*) FILTER (WHERE (c.pos, c.id, c.cluster) IS DISTINCT FROM (r.pos, r.id, r.cluster)) AS differ
              FROM (SELECT pos, id, cluster FROM ref_rows r WHERE (r.prec, r.eps, r.mp) = (k.prec, k.eps, k.mp)) r
              FULL JOIN cs_rows(k.prec, k.eps, k.mp) c ON c.pos = r.pos) j
ORDER BY 1, 2, 3;
RESET gpu2bs.precision;

-- Quals and projections over the scan equal the same over the function scan's rows.
SELECT count(*), count(cluster), sum(id), sum(cluster) FROM gpu_dbscan('dcs', 0.004, 5) WHERE cluster > 2 OR id < 10;
SELECT count(*), count(cluster), sum(id), sum(cluster) FROM ref_rows
  WHERE prec = 'float4' AND eps = 0.004 AND mp = 5 AND (cluster > 2 OR id < 10);
SELECT id * 2 AS twice, coalesce(cluster, -1) AS c FROM gpu_dbscan('dcs', 0.004, 5) ORDER BY id DESC LIMIT 3;
SELECT cluster, count(*) FROM gpu_dbscan('dcs', 0.004, 5) GROUP BY cluster ORDER BY count(*) DESC, cluster LIMIT 3;

-- Rescans: new parameter values (a correlated subquery) run DBSCAN again; the inner side of a
-- nested loop is read again.
EXPLAIN (COSTS OFF) SELECT mp, (SELECT count(cluster) FROM gpu_dbscan('dcs', 0.004, mp)) FROM (VALUES (1), (5), (40)) v(mp);
SELECT mp, (SELECT count(cluster) FROM gpu_dbscan('dcs', 0.004, mp)) AS clustered,
       (SELECT count(cluster) FROM ref_rows r WHERE r.prec = 'float4' AND r.eps = 0.004 AND r.mp = v.mp) AS expected
FROM (VALUES (1), (5), (40)) v(mp);
SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_material = off;
SELECT count(*), count(d.cluster) FROM (VALUES (1), (2), (3)) v(k) JOIN gpu_dbscan('dcs', 0.004, 5) d ON d.id % 3 = v.k - 1;
RESET enable_hashjoin; RESET enable_mergejoin; RESET enable_material;

-- The periodic form: clusters continue across the faces, as in the function scan.
SELECT count(*), count(cluster), count(DISTINCT cluster) FROM gpu_dbscan('dcs', 0.02, 5, '{x,y}', 'id', '{1,1}');
SET gpu2bs.enable_customscan = off;
SELECT count(*), count(cluster), count(DISTINCT cluster) FROM gpu_dbscan('dcs', 0.02, 5, '{x,y}', 'id', '{1,1}');
RESET gpu2bs.enable_customscan;
EXPLAIN (COSTS OFF) SELECT * FROM gpu_dbscan('dcs', 0.02, 5, '{x,y}', 'id', '{1,1}');

-- NULL arguments: no rows; errors as the function's
SELECT count(*) FROM gpu_dbscan('dcs', NULL, 5);
SELECT count(*) FROM gpu_dbscan('dcs', 0.004, NULL);
SET client_min_messages = error;
\set VERBOSITY sqlstate
SELECT count(*) FROM gpu_dbscan('dcs', 0.004, 0);
SELECT count(*) FROM gpu_dbscan('dcs', -1, 5);
SELECT count(*) FROM gpu_dbscan('dcs', 0.004, 5, '{x,nope}');
SELECT count(*) FROM gpu_dbscan('dcs', 0.6, 5, '{x,y}', 'id', '{1,1}');
\set VERBOSITY default
SELECT count(*) FROM gpu_dbscan('dcs', 0.004, 0);

-- EXECUTE privilege: checked by the custom scans (gpu_dbscan's and gpu_simjoin's, each of its
-- modes) as by the function scan
CREATE ROLE regress_dcs_user;
GRANT SELECT ON dcs TO regress_dcs_user;
REVOKE EXECUTE ON FUNCTION gpu_dbscan(regclass, float8, int4, text[], text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION gpu_simjoin(regclass, float8, text[], text) FROM PUBLIC;
SET ROLE regress_dcs_user;
SELECT count(*) FROM gpu_dbscan('dcs', 0.004, 5);
SELECT count(*) FROM gpu_simjoin('dcs', 0.004);
SELECT * FROM gpu_simjoin('dcs', 0.004) LIMIT 1;
SELECT * FROM gpu_simjoin('dcs', 0.004) ORDER BY dist LIMIT 1;
SELECT id1, count(*) FROM gpu_simjoin('dcs', 0.004) GROUP BY id1 LIMIT 1;
SELECT id1 FROM gpu_simjoin('dcs', 0.004) WHERE dist > 1;
SET gpu2bs.enable_customscan = off;
SELECT count(*) FROM gpu_dbscan('dcs', 0.004, 5);
SELECT count(*) FROM gpu_simjoin('dcs', 0.004);
RESET gpu2bs.enable_customscan;
RESET ROLE;
GRANT EXECUTE ON FUNCTION gpu_simjoin(regclass, float8, text[], text) TO PUBLIC;
GRANT EXECUTE ON FUNCTION gpu_dbscan(regclass, float8, int4, text[], text) TO regress_dcs_user;
SET ROLE regress_dcs_user;
SELECT count(*) FROM gpu_dbscan('dcs', 0.004, 5);
SELECT count(*) FROM gpu_simjoin('dcs', 0.004);
RESET ROLE;
GRANT EXECUTE ON FUNCTION gpu_dbscan(regclass, float8, int4, text[], text) TO PUBLIC;
REVOKE ALL ON FUNCTION gpu_dbscan(regclass, float8, int4, text[], text) FROM regress_dcs_user;
REVOKE ALL ON dcs FROM regress_dcs_user;
DROP ROLE regress_dcs_user;

DROP FUNCTION cs_rows(text, float8, int);
DROP TABLE ref_rows, dcs;
