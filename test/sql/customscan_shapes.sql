-- Every query shape PostgreSQL accepts over the function scan gpu_simjoin(...) gives the same
-- rows over the custom scan: whole-row references, DML with the join in FROM/USING, row locks,
-- CTEs, pulled-up subqueries, LATERAL, joins, set operations, parameters, cursors, rescans.
SET client_min_messages = warning;
CREATE TABLE shp (id int PRIMARY KEY, x float8, y float8, n int NOT NULL DEFAULT 0);
INSERT INTO shp SELECT g, (g % 10) * 0.3, (g / 10) * 0.3 FROM generate_series(1, 60) g;
ANALYZE shp;

-- Runs stmt with the custom scan and with the function scan (rolled back each time, so DML
-- sees the same data both ways), then `after` (the table's state after a MERGE); returns the
-- row count, the rows found only one way, and
-- whether the first run's plan used the custom scan.
CREATE FUNCTION both_ways(stmt text, after text DEFAULT NULL, OUT n int, OUT only_custom int, OUT only_function int,
                          OUT custom_scan bool)
LANGUAGE plpgsql AS $$
DECLARE
  got text[][] := '{}';
  r record;
  res text[];
  plan text;
BEGIN
  FOR k IN 1..2 LOOP
    res := '{}';
    BEGIN
      PERFORM set_config('gpu2bs.enable_customscan', CASE WHEN k = 1 THEN 'on' ELSE 'off' END, true);
      IF k = 1 THEN
        custom_scan := false;
        FOR plan IN EXECUTE 'EXPLAIN (COSTS OFF) ' || stmt LOOP
          custom_scan := custom_scan OR plan LIKE '%Custom Scan (gpu2bs simjoin)%';
        END LOOP;
      END IF;
      IF stmt ILIKE 'MERGE%' THEN
        EXECUTE stmt;
      ELSE
        FOR r IN EXECUTE stmt LOOP
          res := res || row_to_json(r)::text;
        END LOOP;
      END IF;
      IF after IS NOT NULL THEN
        FOR r IN EXECUTE after LOOP
          res := res || row_to_json(r)::text;
        END LOOP;
      END IF;
      RAISE EXCEPTION USING ERRCODE = 'P0004', MESSAGE = array_to_string(res, chr(1));
    EXCEPTION WHEN assert_failure THEN
      res := string_to_array(SQLERRM, chr(1));
    END;
    IF k = 1 THEN
      got := res;
    END IF;
  END LOOP;
  PERFORM set_config('gpu2bs.enable_customscan', 'on', true);
  n := coalesce(cardinality(got), 0);
  SELECT count(*) INTO only_custom FROM (SELECT unnest(got) EXCEPT ALL SELECT unnest(res)) d;
  SELECT count(*) INTO only_function FROM (SELECT unnest(res) EXCEPT ALL SELECT unnest(got)) d;
END $$;

-- whole-row references
SELECT * FROM both_ways($$SELECT g FROM gpu_simjoin('shp', 0.5) g$$);
SELECT * FROM both_ways($$SELECT row_to_json(g) AS j FROM gpu_simjoin('shp', 0.5) g(a, b)$$);
SELECT * FROM both_ways($$SELECT count(g) AS c, count(*) FILTER (WHERE g IS NOT NULL) AS d FROM gpu_simjoin('shp', 0.5) g$$);
SELECT * FROM both_ways($$SELECT (g).id2, (g).dist > 0.4 AS far FROM gpu_simjoin('shp', 0.5) g WHERE g.id1 < 20$$);
SELECT * FROM both_ways($$SELECT g.* FROM gpu_simjoin('shp', 'cloud3', 0.7, coords => '{x,y}') g WHERE g::text LIKE '(1%'$$);
SELECT * FROM both_ways($$SELECT g = g AS same, g::text IS NOT NULL AS h FROM gpu_simjoin('shp', 0.4) g$$);
-- system columns of a function scan do not exist: the same error both ways
SELECT sqlstate_of($$SELECT ctid FROM gpu_simjoin('shp', 0.5)$$) AS ctid_on;
SET gpu2bs.enable_customscan = off;
SELECT sqlstate_of($$SELECT ctid FROM gpu_simjoin('shp', 0.5)$$) AS ctid_off;
RESET gpu2bs.enable_customscan;

-- DML with the join in FROM / USING (one partner per target row, so the result is defined)
SELECT * FROM both_ways($$UPDATE shp SET n = n + 1 FROM gpu_simjoin('shp', 0.5) j WHERE shp.id = j.id1 AND j.id2 = j.id1 + 1 RETURNING shp.id, shp.n, j$$);
SELECT * FROM both_ways($$UPDATE shp SET n = j.c FROM (SELECT id1, count(*) AS c FROM gpu_simjoin('shp', 0.5) GROUP BY id1) j WHERE shp.id = j.id1 RETURNING shp.*$$);
SELECT * FROM both_ways($$DELETE FROM shp USING gpu_simjoin('shp', 0.31) j WHERE shp.id = j.id2 AND j.id1 = 1 RETURNING shp.id, j.dist$$);
SELECT * FROM both_ways($$DELETE FROM shp WHERE id IN (SELECT id2 FROM gpu_simjoin('shp', 0.31) WHERE id1 < 5) RETURNING id$$);
SELECT * FROM both_ways($$UPDATE shp SET n = -1 WHERE EXISTS (SELECT 1 FROM gpu_simjoin('shp', 0.31) j WHERE j.id1 = shp.id) RETURNING id$$);
SELECT * FROM both_ways($$INSERT INTO shp SELECT 1000 + id1 * 100 + id2, dist, dist FROM gpu_simjoin('shp', 0.31) WHERE id1 < 4 RETURNING *$$);
SELECT * FROM both_ways($$MERGE INTO shp USING gpu_simjoin('shp', 0.5) j ON shp.id = j.id1 AND j.id2 = j.id1 + 10
  WHEN MATCHED THEN UPDATE SET n = j.id2 WHEN NOT MATCHED THEN DO NOTHING$$, 'SELECT * FROM shp');
SELECT * FROM both_ways($$WITH m AS (UPDATE shp SET n = 7 FROM gpu_simjoin('shp', 0.5) j WHERE shp.id = j.id1 AND j.id2 = j.id1 + 10 RETURNING shp.id) SELECT count(*) FROM m$$);

-- row locks on other tables of the same query
SELECT * FROM both_ways($$SELECT s.id, j.id2 FROM shp s, gpu_simjoin('shp', 0.5) j WHERE s.id = j.id1 FOR UPDATE OF s$$);
SELECT * FROM both_ways($$SELECT s.id, j FROM shp s JOIN gpu_simjoin('shp', 0.5) j ON s.id = j.id2 WHERE j.id1 < 10 FOR SHARE OF s SKIP LOCKED$$);
SELECT * FROM both_ways($$SELECT s.id FROM shp s WHERE s.id IN (SELECT id1 FROM gpu_simjoin('shp', 0.5)) FOR NO KEY UPDATE$$);

-- CTEs (inlined and materialized), pulled-up subqueries, LATERAL, joins, set operations
SELECT * FROM both_ways($$WITH j AS (SELECT * FROM gpu_simjoin('shp', 0.5)) SELECT a.id1, b.id2 FROM j a JOIN j b ON a.id2 = b.id1$$);
SELECT * FROM both_ways($$WITH j AS MATERIALIZED (SELECT * FROM gpu_simjoin('shp', 0.5) g) SELECT j FROM j WHERE id1 % 3 = 0$$);
SELECT * FROM both_ways($$WITH RECURSIVE r(id) AS (SELECT 1::bigint UNION SELECT j.id2 FROM r JOIN gpu_simjoin('shp', 0.31) j ON j.id1 = r.id) SELECT id FROM r$$);
SELECT * FROM both_ways($$SELECT s.a, s.b FROM (SELECT id1 AS a, id2 AS b, g FROM gpu_simjoin('shp', 0.5) g) s WHERE s.a + s.b > 50$$);
-- a subquery kept apart (OFFSET 0): its range table is appended to the query's, renumbered
SELECT * FROM both_ways($$SELECT row_to_json(q.g) AS j FROM (SELECT g FROM gpu_simjoin('shp', 0.5) g(a, b) OFFSET 0) q$$);
SELECT * FROM both_ways($$SELECT s.id, q.g FROM shp s, (SELECT g FROM gpu_simjoin('shp', 0.5) g(a) WHERE g.a < 9 OFFSET 0) q WHERE s.id = (q.g).a FOR UPDATE OF s$$);
SELECT * FROM both_ways($$SELECT row_to_json(q) AS j FROM shp s, (SELECT g FROM gpu_simjoin('shp', 0.5) g(a, b) ORDER BY dist, a, b LIMIT 5 OFFSET 0) q WHERE s.id = 1$$);
SELECT * FROM both_ways($$SELECT o.id, l.c FROM shp o, LATERAL (SELECT count(*) AS c FROM gpu_simjoin('shp', 0.5) j WHERE j.id1 = o.id) l$$);
SELECT * FROM both_ways($$SELECT o.id, l.c FROM (VALUES (0.3), (0.5)) o(id), LATERAL (SELECT count(*) AS c FROM gpu_simjoin('shp', o.id)) l$$);
SELECT * FROM both_ways($$SELECT a.id1, b.id1 FROM gpu_simjoin('shp', 0.31) a LEFT JOIN gpu_simjoin('shp', 0.31) b ON a.id2 = b.id1 AND b.id2 < 20$$);
SELECT * FROM both_ways($$SELECT s.id FROM shp s LEFT JOIN gpu_simjoin('shp', 0.31) j ON j.id1 = s.id WHERE j IS NULL$$);
SELECT * FROM both_ways($$SELECT id1 FROM gpu_simjoin('shp', 0.31) UNION SELECT id2 FROM gpu_simjoin('shp', 0.31) EXCEPT SELECT 5$$);
SELECT * FROM both_ways($$SELECT id1, id2 FROM gpu_simjoin('shp', 0.5) INTERSECT ALL SELECT id2 - 1, id2 FROM gpu_simjoin('shp', 0.5)$$);
SELECT * FROM both_ways($$SELECT id1, sum(dist) OVER (PARTITION BY id1) > 0 AS w FROM gpu_simjoin('shp', 0.5)$$);
SELECT * FROM both_ways($$SELECT (SELECT count(*) FROM gpu_simjoin('shp', 0.5) j WHERE j.id1 = s.id) AS c FROM shp s$$);
SELECT * FROM both_ways($$SELECT EXISTS (SELECT FROM gpu_simjoin('shp', 0.5)) AS e, EXISTS (SELECT FROM gpu_simjoin('shp', 0.01)) AS none$$);

-- rescans: the inner side of a nested loop, parameterized by a correlated subquery
SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_material = off;
SELECT * FROM both_ways($$SELECT s.id, j.id2 FROM shp s, gpu_simjoin('shp', 0.5) j WHERE s.id = j.id1 AND s.id < 10$$);
SELECT * FROM both_ways($$SELECT s.id, (SELECT max(dist) FROM gpu_simjoin('shp', s.id * 0.01 + 0.2) j) FROM shp s WHERE s.id < 15$$);
RESET enable_hashjoin; RESET enable_mergejoin; RESET enable_material;
SET enable_hashjoin = off; SET enable_nestloop = off;
SELECT * FROM both_ways($$SELECT s.id, j.id2 FROM shp s JOIN gpu_simjoin('shp', 0.5) j ON s.id = j.id1$$);
RESET enable_hashjoin; RESET enable_nestloop;

-- parameters of prepared statements (custom and generic plans)
PREPARE pj(float8, int) AS SELECT count(*), count(g) FROM gpu_simjoin('shp', $1) g WHERE id1 < $2;
EXECUTE pj(0.5, 30);
SET plan_cache_mode = force_generic_plan;
EXECUTE pj(0.5, 30);
EXECUTE pj(0.31, 60);
RESET plan_cache_mode;
DEALLOCATE pj;

-- cursors: a scroll cursor reads backward (a Material node above the custom scan); every
-- position reads the same row forward and backward
CREATE FUNCTION cursor_check(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  c refcursor := 'c';
  fwd text[] := '{}';
  bwd text[] := '{}';
  r record;
  k int;
BEGIN
  OPEN c SCROLL FOR EXECUTE q;
  LOOP
    FETCH NEXT FROM c INTO r;
    EXIT WHEN NOT FOUND;
    fwd := fwd || r::text;
  END LOOP;
  LOOP
    FETCH PRIOR FROM c INTO r;
    EXIT WHEN NOT FOUND;
    bwd := r::text || bwd;
  END LOOP;
  IF fwd IS DISTINCT FROM bwd THEN RETURN 'backward differs'; END IF;
  FOR k IN REVERSE cardinality(fwd)..1 BY 7 LOOP
    FETCH ABSOLUTE k FROM c INTO r;
    IF r::text IS DISTINCT FROM fwd[k] THEN RETURN 'absolute differs at ' || k; END IF;
  END LOOP;
  CLOSE c;
  RETURN cardinality(fwd) || ' rows';
END $$;
SELECT cursor_check($$SELECT * FROM gpu_simjoin('shp', 0.5)$$);
SELECT cursor_check($$SELECT g FROM gpu_simjoin('shp', 0.5) g WHERE id1 % 2 = 0$$);
SET gpu2bs.enable_customscan = off;
SELECT cursor_check($$SELECT * FROM gpu_simjoin('shp', 0.5)$$);
RESET gpu2bs.enable_customscan;
EXPLAIN (COSTS OFF) DECLARE cs SCROLL CURSOR FOR SELECT * FROM gpu_simjoin('shp', 0.5);
BEGIN;
DECLARE cn NO SCROLL CURSOR FOR SELECT id1 FROM gpu_simjoin('shp', 0.5) WHERE id1 = 1 AND id2 = 2;
FETCH 1 FROM cn;
FETCH 1 FROM cn;
COMMIT;

DROP FUNCTION cursor_check(text);
DROP FUNCTION both_ways(text, text);
DROP TABLE shp;
