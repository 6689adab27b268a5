-- Pushdown into the similarity join's custom scan (gpu2bs.enable_pushdown): quals, aggregates,
-- GROUP BY id1 / id2, DISTINCT, ORDER BY dist LIMIT k and early-stopping LIMIT give exactly the
-- rows of the same query with pushdown off, on either engine, in both precisions.
SET client_min_messages = warning;

-- stmt's rows with pushdown on and off (as sorted text), and whether they are equal.
CREATE FUNCTION pd_rows(stmt text, pushdown bool) RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
  r record;
  res text[] := '{}';
BEGIN
  PERFORM set_config('gpu2bs.enable_pushdown', pushdown::text, true);
  FOR r IN EXECUTE stmt LOOP
    res := res || row_to_json(r)::text;
  END LOOP;
  PERFORM set_config('gpu2bs.enable_pushdown', 'on', true);
  RETURN (SELECT coalesce(array_agg(x ORDER BY x), '{}') FROM unnest(res) x);
END $$;
CREATE FUNCTION pd_same(stmt text, OUT n int, OUT same bool) LANGUAGE plpgsql AS $$
DECLARE
  a text[] := pd_rows(stmt, true);
  b text[] := pd_rows(stmt, false);
BEGIN
  n := cardinality(a);
  same := a = b;
