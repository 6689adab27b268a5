--
-- gpu_dbscan against a plain-SQL DBSCAN: neighbour counts from a self-join (both ends of each
-- pair), core points, connected components of the core points by iterative label propagation,
-- border points to the cluster of their nearest core point (ties by the smaller core id),
-- clusters numbered 0, 1, ... by the smallest id among their points, noise NULL. The pairs
-- come from the brute-force float64 join (ref_simjoin) where the data makes float4 and float8
-- decide every pair alike (half-integer lattices, eps with an exact square), and from
-- gpu_simjoin itself (the join in gpu2bs.precision) on continuous data in float4.
--

-- DBSCAN in SQL: pts returns the ids of the points, edges the pairs within eps (id1, id2, dist),
-- each unordered pair once.
CREATE FUNCTION ref_dbscan(pts text, edges text, minpoints int)
RETURNS TABLE (id bigint, cluster int) LANGUAGE plpgsql AS $$
DECLARE
  changed bigint;
BEGIN
  DROP TABLE IF EXISTS ref_e, ref_p;
  EXECUTE format('CREATE TEMP TABLE ref_e AS SELECT id1::bigint AS a, id2::bigint AS b, dist::float8 AS d FROM (%s) q', edges);
  INSERT INTO ref_e SELECT b, a, d FROM ref_e;
  EXECUTE format('CREATE TEMP TABLE ref_p AS SELECT id::bigint AS id, false AS core, NULL::bigint AS lab FROM (%s) q', pts);
  UPDATE ref_p p SET core = 1 + (SELECT count(*) FROM ref_e e WHERE e.a = p.id) >= minpoints;
  UPDATE ref_p SET lab = ref_p.id WHERE core;
  LOOP  -- every core point takes the smallest label among its core neighbours, until none changes
    UPDATE ref_p p SET lab = m.lab
      FROM (SELECT e.a, min(q.lab) AS lab FROM ref_e e JOIN ref_p q ON q.id = e.b AND q.core GROUP BY e.a) m
      WHERE p.core AND m.a = p.id AND m.lab < p.lab;
    GET DIAGNOSTICS changed = ROW_COUNT;
    EXIT WHEN changed = 0;
  END LOOP;
  UPDATE ref_p p SET lab = n.lab
    FROM (SELECT DISTINCT ON (e.a) e.a, q.lab FROM ref_e e JOIN ref_p q ON q.id = e.b AND q.core
          ORDER BY e.a, e.d, e.b) n
    WHERE NOT p.core AND n.a = p.id;
  RETURN QUERY
    SELECT p.id, (dense_rank() OVER (ORDER BY m.first) - 1)::int
      FROM ref_p p JOIN (SELECT lab, min(ref_p.id) AS first FROM ref_p WHERE lab IS NOT NULL GROUP BY lab) m USING (lab)
    UNION ALL
    SELECT p.id, NULL FROM ref_p p WHERE p.lab IS NULL;
END $$;

-- Rows only one side has (both 0), the rows, clusters and noise points of `got`.
CREATE FUNCTION cmp_clusters(got text, want text, OUT only_got bigint, OUT only_want bigint,
                             OUT n bigint, OUT clusters bigint, OUT noise bigint)
LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('CREATE TEMP TABLE cmp_w AS SELECT id, cluster FROM (%s) q', want);
  EXECUTE format('CREATE TEMP TABLE cmp_g AS SELECT id, cluster FROM (%s) q', got);
  SELECT count(*) INTO only_got FROM (SELECT * FROM cmp_g EXCEPT ALL SELECT * FROM cmp_w) d;
  SELECT count(*) INTO only_want FROM (SELECT * FROM cmp_w EXCEPT ALL SELECT * FROM cmp_g) d;
  SELECT count(*), count(DISTINCT cluster), count(*) - count(cluster) INTO n, clusters, noise FROM cmp_g;
  DROP TABLE cmp_w, cmp_g;
END $$;

