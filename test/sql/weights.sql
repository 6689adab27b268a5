--
-- gpu_sdh_weighted and gpu_pair_count_weighted against SQL references over the same rows: the
-- pairs and the exact sum (numeric) of the float8 products w_i * w_j. Points on an integer
-- lattice decide every pair alike in float4, float8 and SQL (squared distances are small
-- integers; with width 1 the bucket is floor(sqrt(d2))), so the counts equal the reference in
-- both precisions. Integer and dyadic weights make the fixed-point sum exact (weight_sum equals
-- the reference); other weights are compared within the documented bound
-- 0.5 ulp(weight_sum) + pairs * max|w|^2 * 2^-62.
--

CREATE TABLE wpts (id int PRIMARY KEY, x float8, y float8, z float8, wi int, wd float8, wr float8, one float8);
INSERT INTO wpts
SELECT i, (i * 7) % 11, (i * 13) % 9, (i * 5) % 7,
       (i % 7) - 3,                       -- small integers, negatives included
       ((i * 37) % 64 - 32) / 8.0,         -- dyadic fractions k/8
       sin(i * 1.7) * exp((i % 9) - 4),    -- general float8 values of both signs
       1
FROM generate_series(1, 400) i;
-- Rows skipped: a NULL weight of each kind but one, a NULL coordinate.
INSERT INTO wpts VALUES (401, 1, 2, 3, NULL, NULL, NULL, 1), (402, NULL, 1, 1, 2, 0.5, 0.25, 1);

-- Every unordered pair of rows with a non-NULL coordinate, its squared distance and products.
CREATE VIEW wpairs AS
SELECT a.id AS ia, b.id AS ib,
       (a.x - b.x) ^ 2 + (a.y - b.y) ^ 2 + (a.z - b.z) ^ 2 AS d2,
       a.wi * b.wi AS pi, a.wd * b.wd AS pd, a.wr * b.wr AS pr, a.one * b.one AS p1
FROM wpts a JOIN wpts b ON a.id < b.id
WHERE a.x IS NOT NULL AND b.x IS NOT NULL;

-- The documented bound of a weight sum against the sum of the rounded products, `exact` being
-- that sum over the products' shortest decimal forms (float8::text::numeric: within
-- 0.5 ulp <= wmax^2 * 2^-53 of each product), got read the same way (within 0.5 ulp).
CREATE FUNCTION w_within(got float8, exact numeric, pairs bigint, wmax float8) RETURNS bool
LANGUAGE sql IMMUTABLE AS $$
  SELECT abs(got::text::numeric - exact) <= abs(got::text::numeric) * 2 ^ -52::numeric
         + pairs * (wmax::text::numeric ^ 2) * (2 ^ -62::numeric + 2 ^ -53::numeric) $$;

SET gpu2bs.precision = float4;

-- Pair count: integer, dyadic and all-one weights are exact; general ones within the bound.
SELECT (c.pairs, c.weight_sum) = (r.n, r.s::float8) AS int_exact, c.weight_sum
FROM gpu_pair_count_weighted('wpts', 3, 'wi', '{x,y,z}') c,
     (SELECT count(*) n, sum(pi) s FROM wpairs WHERE d2 <= 9 AND pi IS NOT NULL) r;
SELECT (c.pairs, c.weight_sum) = (r.n, r.s::float8) AS dyadic_exact, c.weight_sum
FROM gpu_pair_count_weighted('wpts', 3, 'wd', '{x,y,z}') c,
     (SELECT count(*) n, sum(pd::numeric) s FROM wpairs WHERE d2 <= 9 AND pd IS NOT NULL) r;
SELECT c.pairs = r.n AS pairs_equal, w_within(c.weight_sum, r.s, c.pairs, r.wmax) AS within_bound
FROM gpu_pair_count_weighted('wpts', 3, 'wr', '{x,y,z}') c,
     (SELECT count(*) n, sum(pr::text::numeric) s,
             (SELECT max(abs(wr)) FROM wpts WHERE x IS NOT NULL) wmax
      FROM wpairs WHERE d2 <= 9 AND pr IS NOT NULL) r;
-- Weights all 1: the sum is the count, and the count is gpu_pair_count's.
SELECT c.pairs = c.weight_sum AS ones_sum_is_count, c.pairs = gpu_pair_count('wpts', 3, '{x,y,z}') AS same_count
FROM gpu_pair_count_weighted('wpts', 3, 'one', '{x,y,z}') c;

-- Histogram with width 1: bucket k + 1 holds floor(sqrt(d2)) = k; every bucket against the
-- reference (empty buckets included).
CREATE VIEW wref_sdh AS
SELECT k + 1 AS bucket,
       count(p.d2) FILTER (WHERE p.pi IS NOT NULL) AS ni, sum(p.pi) AS si,
       count(p.d2) FILTER (WHERE p.pd IS NOT NULL) AS nd, sum(p.pd::numeric) AS sd,
       count(p.d2) FILTER (WHERE p.pr IS NOT NULL) AS nr, sum(p.pr::numeric) AS sr
FROM generate_series(0, 11) k LEFT JOIN wpairs p ON floor(sqrt(p.d2)) = k
GROUP BY k;
SELECT count(*) AS buckets,
       bool_and(g.pairs = r.ni AND g.weight_sum = coalesce(r.si, 0)::float8) AS int_exact,
       bool_and(g.lo = g.bucket - 1 AND g.hi = g.bucket) AS edges
