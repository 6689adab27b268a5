--
-- gpu_xi against brute-force float64 counts in SQL: DD (pairs i < j of data), DR (every data x
-- randoms pair) and RR (pairs i < j of randoms) in the bins [lo, hi) tested as lo^2 <= d2 < hi^2,
-- with minimum-image differences on periodic axes. Integer coordinates and edges whose squares are
-- exact make every d2 and every squared edge exact in float4 and float8, so the counts equal the
-- reference in both precisions, pairs exactly on an edge included (they open the bin). Then the
-- estimators from the counts, the analytic RR of a periodic box, w(theta) of (ra, dec) points
-- against haversine angles, empty and one-row inputs, and the argument errors.
--

-- Minimum-image difference on an axis of length l (0: not periodic).
CREATE FUNCTION xi_mi(d float8, l float8) RETURNS float8 LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN l = 0 THEN d WHEN d > l / 2 THEN d - l WHEN d < -l / 2 THEN d + l ELSE d END $$;

-- Brute-force counts of the pairs of the (x, y, z) queries a and b (self: i < j) in the bins of
-- edges, with the periodic length l on every axis (0: none).
CREATE FUNCTION xi_ref(a text, b text, self bool, edges float8[], l float8)
RETURNS TABLE (r_lo float8, r_hi float8, pairs bigint) LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY EXECUTE format($q$
    WITH pa AS (SELECT row_number() OVER () AS i, x::float8 x, y::float8 y, z::float8 z FROM (%s) q),
         pb AS (SELECT row_number() OVER () AS i, x::float8 x, y::float8 y, z::float8 z FROM (%s) q),
         d AS (SELECT xi_mi(pa.x - pb.x, %s)^2 + xi_mi(pa.y - pb.y, %s)^2 + xi_mi(pa.z - pb.z, %s)^2 AS d2
               FROM pa, pb WHERE NOT %L::bool OR pa.i < pb.i),
         e AS (SELECT k, %L::float8[] AS ed FROM generate_series(1, %s) k)
    SELECT e.ed[k], e.ed[k + 1], count(d.d2)
    FROM e LEFT JOIN d ON d.d2 >= e.ed[k] * e.ed[k] AND d.d2 < e.ed[k + 1] * e.ed[k + 1]
    GROUP BY k, e.ed ORDER BY k $q$, a, CASE WHEN self THEN a ELSE b END, l, l, l, self, edges,
    array_length(edges, 1) - 1);
END $$;

-- Lattice data: 300 data and 400 random points with integer coordinates in [0, 20] from
-- PostgreSQL's integer hash (the same on every platform).
CREATE TABLE xi_d AS
  SELECT i AS id, abs(hashint4(3 * i)) % 21 AS x, abs(hashint4(3 * i + 1)) % 21 AS y,
         abs(hashint4(3 * i + 2)) % 21 AS z FROM generate_series(1, 300) i;
CREATE TABLE xi_r AS
  SELECT i AS id, abs(hashint4(5000 + 3 * i)) % 21 AS x, abs(hashint4(5001 + 3 * i)) % 21 AS y,
         abs(hashint4(5002 + 3 * i)) % 21 AS z FROM generate_series(1, 400) i;
INSERT INTO xi_d VALUES (1001, NULL, 1, 1);  -- skipped: a NULL coordinate

-- Every column against the brute force, in both precisions, open and periodic (box 21).
CREATE FUNCTION xi_check(edges float8[], l float8) RETURNS TABLE (bins bigint, dd_ok bool, dr_ok bool, rr_ok bool, total_dd numeric)
LANGUAGE sql AS $$
  WITH g AS (SELECT row_number() OVER () k, * FROM gpu_xi('xi_d', 'xi_r', edges,
                 box => CASE WHEN l > 0 THEN ARRAY[l, l, l] END, coords => '{x,y,z}')),
       dd AS (SELECT row_number() OVER () k, * FROM xi_ref('SELECT x, y, z FROM xi_d WHERE x IS NOT NULL', NULL, true, edges, l)),
       dr AS (SELECT row_number() OVER () k, * FROM xi_ref('SELECT x, y, z FROM xi_d WHERE x IS NOT NULL', 'SELECT x, y, z FROM xi_r', false, edges, l)),
       rr AS (SELECT row_number() OVER () k, * FROM xi_ref('SELECT x, y, z FROM xi_r', NULL, true, edges, l))
  SELECT count(*), bool_and(g.dd = dd.pairs AND g.r_lo = dd.r_lo AND g.r_hi = dd.r_hi),
         bool_and(g.dr = dr.pairs), bool_and(g.rr = rr.pairs), sum(g.dd)
  FROM g JOIN dd USING (k) JOIN dr USING (k) JOIN rr USING (k) $$;

