--
-- gpu_rdf against a float64 reference in SQL: every pair (self: i < j) with coordinates wrapped
-- into [0, L) and minimum-image differences on periodic axes, the bucket floor(d * (1 / w)),
-- and g = pairs / (N_a N_b / V * shell) (two relations) or 2 pairs / (N (N - 1) / V * shell)
-- (self), V the product of the periodic lengths or bounding-box extents. Lattice data (multiples
-- of 0.5 with bucket widths of 0.25 or 0.5) decide every pair alike in float4 and float8, so the
-- counts equal the reference in both precisions; continuous data is compared in float8, and in
-- float4 within the pairs whose float4 distance rounds across a bucket edge.
--

-- Minimum image of a difference d on an axis of length l (0 or NULL: not periodic).
CREATE FUNCTION ref_mi(d float8, l float8) RETURNS float8 LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN l IS NULL OR l = 0 THEN d WHEN d > l / 2 THEN d - l WHEN d < -l / 2 THEN d + l ELSE d END $$;
-- Coordinate wrapped into [0, l) (unchanged on a non-periodic axis).
CREATE FUNCTION ref_wrap(x float8, l float8) RETURNS float8 LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN l IS NULL OR l = 0 THEN x
              ELSE CASE WHEN x - l * floor(x / l) >= l THEN 0 ELSE x - l * floor(x / l) END END $$;

-- The reference RDF: a and b are queries returning (x, y, z) (z = 0 for 2-D data, dims = 2);
-- self compares a with itself over i < j.
CREATE FUNCTION ref_rdf(a text, b text, self bool, dims int, nb int, r_max float8, box float8[])
RETURNS TABLE (r_lo float8, r_hi float8, pairs bigint, g float8) LANGUAGE plpgsql AS $$
DECLARE
  w float8 := r_max / nb;
  na bigint; nbb bigint; v float8 := 1; e float8;
  lx float8 := coalesce(box[1], 0); ly float8 := coalesce(box[2], 0); lz float8 := coalesce(box[3], 0);
BEGIN
  DROP TABLE IF EXISTS ref_a, ref_b;
  EXECUTE format('CREATE TEMP TABLE ref_a AS SELECT row_number() OVER () AS i, x::float8 x, y::float8 y, z::float8 z FROM (%s) q', a);
  EXECUTE format('CREATE TEMP TABLE ref_b AS SELECT row_number() OVER () AS i, x::float8 x, y::float8 y, z::float8 z FROM (%s) q', CASE WHEN self THEN a ELSE b END);
  SELECT count(*) INTO na FROM ref_a;
  SELECT count(*) INTO nbb FROM ref_b;
  -- volume: periodic lengths, else the extent of both sets together
  SELECT CASE WHEN lx > 0 THEN lx ELSE max(x) - min(x) END INTO e FROM (SELECT x FROM ref_a UNION ALL SELECT x FROM ref_b) u;
  v := v * e;
  SELECT CASE WHEN ly > 0 THEN ly ELSE max(y) - min(y) END INTO e FROM (SELECT y FROM ref_a UNION ALL SELECT y FROM ref_b) u;
  v := v * e;
  IF dims = 3 THEN
    SELECT CASE WHEN lz > 0 THEN lz ELSE max(z) - min(z) END INTO e FROM (SELECT z FROM ref_a UNION ALL SELECT z FROM ref_b) u;
    v := v * e;
  END IF;
  RETURN QUERY
  WITH d AS (
    SELECT sqrt(ref_mi(ref_wrap(p.x, lx) - ref_wrap(q.x, lx), lx) ^ 2
              + ref_mi(ref_wrap(p.y, ly) - ref_wrap(q.y, ly), ly) ^ 2
              + ref_mi(ref_wrap(p.z, lz) - ref_wrap(q.z, lz), lz) ^ 2) AS d
    FROM ref_a p JOIN ref_b q ON (NOT self OR p.i < q.i)),
  h AS (SELECT floor(d * (1.0 / w))::int AS k, count(*) AS c FROM d GROUP BY 1),
  k AS (SELECT generate_series(0, nb - 1) AS k)
  SELECT k.k * w, (k.k + 1) * w, coalesce(h.c, 0)::bigint,
         CASE WHEN v > 0 AND (CASE WHEN self THEN na * (na - 1) ELSE na * nbb END) > 0
              THEN (CASE WHEN self THEN 2 ELSE 1 END) * coalesce(h.c, 0)
                   / ((CASE WHEN self THEN na * (na - 1.0) ELSE na * nbb * 1.0 END)::float8 / v
                      * CASE WHEN dims = 3 THEN 4.0 / 3.0 * pi() * (((k.k + 1) * w) ^ 3 - (k.k * w) ^ 3)
                             ELSE pi() * (((k.k + 1) * w) ^ 2 - (k.k * w) ^ 2) END)
         END
  FROM k LEFT JOIN h ON h.k = k.k ORDER BY k.k;
