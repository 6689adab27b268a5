--
-- gpu_sdh / gpu_sdh_width: spatial distance histogram, checked against the SQL brute force
-- (ref_sdh, ref_near_edges in setup). float8 precision: the histogram must equal the brute
-- force exactly once no pair lies within rounding of a bucket edge (near_edge = 0 proves it).
--
SET gpu2bs.precision = float8;

-- 3-D, derived width: w = bounding-box diagonal / nbuckets (box of pts3: [0, 19.5]^3)
SELECT gpu_sdh_width(x, y, z, 10) AS w,
       gpu_sdh_width(x, y, z, 10) = sqrt(3 * 19.5::float8 * 19.5) / 10 AS w_is_diag_over_10
FROM pts3;
WITH g AS (SELECT gpu_sdh(x, y, z, 10) AS h, gpu_sdh_width(x, y, z, 10) AS w, count(*) AS n FROM pts3)
SELECT h, (SELECT sum(c) FROM unnest(h) c) = n * (n - 1) / 2 AS sums_to_all_pairs,
       h = ref_sdh('pts3', '{x,y,z}', 10, w, true) AS equals_sql,
       ref_near_edges('pts3', '{x,y,z}', 10, w) AS near_edge
FROM g;

-- 3-D, derived width, continuous random points
WITH g AS (SELECT gpu_sdh(x, y, z, 7) AS h, gpu_sdh_width(x, y, z, 7) AS w, count(*) AS n FROM cloud3)
SELECT h, (SELECT sum(c) FROM unnest(h) c) = n * (n - 1) / 2 AS sums_to_all_pairs,
       h = ref_sdh('cloud3', '{x,y,z}', 7, w, true) AS equals_sql,
       ref_near_edges('cloud3', '{x,y,z}', 7, w) AS near_edge
FROM g;

-- 3-D, explicit width 0.73: 20 buckets cover d < 14.6; farther pairs are not counted
WITH g AS (SELECT gpu_sdh(x, y, z, 20, 0.73) AS h FROM pts3)
SELECT h, (SELECT sum(c) FROM unnest(h) c) AS counted,
       (SELECT count(*) FROM ref_dists('pts3') d WHERE d < 20 * 0.73) AS pairs_below_14_6,
       h = ref_sdh('pts3', '{x,y,z}', 20, 0.73, false) AS equals_sql,
       ref_near_edges('pts3', '{x,y,z}', 20, 0.73) AS near_edge
FROM g;

-- 3-D, explicit width covering every pair of the unit cube
WITH g AS (SELECT gpu_sdh(x, y, z, 40, 0.05) AS h FROM cloud3)
SELECT h, (SELECT sum(c) FROM unnest(h) c) AS counted,
       h = ref_sdh('cloud3', '{x,y,z}', 40, 0.05, false) AS equals_sql,
       ref_near_edges('cloud3', '{x,y,z}', 40, 0.05) AS near_edge
FROM g;

-- 2-D, derived width (box of pts2: [0, 29.5]^2)
WITH g AS (SELECT gpu_sdh(x, y, 12) AS h, gpu_sdh_width(x, y, 12) AS w, count(*) AS n FROM pts2)
SELECT h, w = sqrt(2 * 29.5::float8 * 29.5) / 12 AS w_is_diag_over_12,
       (SELECT sum(c) FROM unnest(h) c) = n * (n - 1) / 2 AS sums_to_all_pairs,
       h = ref_sdh('pts2', '{x,y}', 12, w, true) AS equals_sql,
       ref_near_edges('pts2', '{x,y}', 12, w) AS near_edge
FROM g;

-- 2-D, explicit width
WITH g AS (SELECT gpu_sdh_fixed(x, y, 45, 0.73) AS h FROM pts2)
SELECT h, h = ref_sdh('pts2', '{x,y}', 45, 0.73, false) AS equals_sql,
       ref_near_edges('pts2', '{x,y}', 45, 0.73) AS near_edge
FROM g;

-- 2-D form on the (x, y) projection of 3-D points
WITH g AS (SELECT gpu_sdh(x, y, 10) AS h, gpu_sdh_width(x, y, 10) AS w FROM pts3)
SELECT h, h = ref_sdh('pts3', '{x,y}', 10, w, true) AS equals_sql,
       ref_near_edges('pts3', '{x,y}', 10, w) AS near_edge
FROM g;

-- exact bucket edges (w = 1 and w = 0.5 are exact): distances 3, 4, 5; a bucket is
-- [k*w, (k+1)*w), and with a derived width the pair at d = diagonal (5) is in the last bucket
CREATE TEMP TABLE tri (id int, x float8, y float8, z float8);
INSERT INTO tri VALUES (1, 0, 0, 0), (2, 3, 0, 0), (3, 0, 4, 0);
SELECT gpu_sdh(x, y, z, 5) AS derived, gpu_sdh_width(x, y, z, 5) AS w,
       gpu_sdh(x, y, z, 8, 0.5) AS explicit_half,       -- 3 -> bucket 6; 4 = 8 * 0.5 and 5 are beyond
       gpu_sdh(x, y, z, 11, 0.5) AS explicit_half_11,   -- 4 -> 8, 5 -> 10
       gpu_sdh(x, y, z, 2, 2) AS explicit_two            -- 3 -> 1; 4, 5 beyond