-- Lattice points (setup.sql: pts2 2-D in [0, 30), pts3 3-D in [0, 20) with duplicates, pts3_null
-- with NULL keys and coordinates): the reference from float64 pairs, once per case, against
-- gpu_dbscan in both precisions, several eps and minpoints.
CREATE TEMP TABLE lattice_ref AS
SELECT t, eps, minpoints, r.*
FROM (VALUES ('pts2', 1.0, 3), ('pts2', 1.0, 5), ('pts2', 1.5, 6), ('pts2', 2.0, 12), ('pts2', 0.5, 2),
             ('pts3', 1.5, 2), ('pts3', 2.0, 4), ('pts3', 3.0, 10),
             ('pts3_null', 2.0, 2), ('pts3_null', 3.0, 4)) v(t, eps, minpoints),
     LATERAL ref_dbscan(
       format('SELECT id FROM %I WHERE id IS NOT NULL AND x IS NOT NULL AND y IS NOT NULL %s', t,
              CASE WHEN t = 'pts2' THEN '' ELSE 'AND z IS NOT NULL' END),
       format('SELECT * FROM ref_simjoin(%L, NULL, %s, %L)', t, eps,
              CASE WHEN t = 'pts2' THEN '{x,y}' ELSE '{x,y,z}' END),
       minpoints) r;
SET gpu2bs.precision = float4;
SELECT current_setting('gpu2bs.precision') AS prec, t, eps, minpoints, c.*
FROM (SELECT DISTINCT t, eps, minpoints FROM lattice_ref) v,
     LATERAL cmp_clusters(
       format('SELECT * FROM gpu_dbscan(%L, %s, %s, %L)', t, eps, minpoints,
              CASE WHEN t = 'pts2' THEN '{x,y}' ELSE '{x,y,z}' END),
       format('SELECT id, cluster FROM lattice_ref WHERE t = %L AND eps = %s AND minpoints = %s', t, eps, minpoints)) c
ORDER BY t, eps, minpoints;
SET gpu2bs.precision = float8;
SELECT current_setting('gpu2bs.precision') AS prec, t, eps, minpoints, c.*
FROM (SELECT DISTINCT t, eps, minpoints FROM lattice_ref) v,
     LATERAL cmp_clusters(
       format('SELECT * FROM gpu_dbscan(%L, %s, %s, %L)', t, eps, minpoints,
              CASE WHEN t = 'pts2' THEN '{x,y}' ELSE '{x,y,z}' END),
       format('SELECT id, cluster FROM lattice_ref WHERE t = %L AND eps = %s AND minpoints = %s', t, eps, minpoints)) c
ORDER BY t, eps, minpoints;
RESET gpu2bs.precision;

-- Continuous random points: dense blobs and uniform noise. float8 against the float64 pairs;
-- float4 against the pairs of gpu_simjoin in float4 (the pairs gpu_dbscan must use), and the
-- number of pairs where float4 and float64 disagree.
SELECT setseed(0.17);
CREATE TABLE blobs (id bigint PRIMARY KEY, x float8, y float8);
INSERT INTO blobs
  SELECT g, (g % 5) * 0.2 + 0.02 * (random() + random() + random() - 1.5),
            (g % 3) * 0.3 + 0.02 * (random() + random() + random() - 1.5)
  FROM generate_series(1, 500) g;
INSERT INTO blobs SELECT 500 + g, random(), random() FROM generate_series(1, 100) g;
SET gpu2bs.precision = float8;
SELECT 'float8' AS prec, eps, minpoints, c.*
FROM (VALUES (0.01, 4), (0.01, 8), (0.02, 10), (0.05, 3)) v(eps, minpoints),
     LATERAL cmp_clusters(
       format('SELECT * FROM gpu_dbscan(''blobs'', %s, %s)', eps, minpoints),
       format('SELECT * FROM ref_dbscan(''SELECT id FROM blobs'', %L, %s)',
              format('SELECT * FROM ref_simjoin(''blobs'', NULL, %s, ''{x,y}'')', eps), minpoints)) c;
SET gpu2bs.precision = float4;
SELECT eps, (SELECT count(*) FROM
         ((SELECT id1, id2 FROM gpu_simjoin('blobs', eps) EXCEPT SELECT id1, id2 FROM ref_simjoin('blobs', NULL, eps, '{x,y}'))
          UNION ALL
          (SELECT id1, id2 FROM ref_simjoin('blobs', NULL, eps, '{x,y}') EXCEPT SELECT id1, id2 FROM gpu_simjoin('blobs', eps))) d)
       AS pairs_float4_vs_float64
FROM (VALUES (0.01), (0.02), (0.05)) v(eps);
SELECT 'float4' AS prec, eps, minpoints, c.*
FROM (VALUES (0.01, 4), (0.01, 8), (0.02, 10), (0.05, 3)) v(eps, minpoints),
     LATERAL cmp_clusters(
       format('SELECT * FROM gpu_dbscan(''blobs'', %s, %s)', eps, minpoints),
       format('SELECT * FROM ref_dbscan(''SELECT id FROM blobs'', %L, %s)',
              format('SELECT * FROM gpu_simjoin(''blobs'', %s)', eps), minpoints)) c;
