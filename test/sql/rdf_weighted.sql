--
-- gpu_rdf_weighted against a float64 reference in SQL: every pair (self: i < j) with coordinates
-- wrapped into [0, L) and minimum-image differences on periodic axes, the bucket
-- floor(d * (1 / w)), the exact (numeric) sum of the products w_i * w_j per bucket, and
-- g = m * weight_sum / (rho_w * shell) with rho_w = ((sum w)^2 - sum w^2) / V (self, m = 2) or
-- (sum w_a)(sum w_b) / V (two relations, m = 1). Lattice data decide every pair alike in float4,
-- float8 and SQL; integer and dyadic weights make the fixed-point sums exact, so weight_sum
-- equals the reference; real weights are compared within the documented bound. Then
-- gpu_xi_weighted: its counts and weight sums against the same kind of reference with bin edges,
-- xi against the formula over those sums, and gpu_xi's rows with every weight 1.
--

SET client_min_messages = warning;

CREATE FUNCTION rw_mi(d float8, l float8) RETURNS float8 LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN l IS NULL OR l = 0 THEN d WHEN d > l / 2 THEN d - l WHEN d < -l / 2 THEN d + l ELSE d END $$;
CREATE FUNCTION rw_wrap(x float8, l float8) RETURNS float8 LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN l IS NULL OR l = 0 THEN x
              ELSE CASE WHEN x - l * floor(x / l) >= l THEN 0 ELSE x - l * floor(x / l) END END $$;

-- The reference: a and b are queries returning (x, y, z, w) (3-D); rows with a NULL w are left
-- out, as gpu_rdf_weighted skips them.
CREATE FUNCTION ref_rdfw(a text, b text, self bool, nb int, r_max float8, box float8[])
RETURNS TABLE (r_lo float8, r_hi float8, pairs bigint, weight_sum numeric, g float8) LANGUAGE plpgsql AS $$
DECLARE
  w float8 := r_max / nb;
  v float8 := 1; e float8; sa numeric; sq numeric; sb numeric; rho float8;
  lx float8 := coalesce(box[1], 0); ly float8 := coalesce(box[2], 0); lz float8 := coalesce(box[3], 0);
BEGIN
  DROP TABLE IF EXISTS rw_a, rw_b;
  EXECUTE format('CREATE TEMP TABLE rw_a AS SELECT row_number() OVER () AS i, x::float8 x, y::float8 y, z::float8 z, w::float8 w FROM (%s) q WHERE w IS NOT NULL', a);
  EXECUTE format('CREATE TEMP TABLE rw_b AS SELECT row_number() OVER () AS i, x::float8 x, y::float8 y, z::float8 z, w::float8 w FROM (%s) q WHERE w IS NOT NULL', CASE WHEN self THEN a ELSE b END);
  SELECT CASE WHEN lx > 0 THEN lx ELSE max(x) - min(x) END INTO e FROM (SELECT x FROM rw_a UNION ALL SELECT x FROM rw_b) u;
  v := v * e;
  SELECT CASE WHEN ly > 0 THEN ly ELSE max(y) - min(y) END INTO e FROM (SELECT y FROM rw_a UNION ALL SELECT y FROM rw_b) u;
  v := v * e;
  SELECT CASE WHEN lz > 0 THEN lz ELSE max(z) - min(z) END INTO e FROM (SELECT z FROM rw_a UNION ALL SELECT z FROM rw_b) u;
  v := v * e;
  SELECT sum(q.w::numeric), sum(q.w::numeric * q.w::numeric) INTO sa, sq FROM rw_a q;
  SELECT sum(q.w::numeric) INTO sb FROM rw_b q;
  rho := (CASE WHEN self THEN sa * sa - sq ELSE sa * sb END)::float8 / v;
  RETURN QUERY
  WITH d AS (
    SELECT sqrt(rw_mi(rw_wrap(p.x, lx) - rw_wrap(q.x, lx), lx) ^ 2
              + rw_mi(rw_wrap(p.y, ly) - rw_wrap(q.y, ly), ly) ^ 2
              + rw_mi(rw_wrap(p.z, lz) - rw_wrap(q.z, lz), lz) ^ 2) AS d,
           p.w::numeric * q.w::numeric AS pw
    FROM rw_a p JOIN rw_b q ON (NOT self OR p.i < q.i)),
  h AS (SELECT floor(d * (1.0 / w))::int AS k, count(*) AS c, sum(pw) AS s FROM d GROUP BY 1),
  k AS (SELECT generate_series(0, nb - 1) AS k)
  SELECT k.k * w, (k.k + 1) * w, coalesce(h.c, 0)::bigint, coalesce(h.s, 0),
         CASE WHEN v > 0 AND rho <> 0
              THEN (CASE WHEN self THEN 2 ELSE 1 END) * coalesce(h.s, 0)::float8
                   / (rho * 4.0 / 3.0 * pi() * (((k.k + 1) * w) ^ 3 - (k.k * w) ^ 3))
         END
  FROM k LEFT JOIN h ON h.k = k.k ORDER BY k.k;
