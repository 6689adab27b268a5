-- Shared tables for the gpu2bs regression tests. Data is pseudo-random but deterministic:
-- setseed() fixes the sequence of random() (PostgreSQL 15's PRNG is platform independent).
SELECT setseed(0.4242);
-- 3-D points on a half-integer lattice in [0, 20): squared distances are exact multiples of
-- 0.25 in float4 and float8 alike, so results can be compared exactly with SQL.
CREATE TABLE pts3 (id int PRIMARY KEY, x float8, y float8, z float8);
INSERT INTO pts3
  SELECT g, floor(random() * 40) / 2, floor(random() * 40) / 2, floor(random() * 40) / 2
  FROM generate_series(1, 600) g;
-- a few exact duplicates of earlier rows
INSERT INTO pts3 SELECT 600 + id, x, y, z FROM pts3 WHERE id % 100 = 7;
-- 2-D lattice points, bigint key
CREATE TABLE pts2 (id bigint PRIMARY KEY, x float8, y float8);
INSERT INTO pts2
  SELECT g, floor(random() * 60) / 2, floor(random() * 60) / 2
  FROM generate_series(1, 700) g;
-- continuous random 3-D points in the unit cube
CREATE TABLE cloud3 (id int PRIMARY KEY, x float8, y float8, z float8);
INSERT INTO cloud3 SELECT g, random(), random(), random() FROM generate_series(1, 400) g;
-- NULL coordinates (and NULL keys) in some rows; key found by the column name "id"
CREATE TABLE pts3_null (id int, x float8, y float8, z float8);
INSERT INTO pts3_null
  SELECT CASE WHEN g % 17 = 0 THEN NULL ELSE g END,
         CASE WHEN g % 5 = 1 THEN NULL ELSE x END,
         CASE WHEN g % 7 = 2 THEN NULL ELSE y END,
         CASE WHEN g % 11 = 3 THEN NULL ELSE z END
  FROM pts3 p(g, x, y, z) WHERE g <= 300;
-- degenerate inputs
CREATE TABLE empty3 (id int PRIMARY KEY, x float8, y float8, z float8);
CREATE TABLE one3 (id int PRIMARY KEY, x float8, y float8, z float8);
INSERT INTO one3 VALUES (1, 1.5, -2.5, 3.25);
CREATE TABLE two3 (id int PRIMARY KEY, x float8, y float8, z float8);
INSERT INTO two3 VALUES (1, 0.1, 0.2, 0.3), (2, 0.1, 0.2, 0.3);
CREATE TABLE same3 (id int PRIMARY KEY, x float8, y float8, z float8);
INSERT INTO same3 SELECT g, 7.25, -1.5, 1e3 FROM generate_series(1, 1000) g;
ANALYZE;

--
-- Reference implementations in plain SQL (brute force over all pairs), used by later tests.
--
-- Distances of all unordered pairs of rows of rel (pairs by ctid, so duplicate or NULL keys
-- do not matter); rows with a NULL coordinate are skipped. cols: the coordinate columns.
CREATE FUNCTION ref_dists(rel regclass, cols text[] DEFAULT '{x,y,z}')
RETURNS SETOF float8 LANGUAGE plpgsql STABLE AS $$
DECLARE
  sq text;
  nn text;
BEGIN
  SELECT string_agg(format('(a.%1$I - b.%1$I) * (a.%1$I - b.%1$I)', c), ' + '),
         string_agg(format('a.%1$I IS NOT NULL AND b.%1$I IS NOT NULL', c), ' AND ')
    INTO sq, nn FROM unnest(cols) c;
  RETURN QUERY EXECUTE format('SELECT sqrt(%s)::float8 FROM %s a JOIN %s b ON a.ctid < b.ctid WHERE %s',
                              sq, rel, rel, nn);
END $$;

-- Spatial distance histogram by brute force: bucket floor(d / w); with clamp (derived width)
-- a pair at d >= nbuckets * w counts in the last bucket, otherwise it is not counted.
CREATE FUNCTION ref_sdh(rel regclass, cols text[], nbuckets int, w float8, clamp bool)
RETURNS bigint[] LANGUAGE sql STABLE AS $$
  WITH h AS (
    SELECT CASE WHEN w = 0 THEN 0
                WHEN clamp THEN least(floor(d / w), nbuckets - 1)
                ELSE floor(d / w) END::int AS k, count(*) AS c
    FROM ref_dists(rel, cols) d GROUP BY 1)
  SELECT array_agg(coalesce(h.c, 0) ORDER BY k)
  FROM generate_series(0, nbuckets - 1) k LEFT JOIN h USING (k)
$$;

-- Pairs whose distance lies within a relative tol of a bucket edge k * w, 1 <= k <= nbuckets:
-- the only pairs where floating point rounding may legitimately decide the bucket (or, for
-- k = nbuckets with an explicit width, whether the pair counts). Tests assert 0.
CREATE FUNCTION ref_near_edges(rel regclass, cols text[], nbuckets int, w float8, tol float8 DEFAULT 1e-9)
RETURNS bigint LANGUAGE sql STABLE AS $$
  SELECT count(*) FROM ref_dists(rel, cols) d
  WHERE round(d / w) BETWEEN 1 AND nbuckets AND abs(d / w - round(d / w)) < tol * round(d / w)
$$;

-- Similarity join by brute force: key and coordinate columns cast to bigint and float8;
-- b NULL: self-join with id1 < id2; otherwise every (a, b) pair.
CREATE FUNCTION ref_simjoin(a regclass, b regclass, eps float8, cols text[], idcol text DEFAULT 'id')
RETURNS TABLE (id1 bigint, id2 bigint, dist float8) LANGUAGE plpgsql STABLE AS $$
DECLARE
  sq text;
  nn text;
BEGIN
  SELECT string_agg(format('(s.%1$I::float8 - t.%1$I::float8) * (s.%1$I::float8 - t.%1$I::float8)', c), ' + '),
         string_agg(format('s.%1$I IS NOT NULL AND t.%1$I IS NOT NULL', c), ' AND ')
    INTO sq, nn FROM unnest(cols) c;
  RETURN QUERY EXECUTE format(
    'SELECT * FROM (SELECT s.%1$I::bigint, t.%1$I::bigint, sqrt(%2$s)::float8 AS d
       FROM %3$s s JOIN %4$s t ON %5$s
       WHERE %6$s AND s.%1$I IS NOT NULL AND t.%1$I IS NOT NULL) p WHERE d <= $1',
    idcol, sq, a, coalesce(b, a),
    CASE WHEN b IS NULL THEN format('s.%1$I < t.%1$I', idcol) ELSE 'true' END, nn)
  USING eps;
