--
-- Planner integration: plain SQL inner joins of two tables whose join quals are pair
-- expressions run as a gpu2bs join (distance predicates by the grid-indexed similarity join).
-- Every query is run with gpu2bs.enable_join on and off: the same rows (EXCEPT ALL both ways
-- empty), and whether the gpu2bs join was in the plan. float8: PostgreSQL's own evaluation.
--
LOAD 'gpu2bs';
SET gpu2bs.precision = float8;
SET max_parallel_workers_per_gather = 0;

-- side a: 400 points on a 0.05 lattice (exact distances at the bounds), duplicates, NULLs,
-- NaN and infinite coordinates; side b: 300 shifted points
CREATE TABLE pj_a (id int PRIMARY KEY, x float8, y float8, z float8, t float8, i int, n numeric, r real, name text);
INSERT INTO pj_a SELECT g, (g % 20) * 0.05, (g / 20 % 20) * 0.05, (g % 7) * 0.05, (g * 37 % 101)::float8,
  g % 9, (g % 11)::numeric / 4, ((g % 13) * 0.05)::real, 'p' || g
FROM generate_series(1, 400) g;
UPDATE pj_a SET x = NULL WHERE id % 50 = 1;
UPDATE pj_a SET y = 'NaN' WHERE id % 50 = 2;
UPDATE pj_a SET x = 'Infinity' WHERE id % 50 = 3;
UPDATE pj_a SET t = NULL WHERE id % 50 = 4;
INSERT INTO pj_a SELECT id + 1000, x, y, z, t, i, n, r, name FROM pj_a WHERE id <= 40;  -- duplicates
CREATE TABLE pj_b (id int PRIMARY KEY, x float8, y float8, z float8, t float8, i int);
INSERT INTO pj_b SELECT g, (g % 15) * 0.07 + 0.01, (g / 15 % 20) * 0.05, (g % 5) * 0.1, (g * 13 % 97)::float8, g % 4
FROM generate_series(1, 300) g;
CREATE TABLE pj_tiny (id int, x float8, y float8);
INSERT INTO pj_tiny VALUES (1, 0, 0), (2, 0.1, 0), (3, 0.3, 0.1);
-- empty, but planned as 400 rows (statistics from before the rows were deleted)
CREATE TABLE pj_empty (id int, x float8, y float8);
INSERT INTO pj_empty SELECT id, x, y FROM pj_a WHERE id <= 400;
ANALYZE pj_a, pj_b, pj_tiny, pj_empty;
DELETE FROM pj_empty;

-- fired: the gpu2bs join is in the plan with enable_join = on; only_on / only_off: rows one
-- setting returns and the other not; n: rows
CREATE FUNCTION pj_check(q text, OUT fired bool, OUT only_on bigint, OUT only_off bigint, OUT n bigint)
LANGUAGE plpgsql AS $$
DECLARE
  plan text := '';
  l text;
BEGIN
  PERFORM set_config('gpu2bs.enable_join', 'on', true);
  FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP plan := plan || l || E'\n'; END LOOP;
  fired := plan LIKE '%gpu2bs join%';
  EXECUTE 'CREATE TEMP TABLE pj_on AS ' || q;
  PERFORM set_config('gpu2bs.enable_join', 'off', true);
  EXECUTE 'CREATE TEMP TABLE pj_off AS ' || q;
  PERFORM set_config('gpu2bs.enable_join', 'on', true);
  EXECUTE 'SELECT count(*) FROM (TABLE pj_on EXCEPT ALL TABLE pj_off) d' INTO only_on;
  EXECUTE 'SELECT count(*) FROM (TABLE pj_off EXCEPT ALL TABLE pj_on) d' INTO only_off;
  EXECUTE 'SELECT count(*) FROM pj_on' INTO n;
  DROP TABLE pj_on;
  DROP TABLE pj_off;
END $$;