END $$;

-- Compares gpu_rdf_weighted with the reference: rows, pairs, edges, weight sums (exact, or with
-- wmax given within the documented 0.5 ulp + pairs * wmax^2 * 2^-62 of the sum of the rounded
-- products, which lies within pairs * wmax^2 * 2^-53 of the exact numeric sum; margins doubled
-- for reading through decimal text) and g within 1e-12 relative.
CREATE FUNCTION rdfw_diff(got text, want text, wmax float8 DEFAULT NULL)
RETURNS TABLE (rows bigint, total_pairs numeric, count_mismatch bigint, sum_mismatch bigint, g_mismatch bigint)
LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY EXECUTE format($q$
    WITH g AS (SELECT row_number() OVER () AS n, * FROM (%s) q),
         w AS (SELECT row_number() OVER () AS n, * FROM (%s) q)
    SELECT count(*), sum(w.pairs),
           count(*) FILTER (WHERE g.pairs IS DISTINCT FROM w.pairs OR g.r_lo <> w.r_lo OR abs(g.r_hi - w.r_hi) > 1e-12),
           count(*) FILTER (WHERE CASE WHEN %L::float8 IS NULL THEN g.weight_sum IS DISTINCT FROM w.weight_sum::float8
                                       ELSE abs(g.weight_sum::text::numeric - w.weight_sum)
                                            > abs(g.weight_sum::text::numeric) * 2 ^ -52::numeric
                                              + g.pairs * (%L::float8::text::numeric ^ 2) * (2 ^ -61::numeric + 2 ^ -52::numeric) END),
           count(*) FILTER (WHERE (g.g IS NULL) <> (w.g IS NULL) OR abs(g.g - w.g) > 1e-12 * abs(w.g))
    FROM g FULL JOIN w USING (n)$q$, got, want, wmax, wmax);
END $$;

-- Lattice 8 x 8 x 8 of spacing 0.5 in a periodic box of 4, points on the upper faces (x = 4
-- wraps to 0: duplicates of lattice points), exact duplicates, and a row with a NULL weight.
CREATE TABLE rw_lat (x float8, y float8, z float8, wi int, wd float8, wr float8, one float8);
INSERT INTO rw_lat SELECT i * 0.5, j * 0.5, k * 0.5, (i + 2 * j + 3 * k) % 5 - 1,
                          ((i * 7 + j * 3 + k) % 16) / 8.0, 0.3 + sin(i + 10 * j + 100 * k) ^ 2, 1
  FROM generate_series(0, 7) i, generate_series(0, 7) j, generate_series(0, 7) k;
INSERT INTO rw_lat VALUES (4, 1, 1, 2, 0.25, 1.7, 1), (4, 4, 4, 3, 1.5, 0.9, 1), (0.5, 4, 2, -2, 0.75, 0.4, 1),
                          (1.5, 1.5, 1.5, 1, 2.0, 1.1, 1), (1.5, 1.5, 1.5, 4, 0.125, 2.3, 1),
                          (2, 2, 2, NULL, NULL, NULL, 1);
-- A second lattice, shifted by half a step, partly outside the box.
CREATE TABLE rw_lat2 (x float8, y float8, z float8, wi int, wd float8);
INSERT INTO rw_lat2 SELECT i * 0.5 + 0.25, j * 0.5 - 1, k * 0.5 + 0.25, (i * j + k) % 4, (i + j + k) % 8 / 4.0
  FROM generate_series(0, 5) i, generate_series(0, 9) j, generate_series(0, 5) k;

SET gpu2bs.precision = float8;
-- self, periodic, r_max exactly half the box: integer, dyadic and real weights
SELECT * FROM rdfw_diff('SELECT * FROM gpu_rdf_weighted(''rw_lat'', ''rw_lat'', 8, 2.0, ''wi'', ''{4,4,4}'', ''{x,y,z}'')',
                        'SELECT * FROM ref_rdfw(''SELECT x, y, z, wi AS w FROM rw_lat'', NULL, true, 8, 2.0, ''{4,4,4}'')');
