--
-- Periodic boxes (box float8[], one length per axis, 0 or NULL: not periodic) for gpu_simjoin
-- (self and two relations), gpu_pair_count, gpu_sdh_fixed and gpu_dbscan against a float64
-- reference in SQL: brute force over every pair with coordinates wrapped into [0, L) and
-- minimum-image differences. Lattice data (multiples of 0.5, points on the faces 0 and L,
-- duplicates) with eps, r and bucket edges between the lattice's squared distances (multiples of
-- 0.25) decides every pair alike in float4 and float8, so the answers equal the reference in
-- both precisions. The same file runs on the CPU engine and, with gpu2bs.device = gpu, on the GPU.
--
SET extra_float_digits = 0;

-- Minimum image of a difference d on an axis of length l (0 or NULL: not periodic).
CREATE FUNCTION pref_mi(d float8, l float8) RETURNS float8 LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN l IS NULL OR l = 0 THEN d WHEN d > l / 2 THEN d - l WHEN d < -l / 2 THEN d + l ELSE d END $$;
-- Coordinate wrapped into [0, l) (unchanged on a non-periodic axis).
CREATE FUNCTION pref_wrap(x float8, l float8) RETURNS float8 LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN l IS NULL OR l = 0 THEN x ELSE x - l * floor(x / l) END $$;
-- Minimum-image distance of two 3-D points over box b.
CREATE FUNCTION pref_dist(ax float8, ay float8, az float8, bx float8, by float8, bz float8, b float8[])
RETURNS float8 LANGUAGE sql IMMUTABLE AS $$
  SELECT sqrt(pref_mi(pref_wrap(ax, b[1]) - pref_wrap(bx, b[1]), b[1]) ^ 2
            + pref_mi(pref_wrap(ay, b[2]) - pref_wrap(by, b[2]), b[2]) ^ 2
            + pref_mi(pref_wrap(az, b[3]) - pref_wrap(bz, b[3]), b[3]) ^ 2) $$;

-- 300 lattice points in [0, 10] x [0, 10] x [0, 8] (faces included, duplicates), then a chain
-- of points across the x faces.
CREATE TABLE pts (id int PRIMARY KEY, x float8, y float8, z float8);
INSERT INTO pts SELECT i, ((i * 7) % 21) * 0.5, ((i * 11) % 21) * 0.5, ((i * 13) % 17) * 0.5
  FROM generate_series(1, 300) i;
INSERT INTO pts VALUES (1001, 0, 5, 4), (1002, 10, 5, 4), (1003, 0, 0, 0), (1004, 10, 10, 8);
SELECT count(*) AS n, min(x), max(x), min(z), max(z) FROM pts;
CREATE TABLE pts_a AS SELECT * FROM pts WHERE id <= 150 OR id > 1000;
ALTER TABLE pts_a ADD PRIMARY KEY (id);
CREATE TABLE pts_b AS SELECT * FROM pts WHERE id > 150 AND id <= 300;
ALTER TABLE pts_b ADD PRIMARY KEY (id);

-- Reference self-join and two-relation join.
CREATE FUNCTION pref_self(eps float8, b float8[]) RETURNS TABLE (id1 bigint, id2 bigint, dist float8)
LANGUAGE sql STABLE AS $$
  SELECT p.id, q.id, pref_dist(p.x, p.y, p.z, q.x, q.y, q.z, b) FROM pts p JOIN pts q ON p.id < q.id
  WHERE pref_dist(p.x, p.y, p.z, q.x, q.y, q.z, b) <= eps $$;
CREATE FUNCTION pref_two(eps float8, b float8[]) RETURNS TABLE (id1 bigint, id2 bigint, dist float8)
LANGUAGE sql STABLE AS $$
  SELECT p.id, q.id, pref_dist(p.x, p.y, p.z, q.x, q.y, q.z, b) FROM pts_a p CROSS JOIN pts_b q
  WHERE pref_dist(p.x, p.y, p.z, q.x, q.y, q.z, b) <= eps $$;