-- recognized distance shapes, self-join (one scan) and two relations; the rows of both sides
SELECT shape, c.* FROM (VALUES
  ('squared <=, id <', $$SELECT a.id, b.id AS bid FROM pj_a a JOIN pj_a b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.1^2 AND a.id < b.id$$),
  ('squared <=, b.id > a.id', $$SELECT a.id, b.id AS bid FROM pj_a a JOIN pj_a b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.1^2 AND b.id > a.id$$),
  ('squared <=, b.id < a.id', $$SELECT a.id, b.id AS bid FROM pj_a a JOIN pj_a b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.1^2 AND b.id < a.id$$),
  ('squared <=, no other qual', $$SELECT a.id, b.id AS bid, a.t, b.name FROM pj_a a JOIN pj_a b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.01$$),
  ('sqrt <, t <', $$SELECT a.id, b.id AS bid FROM pj_a a JOIN pj_a b ON sqrt((a.x-b.x)^2 + (a.y-b.y)^2) < 0.1 AND a.t < b.t$$),
  ('sqrt <=, bound first', $$SELECT a.id, b.id AS bid FROM pj_a a JOIN pj_a b ON 0.1 >= sqrt((b.x-a.x)^2 + (b.y-a.y)^2)$$),
  ('products, 3-D', $$SELECT a.id, b.id AS bid FROM pj_a a JOIN pj_a b ON (a.x-b.x)*(a.x-b.x) + (a.y-b.y)*(a.y-b.y) + (a.z-b.z)*(a.z-b.z) <= 0.0125$$),
  ('swapped columns', $$SELECT a.id, b.id AS bid FROM pj_a a JOIN pj_a b ON (a.x-b.y)^2 + (a.y-b.x)^2 <= 0.01 AND a.id <= b.id$$),
  ('general other qual', $$SELECT a.id, b.id AS bid FROM pj_a a JOIN pj_a b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.02 AND (abs(a.z - b.z) < 0.1 OR a.i::float8 > b.n::float8)$$),
  ('numeric and real columns', $$SELECT a.id, b.id AS bid FROM pj_a a JOIN pj_a b ON (a.n::float8-b.n::float8)^2 + (a.r::float8-b.r)^2 <= 0.0625 AND a.id < b.id$$),
  ('filtered self (two scans)', $$SELECT a.id, b.id AS bid FROM pj_a a JOIN pj_a b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.01 AND a.id < b.id WHERE a.i > 3$$),
  ('two relations', $$SELECT a.id, b.id AS bid, b.t FROM pj_a a JOIN pj_b b ON sqrt((a.x-b.x)^2 + (a.y-b.y)^2) <= 0.06$$),
  ('two relations, t <', $$SELECT a.id, b.id AS bid FROM pj_b b JOIN pj_a a ON (b.x-a.x)^2 + (b.y-a.y)^2 + (b.z-a.z)^2 < 0.02 AND a.t < b.t$$),
  ('whole rows', $$SELECT a, b.id AS bid FROM pj_a a JOIN pj_b b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.0025$$),
  ('pair expression band', $$SELECT a.id, b.id AS bid FROM pj_a a JOIN pj_b b ON abs(a.x - b.x) + abs(a.y - b.y) <= 0.08 AND a.t < b.t$$),
  ('pair expression, self', $$SELECT a.id, b.id AS bid FROM pj_a a JOIN pj_a b ON a.x < b.x AND b.y - a.y BETWEEN 0 AND 0.05$$),
  ('empty side', $$SELECT a.id, b.id AS bid FROM pj_a a JOIN pj_empty b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.01$$),
  ('three tables', $$SELECT a.id, b.id AS bid, c.id AS cid FROM pj_a a JOIN pj_b b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.0025 JOIN pj_tiny c ON c.id = b.i$$)
) s(shape, q), LATERAL pj_check(q) c ORDER BY shape COLLATE "C";