END $$;

-- Compares gpu_rdf with the reference: rows, equal counts, g within 1e-12 relative.
CREATE FUNCTION rdf_diff(got text, want text)
RETURNS TABLE (rows bigint, total_pairs numeric, count_mismatch bigint, g_mismatch bigint) LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY EXECUTE format($q$
    WITH g AS (SELECT row_number() OVER () AS n, * FROM (%s) q),
         w AS (SELECT row_number() OVER () AS n, * FROM (%s) q)
    SELECT count(*), sum(w.pairs),
           count(*) FILTER (WHERE g.pairs IS DISTINCT FROM w.pairs OR g.r_lo <> w.r_lo OR abs(g.r_hi - w.r_hi) > 1e-12),
           count(*) FILTER (WHERE (g.g IS NULL) <> (w.g IS NULL) OR abs(g.g - w.g) > 1e-12 * abs(w.g))
    FROM g FULL JOIN w USING (n)$q$, got, want);
END $$;

-- Lattice 8 x 8 x 8 with spacing 0.5 in a periodic box of 4, plus points on the upper faces
-- (x = 4 wraps to 0: duplicates of lattice points) and exact duplicates.
CREATE TABLE rdf_lat (x float8, y float8, z float8);
INSERT INTO rdf_lat SELECT i * 0.5, j * 0.5, k * 0.5
  FROM generate_series(0, 7) i, generate_series(0, 7) j, generate_series(0, 7) k;
INSERT INTO rdf_lat VALUES (4, 1, 1), (4, 4, 4), (0.5, 4, 2), (1.5, 1.5, 1.5), (1.5, 1.5, 1.5);
-- Continuous pseudo-random points (deterministic), some outside the box [0, 10)^3.
CREATE TABLE rdf_a (x float8, y float8, z float8);
INSERT INTO rdf_a SELECT 10 * ((i * 0.6180339887498949) % 1), 10 * ((i * 0.7548776662466927) % 1),
                         10 * ((i * 0.5698402909980532) % 1)
  FROM generate_series(1, 400) i;
CREATE TABLE rdf_b (x float8, y float8, z float8);
INSERT INTO rdf_b SELECT 14 * ((i * 0.4142135623730950) % 1) - 2, 10 * ((i * 0.7320508075688772) % 1),
                         12 * ((i * 0.2360679774997897) % 1) - 1
  FROM generate_series(1, 300) i;
CREATE TABLE rdf_2d (x float8, y float8);
INSERT INTO rdf_2d SELECT 6 * ((i * 0.6180339887498949) % 1), 6 * ((i * 0.7548776662466927) % 1)
  FROM generate_series(1, 500) i;
CREATE TABLE rdf_empty (x float8, y float8, z float8);
CREATE TABLE rdf_one (x float8, y float8, z float8);
INSERT INTO rdf_one VALUES (1, 2, 3);

SET gpu2bs.precision = float8;
-- self, periodic, r_max exactly half the box
SELECT * FROM rdf_diff('SELECT * FROM gpu_rdf(''rdf_lat'', ''rdf_lat'', 8, 2.0, ''{4,4,4}'')',
                       'SELECT * FROM ref_rdf(''SELECT * FROM rdf_lat'', NULL, true, 3, 8, 2.0, ''{4,4,4}'')');
