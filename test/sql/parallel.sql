--
-- Parallel aggregation: the partial aggregates of the workers are point buffers, serialized,
-- deserialized and concatenated by the combine function; the final function runs the engine
-- once on all points. A histogram or count of the union is not the sum of the parts' (pairs
-- across workers), so equality with the serial result proves the merge is of points.
--
SELECT setseed(0.125);
-- whole-table aggregates stay aggregates here (not planned as the relation forms)
SET gpu2bs.direct_scan = off;
CREATE TABLE par3 AS
  SELECT g AS id, floor(random() * 200) / 4 AS x, floor(random() * 200) / 4 AS y, floor(random() * 200) / 4 AS z,
         g % 4 AS grp
  FROM generate_series(1, 16000) g;
ALTER TABLE par3 SET (parallel_workers = 2);
ANALYZE par3;

-- serial results
SET max_parallel_workers_per_gather = 0;
EXPLAIN (COSTS OFF) SELECT gpu_sdh(x, y, z, 10) FROM par3;
CREATE TEMP TABLE serial AS SELECT
  gpu_sdh(x, y, z, 10) AS sdh3, gpu_sdh(x, y, z, 16, 2.2) AS sdh3w, gpu_sdh(x, y, 12) AS sdh2,
  gpu_sdh_fixed(x, y, 16, 1.3) AS sdh2w, gpu_sdh_width(x, y, z, 10) AS w3, gpu_sdh_width(x, y, 12) AS w2,
  gpu_pair_count(x, y, z, 1.2) AS pc3, gpu_pair_count(x, y, 0.8) AS pc2, count(*) AS n
FROM par3;
SELECT sdh3, (SELECT sum(c) FROM unnest(sdh3) c) = n * (n - 1) / 2 AS sums_to_all_pairs, pc3, pc2
FROM serial;

-- parallel plan
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT gpu_sdh(x, y, z, 10) FROM par3;
EXPLAIN (COSTS OFF) SELECT gpu_pair_count(x, y, 0.8), gpu_sdh_width(x, y, 12) FROM par3;
SELECT p.sdh3 = s.sdh3 AS sdh3, p.sdh3w = s.sdh3w AS sdh3w, p.sdh2 = s.sdh2 AS sdh2, p.sdh2w = s.sdh2w AS sdh2w,
       p.w3 = s.w3 AS w3, p.w2 = s.w2 AS w2, p.pc3 = s.pc3 AS pc3, p.pc2 = s.pc2 AS pc2
FROM serial s, (SELECT
  gpu_sdh(x, y, z, 10) AS sdh3, gpu_sdh(x, y, z, 16, 2.2) AS sdh3w, gpu_sdh(x, y, 12) AS sdh2,
  gpu_sdh_fixed(x, y, 16, 1.3) AS sdh2w, gpu_sdh_width(x, y, z, 10) AS w3, gpu_sdh_width(x, y, 12) AS w2,
  gpu_pair_count(x, y, z, 1.2) AS pc3, gpu_pair_count(x, y, 0.8) AS pc2
FROM par3) p;
-- the parallel result against the SQL brute force on a part small enough for it
EXPLAIN (COSTS OFF) SELECT gpu_pair_count(x, y, z, 3.1) FROM par3 WHERE id <= 1500;
SELECT gpu_pair_count(x, y, z, 3.1) AS got,
       (SELECT count(*) FROM par3 a JOIN par3 b ON a.id < b.id AND a.id <= 1500 AND b.id <= 1500
          AND (a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y) + (a.z - b.z) * (a.z - b.z) <= 3.1 * 3.1) AS want
FROM par3 WHERE id <= 1500;

-- grouped parallel aggregation: a partial state per group and worker (hashed, then sorted)
EXPLAIN (COSTS OFF) SELECT grp, gpu_sdh(x, y, z, 8) FROM par3 GROUP BY 1;
CREATE TEMP TABLE par_hashed AS
  SELECT grp, gpu_sdh(x, y, z, 8) AS h, gpu_pair_count(x, y, z, 2) AS pc FROM par3 GROUP BY 1;
SET enable_hashagg = off;
EXPLAIN (COSTS OFF) SELECT grp, gpu_sdh(x, y, z, 8) FROM par3 GROUP BY 1;
CREATE TEMP TABLE par_sorted AS
  SELECT grp, gpu_sdh(x, y, z, 8) AS h, gpu_pair_count(x, y, z, 2) AS pc FROM par3 GROUP BY 1;
RESET enable_hashagg;
SET max_parallel_workers_per_gather = 0;
SELECT grp, s.h AS serial_sdh, h.h = s.h AND o.h = s.h AS same_sdh, s.pc AS serial_count,
       h.pc = s.pc AND o.pc = s.pc AS same_count
FROM par_hashed h JOIN par_sorted o USING (grp)
  JOIN (SELECT grp, gpu_sdh(x, y, z, 8) AS h, gpu_pair_count(x, y, z, 2) AS pc FROM par3 GROUP BY 1) s USING (grp)
ORDER BY grp;
SET max_parallel_workers_per_gather = 2;

-- workers that see no rows (NULL partial states); no rows at all gives NULL
SELECT gpu_sdh(x, y, z, 4) AS h, gpu_pair_count(x, y, z, 1) AS pc FROM par3 WHERE id = 17;
SELECT gpu_sdh(x, y, z, 4) AS h, gpu_pair_count(x, y, z, 1) AS pc FROM par3 WHERE id IN (17, 18);
SELECT gpu_sdh(x, y, z, 4) AS h, gpu_sdh_width(x, y, z, 4) AS w, gpu_pair_count(x, y, z, 1) AS pc FROM par3 WHERE id < 0;

-- errors raised in the workers' transition functions or after the combine step are the
-- serial ones (no CONTEXT lines: whether a worker or the leader raises one varies)
\set SHOW_CONTEXT never
SELECT gpu_pair_count(x, y, z, 'NaN') FROM par3;
\echo :SQLSTATE
SELECT gpu_sdh(x, y, z, 4, 'NaN') FROM par3;
\echo :SQLSTATE
SELECT gpu_sdh(x, y, z, 0) FROM par3;
\echo :SQLSTATE
SELECT gpu_pair_count(x, y, z, -1) FROM par3;
\echo :SQLSTATE
SELECT gpu_sdh(x, y, z, 1 + (id % 2)::int) FROM par3;
\echo :SQLSTATE
SELECT gpu_pair_count(CASE WHEN id = 12345 THEN 'NaN' ELSE x END, y, z, 1) FROM par3;
\echo :SQLSTATE

\set SHOW_CONTEXT errors

RESET max_parallel_workers_per_gather;
RESET min_parallel_table_scan_size;
RESET parallel_tuple_cost;
RESET parallel_setup_cost;
DROP TABLE par3;
RESET gpu2bs.direct_scan;