END $$;

-- Compares two queries returning (id1, id2[, ...]) pair lists as multisets (EXCEPT ALL in both
-- directions, so a pair emitted twice is caught too).
CREATE FUNCTION cmp_pairs(got text, want text,
                          OUT n_got bigint, OUT n_want bigint, OUT only_got bigint, OUT only_want bigint)
LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('SELECT count(*) FROM (%s) q', got) INTO n_got;
  EXECUTE format('SELECT count(*) FROM (%s) q', want) INTO n_want;
  EXECUTE format('SELECT count(*) FROM (SELECT id1, id2 FROM (%s) g EXCEPT ALL SELECT id1, id2 FROM (%s) w) q',
                 got, want) INTO only_got;
  EXECUTE format('SELECT count(*) FROM (SELECT id1, id2 FROM (%s) w EXCEPT ALL SELECT id1, id2 FROM (%s) g) q',
                 want, got) INTO only_want;
END $$;

-- SQLSTATE of the error a statement raises ('00000' when it succeeds); for errors whose message
-- text may differ between engines.
CREATE FUNCTION sqlstate_of(stmt text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE stmt;
  RETURN '00000';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE;
END $$;

-- What the tables hold: rows, rows with every coordinate, distinct points, coordinate range.
SELECT 'pts3' AS t, count(*) AS n, count(x + y + z) AS complete, count(DISTINCT (x, y, z)) AS n_distinct,
       least(min(x), min(y), min(z)) AS lo, greatest(max(x), max(y), max(z)) AS hi FROM pts3
UNION ALL
SELECT 'pts2', count(*), count(x + y), count(DISTINCT (x, y)), least(min(x), min(y)), greatest(max(x), max(y)) FROM pts2
UNION ALL
SELECT 'cloud3', count(*), count(x + y + z), count(DISTINCT (x, y, z)),
       round(least(min(x), min(y), min(z))::numeric, 2), round(greatest(max(x), max(y), max(z))::numeric, 2) FROM cloud3
UNION ALL
SELECT 'pts3_null', count(*), count(x + y + z), count(DISTINCT (x, y, z)), least(min(x), min(y), min(z)),
       greatest(max(x), max(y), max(z)) FROM pts3_null
UNION ALL
SELECT 'empty3', count(*), count(x + y + z), count(DISTINCT (x, y, z)), least(min(x), min(y), min(z)),
       greatest(max(x), max(y), max(z)) FROM empty3
UNION ALL
SELECT 'one3', count(*), count(x + y + z), count(DISTINCT (x, y, z)), least(min(x), min(y), min(z)),
       greatest(max(x), max(y), max(z)) FROM one3
UNION ALL
SELECT 'two3', count(*), count(x + y + z), count(DISTINCT (x, y, z)), least(min(x), min(y), min(z)),
       greatest(max(x), max(y), max(z)) FROM two3
UNION ALL
SELECT 'same3', count(*), count(x + y + z), count(DISTINCT (x, y, z)), least(min(x), min(y), min(z)),
       greatest(max(x), max(y), max(z)) FROM same3
ORDER BY t;