FROM tri;
SELECT gpu_sdh(x, y, 5) AS derived_2d, gpu_sdh_width(x, y, 5) AS w_2d FROM tri;

-- more buckets than pairs: 999 buckets, w = 5/999: 3 -> 599.4, 4 -> 799.2, 5 -> clamped to 998
SELECT k - 1 AS bucket, c FROM (SELECT gpu_sdh(x, y, z, 999) AS h FROM tri) g,
  unnest(h) WITH ORDINALITY AS u(c, k) WHERE c > 0 ORDER BY k;
SELECT array_length(h, 1) AS len, (SELECT sum(c) FROM unnest(h) c) AS total
FROM (SELECT gpu_sdh(x, y, z, 999) AS h FROM tri) g;
-- the largest bucket count
SELECT array_length(h, 1) AS len, h[1] AS first, (SELECT sum(c) FROM unnest(h) c) AS total
FROM (SELECT gpu_sdh(x, y, z, 1048576) AS h FROM two3) g;

-- all points equal: diagonal 0, width 0, every pair in bucket 0
SELECT gpu_sdh(x, y, z, 4) AS h, gpu_sdh_width(x, y, z, 4) AS w, gpu_sdh(x, y, 3) AS h2,
       gpu_sdh(x, y, z, 3, 0.25) AS explicit
FROM same3;

-- rows with a NULL coordinate are skipped
SELECT gpu_sdh(x, y, z, 6) AS h, gpu_sdh_width(x, y, z, 6) = (SELECT gpu_sdh_width(x, y, z, 6) FROM pts3_null
         WHERE x IS NOT NULL AND y IS NOT NULL AND z IS NOT NULL) AS same_width,
       gpu_sdh(x, y, z, 6) = (SELECT gpu_sdh(x, y, z, 6) FROM pts3_null
         WHERE x IS NOT NULL AND y IS NOT NULL AND z IS NOT NULL) AS same_as_filtered,
       gpu_sdh(x, y, z, 6) = ref_sdh('pts3_null', '{x,y,z}', 6, gpu_sdh_width(x, y, z, 6), true) AS equals_sql,
       (SELECT sum(c) FROM unnest(gpu_sdh(x, y, z, 6)) c) = 187 * 186 / 2 AS sums_to_complete_pairs
FROM pts3_null;
-- 2-D form: z may be NULL
SELECT gpu_sdh(x, y, 6) = (SELECT gpu_sdh(x, y, 6) FROM pts3_null WHERE x IS NOT NULL AND y IS NOT NULL)
       AS same_as_filtered
FROM pts3_null;
-- a NULL bucket count or width skips the row too: no rows -> NULL
SELECT gpu_sdh(x, y, z, NULL) AS null_nbuckets, gpu_sdh(x, y, z, 4, NULL) AS null_width,
       gpu_sdh_width(x, y, z, NULL) AS null_nbuckets_w
FROM pts3;

-- no rows: NULL; one row: zeros; two identical rows: one pair in bucket 0
SELECT gpu_sdh(x, y, z, 4) AS h, gpu_sdh_width(x, y, z, 4) AS w, gpu_sdh(x, y, 4) AS h2,
       gpu_sdh(x, y, z, 4, 1.5) AS explicit FROM empty3;
SELECT gpu_sdh(x, y, z, 4) AS h FROM pts3 WHERE false;
SELECT gpu_sdh(x, y, z, 3) AS h, gpu_sdh_width(x, y, z, 3) AS w, gpu_sdh(x, y, z, 3, 1) AS explicit FROM one3;
SELECT gpu_sdh(x, y, z, 5) AS h, gpu_sdh_width(x, y, z, 5) AS w, gpu_sdh_fixed(x, y, 2, 0.1) AS explicit FROM two3;

-- one aggregate state per group (hashed and sorted grouping), equal to filtering each group
SET enable_hashagg = on;
EXPLAIN (COSTS OFF) SELECT id % 3 AS g, gpu_sdh(x, y, z, 8) FROM pts3 GROUP BY 1;
SELECT g, h = (SELECT gpu_sdh(x, y, z, 8) FROM pts3 WHERE id % 3 = g) AS same,
       he = (SELECT gpu_sdh(x, y, z, 8, 1.5) FROM pts3 WHERE id % 3 = g) AS same_explicit
FROM (SELECT id % 3 AS g, gpu_sdh(x, y, z, 8) AS h, gpu_sdh(x, y, z, 8, 1.5) AS he FROM pts3 GROUP BY 1) s
ORDER BY g;
SET enable_hashagg = off;
EXPLAIN (COSTS OFF) SELECT id % 3 AS g, gpu_sdh(x, y, z, 8) FROM pts3 GROUP BY 1;
SELECT g, h = (SELECT gpu_sdh(x, y, z, 8) FROM pts3 WHERE id % 3 = g) AS same
FROM (SELECT id % 3 AS g, gpu_sdh(x, y, z, 8) AS h FROM pts3 GROUP BY 1) s
ORDER BY g;
RESET enable_hashagg;
-- the same rows in another order give the same histogram
SELECT (SELECT gpu_sdh(x, y, z, 10 ORDER BY id DESC) FROM pts3) = (SELECT gpu_sdh(x, y, z, 10) FROM pts3) AS order_free;

RESET gpu2bs.precision;