-- Engine answer against the reference: pairs, pairs only one side has, largest dist difference.
CREATE FUNCTION pcheck_self(eps float8, b float8[]) RETURNS TABLE (pairs bigint, mismatched bigint, dist_ok bool)
LANGUAGE sql STABLE AS $$
  SELECT count(g.id1), count(*) FILTER (WHERE g.id1 IS NULL OR r.id1 IS NULL),
         coalesce(max(abs(g.dist - r.dist)) <= 1e-6 * 8, true)
  FROM gpu_simjoin('pts', eps, NULL, NULL, b) g FULL JOIN pref_self(eps, b) r ON g.id1 = r.id1 AND g.id2 = r.id2 $$;
CREATE FUNCTION pcheck_two(eps float8, b float8[]) RETURNS TABLE (pairs bigint, mismatched bigint, dist_ok bool)
LANGUAGE sql STABLE AS $$
  SELECT count(g.id1), count(*) FILTER (WHERE g.id1 IS NULL OR r.id1 IS NULL),
         coalesce(max(abs(g.dist - r.dist)) <= 1e-6 * 8, true)
  FROM gpu_simjoin('pts_a', 'pts_b', eps, NULL, NULL, b) g FULL JOIN pref_two(eps, b) r ON g.id1 = r.id1 AND g.id2 = r.id2 $$;

-- Self-join: eps 1.25 (7 x 7 x 6 cells), 3.1 (3 x 3 x 1: the smallest wrapping axis and one of
-- fewer than 3 cells), 4 (exactly half the side 8: one cell per axis; pairs at distance 4 count).
SELECT 1.25 AS eps, * FROM pcheck_self(1.25, '{10,10,8}');
SELECT 3.1 AS eps, * FROM pcheck_self(3.1, '{10,10,8}');
SELECT 4 AS eps, * FROM pcheck_self(4, '{10,10,8}');
SELECT count(*) AS at_half FROM gpu_simjoin('pts', 4, NULL, NULL, '{10,10,8}'::float8[]) WHERE dist = 4;
-- Points on opposite faces are one point.
SELECT * FROM gpu_simjoin('pts', 0.5, NULL, NULL, '{10,10,8}'::float8[]) WHERE id1 > 1000 AND id2 > 1000 ORDER BY 1, 2;
-- One periodic axis (x), the others open: NULL and 0 both mean not periodic.
SELECT 'x only' AS box, * FROM pcheck_self(1.25, '{10,NULL,0}');
SELECT 'z only' AS box, * FROM pcheck_self(3.1, '{0,0,8}');
-- Pairs that only the periodic box finds (across a face).
SELECT count(*) AS across_faces FROM gpu_simjoin('pts', 1.25, NULL, NULL, '{10,10,8}'::float8[]) g
  WHERE NOT EXISTS (SELECT 1 FROM gpu_simjoin('pts', 1.25) o WHERE o.id1 = g.id1 AND o.id2 = g.id2);
-- A NULL box, or one without a periodic axis, is the plain join.
SELECT (SELECT count(*) FROM gpu_simjoin('pts', 1.25, NULL, NULL, NULL::float8[])) = (SELECT count(*) FROM gpu_simjoin('pts', 1.25)) AS null_box,
       (SELECT count(*) FROM gpu_simjoin('pts', 1.25, NULL, NULL, '{0,NULL,0}'::float8[])) = (SELECT count(*) FROM gpu_simjoin('pts', 1.25)) AS open_box;
-- Two relations.
SELECT 1.25 AS eps, * FROM pcheck_two(1.25, '{10,10,8}');
SELECT 4 AS eps, * FROM pcheck_two(4, '{10,10,8}');
SELECT 'y only' AS box, * FROM pcheck_two(2.1, '{0,10,0}');
SELECT 'half of 11' AS box, * FROM pcheck_two(5.5, '{0,11,0}');
-- Untyped literals choose the relation form of gpu_sdh_fixed (its text form); gpu_pair_count's
-- box form takes rel as a regclass or named arguments; calls of the forms without a box are
-- unchanged.
SELECT gpu_pair_count(rel => 'pts', r => 1.25, coords => NULL, box => '{10,10,8}') = gpu_pair_count('pts'::regclass, 1.25, NULL, '{10,10,8}') AS count_named,
       gpu_sdh_fixed('pts', 2, 0.5, '{x,y,z}', '{10,10,8}') = gpu_sdh_fixed('pts'::regclass, 2, 0.5, '{x,y,z}'::text[], '{10,10,8}'::float8[]) AS sdh_text_form,
       gpu_pair_count('pts'::regclass, 1.25, '{x,y,z}') = (SELECT count(*) FROM gpu_simjoin('pts', 1.25, '{x,y,z}')) AS plain_forms;