SELECT * FROM rdfw_diff('SELECT * FROM gpu_rdf_weighted(''rw_lat'', ''rw_lat'', 8, 2.0, ''wd'', ''{4,4,4}'', ''{x,y,z}'')',
                        'SELECT * FROM ref_rdfw(''SELECT x, y, z, wd AS w FROM rw_lat'', NULL, true, 8, 2.0, ''{4,4,4}'')');
SELECT * FROM rdfw_diff('SELECT * FROM gpu_rdf_weighted(''rw_lat'', ''rw_lat'', 8, 2.0, ''wr'', ''{4,4,4}'', ''{x,y,z}'')',
                        'SELECT * FROM ref_rdfw(''SELECT x, y, z, wr AS w FROM rw_lat'', NULL, true, 8, 2.0, ''{4,4,4}'')',
                        (SELECT max(abs(wr)) FROM rw_lat));
-- the rows themselves (integer weights)
SELECT r_lo, r_hi, pairs, weight_sum, round(g::numeric, 10) AS g
  FROM gpu_rdf_weighted('rw_lat', 'rw_lat', 8, 2.0, 'wi', '{4,4,4}', '{x,y,z}');
-- not periodic (volume = bounding box), mixed box
SELECT * FROM rdfw_diff('SELECT * FROM gpu_rdf_weighted(''rw_lat'', ''rw_lat'', 10, 2.5, ''wd'', NULL, ''{x,y,z}'')',
                        'SELECT * FROM ref_rdfw(''SELECT x, y, z, wd AS w FROM rw_lat'', NULL, true, 10, 2.5, NULL)');
SELECT * FROM rdfw_diff('SELECT * FROM gpu_rdf_weighted(''rw_lat'', ''rw_lat'', 6, 1.5, ''wi'', ''{4,0,NULL}'', ''{x,y,z}'')',
                        'SELECT * FROM ref_rdfw(''SELECT x, y, z, wi AS w FROM rw_lat'', NULL, true, 6, 1.5, ''{4,0,0}'')');
-- two relations, periodic (rw_lat2 partly outside the box) and not
SELECT * FROM rdfw_diff('SELECT * FROM gpu_rdf_weighted(''rw_lat'', ''rw_lat2'', 8, 2.0, ''wd'', ''{4,4,4}'', ''{x,y,z}'')',
                        'SELECT * FROM ref_rdfw(''SELECT x, y, z, wd AS w FROM rw_lat'', ''SELECT x, y, z, wd AS w FROM rw_lat2'', false, 8, 2.0, ''{4,4,4}'')');
SELECT * FROM rdfw_diff('SELECT * FROM gpu_rdf_weighted(''rw_lat2'', ''rw_lat'', 5, 2.5, ''wi'', NULL, ''{x,y,z}'')',
                        'SELECT * FROM ref_rdfw(''SELECT x, y, z, wi AS w FROM rw_lat2'', ''SELECT x, y, z, wi AS w FROM rw_lat'', false, 5, 2.5, NULL)');
-- every weight 1: gpu_rdf's pairs and g, weight_sum = pairs
SELECT bool_and(w.pairs = u.pairs AND w.weight_sum = w.pairs) AS same_pairs,
       bool_and(abs(w.g - u.g) <= 1e-13 * abs(u.g)) AS same_g
  FROM gpu_rdf_weighted('rw_lat', 'rw_lat', 8, 2.0, 'one', '{4,4,4}', '{x,y,z}') w
  JOIN gpu_rdf('rw_lat', 'rw_lat', 8, 2.0, '{4,4,4}', '{x,y,z}') u USING (r_lo);

-- float4: the lattice decides every pair alike
SET gpu2bs.precision = float4;
SELECT * FROM rdfw_diff('SELECT * FROM gpu_rdf_weighted(''rw_lat'', ''rw_lat'', 8, 2.0, ''wi'', ''{4,4,4}'', ''{x,y,z}'')',
                        'SELECT * FROM ref_rdfw(''SELECT x, y, z, wi AS w FROM rw_lat'', NULL, true, 8, 2.0, ''{4,4,4}'')');
