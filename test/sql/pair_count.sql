--
-- gpu_pair_count: unordered pairs with distance <= r, checked against the SQL brute force.
-- The lattice tables have exact squared distances, so float4 and float8 must both match
-- exactly, also for r equal to a distance that occurs (the test is inclusive).
--
CREATE TEMP TABLE radii (r float8);
INSERT INTO radii VALUES (0), (0.5), (1), (1.1), (2), (2.5), (5), (12.25), (1e6), ('Infinity');

-- 3-D
CREATE TEMP TABLE want3 AS
  SELECT r, (SELECT count(*) FROM ref_dists('pts3') d WHERE d <= r) AS want FROM radii;
SET gpu2bs.precision = float8;
SELECT r, gpu_pair_count(x, y, z, r) AS got, want, gpu_pair_count(x, y, z, r) = want AS ok
FROM pts3, want3 GROUP BY r, want ORDER BY r;
SET gpu2bs.precision = float4;
SELECT r, gpu_pair_count(x, y, z, r) = want AS ok
FROM pts3, want3 GROUP BY r, want ORDER BY r;

-- 2-D
CREATE TEMP TABLE want2 AS
  SELECT r, (SELECT count(*) FROM ref_dists('pts2', '{x,y}') d WHERE d <= r) AS want FROM radii;
SET gpu2bs.precision = float8;
SELECT r, gpu_pair_count(x, y, r) AS got, want, gpu_pair_count(x, y, r) = want AS ok
FROM pts2, want2 GROUP BY r, want ORDER BY r;
SET gpu2bs.precision = float4;
SELECT r, gpu_pair_count(x, y, r) = want AS ok
FROM pts2, want2 GROUP BY r, want ORDER BY r;

-- continuous random points, float8: no pair within 1e-9 (relative) of r
SET gpu2bs.precision = float8;
SELECT r, gpu_pair_count(x, y, z, r) AS got,
       (SELECT count(*) FROM ref_dists('cloud3') d WHERE d <= r) AS want,
       (SELECT count(*) FROM ref_dists('cloud3') d WHERE abs(d - r) < 1e-9 * r) AS near_r
FROM cloud3, (VALUES (0.05), (0.1), (0.3), (0.9)) v(r) GROUP BY r ORDER BY r;

-- r = 0 counts coincident pairs; r = Infinity and a huge r (square within float8) count every pair
SELECT gpu_pair_count(x, y, z, 0) AS coincident,
       (SELECT count(*) FROM pts3 a JOIN pts3 b ON a.id < b.id AND (a.x, a.y, a.z) = (b.x, b.y, b.z)) AS want,
       gpu_pair_count(x, y, z, 'Infinity') AS all_inf, gpu_pair_count(x, y, z, 1e150) AS all_huge,
       count(*) * (count(*) - 1) / 2 AS n_pairs
FROM pts3;

-- degenerate inputs: all equal, one row, two identical rows, no rows
SELECT gpu_pair_count(x, y, z, 0) AS r0, gpu_pair_count(x, y, z, 1) AS r1,
       gpu_pair_count(x, y, 0) AS r0_2d, gpu_pair_count(x, y, z, 'Infinity') AS rinf FROM same3;
SELECT gpu_pair_count(x, y, z, 0) AS r0, gpu_pair_count(x, y, z, 'Infinity') AS rinf FROM one3;
SELECT gpu_pair_count(x, y, z, 0) AS r0, gpu_pair_count(x, y, 1e-150) AS r_tiny_2d FROM two3;
SELECT gpu_pair_count(x, y, z, 1) AS r1, gpu_pair_count(x, y, 1) AS r1_2d FROM empty3;

-- rows with a NULL coordinate (or a NULL r) are skipped
SELECT gpu_pair_count(x, y, z, 3) AS got,
       (SELECT count(*) FROM ref_dists('pts3_null') d WHERE d <= 3) AS want,
       gpu_pair_count(x, y, z, 'Infinity') = 187 * 186 / 2 AS all_complete_pairs,
       gpu_pair_count(x, y, 3) = (SELECT count(*) FROM ref_dists('pts3_null', '{x,y}') d WHERE d <= 3) AS ok_2d
FROM pts3_null;
SELECT gpu_pair_count(x, y, z, NULL) AS null_r FROM pts3;

-- exact inclusive radius: the 3-4-5 triangle
SELECT r, gpu_pair_count(x, y, z, r) AS n FROM
  (VALUES (0::float8, 0::float8, 0::float8), (3, 0, 0), (0, 4, 0)) p(x, y, z),
  (VALUES (2.999), (3), (4), (4.999), (5), (5.001)) v(r)
GROUP BY r ORDER BY r;

-- as a window function: the final function runs once per row on a growing state
SELECT id, gpu_pair_count(x, y, z, 0) OVER (ORDER BY id) AS running_r0,
       gpu_pair_count(x, y, z, 'Infinity') OVER (ORDER BY id) AS running_all
FROM (VALUES (1, 0::float8, 0::float8, 0::float8), (2, 0, 0, 0), (3, 1, 1, 1), (4, 0, 0, 0), (5, 1, 1, 1)) p(id, x, y, z)
ORDER BY id;

-- translation does not change the count (float8, and float4 while coordinates stay exact)
SET gpu2bs.precision = float8;
SELECT gpu_pair_count(x + 1e6, y - 1e6, z + 5e5, 2.5) = gpu_pair_count(x, y, z, 2.5) AS same FROM pts3;
SET gpu2bs.precision = float4;
SELECT gpu_pair_count(x + 1e6, y - 1e6, z + 5e5, 2.5) = gpu_pair_count(x, y, z, 2.5) AS same FROM pts3;

-- one state per group
SELECT id % 4 AS g, gpu_pair_count(x, y, z, 3) AS got
FROM pts3 GROUP BY 1 ORDER BY 1;
SELECT g, (SELECT count(*) FROM pts3 a JOIN pts3 b ON a.id < b.id
             AND a.id % 4 = g AND b.id % 4 = g
             AND (a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y) + (a.z - b.z) * (a.z - b.z) <= 9) AS want
FROM generate_series(0, 3) g ORDER BY g;

RESET gpu2bs.precision;