-- Named coordinates and key, and the filters PostgreSQL applies above the function.
SELECT count(*) FROM gpu_simjoin('pts', 1.25, '{x,y,z}', 'id', '{10,10,8}') WHERE dist > 1;
-- The box forms run as a function scan (no custom scan, no pushdown).
EXPLAIN (COSTS OFF) SELECT count(*) FROM gpu_simjoin('pts', 1.25, '{x,y,z}', 'id', '{10,10,8}') WHERE dist > 1;
SELECT id1, id2, dist FROM gpu_simjoin(rel => 'pts', eps => 1.25, coords => NULL, id => NULL, box => '{10,10,8}') ORDER BY dist DESC, id1, id2 LIMIT 3;

-- Pair count: r = 0 (coincident points, faces included), 1.25, 4.
SELECT r, gpu_pair_count('pts'::regclass, r, NULL, '{10,10,8}') AS engine,
       (SELECT count(*) FROM pref_self(r, '{10,10,8}')) AS reference
  FROM (VALUES (0::float8), (1.25), (3.1), (4)) v(r);
SELECT gpu_pair_count('pts'::regclass, 2.1, NULL, '{10,NULL,NULL}') = (SELECT count(*) FROM pref_self(2.1, '{10,NULL,NULL}')) AS one_axis;

-- SDH with an explicit width over the box: 8 buckets of 0.5 (range 4 = half of 8), and the
-- reference floor(d / w) per pair (no lattice distance lies within rounding of an edge but the
-- edges themselves, multiples of 0.5, where the bucket is exact).
SELECT gpu_sdh_fixed('pts', 8, 0.5, NULL, '{10,10,8}'::float8[]) AS engine,
       (SELECT array_agg(coalesce(c, 0) ORDER BY k) FROM generate_series(0, 7) k
          LEFT JOIN (SELECT floor(dist / 0.5)::int AS b, count(*) AS c FROM pref_self(4, '{10,10,8}')
                     WHERE dist < 4 GROUP BY 1) h ON h.b = k) AS reference;
SELECT gpu_sdh_fixed('pts', 5, 0.25, NULL, '{0,10,0}'::float8[]) =
       (SELECT array_agg(coalesce(c, 0) ORDER BY k) FROM generate_series(0, 4) k
          LEFT JOIN (SELECT floor(dist / 0.25)::int AS b, count(*) AS c FROM pref_self(1.25, '{0,10,0}')
                     WHERE dist < 1.25 GROUP BY 1) h ON h.b = k) AS one_axis_sdh;

-- DBSCAN over the box against a reference: core points (at least minpoints points within eps,
-- itself included), components of the core points (smallest id as label), border points in the
-- cluster of their nearest core point (dist, then id).
CREATE FUNCTION pcheck_dbscan(eps float8, minpts int, b float8[])
RETURNS TABLE (clusters bigint, core_ok bool, partition_ok bool, border_ok bool, noise bigint)
LANGUAGE plpgsql AS $$
BEGIN
  DROP TABLE IF EXISTS pd_pairs, pd_core, pd_reach, pd_label, pd_got;
  CREATE TEMP TABLE pd_pairs AS SELECT id1 a, id2 c, dist FROM pref_self(eps, b)
    UNION ALL SELECT id2, id1, dist FROM pref_self(eps, b);
  CREATE TEMP TABLE pd_core AS SELECT p.id::bigint AS id FROM pts p LEFT JOIN pd_pairs e ON e.a = p.id
    GROUP BY p.id HAVING count(e.c) + 1 >= minpts;
  CREATE TEMP TABLE pd_reach AS WITH RECURSIVE r(src, dst) AS (
      SELECT id, id FROM pd_core
      UNION SELECT r.src, e.c FROM r JOIN pd_pairs e ON e.a = r.dst JOIN pd_core k ON k.id = e.c)
    SELECT src, min(dst) AS label FROM r GROUP BY src;
  CREATE TEMP TABLE pd_label AS SELECT src AS id, label FROM pd_reach
    UNION ALL (SELECT DISTINCT ON (e.a) e.a, r.label FROM pd_pairs e JOIN pd_reach r ON r.src = e.c
      WHERE e.a NOT IN (SELECT id FROM pd_core) ORDER BY e.a, e.dist, e.c);
  CREATE TEMP TABLE pd_got AS SELECT * FROM gpu_dbscan('pts', eps, minpts, NULL, NULL, b);
  RETURN QUERY SELECT
    (SELECT count(DISTINCT cluster) FROM pd_got),
    (SELECT count(*) FROM pd_got g JOIN pd_label l USING (id) WHERE l.id IN (SELECT id FROM pd_core)) = (SELECT count(*) FROM pd_core),
    (SELECT count(DISTINCT (g.cluster, l.label)) = count(DISTINCT g.cluster) AND count(DISTINCT (g.cluster, l.label)) = count(DISTINCT l.label)
       FROM pd_got g JOIN pd_label l USING (id)),
    (SELECT count(*) = 0 FROM pd_got g FULL JOIN pd_label l USING (id) WHERE (g.cluster IS NULL) <> (l.label IS NULL)),
    (SELECT count(*) FROM pd_got WHERE cluster IS NULL);