FROM gpu_sdh_weighted('wpts', 12, 'wi', 1, '{x,y,z}') g JOIN wref_sdh r USING (bucket);
SELECT bool_and(g.pairs = r.nd AND g.weight_sum = coalesce(r.sd, 0)::float8) AS dyadic_exact
FROM gpu_sdh_weighted('wpts', 12, 'wd', 1, '{x,y,z}') g JOIN wref_sdh r USING (bucket);
SELECT bool_and(g.pairs = r.nr AND w_within(g.weight_sum, coalesce(r.sr, 0), g.pairs,
                (SELECT max(abs(wr)) FROM wpts WHERE x IS NOT NULL))) AS within_bound
FROM gpu_sdh_weighted('wpts', 12, 'wr', 1, '{x,y,z}') g JOIN wref_sdh r USING (bucket);
-- Width from the data: the counts are gpu_sdh's; weights all 1 sum to the counts.
SELECT array_agg(pairs ORDER BY bucket) = gpu_sdh('wpts', 20, '{x,y,z}') AS same_counts,
       bool_and(weight_sum = pairs) AS ones_sum_is_count, max(hi) AS last_hi
FROM gpu_sdh_weighted('wpts', 20, 'one', coords => '{x,y,z}');

-- The same in float8.
SET gpu2bs.precision = float8;
SELECT (c.pairs, c.weight_sum) = (r.n, r.s::float8) AS int_exact_f8
FROM gpu_pair_count_weighted('wpts', 3, 'wi', '{x,y,z}') c,
     (SELECT count(*) n, sum(pi) s FROM wpairs WHERE d2 <= 9 AND pi IS NOT NULL) r;
SELECT bool_and(g.pairs = r.nd AND g.weight_sum = coalesce(r.sd, 0)::float8) AS dyadic_exact_f8
FROM gpu_sdh_weighted('wpts', 12, 'wd', 1, '{x,y,z}') g JOIN wref_sdh r USING (bucket);
SELECT bool_and(g.pairs = r.nr AND w_within(g.weight_sum, coalesce(r.sr, 0), g.pairs,
                (SELECT max(abs(wr)) FROM wpts WHERE x IS NOT NULL))) AS within_bound_f8
FROM gpu_sdh_weighted('wpts', 12, 'wr', 1, '{x,y,z}') g JOIN wref_sdh r USING (bucket);
-- +Infinity counts every pair: the sum of all products.
SELECT (c.pairs, c.weight_sum) = (r.n, r.s::float8) AS all_pairs
FROM gpu_pair_count_weighted('wpts', 'Infinity', 'wi', '{x,y,z}') c,
     (SELECT count(*) n, sum(pi) s FROM wpairs WHERE pi IS NOT NULL) r;
RESET gpu2bs.precision;

-- The weight column is not a default coordinate: (x, y, z) are the float8 columns left after
-- it; an integer weight column is read as float8.
CREATE TABLE wdef (x float8, y float8, w float8);
INSERT INTO wdef SELECT i % 5, i % 3, i FROM generate_series(1, 30) i;
SELECT c.pairs = gpu_pair_count('wdef', 2, '{x,y}') AS default_coords,
       c.weight_sum = (SELECT sum(a.w * b.w) FROM wdef a JOIN wdef b ON a.w < b.w
                       WHERE (a.x - b.x) ^ 2 + (a.y - b.y) ^ 2 <= 4) AS sum_exact
FROM gpu_pair_count_weighted('wdef', 2, 'w') c;
SELECT count(*) AS buckets, sum(pairs) AS pairs FROM gpu_sdh_weighted('wdef', 4, 'w');

-- No rows: NULL arguments, an empty relation, a relation whose weights are all NULL.
SELECT count(*) AS null_rel FROM gpu_pair_count_weighted(NULL, 1, 'w');
SELECT count(*) AS null_weight FROM gpu_sdh_weighted('wdef', 4, NULL);
SELECT count(*) AS null_nbuckets FROM gpu_sdh_weighted('wdef', NULL, 'w');
CREATE TABLE wempty (x float8, y float8, w float8);
SELECT count(*) AS empty_sdh FROM gpu_sdh_weighted('wempty', 4, 'w');
INSERT INTO wempty VALUES (1, 2, NULL), (3, 4, NULL);
SELECT count(*) AS all_null_weights FROM gpu_pair_count_weighted('wempty', 10, 'w');
-- One row: no pairs, zero sums.
INSERT INTO wempty VALUES (0, 0, 5);
SELECT * FROM gpu_pair_count_weighted('wempty', 10, 'w');

-- Errors.
\set VERBOSITY terse
CREATE TABLE wbad (x float8, y float8, w float8, t text);
INSERT INTO wbad VALUES (0, 0, 1, 'a'), (1, 1, 'NaN', 'b');
SELECT * FROM gpu_pair_count_weighted('wbad', 1, 'w');
UPDATE wbad SET w = '-Infinity' WHERE x = 1;
SELECT * FROM gpu_sdh_weighted('wbad', 4, 'w');
UPDATE wbad SET w = 1e200 WHERE x = 1;
SELECT * FROM gpu_pair_count_weighted('wbad', 1, 'w');
SELECT * FROM gpu_pair_count_weighted('wbad', 1, 't');
SELECT * FROM gpu_pair_count_weighted('wbad', 1, 'nope');
SELECT * FROM gpu_pair_count_weighted('wbad', -1, 'w');
SELECT * FROM gpu_sdh_weighted('wbad', 0, 'w');
SELECT * FROM gpu_sdh_weighted('wbad', 4, 'w', -1);
\set VERBOSITY default

DROP TABLE wpts, wdef, wempty, wbad CASCADE;
DROP FUNCTION w_within;