SELECT * FROM rdfw_diff('SELECT * FROM gpu_rdf_weighted(''rw_lat'', ''rw_lat2'', 8, 2.0, ''wd'', ''{4,4,4}'', ''{x,y,z}'')',
                        'SELECT * FROM ref_rdfw(''SELECT x, y, z, wd AS w FROM rw_lat'', ''SELECT x, y, z, wd AS w FROM rw_lat2'', false, 8, 2.0, ''{4,4,4}'')');
RESET gpu2bs.precision;

-- No rows: NULL arguments. One row: no pairs, g NULL. All weights NULL: no points, g NULL.
SELECT count(*) AS null_weight FROM gpu_rdf_weighted('rw_lat', 'rw_lat', 4, 1.0, NULL);
SELECT count(*) AS null_rel FROM gpu_rdf_weighted(NULL, 'rw_lat', 4, 1.0, 'wi');
CREATE TABLE rw_one (x float8, y float8, z float8, w float8);
INSERT INTO rw_one VALUES (1, 2, 3, 2.5), (2, 2, 2, NULL);
SELECT * FROM gpu_rdf_weighted('rw_one', 'rw_one', 2, 1.0, 'w', '{4,4,4}', '{x,y,z}');
UPDATE rw_one SET w = NULL;
SELECT * FROM gpu_rdf_weighted('rw_one', 'rw_one', 2, 1.0, 'w', '{4,4,4}', '{x,y,z}');
ALTER TABLE rw_one ADD COLUMN wi int;  -- all NULL: a has no points, b has many
SELECT * FROM gpu_rdf_weighted('rw_one', 'rw_lat', 2, 1.0, 'wi', '{4,4,4}', '{x,y,z}');
-- Errors: NaN or infinite weight, a missing or non-numeric weight column, a bad box or r_max.
CREATE TABLE rw_bad (x float8, y float8, z float8, w float8, t text);
INSERT INTO rw_bad VALUES (1, 1, 1, 1, 'a'), (2, 2, 2, 'NaN', 'b');
SELECT * FROM gpu_rdf_weighted('rw_bad', 'rw_bad', 2, 1.0, 'w', NULL, '{x,y,z}');
UPDATE rw_bad SET w = '-Infinity' WHERE x = 2;
SELECT * FROM gpu_rdf_weighted('rw_bad', 'rw_bad', 2, 1.0, 'w', NULL, '{x,y,z}');
SELECT * FROM gpu_rdf_weighted('rw_lat', 'rw_lat', 2, 1.0, 'nosuch', NULL, '{x,y,z}');
SELECT * FROM gpu_rdf_weighted('rw_bad', 'rw_bad', 2, 1.0, 't', NULL, '{x,y,z}');
SELECT * FROM gpu_rdf_weighted('rw_lat', 'rw_lat', 2, 2.5, 'wi', '{4,4,4}', '{x,y,z}');
SELECT * FROM gpu_rdf_weighted('rw_lat', 'rw_lat', 0, 1.0, 'wi');
UPDATE rw_bad SET w = 1e200 WHERE x = 2;
SELECT * FROM gpu_rdf_weighted('rw_bad', 'rw_bad', 2, 1.0, 'w', NULL, '{x,y,z}');

-- gpu_xi_weighted. The reference counts and numeric weight sums per bin of squared edges.
CREATE FUNCTION ref_binw(a text, b text, self bool, edges float8[], box float8[])
RETURNS TABLE (k int, n bigint, s numeric) LANGUAGE plpgsql AS $$
DECLARE
  lx float8 := coalesce(box[1], 0); ly float8 := coalesce(box[2], 0); lz float8 := coalesce(box[3], 0);
  e2 float8[] := ARRAY(SELECT e * e FROM unnest(edges) e);
BEGIN
  DROP TABLE IF EXISTS bw_a, bw_b;
  EXECUTE format('CREATE TEMP TABLE bw_a AS SELECT row_number() OVER () AS i, x::float8 x, y::float8 y, z::float8 z, w::float8 w FROM (%s) q WHERE w IS NOT NULL', a);
  EXECUTE format('CREATE TEMP TABLE bw_b AS SELECT row_number() OVER () AS i, x::float8 x, y::float8 y, z::float8 z, w::float8 w FROM (%s) q WHERE w IS NOT NULL', CASE WHEN self THEN a ELSE b END);
  RETURN QUERY
  WITH d AS (
    SELECT width_bucket(rw_mi(rw_wrap(p.x, lx) - rw_wrap(q.x, lx), lx) ^ 2
                      + rw_mi(rw_wrap(p.y, ly) - rw_wrap(q.y, ly), ly) ^ 2
                      + rw_mi(rw_wrap(p.z, lz) - rw_wrap(q.z, lz), lz) ^ 2, e2) AS k,
           p.w::numeric * q.w::numeric AS pw
    FROM bw_a p JOIN bw_b q ON (NOT self OR p.i < q.i))
  SELECT g.k, count(d.k), coalesce(sum(d.pw), 0)
  FROM generate_series(1, array_length(edges, 1) - 1) g(k) LEFT JOIN d ON d.k = g.k
  GROUP BY g.k ORDER BY g.k;