SET gpu2bs.precision = float8;
SELECT * FROM xi_check('{0,1,2,2.5,3,4,5,7.5,10}', 0);
SELECT * FROM xi_check('{1,2,3,5,10.5}', 21);
SET gpu2bs.precision = float4;
SELECT * FROM xi_check('{0,1,2,2.5,3,4,5,7.5,10}', 0);
SELECT * FROM xi_check('{1,2,3,5,10.5}', 21);
-- log-spaced edges (squares not exact: no lattice distance lies near an edge)
SELECT * FROM xi_check(ARRAY(SELECT 0.7 * 1.3 ^ k FROM generate_series(0, 10) k), 21);
SET gpu2bs.precision = float8;
SELECT * FROM xi_check(ARRAY(SELECT 0.7 * 1.3 ^ k FROM generate_series(0, 10) k), 0);

-- The rows themselves.
SELECT * FROM gpu_xi('xi_d', 'xi_r', '{0,1,2,3}', coords => '{x,y,z}');

-- Estimators from the counts: f_DD = dd / (N_D (N_D - 1) / 2), f_DR = dr / (N_D N_R),
-- f_RR = rr / (N_R (N_R - 1) / 2); Landy-Szalay (f_DD - 2 f_DR + f_RR) / f_RR, natural f_DD / f_RR - 1.
WITH ls AS (SELECT * FROM gpu_xi('xi_d', 'xi_r', '{1,2,4,8}', coords => '{x,y,z}')),
     nat AS (SELECT * FROM gpu_xi('xi_d', 'xi_r', '{1,2,4,8}', 'natural', coords => '{x,y,z}')),
     n AS (SELECT 300.0::float8 nd, 400.0::float8 nr)
SELECT ls.r_lo,
       abs(ls.xi - ((ls.dd / (nd * (nd - 1) / 2) - 2 * ls.dr / (nd * nr) + ls.rr / (nr * (nr - 1) / 2))
                    / (ls.rr / (nr * (nr - 1) / 2)))) < 1e-12 AS ls_ok,
       abs(nat.xi - ((nat.dd / (nd * (nd - 1) / 2)) / (nat.rr / (nr * (nr - 1) / 2)) - 1)) < 1e-12 AS natural_ok,
       ls.dd = nat.dd AND ls.dr = nat.dr AND ls.rr = nat.rr AS same_counts
FROM ls JOIN nat USING (r_lo), n ORDER BY 1;
SELECT count(*) FROM gpu_xi('xi_d', 'xi_r', '{1,2}', 'Peebles-Hauser', coords => '{x,y,z}');
SELECT count(*) FROM gpu_xi('xi_d', 'xi_r', '{1,2}', 'LS', coords => '{x,y,z}');

-- Analytic RR in a periodic box (randoms NULL): rr = N_D (N_D - 1) / 2 * 4/3 pi (hi^3 - lo^3) / V,
-- xi = dd / rr - 1, dr NULL; dd the minimum-image brute force.
WITH g AS (SELECT row_number() OVER () k, * FROM gpu_xi('xi_d', NULL, '{0.5,1,2,3,5,10.5}', box => '{21,21,21}', coords => '{x,y,z}')),
     dd AS (SELECT row_number() OVER () k, * FROM xi_ref('SELECT x, y, z FROM xi_d WHERE x IS NOT NULL', NULL, true, '{0.5,1,2,3,5,10.5}', 21))
SELECT g.r_lo, g.r_hi, g.dd, g.dd = dd.pairs AS dd_ok, g.dr,
       abs(g.rr - 300 * 299 / 2.0 * 4 / 3.0 * pi() * (g.r_hi ^ 3 - g.r_lo ^ 3) / 21 ^ 3) < 1e-9 * g.rr AS rr_ok,
       abs(g.xi - (g.dd / g.rr - 1)) < 1e-12 AS xi_ok
FROM g JOIN dd USING (k) ORDER BY k;
-- Both estimators agree with analytic RR.
SELECT bool_and(a.xi = b.xi) FROM gpu_xi('xi_d', NULL, '{1,2,3}', box => '{21,21,21}', coords => '{x,y,z}') a
  JOIN gpu_xi('xi_d', NULL, '{1,2,3}', 'natural', box => '{21,21,21}', coords => '{x,y,z}') b USING (r_lo);