-- the rows themselves (lattice: the shells of the simple cubic lattice)
SELECT r_lo, r_hi, pairs, round(g::numeric, 10) AS g FROM gpu_rdf('rdf_lat', 'rdf_lat', 8, 2.0, '{4,4,4}');
-- self, not periodic (volume = bounding box)
SELECT * FROM rdf_diff('SELECT * FROM gpu_rdf(''rdf_lat'', ''rdf_lat'', 10, 2.5)',
                       'SELECT * FROM ref_rdf(''SELECT * FROM rdf_lat'', NULL, true, 3, 10, 2.5, NULL)');
-- continuous data: self periodic, two relations periodic (b partly outside the box), mixed axes
SELECT * FROM rdf_diff('SELECT * FROM gpu_rdf(''rdf_a'', ''rdf_a'', 40, 4.0, ''{10,10,10}'')',
                       'SELECT * FROM ref_rdf(''SELECT * FROM rdf_a'', NULL, true, 3, 40, 4.0, ''{10,10,10}'')');
SELECT * FROM rdf_diff('SELECT * FROM gpu_rdf(''rdf_a'', ''rdf_b'', 25, 5.0, ''{10,10,10}'')',
                       'SELECT * FROM ref_rdf(''SELECT * FROM rdf_a'', ''SELECT * FROM rdf_b'', false, 3, 25, 5.0, ''{10,10,10}'')');
SELECT * FROM rdf_diff('SELECT * FROM gpu_rdf(''rdf_a'', ''rdf_b'', 30, 3.0, ''{10,0,NULL}'')',
                       'SELECT * FROM ref_rdf(''SELECT * FROM rdf_a'', ''SELECT * FROM rdf_b'', false, 3, 30, 3.0, ''{10,0,0}'')');
SELECT * FROM rdf_diff('SELECT * FROM gpu_rdf(''rdf_a'', ''rdf_b'', 30, 3.0)',
                       'SELECT * FROM ref_rdf(''SELECT * FROM rdf_a'', ''SELECT * FROM rdf_b'', false, 3, 30, 3.0, NULL)');
-- 2-D, periodic
SELECT * FROM rdf_diff('SELECT * FROM gpu_rdf(''rdf_2d'', ''rdf_2d'', 30, 3.0, ''{6,6}'')',
                       'SELECT * FROM ref_rdf(''SELECT x, y, 0 AS z FROM rdf_2d'', NULL, true, 2, 30, 3.0, ''{6,6}'')');
-- named coordinates (y, z only: 2-D) and the two-relation form on the same data
SELECT * FROM rdf_diff('SELECT * FROM gpu_rdf(''rdf_a'', ''rdf_a'', 20, 2.0, ''{10,10}'', ''{y,z}'')',
                       'SELECT * FROM ref_rdf(''SELECT y AS x, z AS y, 0 AS z FROM rdf_a'', NULL, true, 2, 20, 2.0, ''{10,10}'')');
CREATE VIEW rdf_a_view AS SELECT * FROM rdf_a;
SELECT * FROM rdf_diff('SELECT * FROM gpu_rdf(''rdf_a'', ''rdf_a_view'', 40, 4.0, ''{10,10,10}'')',
                       'SELECT * FROM ref_rdf(''SELECT * FROM rdf_a'', ''SELECT * FROM rdf_a'', false, 3, 40, 4.0, ''{10,10,10}'')');
-- the two-relation form over the same rows counts each unordered pair twice plus the N
-- zero-distance self pairs: pairs(two) = 2 pairs(self) + N in bucket 0
SELECT bool_and(t.pairs = 2 * s.pairs + CASE WHEN t.r_lo = 0 THEN 400 ELSE 0 END) AS twice
  FROM gpu_rdf('rdf_a', 'rdf_a_view', 40, 4.0, '{10,10,10}') t
  JOIN gpu_rdf('rdf_a', 'rdf_a', 40, 4.0, '{10,10,10}') s USING (r_lo);

