-- The custom scan (gpu2bs.enable_customscan) returns exactly the rows of the function scan.
-- a SET made before the library is loaded is kept when it loads (every gpu2bs.* setting is
-- defined before the prefix is reserved)
SET gpu2bs.enable_customscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM gpu_simjoin('pts3', 2.5);
SHOW gpu2bs.enable_customscan;
RESET gpu2bs.enable_customscan;
SET client_min_messages = warning;

-- the plan: a custom scan for gpu_simjoin in FROM, the function scan when disabled or LATERAL
EXPLAIN (COSTS OFF) SELECT count(*) FROM gpu_simjoin('pts3', 2.5);
EXPLAIN (COSTS OFF) SELECT * FROM gpu_simjoin('pts3', 'cloud3', 0.5) WHERE dist > 0.1;
SET gpu2bs.enable_customscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM gpu_simjoin('pts3', 2.5);
RESET gpu2bs.enable_customscan;
-- a correlated subquery passes the outer value as a parameter: each new value runs the join again
EXPLAIN (COSTS OFF) SELECT o.id, j.n FROM two3 o, LATERAL (SELECT count(*) AS n FROM gpu_simjoin('pts3', o.id + 0.6)) j;
SELECT o.id, j.n FROM generate_series(1, 3) o(id), LATERAL (SELECT count(*) AS n FROM gpu_simjoin('pts3', o.id + 0.6)) j ORDER BY 1;
SET gpu2bs.enable_customscan = off;
SELECT o.id, j.n FROM generate_series(1, 3) o(id), LATERAL (SELECT count(*) AS n FROM gpu_simjoin('pts3', o.id + 0.6)) j ORDER BY 1;
RESET gpu2bs.enable_customscan;
-- a direct LATERAL call keeps the function scan
EXPLAIN (COSTS OFF) SELECT o.id, j.* FROM two3 o, LATERAL gpu_simjoin('pts3', o.id + 0.6) j;

-- same multiset of (id1, id2, dist) both ways, self-join and two relations, both precisions
CREATE TEMP TABLE cs_on AS SELECT * FROM gpu_simjoin('pts3', 2.5);
SET gpu2bs.enable_customscan = off;
CREATE TEMP TABLE cs_off AS SELECT * FROM gpu_simjoin('pts3', 2.5);
RESET gpu2bs.enable_customscan;
SELECT (SELECT count(*) FROM cs_on) AS n,
       (SELECT count(*) FROM (TABLE cs_on EXCEPT ALL TABLE cs_off) d) AS only_custom,
       (SELECT count(*) FROM (TABLE cs_off EXCEPT ALL TABLE cs_on) d) AS only_function;
SELECT * FROM cmp_pairs($$SELECT * FROM gpu_simjoin('pts3', 'cloud3', 2.0, coords => '{x,y,z}')$$,
                        $$SELECT * FROM ref_simjoin('pts3', 'cloud3', 2.0, '{x,y,z}')$$);

-- results larger than work_mem spill to a temporary file and come back intact
SET work_mem = '64kB';
SET gpu2bs.precision = float8;
CREATE TEMP TABLE cs_spill AS SELECT * FROM gpu_simjoin('pts3', 6);
RESET work_mem;
SET gpu2bs.enable_customscan = off;
CREATE TEMP TABLE cs_spill_ref AS SELECT * FROM gpu_simjoin('pts3', 6);
RESET gpu2bs.enable_customscan;
RESET gpu2bs.precision;
SELECT (SELECT count(*) FROM cs_spill) > 64 * 1024 / 16 AS spilled,
       (SELECT count(*) FROM (TABLE cs_spill EXCEPT ALL TABLE cs_spill_ref) d) AS only_custom,
       (SELECT count(*) FROM (TABLE cs_spill_ref EXCEPT ALL TABLE cs_spill) d) AS only_function;

-- filters, projections, ORDER BY and LIMIT above the scan
SELECT id1, id2, round(dist::numeric, 6) AS dist FROM gpu_simjoin('pts3', 0.6) WHERE id1 < 200 ORDER BY id1, id2 LIMIT 5;
SELECT count(*) FILTER (WHERE dist = 0) AS coincident, count(*) FROM gpu_simjoin('pts3', 0.6);

-- rescans: the inner side of a nested loop is read again (from the spool)
SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_material = off;
SELECT count(*) FROM one3 a CROSS JOIN two3 b, gpu_simjoin('pts3', 1.0) j WHERE j.id1 > 0;
SELECT (SELECT count(*) FROM gpu_simjoin('pts3', 1.0)) * 2 AS expected;
RESET enable_hashjoin; RESET enable_mergejoin; RESET enable_material;

-- parameters (prepared statement) and NULL arguments
PREPARE sj(float8) AS SELECT count(*) FROM gpu_simjoin('pts3', $1);
EXECUTE sj(2.5);
EXECUTE sj(0.6);
EXECUTE sj(NULL);
DEALLOCATE sj;
SELECT count(*) FROM gpu_simjoin(NULL::regclass, 1.0);

-- errors surface the same way
SELECT sqlstate_of($$SELECT count(*) FROM gpu_simjoin('pts3', -1)$$) AS bad_eps;
SET gpu2bs.max_result_rows = 10;
SELECT sqlstate_of($$SELECT count(*) FROM gpu_simjoin('pts3', 5)$$) AS too_many;
RESET gpu2bs.max_result_rows;
SELECT count(*) FROM gpu_simjoin('pts3', 0.6);

-- target lists of every shape: reordered, partial, repeated and computed columns
CREATE TEMP TABLE shapes_on AS
  SELECT 1 AS q, dist AS a, id1::float8 AS b FROM gpu_simjoin('pts3', 1.6)
  UNION ALL SELECT 2, id2, NULL FROM gpu_simjoin('pts3', 1.6)
  UNION ALL SELECT 3, id1, id1 FROM gpu_simjoin('pts3', 1.6)
  UNION ALL SELECT 4, id1 + id2, dist * 2 FROM gpu_simjoin('pts3', 1.6);
SET gpu2bs.enable_customscan = off;
CREATE TEMP TABLE shapes_off AS
  SELECT 1 AS q, dist AS a, id1::float8 AS b FROM gpu_simjoin('pts3', 1.6)
  UNION ALL SELECT 2, id2, NULL FROM gpu_simjoin('pts3', 1.6)
  UNION ALL SELECT 3, id1, id1 FROM gpu_simjoin('pts3', 1.6)
  UNION ALL SELECT 4, id1 + id2, dist * 2 FROM gpu_simjoin('pts3', 1.6);
RESET gpu2bs.enable_customscan;
SELECT q, count(*) AS n,
       (SELECT count(*) FROM (SELECT * FROM shapes_on o WHERE o.q = s.q EXCEPT ALL SELECT * FROM shapes_off f WHERE f.q = s.q) d) AS only_custom,
       (SELECT count(*) FROM (SELECT * FROM shapes_off f WHERE f.q = s.q EXCEPT ALL SELECT * FROM shapes_on o WHERE o.q = s.q) d) AS only_function
  FROM shapes_on s GROUP BY q ORDER BY q;