-- count(*) over the join is computed by the scan
SELECT shape, c.* FROM (VALUES
  ('count, self', $$SELECT count(*) FROM pj_a a JOIN pj_a b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.1^2 AND a.id < b.id$$),
  ('count, two relations', $$SELECT count(*), count(*) + 1 AS m FROM pj_a a, pj_b b WHERE sqrt((a.x-b.x)^2 + (a.y-b.y)^2) < 0.06$$),
  ('count, pair expression', $$SELECT count(*) FROM pj_a a JOIN pj_b b ON abs(a.x - b.x) <= 0.05 AND a.t > b.t$$),
  ('count, empty', $$SELECT count(*) FROM pj_empty a JOIN pj_a b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.01$$)
) s(shape, q), LATERAL pj_check(q) c ORDER BY shape COLLATE "C";

-- not fired: outer joins, volatile functions, other types, equi-joins, tiny inputs, row locks
SELECT shape, c.* FROM (VALUES
  ('left join', $$SELECT a.id, b.id AS bid FROM pj_a a LEFT JOIN pj_b b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.01$$),
  ('volatile', $$SELECT a.id, b.id AS bid FROM pj_a a JOIN pj_b b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.01 + 0 * random()$$),
  ('text column', $$SELECT a.id, b.id AS bid FROM pj_a a JOIN pj_a b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.01 AND a.name < b.name$$),
  ('numeric arithmetic', $$SELECT a.id, b.id AS bid FROM pj_a a JOIN pj_a b ON (a.n-b.n)^2 + (a.x-b.x)^2 <= 0.0625 AND a.id < b.id$$),
  ('integer arithmetic', $$SELECT a.id, b.id AS bid FROM pj_a a JOIN pj_b b ON (a.i - b.i)^2 <= 1$$),
  ('equi-join', $$SELECT a.id, b.id AS bid FROM pj_a a JOIN pj_b b ON a.i = b.i AND (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.01$$),
  ('tiny inputs', $$SELECT a.id, b.id AS bid FROM pj_tiny a JOIN pj_tiny b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.05$$),
  ('for update', $$SELECT a.id, b.id AS bid FROM pj_a a JOIN pj_b b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.01 FOR UPDATE$$)
) s(shape, q), LATERAL pj_check(q) c ORDER BY shape COLLATE "C";

-- parameters are constants of the join, read when it starts: a generic plan of a prepared
-- statement (PARAM_EXTERN) runs the gpu2bs join with the value of each execution; a bound that
-- is NULL or negative runs every pair as a pair expression (no pairs)
PREPARE pj_p(float8) AS SELECT count(*) FROM pj_a a JOIN pj_a b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= $1 AND a.id < b.id;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE pj_p(0.01);
EXECUTE pj_p(0.01);
EXECUTE pj_p(0.0225);
EXECUTE pj_p(NULL);
EXECUTE pj_p(-1);
SET plan_cache_mode = force_custom_plan;
EXECUTE pj_p(0.0225);
SET gpu2bs.enable_join = off;
EXECUTE pj_p(0.0225);
RESET gpu2bs.enable_join;
RESET plan_cache_mode;
DEALLOCATE pj_p;
-- a parameter of another type in a join qual is not a pair expression
PREPARE pj_t(text) AS SELECT count(*) FROM pj_a a JOIN pj_a b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.01 AND a.name || $1 < b.name;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE pj_t('z');
RESET plan_cache_mode;
DEALLOCATE pj_t;

-- EXPLAIN shows the method, the distance predicate and the quals applied with it
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM pj_a a JOIN pj_a b ON sqrt((a.x-b.x)^2 + (a.y-b.y)^2) <= 0.1 AND a.t < b.t;
EXPLAIN (COSTS OFF) SELECT count(*) FROM pj_a a JOIN pj_b b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.01 AND a.id < b.id;
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM pj_a a JOIN pj_b b ON abs(a.x - b.x) + abs(a.y - b.y) <= 0.08;
SET gpu2bs.enable_join = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM pj_a a JOIN pj_b b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.01;
RESET gpu2bs.enable_join;

-- the pair expression's errors are PostgreSQL's (22012)
SELECT count(*) FROM pj_a a JOIN pj_b b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.01 AND a.x / (b.y - b.y) > 0;

-- float4: the distance predicate follows the similarity join's float4 rule; pairs it decides
-- differently from float8 lie within float4 rounding of the bound
SET gpu2bs.precision = float4;
CREATE TEMP TABLE pj_f4 AS SELECT a.id, b.id AS bid FROM pj_a a JOIN pj_b b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.0049;
SET gpu2bs.precision = float8;
CREATE TEMP TABLE pj_f8 AS SELECT a.id, b.id AS bid FROM pj_a a JOIN pj_b b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.0049;
SELECT count(*) AS differing,
       count(*) FILTER (WHERE abs((a.x-b.x)^2 + (a.y-b.y)^2 - 0.0049) > 1e-6 * 0.0049) AS beyond_rounding
FROM ((TABLE pj_f4 EXCEPT TABLE pj_f8) UNION (TABLE pj_f8 EXCEPT TABLE pj_f4)) d
JOIN pj_a a ON a.id = d.id JOIN pj_b b ON b.id = d.bid;
SELECT (SELECT count(*) FROM pj_f8) > 0 AS some_pairs;

-- float4 counts computed by the engine alone (no other qual: both orders of each pair and each
-- row with itself; a strict comparison of distinct keys: one order) equal the count of the
-- rows the join returns (OFFSET 0 keeps the count above the join); non-distinct keys count
-- through the rows
SET gpu2bs.precision = float4;
CREATE FUNCTION pj_count(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  EXECUTE q INTO n;
  RETURN n;
END $$;
SELECT q.shape, c1.n AS pushed, c2.n AS from_rows, c1.n = c2.n AS same
FROM (VALUES
  ('no other qual', 'pj_a a JOIN pj_a b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.0049'),
  ('distinct keys', 'pj_a a JOIN pj_a b ON sqrt((a.x-b.x)^2 + (a.y-b.y)^2) <= 0.07 AND a.id > b.id'),
  ('repeated keys', 'pj_a a JOIN pj_a b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.0049 AND a.i < b.i'),
  ('two relations', 'pj_a a JOIN pj_b b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.0049')
) q(shape, j),
LATERAL (SELECT pj_count('SELECT count(*) FROM ' || j) AS n) c1,
LATERAL (SELECT pj_count('SELECT count(*) FROM (SELECT a.id FROM ' || j || ' OFFSET 0) s') AS n) c2
ORDER BY 1;
RESET gpu2bs.precision;

-- a correlated subquery: the join's input reads the outer value, so each rescan runs it again
SET gpu2bs.precision = float8;
SELECT v,
  (SELECT count(*) FROM pj_a a JOIN pj_b b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.01 WHERE a.i = v) AS on_,
  (SELECT count(*) FROM pj_a a JOIN pj_b b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.01 + 0 * random() WHERE a.i = v) AS reference
FROM generate_series(0, 3) v ORDER BY v;
EXPLAIN (COSTS OFF) SELECT v,
  (SELECT count(*) FROM pj_a a JOIN pj_b b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.01 WHERE a.i = v)
FROM generate_series(0, 3) v;
-- the outer value in the join qual itself (PARAM_EXEC): the bound changes per row
SELECT v,
  (SELECT count(*) FROM pj_a a JOIN pj_b b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= v::float8 * 0.002) AS on_,
  (SELECT count(*) FROM pj_a a JOIN pj_b b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= v::float8 * 0.002 + 0 * random()) AS reference
FROM generate_series(0, 3) v ORDER BY v;
EXPLAIN (COSTS OFF) SELECT v,
  (SELECT count(*) FROM pj_a a JOIN pj_b b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= v::float8 * 0.002)
FROM generate_series(0, 3) v;
RESET gpu2bs.precision;

-- coordinates the grid refuses (float8: a bounding box over 1e150; float4: over 1e18) are
-- joined all the same: every pair as a pair expression, or float64 candidates
CREATE TABLE pj_big AS SELECT id, x, y FROM pj_a WHERE x IS NOT NULL AND id <= 300;
INSERT INTO pj_big VALUES (9001, 1e145, 1e145), (9002, 1e145, 1e145), (9003, 1e20, 0), (9004, 1e20, 0);
ANALYZE pj_big;
SET gpu2bs.precision = float8;
SELECT * FROM pj_check($$SELECT a.id, b.id AS bid FROM pj_big a JOIN pj_big b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.01 AND a.id < b.id$$);
SET gpu2bs.precision = float4;
SELECT * FROM pj_check($$SELECT a.id, b.id AS bid FROM pj_big a JOIN pj_big b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.006 AND a.id < b.id WHERE a.id < 9001 AND b.id < 9001$$);
RESET gpu2bs.precision;

-- INSERT ... SELECT, a partitioned table (its partitions appended), a join of two views
SET gpu2bs.precision = float8;
CREATE TABLE pj_pairs (id int, bid int);
EXPLAIN (COSTS OFF) INSERT INTO pj_pairs SELECT a.id, b.id FROM pj_a a JOIN pj_b b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.0025;
INSERT INTO pj_pairs SELECT a.id, b.id FROM pj_a a JOIN pj_b b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.0025;
SET gpu2bs.enable_join = off;
SELECT (SELECT count(*) FROM pj_pairs) AS inserted,
       (SELECT count(*) FROM ((TABLE pj_pairs) EXCEPT ALL
          (SELECT a.id, b.id FROM pj_a a JOIN pj_b b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.0025)) d) AS only_inserted;
RESET gpu2bs.enable_join;
CREATE TABLE pj_part (id int, x float8, y float8) PARTITION BY RANGE (id);
CREATE TABLE pj_part1 PARTITION OF pj_part FOR VALUES FROM (0) TO (200);
CREATE TABLE pj_part2 PARTITION OF pj_part FOR VALUES FROM (200) TO (100000);
INSERT INTO pj_part SELECT id, x, y FROM pj_a;
ANALYZE pj_part;
CREATE VIEW pj_va AS SELECT id, x, y FROM pj_a WHERE id > 10;
CREATE VIEW pj_vb AS SELECT id, x, y FROM pj_b;
SELECT shape, c.* FROM (VALUES
  ('partitioned', $$SELECT a.id, b.id AS bid FROM pj_part a JOIN pj_part b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.01 AND a.id < b.id$$),
  ('views', $$SELECT a.id, b.id AS bid FROM pj_va a JOIN pj_vb b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.01$$),
  -- a correlated subquery over the partitions that run-time pruning picks per outer row
  ('partitioned, correlated count', $$SELECT o.k, (SELECT count(*) FROM pj_part a JOIN pj_part b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.01 AND a.id < b.id WHERE a.id < o.k AND b.id < o.k) AS c FROM (VALUES (150), (500), (100000), (100)) o(k)$$),
  ('partitioned, correlated rows', $$SELECT o.k, s.* FROM (VALUES (150), (500), (100)) o(k), LATERAL (SELECT a.id, b.id AS bid FROM pj_part a JOIN pj_part b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.01 AND a.id < b.id WHERE a.id < o.k AND b.id < o.k OFFSET 0) s$$)
) s(shape, q), LATERAL pj_check(q) c ORDER BY shape COLLATE "C";
-- a statement that can recheck rows by EvalPlanQual (UPDATE, DELETE, row locks) gets no gpu2bs
-- join at any level: the recheck of a scan without a scan relation returns no rows
EXPLAIN (COSTS OFF) UPDATE pj_tiny t SET x = (SELECT count(*) FROM pj_a a JOIN pj_a b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= 0.01 AND a.id < b.id WHERE a.id <> t.id) WHERE t.id = 1;
RESET gpu2bs.precision;