-- 2-D analytic RR: shells pi (hi^2 - lo^2) over the area.
SELECT r_lo, round(rr::numeric, 6) AS rr, round((300 * 299 / 2.0 * pi() * (r_hi ^ 2 - r_lo ^ 2) / (21 * 21))::numeric, 6) AS expected
FROM gpu_xi('xi_d', NULL, '{1,2,4}', box => '{21,21}', coords => '{x,y}');

-- w(theta): (ra, dec) in degrees against haversine angles in float64.
CREATE TABLE xi_sky AS
  SELECT i AS id, (abs(hashint4(2 * i)) % 3600000) / 10000.0 AS ra,
         degrees(asin((abs(hashint4(2 * i + 1)) % 2000001) / 1000000.0 - 1)) AS dec
  FROM generate_series(1, 250) i;
CREATE TABLE xi_sky_r AS
  SELECT i AS id, (abs(hashint4(9000 + 2 * i)) % 3600000) / 10000.0 AS ra,
         degrees(asin((abs(hashint4(9001 + 2 * i)) % 2000001) / 1000000.0 - 1)) AS dec
  FROM generate_series(1, 300) i;
CREATE FUNCTION xi_theta(ra1 float8, dec1 float8, ra2 float8, dec2 float8) RETURNS float8 LANGUAGE sql IMMUTABLE AS $$
  SELECT degrees(2 * asin(least(1, sqrt(sin(radians(dec2 - dec1) / 2) ^ 2
                                       + cos(radians(dec1)) * cos(radians(dec2)) * sin(radians(ra2 - ra1) / 2) ^ 2)))) $$;
CREATE FUNCTION xi_wref(self bool, edges float8[]) RETURNS TABLE (k int, pairs bigint) LANGUAGE sql AS $$
  WITH t AS (SELECT xi_theta(a.ra::float8, a.dec, b.ra::float8, b.dec) th
             FROM xi_sky a, (SELECT * FROM xi_sky WHERE self UNION ALL SELECT * FROM xi_sky_r WHERE NOT self) b
             WHERE NOT self OR a.id < b.id)
  SELECT k, count(th) FROM generate_series(1, array_length(edges, 1) - 1) k
    LEFT JOIN t ON th >= edges[k] AND th < edges[k + 1] GROUP BY k ORDER BY k $$;
SET gpu2bs.precision = float8;
WITH g AS (SELECT row_number() OVER () k, * FROM gpu_xi('xi_sky', 'xi_sky_r', '{0,2,5,10,20,45,90,180}', coords => '{ra,dec}', angular => true))
SELECT g.r_lo, g.r_hi, g.dd, g.dd = d.pairs AS dd_ok, g.dr = r.pairs AS dr_ok, g.xi IS NOT NULL AS has_xi
FROM g JOIN xi_wref(true, '{0,2,5,10,20,45,90,180}') d ON d.k = g.k
       JOIN xi_wref(false, '{0,2,5,10,20,45,90,180}') r ON r.k = g.k ORDER BY g.k;
-- every pair lies within 180 degrees: the counts add up to all pairs
SELECT sum(dd) = 250 * 249 / 2 AS all_dd, sum(dr) = 250 * 300 AS all_dr, sum(rr) = 300 * 299 / 2 AS all_rr
FROM gpu_xi('xi_sky', 'xi_sky_r', '{0,180}', coords => '{ra,dec}', angular => true);