END $$;
ALTER TABLE rw_lat2 ADD COLUMN one float8 DEFAULT 1;
CREATE TEMP TABLE xw AS
SELECT row_number() OVER () AS k, * FROM gpu_xi_weighted('rw_lat', 'rw_lat2', '{0.25,0.5,1,1.5,2}', 'wd', box => '{4,4,4}', coords => '{x,y,z}');
CREATE TEMP TABLE xdd AS SELECT * FROM ref_binw('SELECT x, y, z, wd AS w FROM rw_lat', NULL, true, '{0.25,0.5,1,1.5,2}', '{4,4,4}');
CREATE TEMP TABLE xdr AS SELECT * FROM ref_binw('SELECT x, y, z, wd AS w FROM rw_lat', 'SELECT x, y, z, wd AS w FROM rw_lat2', false, '{0.25,0.5,1,1.5,2}', '{4,4,4}');
CREATE TEMP TABLE xrr AS SELECT * FROM ref_binw('SELECT x, y, z, wd AS w FROM rw_lat2', NULL, true, '{0.25,0.5,1,1.5,2}', '{4,4,4}');
-- Weighted numbers of pairs: ((sum w)^2 - sum w^2) / 2 and sum w_D * sum w_R.
CREATE TEMP TABLE xt AS
SELECT ((sd * sd - sd2) / 2)::float8 AS pdd, (sd * sr)::float8 AS pdr, ((sr * sr - sr2) / 2)::float8 AS prr
FROM (SELECT sum(wd::numeric) sd, sum(wd::numeric ^ 2) sd2 FROM rw_lat WHERE wd IS NOT NULL) a,
     (SELECT sum(wd::numeric) sr, sum(wd::numeric ^ 2) sr2 FROM rw_lat2) b;
SELECT count(*) AS bins,
       bool_and(x.dd = dd.n AND x.dr = dr.n AND x.rr = rr.n) AS counts_equal,
       bool_and(x.dd_w = dd.s::float8 AND x.dr_w = dr.s::float8 AND x.rr_w = rr.s::float8) AS sums_exact,
       bool_and(CASE WHEN rr.s = 0 THEN x.xi IS NULL
                     ELSE abs(x.xi - ((dd.s::float8 / t.pdd - 2 * dr.s::float8 / t.pdr + rr.s::float8 / t.prr) / (rr.s::float8 / t.prr)))
                          <= 1e-12 * (1 + abs(x.xi)) END) AS landy_szalay,
       count(*) FILTER (WHERE rr.s > 0) AS bins_with_rr
FROM xw x JOIN xdd dd USING (k) JOIN xdr dr USING (k) JOIN xrr rr USING (k), xt t;
-- natural estimator, and every weight 1: gpu_xi's counts and xi
SELECT bool_and(CASE WHEN x.rr_w = 0 THEN x.xi IS NULL
                     ELSE abs(x.xi - ((x.dd_w / t.pdd) / (x.rr_w / t.prr) - 1)) <= 1e-12 * (1 + abs(x.xi)) END) AS natural
FROM gpu_xi_weighted('rw_lat', 'rw_lat2', '{0.25,0.5,1,1.5,2}', 'wd', 'natural', '{4,4,4}', '{x,y,z}') x, xt t;
SELECT bool_and(w.dd = u.dd AND w.dr = u.dr AND w.rr = u.rr AND w.dd_w = w.dd AND w.dr_w = w.dr AND w.rr_w = w.rr) AS same_counts,
       bool_and((w.xi IS NULL) = (u.xi IS NULL) AND coalesce(abs(w.xi - u.xi) <= 1e-12 * (1 + abs(u.xi)), true)) AS same_xi