RESET gpu2bs.precision;

-- A pair that only float4 keeps: 1 + 2^-30 rounds to 1 in float4, so the two points are eps = 1
-- apart there and a cluster, while in float8 they are farther than eps and noise (gpu_dbscan
-- uses exactly gpu_simjoin's pairs).
CREATE TABLE near_eps (id int PRIMARY KEY, x float8, y float8);
INSERT INTO near_eps VALUES (1, 0, 0), (2, 1 + 2 ^ -30, 0);
SET gpu2bs.precision = float4;
SELECT current_setting('gpu2bs.precision') AS prec, (SELECT count(*) FROM gpu_simjoin('near_eps', 1)) AS pairs;
SELECT * FROM gpu_dbscan('near_eps', 1, 2);
SET gpu2bs.precision = float8;
SELECT current_setting('gpu2bs.precision') AS prec, (SELECT count(*) FROM gpu_simjoin('near_eps', 1)) AS pairs;
SELECT * FROM gpu_dbscan('near_eps', 1, 2);
RESET gpu2bs.precision;

-- Border points between two clusters: id 20 lies exactly eps = 1.5 from a core point of each
-- (ids 4 and 14) and is not core itself, so it does not merge them and joins the cluster of the
-- smaller core id (4). Ids 21 and 22 are border points of one cluster each; 30 is noise.
-- Cluster 0 holds the smallest id (1).
CREATE TABLE bridge (id int PRIMARY KEY, x float8, y float8);
INSERT INTO bridge VALUES
  (11, 0, 0), (12, 0.25, 0), (13, 0.5, 0), (14, 1.0, 0),
  (4, 4.0, 0), (3, 4.25, 0), (2, 4.5, 0), (1, 5.0, 0),
  (20, 2.5, 0), (21, 1.0, 1.4), (22, 4.0, -1.4), (30, 2.5, 3);
SELECT * FROM gpu_dbscan('bridge', 1.5, 4);
SELECT * FROM cmp_clusters('SELECT * FROM gpu_dbscan(''bridge'', 1.5, 4)',
  'SELECT * FROM ref_dbscan(''SELECT id FROM bridge'', ''SELECT * FROM ref_simjoin(''''bridge'''', NULL, 1.5, ''''{x,y}'''')'', 4)');
-- the same when the clusters' ids are swapped: the tie still goes to the smaller core id
UPDATE bridge SET x = 5.0 - x;
SELECT id, cluster FROM gpu_dbscan('bridge', 1.5, 4) WHERE id IN (4, 14, 20);
-- a core point in the middle joins both sides into one cluster
INSERT INTO bridge VALUES (23, 2.5, 0.1);
SELECT cluster, count(*) FROM gpu_dbscan('bridge', 1.5, 4) GROUP BY cluster ORDER BY cluster;

-- minpoints = 1: every point is core (isolated points are clusters of one)
SELECT * FROM cmp_clusters('SELECT * FROM gpu_dbscan(''pts2'', 0.5, 1)',
  'SELECT * FROM ref_dbscan(''SELECT id FROM pts2'', ''SELECT * FROM ref_simjoin(''''pts2'''', NULL, 0.5, ''''{x,y}'''')'', 1)');
-- all one cluster: eps beyond the diameter, and eps = Infinity
SELECT count(*), min(cluster), max(cluster) FROM gpu_dbscan('pts2', 1e6, 700);
SELECT count(*), min(cluster), max(cluster) FROM gpu_dbscan('pts2', 'Infinity', 2);
-- all noise: minpoints above the row count, or no pair within eps
SELECT count(*), count(cluster) FROM gpu_dbscan('pts2', 1e6, 701);
SELECT count(*), count(cluster) FROM gpu_dbscan('cloud3', 1e-4, 2);

-- duplicates: five copies of one point and one copy elsewhere
CREATE TABLE dups (id int PRIMARY KEY, x float8, y float8);
INSERT INTO dups SELECT g, 3.0, 4.0 FROM generate_series(1, 5) g;
INSERT INTO dups VALUES (6, 3.0, 4.5), (7, 9.0, 9.0);
SELECT * FROM gpu_dbscan('dups', 0.5, 5);
SELECT * FROM gpu_dbscan('dups', 0.5, 6);
SELECT * FROM gpu_dbscan('dups', 0.4, 6);

-- 0, 1 and 2 rows
SELECT * FROM gpu_dbscan('empty3', 1, 1);
SELECT * FROM gpu_dbscan('one3', 1, 1);
SELECT * FROM gpu_dbscan('one3', 1, 2);
SELECT * FROM gpu_dbscan('two3', 1, 2);
SELECT * FROM gpu_dbscan('two3', 1, 3);

-- NULL coordinates and keys: those rows are skipped (as gpu_simjoin skips them)
SELECT count(*) AS rows, count(*) FILTER (WHERE id IS NULL) AS null_ids,
       (SELECT count(*) FROM pts3_null WHERE id IS NOT NULL AND x IS NOT NULL AND y IS NOT NULL AND z IS NOT NULL) AS complete
FROM gpu_dbscan('pts3_null', 2.0, 3);
-- only the x, y columns named: rows with a NULL z count
SELECT count(*) FROM gpu_dbscan('pts3_null', 2.0, 3, '{x,y}');

-- the key column named explicitly, coordinates of any numeric type
CREATE TABLE keyed (k bigint, id int, a int, b numeric);
INSERT INTO keyed SELECT g * 10, 1, g % 4, (g % 4) / 2.0 FROM generate_series(1, 12) g;
SELECT * FROM gpu_dbscan('keyed', 0.6, 3, '{a,b}', 'k') ORDER BY id;
-- named notation: the argument id names the key column, the result column id is the key
SELECT * FROM gpu_dbscan(rel => 'keyed', minpoints => 3, eps => 0.6, id => 'k', coords => '{a,b}') WHERE id <= 40;

-- NULL arguments: no rows
SELECT count(*) FROM gpu_dbscan(NULL, 1, 2);
SELECT count(*) FROM gpu_dbscan('pts2', NULL, 2);
SELECT count(*) FROM gpu_dbscan('pts2', 1, NULL);

-- errors
SELECT * FROM gpu_dbscan('pts2', 0, 2);
SELECT * FROM gpu_dbscan('pts2', -1, 2);
SELECT * FROM gpu_dbscan('pts2', 'NaN', 2);
SELECT * FROM gpu_dbscan('pts2', 1, 0);
SELECT * FROM gpu_dbscan('pts2', 1, -5);
SELECT * FROM gpu_dbscan('pts2', 1, 2, '{x,nope}');
SELECT * FROM gpu_dbscan('pts2', 1, 2, '{x}');
SELECT * FROM gpu_dbscan('no_such_table', 1, 2);
SELECT sqlstate_of($$SELECT * FROM gpu_dbscan('pts2', 0, 2)$$) AS eps_0,
       sqlstate_of($$SELECT * FROM gpu_dbscan('pts2', 1, 0)$$) AS minpoints_0,
       sqlstate_of($$SELECT * FROM gpu_dbscan('pts2', 1, 2, '{x,nope}')$$) AS no_column;

-- long pages (gpu2bs.result_page_pairs): calls of more than 65,536 pairs are shared among the
-- CPU threads (as the GPU engine's runs of pages are); the same clusters as with short pages
CREATE TEMP TABLE dmid AS
  SELECT g AS id, (g % 20) * 0.05 + 0.02 * random() AS x, (g % 7) * 0.1 + 0.03 * random() AS y
  FROM generate_series(1, 20000) g;
INSERT INTO dmid SELECT 20000 + g, random(), random() FROM generate_series(1, 2000) g;
CREATE TEMP TABLE dmid_short AS SELECT * FROM gpu_dbscan('dmid', 0.004, 12);
SET gpu2bs.result_page_pairs = 4194304;
SELECT * FROM cmp_clusters('SELECT * FROM gpu_dbscan(''dmid'', 0.004, 12)', 'SELECT * FROM dmid_short');
SELECT count(*) > 65536 AS long_pages FROM gpu_simjoin('dmid', 0.004);
RESET gpu2bs.result_page_pairs;

-- query cancel while the join runs (4.5e10 pairs within eps = Infinity): 57014, and the session
-- stays usable
CREATE TEMP TABLE dbig AS SELECT g AS id, random() AS x, random() AS y FROM generate_series(1, 300000) g;
SET statement_timeout = '1s';
SELECT count(*) FROM gpu_dbscan('dbig', 'Infinity', 2);
\echo :SQLSTATE
RESET statement_timeout;
SELECT count(*), count(cluster) FROM gpu_dbscan('bridge', 1.5, 4);

-- the engine's run is recorded for gpu2bs_info()
SELECT value FROM gpu2bs_info() WHERE name = 'last_function';