-- Jackknife over 4 patches (patch = id % 4, rows with a NULL patch skipped): xi_k from the
-- brute-force counts of the data and randoms without patch k, then
-- xi_err = sqrt((P - 1) / P * sum_k (xi_k - mean)^2), against the function's xi_err.
ALTER TABLE xi_d ADD COLUMN p int;
ALTER TABLE xi_r ADD COLUMN p int;
UPDATE xi_d SET p = id % 4 WHERE id <> 7;
UPDATE xi_r SET p = id % 4 WHERE id <> 9;
SET gpu2bs.precision = float8;
WITH k AS (SELECT generate_series(0, 3) AS k),
     c AS (SELECT k.k, dd.b,
                  (SELECT count(*) FROM xi_d WHERE p IS NOT NULL AND p <> k.k AND x IS NOT NULL)::float8 AS nd,
                  (SELECT count(*) FROM xi_r WHERE p IS NOT NULL AND p <> k.k)::float8 AS nr,
                  dd.pairs AS dd, dr.pairs AS dr, rr.pairs AS rr
           FROM k,
                LATERAL (SELECT row_number() OVER () b, * FROM xi_ref(format('SELECT x, y, z FROM xi_d WHERE x IS NOT NULL AND p IS NOT NULL AND p <> %s', k.k), NULL, true, '{1,2,4,8}', 0)) dd,
                LATERAL (SELECT row_number() OVER () b, * FROM xi_ref(format('SELECT x, y, z FROM xi_d WHERE x IS NOT NULL AND p IS NOT NULL AND p <> %s', k.k),
                                                                     format('SELECT x, y, z FROM xi_r WHERE p IS NOT NULL AND p <> %s', k.k), false, '{1,2,4,8}', 0)) dr,
                LATERAL (SELECT row_number() OVER () b, * FROM xi_ref(format('SELECT x, y, z FROM xi_r WHERE p IS NOT NULL AND p <> %s', k.k), NULL, true, '{1,2,4,8}', 0)) rr
           WHERE dr.b = dd.b AND rr.b = dd.b),
     x AS (SELECT b, (dd / (nd * (nd - 1) / 2) - 2 * dr / (nd * nr) + rr / (nr * (nr - 1) / 2)) / (rr / (nr * (nr - 1) / 2)) AS xk FROM c),
     e AS (SELECT b, sqrt(3.0 / 4 * sum((xk - m) ^ 2)) AS err
           FROM (SELECT b, xk, avg(xk) OVER (PARTITION BY b) m FROM x) y GROUP BY b),
     g AS (SELECT row_number() OVER () b, * FROM gpu_xi('xi_d', 'xi_r', '{1,2,4,8}', coords => '{x,y,z}', patch => 'p'))
SELECT g.r_lo, g.xi_err > 0 AS positive, abs(g.xi_err - e.err) <= 1e-12 * e.err AS err_ok
FROM g JOIN e USING (b) ORDER BY b;
-- xi and the counts with patches are those of every row with a patch
CREATE VIEW xi_d_p AS SELECT * FROM xi_d WHERE p IS NOT NULL;
CREATE VIEW xi_r_p AS SELECT * FROM xi_r WHERE p IS NOT NULL;
SELECT bool_and(a.dd = b.dd AND a.dr = b.dr AND a.rr = b.rr AND a.xi = b.xi) AS same_xi, bool_and(b.xi_err IS NULL) AS no_err_without_patch
FROM gpu_xi('xi_d', 'xi_r', '{1,2,4,8}', coords => '{x,y,z}', patch => 'p') a
JOIN gpu_xi('xi_d_p', 'xi_r_p', '{1,2,4,8}', coords => '{x,y,z}') b USING (r_lo);
-- one patch: xi, no error
ALTER TABLE xi_d ADD COLUMN one int DEFAULT 1;
ALTER TABLE xi_r ADD COLUMN one int DEFAULT 1;
SELECT r_lo, xi IS NOT NULL AS has_xi, xi_err FROM gpu_xi('xi_d', 'xi_r', '{1,2}', coords => '{x,y,z}', patch => 'one');
-- patch errors: no randoms (22023), not an integer column (42804), missing (42703)
\set VERBOSITY sqlstate
SELECT * FROM gpu_xi('xi_d', NULL, '{1,2}', box => '{21,21,21}', coords => '{x,y,z}', patch => 'p');
SELECT * FROM gpu_xi('xi_sky', 'xi_sky_r', '{1,2}', coords => '{ra,dec}', angular => true, patch => 'ra');
SELECT * FROM gpu_xi('xi_d', 'xi_r', '{1,2}', coords => '{x,y,z}', patch => 'nosuch');
\set VERBOSITY default
DROP VIEW xi_d_p, xi_r_p;

-- One relation as data and randoms: dr counts ordered pairs of distinct rows (2 dd) in bins that
-- exclude distance 0; rr = dd, so Landy-Szalay gives 2 - 2 (N - 1) / N = 2 / N (N = 300).
SELECT bool_and(dr = 2 * dd AND rr = dd) AS counts_ok, bool_and(abs(xi - 2 / 300.0) < 1e-12) AS xi_2_over_n
FROM gpu_xi('xi_d', 'xi_d', '{1,2,4,8}', coords => '{x,y,z}');