FROM gpu_xi_weighted('rw_lat', 'rw_lat2', '{0.25,0.5,1,1.5,2}', 'one', box => '{4,4,4}', coords => '{x,y,z}') w
JOIN gpu_xi('rw_lat', 'rw_lat2', '{0.25,0.5,1,1.5,2}', box => '{4,4,4}', coords => '{x,y,z}') u USING (r_lo);
-- analytic RR (no randoms, periodic box): rr_w = weighted pairs * S / V, dr NULL
SELECT bool_and(x.dr IS NULL AND x.dr_w IS NULL) AS dr_null,
       bool_and(abs(x.rr_w - t.pdd * 4.0 / 3.0 * pi() * (x.r_hi ^ 3 - x.r_lo ^ 3) / 64) <= 1e-12 * x.rr_w) AS analytic_rr,
       bool_and(abs(x.xi - (x.dd_w / x.rr_w - 1)) <= 1e-12 * (1 + abs(x.xi))) AS analytic_xi
FROM gpu_xi_weighted('rw_lat', NULL, '{0.25,0.5,1,1.5,2}', 'wd', box => '{4,4,4}', coords => '{x,y,z}') x, xt t;
-- jackknife: patches are slabs of x (3 patches); xi_err against the leave-one-patch-out xi of
-- gpu_xi_weighted over views without each patch, and with every weight 1 gpu_xi's xi_err
ALTER TABLE rw_lat ADD COLUMN p int;
UPDATE rw_lat SET p = floor(x)::int % 3;
ALTER TABLE rw_lat2 ADD COLUMN p int;
UPDATE rw_lat2 SET p = floor(x)::int % 3;
CREATE VIEW rw_lat_x0 AS SELECT * FROM rw_lat WHERE p <> 0;
CREATE VIEW rw_lat_x1 AS SELECT * FROM rw_lat WHERE p <> 1;
CREATE VIEW rw_lat_x2 AS SELECT * FROM rw_lat WHERE p <> 2;
CREATE VIEW rw_lat2_x0 AS SELECT * FROM rw_lat2 WHERE p <> 0;
CREATE VIEW rw_lat2_x1 AS SELECT * FROM rw_lat2 WHERE p <> 1;
CREATE VIEW rw_lat2_x2 AS SELECT * FROM rw_lat2 WHERE p <> 2;
WITH k AS (SELECT * FROM (VALUES ('rw_lat_x0'::regclass, 'rw_lat2_x0'::regclass), ('rw_lat_x1', 'rw_lat2_x1'),
                                 ('rw_lat_x2', 'rw_lat2_x2')) v(d, r)),
     xk AS (SELECT x.r_lo, x.xi FROM k, LATERAL gpu_xi_weighted(k.d, k.r, '{0.5,1,1.5,2}', 'wd', box => '{4,4,4}', coords => '{x,y,z}') x),
     e AS (SELECT r_lo, count(xi) AS n, sqrt(2.0 / 3.0 * sum((xi - m) ^ 2)) AS err
           FROM (SELECT r_lo, xi, avg(xi) OVER (PARTITION BY r_lo) AS m FROM xk) q GROUP BY r_lo)
SELECT count(*) AS bins, bool_and(e.n = 3) AS all_defined,
       bool_and(abs(j.xi_err - e.err) <= 1e-9 * e.err + 1e-15) AS xi_err_equal
FROM gpu_xi_weighted('rw_lat', 'rw_lat2', '{0.5,1,1.5,2}', 'wd', box => '{4,4,4}', coords => '{x,y,z}', patch => 'p') j
JOIN e USING (r_lo);
SELECT bool_and(w.xi_err IS NOT NULL AND abs(w.xi_err - u.xi_err) <= 1e-10 * u.xi_err + 1e-15) AS same_xi_err
FROM gpu_xi_weighted('rw_lat', 'rw_lat2', '{0.5,1,1.5,2}', 'one', box => '{4,4,4}', coords => '{x,y,z}', patch => 'p') w
JOIN gpu_xi('rw_lat', 'rw_lat2', '{0.5,1,1.5,2}', box => '{4,4,4}', coords => '{x,y,z}', patch => 'p') u USING (r_lo);
SELECT * FROM gpu_xi_weighted('rw_lat', NULL, '{0.5,1}', 'wd', box => '{4,4,4}', coords => '{x,y,z}', patch => 'p');
-- errors: no randoms without a periodic box, a NULL weight argument (no rows)
SELECT * FROM gpu_xi_weighted('rw_lat', NULL, '{0.25,0.5}', 'wd', coords => '{x,y,z}');
SELECT count(*) AS null_weight FROM gpu_xi_weighted('rw_lat', 'rw_lat2', '{0.25,0.5}', NULL);