-- float4: the lattice decides every pair alike; continuous data within a few edge pairs
SET gpu2bs.precision = float4;
SELECT * FROM rdf_diff('SELECT * FROM gpu_rdf(''rdf_lat'', ''rdf_lat'', 8, 2.0, ''{4,4,4}'')',
                       'SELECT * FROM ref_rdf(''SELECT * FROM rdf_lat'', NULL, true, 3, 8, 2.0, ''{4,4,4}'')');
SELECT sum(abs(g.pairs - w.pairs)) <= 4 AS close, sum(g.pairs) = sum(w.pairs) OR abs(sum(g.pairs) - sum(w.pairs)) <= 2 AS total_close
  FROM (SELECT row_number() OVER () n, * FROM gpu_rdf('rdf_a', 'rdf_b', 25, 5.0, '{10,10,10}')) g
  JOIN (SELECT row_number() OVER () n, * FROM ref_rdf('SELECT * FROM rdf_a', 'SELECT * FROM rdf_b', false, 3, 25, 5.0, '{10,10,10}')) w USING (n);

-- edge cases: no rows, one row (g NULL), nbuckets 1
SELECT * FROM gpu_rdf('rdf_empty', 'rdf_empty', 3, 1.0, '{10,10,10}');
SELECT * FROM gpu_rdf('rdf_one', 'rdf_one', 2, 1.0);
SELECT r_lo, r_hi, pairs, round(g::numeric, 10) AS g FROM gpu_rdf('rdf_one', 'rdf_a', 2, 1.0, '{10,10,10}');
SELECT pairs, round(g::numeric, 10) FROM gpu_rdf('rdf_lat', 'rdf_lat', 1, 0.5, '{4,4,4}');
-- NULL arguments: no rows
SELECT count(*) FROM gpu_rdf(NULL, 'rdf_a', 3, 1.0);
SELECT count(*) FROM gpu_rdf('rdf_a', 'rdf_a', NULL, 1.0);
SELECT count(*) FROM gpu_rdf('rdf_a', 'rdf_a', 3, NULL);

-- errors
\set VERBOSITY sqlstate
SELECT * FROM gpu_rdf('rdf_a', 'rdf_a', 10, 5.0001, '{10,10,10}');  -- r_max > L/2
SELECT * FROM gpu_rdf('rdf_a', 'rdf_a', 10, 3.0, '{10,5.9,0}');    -- r_max > 5.9/2
SELECT * FROM gpu_rdf('rdf_a', 'rdf_a', 10, 1.0, '{10,10}');       -- box length count
SELECT * FROM gpu_rdf('rdf_a', 'rdf_a', 10, 1.0, '{10,-1,10}');
SELECT * FROM gpu_rdf('rdf_a', 'rdf_a', 10, 1.0, '{10,NaN,10}');
SELECT * FROM gpu_rdf('rdf_a', 'rdf_a', 10, 1.0, '{10,Infinity,10}');
SELECT * FROM gpu_rdf('rdf_a', 'rdf_a', 10, 1.0, '{{10,10,10}}');
SELECT * FROM gpu_rdf('rdf_a', 'rdf_a', 0, 1.0);
SELECT * FROM gpu_rdf('rdf_a', 'rdf_a', 2000000, 1.0);
SELECT * FROM gpu_rdf('rdf_a', 'rdf_a', 10, 0);
SELECT * FROM gpu_rdf('rdf_a', 'rdf_a', 10, 'NaN');
SELECT * FROM gpu_rdf('rdf_a', 'rdf_a', 10, 'Infinity');
SELECT * FROM gpu_rdf('rdf_a', 'rdf_2d', 10, 1.0);                 -- 3 and 2 coordinates
SELECT * FROM gpu_rdf('rdf_a', 'rdf_missing', 10, 1.0);
SELECT * FROM gpu_rdf('rdf_a', 'rdf_a', 10, 1.0, NULL, '{x,nope}');
\set VERBOSITY default
RESET gpu2bs.precision;