END $$;
-- The plan's pushdown lines.
CREATE FUNCTION pd_plan(stmt text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
  line text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || stmt LOOP
    IF line ~ '(Custom Scan|Pushdown|Pushed|Filter|Limit|Aggregate|Sort|Unique|Group)' THEN
      RETURN NEXT line;
    END IF;
  END LOOP;
END $$;

-- what is pushed down, as EXPLAIN shows it
SELECT pd_plan($$SELECT count(*) FROM gpu_simjoin('pts3', 1.0) WHERE dist > 0.5 AND id1 % 3 = 1$$);
SELECT pd_plan($$SELECT * FROM gpu_simjoin('pts3', 1.0) WHERE dist BETWEEN 0.2 AND 0.8 AND id1 + id2 > 10$$);
SELECT pd_plan($$SELECT count(*), sum(dist), min(dist), max(dist), avg(dist), count(id1) FROM gpu_simjoin('pts3', 1.0)$$);
SELECT pd_plan($$SELECT id1, count(*), min(dist), max(dist) FROM gpu_simjoin('pts3', 1.0) GROUP BY id1$$);
SELECT pd_plan($$SELECT id2, count(*) FROM gpu_simjoin('pts3', 'cloud3', 1.0) WHERE id1 <> id2 GROUP BY id2 ORDER BY 2 DESC LIMIT 3$$);
SELECT pd_plan($$SELECT DISTINCT id1 FROM gpu_simjoin('pts3', 1.0)$$);
-- groups come out in key order: ORDER BY the key needs no Sort (DESC does), same rows as without
-- pushdown
SELECT pd_plan($$SELECT id1, count(*) FROM gpu_simjoin('pts3', 1.0) GROUP BY id1 ORDER BY id1$$);
SELECT pd_plan($$SELECT id1, min(dist) FROM gpu_simjoin('pts3', 1.0) GROUP BY id1 ORDER BY id1 DESC$$);
SELECT pd_plan($$SELECT DISTINCT id2 FROM gpu_simjoin('pts3', 1.0) ORDER BY id2$$);
SELECT * FROM pd_same($$SELECT id1, count(*), max(dist) FROM gpu_simjoin('pts3', 1.0) GROUP BY id1 ORDER BY id1$$);
SELECT * FROM pd_same($$SELECT DISTINCT id2 FROM gpu_simjoin('pts3', 1.0) ORDER BY id2$$);
SELECT * FROM pd_same($$SELECT id1, min(dist) FROM gpu_simjoin('pts3', 1.0) GROUP BY id1 ORDER BY id1 DESC$$);
SELECT pd_plan($$SELECT * FROM gpu_simjoin('pts3', 1.0) ORDER BY dist LIMIT 10$$);
SELECT pd_plan($$SELECT id1, dist FROM gpu_simjoin('pts3', 1.0) ORDER BY dist DESC, id1, id2 LIMIT 10 OFFSET 2$$);
SELECT pd_plan($$SELECT * FROM gpu_simjoin('pts3', 1.0) LIMIT 10$$);
SELECT pd_plan($$SELECT EXISTS (SELECT 1 FROM gpu_simjoin('pts3', 1.0) WHERE dist > 0.9)$$);
-- not pushed: a qual that is not translatable keeps the aggregate in PostgreSQL, a sort
-- without a limit, HAVING, aggregates the scan does not compute, joins
SELECT pd_plan($$SELECT count(*) FROM gpu_simjoin('pts3', 1.0) WHERE id1 + id2 > 10$$);
SELECT pd_plan($$SELECT * FROM gpu_simjoin('pts3', 1.0) ORDER BY dist$$);
SELECT pd_plan($$SELECT id1 FROM gpu_simjoin('pts3', 1.0) GROUP BY id1 HAVING count(*) > 2$$);
SELECT pd_plan($$SELECT sum(id1) FROM gpu_simjoin('pts3', 1.0)$$);
SELECT pd_plan($$SELECT count(*) FROM gpu_simjoin('pts3', 1.0) j JOIN one3 o ON o.id = j.id1$$);
SET gpu2bs.enable_pushdown = off;
SELECT pd_plan($$SELECT count(*) FROM gpu_simjoin('pts3', 1.0) WHERE dist > 0.5$$);
RESET gpu2bs.enable_pushdown;

-- fixed shapes: same rows both ways
SELECT * FROM pd_same($$SELECT count(*), round(sum(dist)::numeric, 6) AS s, min(dist), max(dist), round(avg(dist)::numeric, 9) AS a, count(id2) FROM gpu_simjoin('pts3', 1.6)$$);
SELECT * FROM pd_same($$SELECT count(*), sum(dist), min(dist), max(dist), avg(dist) FROM gpu_simjoin('empty3', 1.6)$$);
SELECT * FROM pd_same($$SELECT count(*) FROM gpu_simjoin('pts3', 1.6) WHERE dist > 100$$);
SELECT * FROM pd_same($$SELECT id1, count(*), min(dist), max(dist) FROM gpu_simjoin('pts3', 1.6) GROUP BY id1$$);
SELECT * FROM pd_same($$SELECT id2, count(*), min(dist), max(dist) FROM gpu_simjoin('pts3', 1.6) GROUP BY id2$$);
SELECT * FROM pd_same($$SELECT id1, count(*) FROM gpu_simjoin('pts3', 'cloud3', 2.0) GROUP BY id1$$);
SELECT * FROM pd_same($$SELECT id1, count(*) FROM gpu_simjoin('pts3_null', 1.6) GROUP BY 1$$);
SELECT * FROM pd_same($$SELECT id1, count(*) FROM gpu_simjoin('same3', 0.1) WHERE id1 % 100 = 7 GROUP BY id1$$);
SELECT * FROM pd_same($$SELECT DISTINCT id2 FROM gpu_simjoin('pts3', 1.0)$$);
SELECT * FROM pd_same($$SELECT * FROM gpu_simjoin('pts3', 2.5) ORDER BY dist, id1, id2 LIMIT 25$$);
SELECT * FROM pd_same($$SELECT * FROM gpu_simjoin('pts3', 2.5) ORDER BY dist DESC, id1, id2 LIMIT 25$$);
SELECT * FROM pd_same($$SELECT * FROM gpu_simjoin('same3', 0.1) ORDER BY dist, id1, id2 LIMIT 7 OFFSET 3$$);
SELECT * FROM pd_same($$SELECT dist FROM gpu_simjoin('pts3', 2.5) ORDER BY dist LIMIT 40$$);
SELECT * FROM pd_same($$SELECT count(*) FROM (SELECT * FROM gpu_simjoin('pts3', 2.5) LIMIT 100) s$$);
SELECT * FROM pd_same($$SELECT count(*) FROM (SELECT * FROM gpu_simjoin('pts3', 2.5) WHERE id1 % 7 = 3 AND dist >= 1 LIMIT 100000) s$$);
SELECT * FROM pd_same($$SELECT EXISTS (SELECT FROM gpu_simjoin('pts3', 2.5) WHERE dist > 2.4), EXISTS (SELECT FROM gpu_simjoin('pts3', 2.5) WHERE dist > 2.6)$$);
SELECT * FROM pd_same($$SELECT * FROM gpu_simjoin('pts3', 1.0) WHERE (id1 < 100 OR id2 > 500) AND NOT (dist = 0) AND id1 <> id2$$);

-- rows read under a cursor or LIMIT come prefix first (the pairs among the leading points, then
-- the rest without them): on inputs large enough for two phases every pair still comes exactly
-- once, self and two-relation, with a qual on the ids
SELECT setseed(0.42);
CREATE TABLE big3 AS SELECT g::bigint AS id, random() * 20 AS x, random() * 20 AS y, random() * 20 AS z FROM generate_series(1, 6000) g;
CREATE TABLE big3b AS SELECT g::bigint AS id, random() * 20 AS x, random() * 20 AS y, random() * 20 AS z FROM generate_series(1, 5000) g;
SELECT * FROM pd_same($$SELECT * FROM (SELECT id1, id2, dist FROM gpu_simjoin('big3', 1.0) LIMIT 100000000) s$$);
SELECT * FROM pd_same($$SELECT * FROM (SELECT id1, id2, dist FROM gpu_simjoin('big3', 'big3b', 1.0) LIMIT 100000000) s$$);
SELECT * FROM pd_same($$SELECT * FROM (SELECT id1, id2 FROM gpu_simjoin('big3b', 'big3', 0.8) WHERE id1 % 3 = 1 LIMIT 100000000) s$$);
SELECT * FROM pd_same($$SELECT count(*), count(DISTINCT (id1, id2)) FROM (SELECT * FROM gpu_simjoin('big3', 1.0) LIMIT 1000000) s$$);
SELECT count(*) FROM (SELECT * FROM gpu_simjoin('big3', 1.0) LIMIT 10) s;
DROP TABLE big3, big3b;

-- parameters: prepared statements with custom and generic plans, NULL parameters, executor
-- parameters of a correlated subquery
PREPARE pq(float8, bigint, int) AS SELECT count(*) FROM gpu_simjoin('pts3', 1.6) WHERE dist > $1 AND id1 < $2 AND id2 % 5 <> $3;
EXECUTE pq(0.5, 300, 1);
SET plan_cache_mode = force_generic_plan;
SELECT pd_plan('EXECUTE pq(0.5, 300, 1)');
EXECUTE pq(0.5, 300, 1);
EXECUTE pq(NULL, 300, 1);
SET gpu2bs.enable_pushdown = off;
EXECUTE pq(0.5, 300, 1);
RESET gpu2bs.enable_pushdown;
RESET plan_cache_mode;
DEALLOCATE pq;
SELECT * FROM pd_same($$SELECT o.id, (SELECT count(*) FROM gpu_simjoin('pts3', 1.6) j WHERE j.id1 < o.id * 50) FROM two3 o$$);
SELECT * FROM pd_same($$SELECT o.id, (SELECT min(dist) FROM gpu_simjoin('pts3', 1.6) j WHERE j.id1 = o.id) FROM pts3 o WHERE o.id < 40$$);

-- a pipelined scan stopped early leaves nothing running: the next queries see a clean backend
SELECT count(*) FROM (SELECT * FROM gpu_simjoin('pts3', 6) LIMIT 5) s;
BEGIN;
DECLARE pc CURSOR FOR SELECT id1 FROM gpu_simjoin('pts3', 6);
MOVE FORWARD 2 IN pc;
CLOSE pc;
COMMIT;
SELECT sqlstate_of($$SELECT 1 / 0 FROM gpu_simjoin('pts3', 6) LIMIT 5$$) AS error_midway;
SELECT count(*) FROM gpu_simjoin('pts3', 1.0);
-- an abort while a pipelined run is live stops it (a simulated device makes each run reserve
-- device memory): in an exception block (a subtransaction) and at the top level of a
-- transaction block; a cursor opened before the block keeps its run through the block's abort
SET gpu2bs.simulate_device_memory = 100;
CREATE FUNCTION pd_abort(top boolean) RETURNS text LANGUAGE plpgsql AS $$
DECLARE held bigint; got int := 0; c refcursor; r record;
BEGIN
  IF top THEN
    PERFORM id1 / (id1 - id1) FROM gpu_simjoin('pts3', 6) LIMIT 5;
  END IF;
  BEGIN
    PERFORM id1 / (id1 - id1) FROM gpu_simjoin('pts3', 6) LIMIT 5;
  EXCEPTION WHEN division_by_zero THEN
    SELECT count(*) INTO held FROM gpu2bs_admission() WHERE pid = pg_backend_pid();
  END;
  OPEN c FOR SELECT id1 FROM gpu_simjoin('pts3', 6) LIMIT 30;
  BEGIN
    FETCH c INTO r;  -- the first fetch starts the run inside the block
    got := got + 1;
    RAISE EXCEPTION 'stop after the first fetch';
  EXCEPTION WHEN raise_exception THEN NULL;
  END;
  LOOP
    FETCH c INTO r;
    EXIT WHEN NOT FOUND;
    got := got + 1;
  END LOOP;
  CLOSE c;
  RETURN format('%s reservation after the query''s error; cursor: %s rows', held, got);
END $$;
SELECT pd_abort(false);
BEGIN;
SELECT pd_abort(true);
ROLLBACK;
SELECT count(*) AS held FROM gpu2bs_admission() WHERE pid = pg_backend_pid();
SELECT count(*) FROM (SELECT * FROM gpu_simjoin('pts3', 6) LIMIT 5) s;
RESET gpu2bs.simulate_device_memory;
DROP FUNCTION pd_abort(boolean);

-- Randomized corpus: generated queries over these shapes, with random quals (pushable or
-- not), relations (self and two-relation joins, NULL keys, empty, ties), eps and precisions;
-- each compared with the same query under gpu2bs.enable_pushdown = off.
CREATE FUNCTION pd_random_qual() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  parts text[] := '{}';
  n int := floor(random() * 3)::int;
  c text;
BEGIN
  FOR i IN 1..n LOOP
    c := CASE floor(random() * 9)::int
      WHEN 0 THEN format('dist > %s', round(random()::numeric * 2, 2))
      WHEN 1 THEN format('dist <= %s', round(random()::numeric * 2, 2))
      WHEN 2 THEN format('id1 < %s', floor(random() * 700))
      WHEN 3 THEN format('id2 >= %s', floor(random() * 700))
      WHEN 4 THEN 'id1 <> id2'
      WHEN 5 THEN format('id1 %% %s = %s', 2 + floor(random() * 5), floor(random() * 2))
      WHEN 6 THEN format('dist BETWEEN %s AND %s', round(random()::numeric, 2), round(1 + random()::numeric, 2))
      WHEN 7 THEN format('(id1 > %s OR NOT dist < %s)', floor(random() * 700), round(random()::numeric * 2, 2))
      ELSE format('id1 + id2 > %s', floor(random() * 900)) END;
    parts := parts || c;
  END LOOP;
  RETURN CASE WHEN n = 0 THEN '' ELSE ' WHERE ' || array_to_string(parts, ' AND ') END;
END $$;
CREATE FUNCTION pd_random_corpus(nq int, OUT queries int, OUT mismatches int, OUT first_mismatch text)
LANGUAGE plpgsql AS $$
DECLARE
  src text;
  q text;
  s record;
BEGIN
  queries := 0;
  mismatches := 0;
  FOR i IN 1..nq LOOP
    src := format('gpu_simjoin(%s, %s)',
                  (ARRAY['''pts3''', '''pts3'', ''cloud3''', '''pts3_null''', '''empty3''', '''same3''', '''cloud3'', ''pts3'''])[1 + floor(random() * 6)::int],
                  (ARRAY['0.6', '1.0', '1.6', '2.5'])[1 + floor(random() * 4)::int]);
    q := CASE floor(random() * 7)::int
      WHEN 0 THEN format('SELECT count(*), min(dist), max(dist), round(sum(dist)::numeric, 6) AS s FROM %s%s', src, pd_random_qual())
      WHEN 1 THEN format('SELECT %s AS k, count(*), min(dist), max(dist) FROM %s%s GROUP BY 1',
                         (ARRAY['id1', 'id2'])[1 + floor(random() * 2)::int], src, pd_random_qual())
      WHEN 2 THEN format('SELECT id1, id2, dist FROM %s%s ORDER BY dist %s, id1, id2 LIMIT %s', src, pd_random_qual(),
                         (ARRAY['ASC', 'DESC'])[1 + floor(random() * 2)::int], 1 + floor(random() * 50))
      WHEN 3 THEN format('SELECT DISTINCT %s FROM %s%s', (ARRAY['id1', 'id2'])[1 + floor(random() * 2)::int], src, pd_random_qual())
      WHEN 4 THEN format('SELECT count(*) FROM (SELECT * FROM %s%s LIMIT %s) s', src, pd_random_qual(), floor(random() * 3000))
      WHEN 5 THEN format('SELECT EXISTS (SELECT FROM %s%s) AS e', src, pd_random_qual())
      ELSE format('SELECT id1, id2, dist FROM %s%s', src, pd_random_qual()) END;
    PERFORM set_config('gpu2bs.precision', (ARRAY['float4', 'float8'])[1 + (i % 2)], true);
    SELECT * INTO s FROM pd_same(q);
    queries := queries + 1;
    IF NOT s.same THEN
      mismatches := mismatches + 1;
      first_mismatch := coalesce(first_mismatch, q);
    END IF;
  END LOOP;
  PERFORM set_config('gpu2bs.precision', 'float4', true);
END $$;
SELECT setseed(0.16);
SELECT * FROM pd_random_corpus(150);

DROP FUNCTION pd_random_corpus(int);
DROP FUNCTION pd_random_qual();
DROP FUNCTION pd_same(text);
DROP FUNCTION pd_rows(text, bool);
DROP FUNCTION pd_plan(text);