-- Empty and one-row inputs: zero counts, xi NULL where a denominator is 0.
CREATE TABLE xi_empty (x float8, y float8, z float8);
CREATE TABLE xi_one AS SELECT 1.0::float8 x, 2.0::float8 y, 3.0::float8 z;
SELECT * FROM gpu_xi('xi_empty', 'xi_r', '{1,2}', coords => '{x,y,z}');
SELECT * FROM gpu_xi('xi_one', 'xi_r', '{0,30}', coords => '{x,y,z}');
SELECT * FROM gpu_xi('xi_d', 'xi_one', '{0,30}', coords => '{x,y,z}');
SELECT * FROM gpu_xi('xi_empty', NULL, '{1,2}', box => '{21,21,21}', coords => '{x,y,z}');
-- NULL data or edges: no rows
SELECT count(*) FROM gpu_xi(NULL, 'xi_r', '{1,2}');
SELECT count(*) FROM gpu_xi('xi_d', 'xi_r', NULL);

-- Errors (22023 unless noted).
\set VERBOSITY sqlstate
SELECT * FROM gpu_xi('xi_d', 'xi_r', '{2,1}', coords => '{x,y,z}');
SELECT * FROM gpu_xi('xi_d', 'xi_r', '{1,1}', coords => '{x,y,z}');
SELECT * FROM gpu_xi('xi_d', 'xi_r', '{-1,1}', coords => '{x,y,z}');
SELECT * FROM gpu_xi('xi_d', 'xi_r', '{0,NaN}', coords => '{x,y,z}');
SELECT * FROM gpu_xi('xi_d', 'xi_r', '{0,Infinity}', coords => '{x,y,z}');
SELECT * FROM gpu_xi('xi_d', 'xi_r', '{0,NULL}', coords => '{x,y,z}');
SELECT * FROM gpu_xi('xi_d', 'xi_r', '{1}', coords => '{x,y,z}');
SELECT * FROM gpu_xi('xi_d', 'xi_r', '{}', coords => '{x,y,z}');
SELECT * FROM gpu_xi('xi_d', 'xi_r', '{{1,2},{3,4}}', coords => '{x,y,z}');
SELECT * FROM gpu_xi('xi_d', 'xi_r', '{1,2}', 'hamilton', coords => '{x,y,z}');
SELECT * FROM gpu_xi('xi_d', NULL, '{1,2}', coords => '{x,y,z}');
SELECT * FROM gpu_xi('xi_d', NULL, '{1,2}', box => '{21,0,21}', coords => '{x,y,z}');
SELECT * FROM gpu_xi('xi_d', 'xi_r', '{1,11}', box => '{21,21,21}', coords => '{x,y,z}');
SELECT * FROM gpu_xi('xi_d', 'xi_r', '{1,2}', box => '{21,21}', coords => '{x,y,z}');
SELECT * FROM gpu_xi('xi_sky', 'xi_sky_r', '{0,190}', coords => '{ra,dec}', angular => true);
SELECT * FROM gpu_xi('xi_sky', NULL, '{0,10}', coords => '{ra,dec}', angular => true);
SELECT * FROM gpu_xi('xi_sky', 'xi_sky_r', '{0,10}', box => '{360,180}', coords => '{ra,dec}', angular => true);
SELECT * FROM gpu_xi('xi_d', 'xi_r', '{0,10}', coords => '{x,y,z}', angular => true);
CREATE TABLE xi_pole AS SELECT 10.0 AS ra, 90.5 AS dec;
SELECT * FROM gpu_xi('xi_pole', 'xi_sky_r', '{0,10}', coords => '{ra,dec}', angular => true);
SELECT * FROM gpu_xi('xi_d', 'xi_sky', '{0,10}', coords => '{x,y}', angular => true);
SELECT * FROM gpu_xi('xi_nosuch', 'xi_r', '{1,2}');
SELECT * FROM gpu_xi('xi_d', 'xi_r', '{1,2}', coords => '{x,nosuch,z}');
SET gpu2bs.precision = float4;
SELECT * FROM gpu_xi('xi_d', 'xi_r', '{1,1.000000001}', coords => '{x,y,z}');
\set VERBOSITY default
-- the messages of two of them
SELECT * FROM gpu_xi('xi_d', 'xi_r', '{1,3,2}', coords => '{x,y,z}');
SELECT * FROM gpu_xi('xi_d', NULL, '{1,2}', coords => '{x,y,z}');
RESET gpu2bs.precision;

DROP TABLE xi_d, xi_r, xi_sky, xi_sky_r, xi_empty, xi_one, xi_pole;
DROP FUNCTION xi_check(float8[], float8), xi_ref(text, text, bool, float8[], float8), xi_mi(float8, float8),
  xi_wref(bool, float8[]), xi_theta(float8, float8, float8, float8);