END $$;
SET client_min_messages = warning;
SELECT * FROM pcheck_dbscan(1.25, 4, '{10,10,8}');
SELECT * FROM pcheck_dbscan(1.25, 6, '{10,NULL,0}');
SELECT * FROM pcheck_dbscan(3.1, 30, '{10,10,8}');
RESET client_min_messages;
-- A chain across the x faces is one cluster with the box, two without.
CREATE TABLE chain (id int PRIMARY KEY, x float8, y float8);
INSERT INTO chain VALUES (1, 9.25, 5), (2, 9.5, 5), (3, 9.75, 5), (4, 0.0, 5), (5, 0.25, 5), (6, 0.5, 5);
SELECT id, cluster FROM gpu_dbscan('chain', 0.3, 2, NULL, NULL, '{10,0}'::float8[]) ORDER BY id;
SELECT id, cluster FROM gpu_dbscan('chain', 0.3, 2) ORDER BY id;

-- float8 precision gives the same answers.
SET gpu2bs.precision = float8;
SELECT 1.25 AS eps, * FROM pcheck_self(1.25, '{10,10,8}');
SELECT 4 AS eps, * FROM pcheck_two(4, '{10,10,8}');
SELECT gpu_pair_count('pts'::regclass, 3.1, NULL, '{10,10,8}') = (SELECT count(*) FROM pref_self(3.1, '{10,10,8}')) AS count_f64;
RESET gpu2bs.precision;

-- Errors (22023), before any row is read.
SELECT count(*) FROM gpu_simjoin('pts', 4.0000001, NULL, NULL, '{10,10,8}'::float8[]);
SELECT count(*) FROM gpu_simjoin('pts', 1, NULL, NULL, '{10,10}'::float8[]);
SELECT count(*) FROM gpu_simjoin('pts', 1, NULL, NULL, '{10,-1,8}'::float8[]);
SELECT count(*) FROM gpu_simjoin('pts', 1, NULL, NULL, '{10,NaN,8}'::float8[]);
SELECT count(*) FROM gpu_simjoin('pts', 1, NULL, NULL, '{10,Infinity,8}'::float8[]);
SELECT count(*) FROM gpu_simjoin('pts', 1, NULL, NULL, '{{10,10},{8,8}}'::float8[]);
SELECT count(*) FROM gpu_simjoin('pts', 'Infinity', NULL, NULL, '{10,10,8}'::float8[]);
SELECT count(*) FROM gpu_simjoin('pts_a', 'pts_b', 5.51, NULL, NULL, '{0,11,0}'::float8[]);
SELECT gpu_pair_count('pts'::regclass, 4.5, NULL, '{10,10,8}');
SELECT gpu_sdh_fixed('pts', 9, 0.5, NULL, '{10,10,8}'::float8[]);
SELECT count(*) FROM gpu_dbscan('pts', 4.5, 3, NULL, NULL, '{10,10,8}'::float8[]);
-- NULL arguments: no rows / NULL.
SELECT count(*) FROM gpu_simjoin('pts', NULL, NULL, NULL, '{10,10,8}'::float8[]);
SELECT gpu_pair_count('pts'::regclass, NULL, NULL, '{10,10,8}') IS NULL AS null_r;
