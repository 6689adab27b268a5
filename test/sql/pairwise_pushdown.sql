-- gpu_pairwise in FROM with gpu2bs.enable_pushdown: quals on value and LIMIT pushed into the
-- custom scan (Custom Scan (gpu2bs pairwise)). Every shape returns the same rows with pushdown
-- on and off (compared as multisets, values bit for bit); EXPLAIN shows what was pushed.
SET extra_float_digits = 0;
-- The planner hook is registered when the library loads: any gpu2bs call does it.
SELECT count(*) FROM gpu_pairwise(NULL, NULL, 'e', 'l2', k => 1);
SELECT setseed(0.25);
CREATE TABLE pp_a (id int PRIMARY KEY, e real[]);
CREATE TABLE pp_b (id bigint PRIMARY KEY, e double precision[]);
CREATE TABLE pp_empty (id int PRIMARY KEY, e real[]);
CREATE TABLE pp_nulls (id int PRIMARY KEY, e real[]);
INSERT INTO pp_a SELECT g, ARRAY[random()*2-1, random()*2-1, random()*2-1, round(random()*4)/4]::real[] FROM generate_series(1, 140) g;
-- duplicates (ties at equal values), a NULL vector, a zero vector
INSERT INTO pp_a VALUES (141, '{0.5,0.5,0.5,0.5}'), (142, '{0.5,0.5,0.5,0.5}'), (143, NULL), (144, '{0,0,0,0}');
INSERT INTO pp_b SELECT g, ARRAY[random()*2-1, random()*2-1, random()*2-1, round(random()*4)/4] FROM generate_series(1, 110) g;
INSERT INTO pp_b VALUES (200, '{0.5,0.5,0.5,0.5}'), (201, NULL);
INSERT INTO pp_nulls VALUES (1, NULL), (2, NULL);

-- Runs q_on with pushdown on and q_off with pushdown off and compares the rows as multisets.
CREATE FUNCTION pw_cmp(q_on text, q_off text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE n_on bigint; n_off bigint; nd bigint;
BEGIN
  PERFORM set_config('gpu2bs.enable_pushdown', 'on', true);
  EXECUTE 'CREATE TEMP TABLE pw_on AS ' || q_on;
  PERFORM set_config('gpu2bs.enable_pushdown', 'off', true);
  EXECUTE 'CREATE TEMP TABLE pw_off AS ' || q_off;
  PERFORM set_config('gpu2bs.enable_pushdown', 'on', true);
  SELECT count(*) INTO n_on FROM pw_on;
  SELECT count(*) INTO n_off FROM pw_off;
  SELECT count(*) INTO nd FROM ((TABLE pw_on EXCEPT ALL TABLE pw_off) UNION ALL (TABLE pw_off EXCEPT ALL TABLE pw_on)) x;
  DROP TABLE pw_on;
  DROP TABLE pw_off;
  RETURN CASE WHEN nd = 0 AND n_on = n_off THEN 'same, ' || n_on || ' rows'
              ELSE 'DIFFERENT: ' || n_on || ' rows on, ' || n_off || ' off, ' || nd || ' differ' END;
END $$;
-- The same query both ways.
CREATE FUNCTION pw_same(q text) RETURNS text LANGUAGE sql AS $$ SELECT pw_cmp(q, q) $$;

-- A cut equal to a value that occurs (the 40th smallest l2 value): inclusive and strict
-- comparisons at an exact boundary, as an executor parameter (initplan).
CREATE TEMP TABLE cut AS
  SELECT value AS c FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 2) ORDER BY value LIMIT 1 OFFSET 39;
CREATE TEMP TABLE cut_dot AS
  SELECT value AS c FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'dot', threshold => -5) ORDER BY value DESC LIMIT 1 OFFSET 39;

SELECT q, pw_same(q) FROM (VALUES
  -- threshold mode, every metric, quals in the better direction narrow the threshold
  ($$SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 1.0) WHERE value <= 0.5$$),
  ($$SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 1.0) WHERE value < 0.5$$),
  ($$SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 1.0) WHERE 0.5 >= value$$),
  ($$SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 0.4) WHERE value <= 3$$),
  ($$SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 2) WHERE value <= (SELECT c FROM cut)$$),
  ($$SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 2) WHERE value < (SELECT c FROM cut)$$),
  ($$SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 1.0) WHERE value <= 0.5::real$$),
  ($$SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 1.0) WHERE value <= 0.6 AND value < 0.55 AND id1 % 3 = 1$$),
  ($$SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 1.0) WHERE value > 0.3 AND value <= 0.6$$),
  ($$SELECT id2, value FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 1.0) WHERE value <= 0.5 AND id2 > 50$$),
  ($$SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l1', threshold => 2) WHERE value <= 0.9$$),
  ($$SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'sqeuclidean', threshold => 1) WHERE value < 0.3$$),
  ($$SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'cosine', threshold => 0.5) WHERE value <= 0.1$$),
  ($$SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'lp:3', threshold => 1) WHERE value <= 0.45$$),
  -- dot ranks largest first: value >= c / > c narrow the threshold, value <= c is filtered
  ($$SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'dot', threshold => -5) WHERE value >= 1.0$$),
  ($$SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'dot', threshold => -5) WHERE value > (SELECT c FROM cut_dot)$$),
  ($$SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'dot', threshold => -5) WHERE value >= (SELECT c FROM cut_dot)$$),
  ($$SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'dot', threshold => 0.5) WHERE value <= 0.7$$),
  -- self-join: each unordered pair once, duplicates at value 0
  ($$SELECT * FROM gpu_pairwise('pp_a', 'pp_a', 'e', 'l2', threshold => 1) WHERE value <= 0.3$$),
  ($$SELECT * FROM gpu_pairwise('pp_a', 'pp_a', 'e', 'l2', threshold => 1) WHERE value <= 0$$),
  ($$SELECT * FROM gpu_pairwise('pp_a', 'pp_a', 'e', 'l2', threshold => 1) WHERE value < 0$$),
  -- kNN: the quals apply after the k best of each row
  ($$SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', k => 5) WHERE value <= 0.4$$),
  ($$SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', k => 5) WHERE value > 0.4$$),
  ($$SELECT * FROM gpu_pairwise('pp_a', 'pp_a', 'e', 'cosine', k => 3) WHERE value < 0.05$$),
  ($$SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'dot', k => 4) WHERE value >= 1$$),
  -- NaN and infinite operands (NaN is above every value)
  ($$SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 0.5) WHERE value <= 'NaN'$$),
  ($$SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 0.5) WHERE value < 'NaN'$$),
  ($$SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 0.5) WHERE value >= 'NaN'$$),
  ($$SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 0.5) WHERE value < 'Infinity'$$),
  ($$SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 0.5) WHERE value <= '-Infinity'$$),
  ($$SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'dot', threshold => 1) WHERE value > 'NaN'$$),
  -- empty and NULL inputs
  ($$SELECT * FROM gpu_pairwise('pp_empty', 'pp_b', 'e', 'l2', threshold => 1) WHERE value <= 0.5$$),
  ($$SELECT * FROM gpu_pairwise('pp_a', 'pp_nulls', 'e', 'l2', threshold => 1) WHERE value <= 0.5$$),
  ($$SELECT * FROM gpu_pairwise(NULL, 'pp_b', 'e', 'l2', threshold => 1) WHERE value <= 0.5$$),
  ($$SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', NULL, threshold => 1) WHERE value <= 0.5$$),
  -- LIMIT with more rows than the result, or over kNN (whose rows come in a fixed order)
  ($$SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 0.5) LIMIT 100000$$),
  ($$SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 0.5) WHERE value <= 0.3 LIMIT 100000$$),
  ($$SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l1', k => 3) LIMIT 17$$),
  ($$SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l1', k => 3) WHERE value <= 0.8 LIMIT 1000$$),
  ($$SELECT EXISTS (SELECT 1 FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 1) WHERE value <= 0.2)$$),
  ($$SELECT EXISTS (SELECT 1 FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 1) WHERE value < 0)$$),
  -- a correlated subquery: the operand is an executor parameter that changes per outer row
  ($$SELECT t.c, (SELECT count(*) FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 1) WHERE value <= t.c) FROM (VALUES (0.2::float8), (0.5), (NULL), (0.7)) t(c)$$),
  ($$SELECT t.c, (SELECT count(*) FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'dot', k => 2) WHERE value > t.c) FROM (VALUES (0.2::float8), (1.5), (NULL)) t(c)$$)
) s(q);

-- A plain LIMIT without ORDER BY returns any rows: LIMIT n gives min(n, all) rows, each a row
-- of the whole result.
SELECT count(*) AS rows,
       count(*) FILTER (WHERE (id1, id2, value) NOT IN (SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 1.0))) AS foreign_rows
FROM (SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 1.0) LIMIT 10) s;
SELECT count(*) AS rows,
       count(*) FILTER (WHERE value > 0.4) AS above_cut,
       count(*) FILTER (WHERE (id1, id2, value) NOT IN (SELECT * FROM gpu_pairwise('pp_a', 'pp_a', 'e', 'l2', threshold => 1.0))) AS foreign_rows
FROM (SELECT * FROM gpu_pairwise('pp_a', 'pp_a', 'e', 'l2', threshold => 1.0) WHERE value <= 0.4 LIMIT 25) s;

-- The pushed-down threshold against the float8 reference: the rows differ only at near-ties.
CREATE FUNCTION pp_ref(a real[], b float8[]) RETURNS float8 LANGUAGE sql IMMUTABLE AS
  $$ SELECT sqrt(sum((x - y) ^ 2)) FROM unnest(a::float8[], b) AS t(x, y) $$;
WITH ref AS (SELECT a.id AS id1, b.id AS id2, pp_ref(a.e, b.e) AS v FROM pp_a a, pp_b b
             WHERE a.e IS NOT NULL AND b.e IS NOT NULL AND pp_ref(a.e, b.e) <= 0.5),
got AS (SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 1.0) WHERE value <= 0.5)
SELECT (SELECT count(*) FROM got) AS rows,
       (SELECT count(*) FROM ((SELECT id1, id2 FROM ref EXCEPT SELECT id1, id2 FROM got)
                              UNION ALL (SELECT id1, id2 FROM got EXCEPT SELECT id1, id2 FROM ref)) d
         JOIN pp_a a ON a.id = d.id1 JOIN pp_b b ON b.id = d.id2
        WHERE abs(pp_ref(a.e, b.e) - 0.5) > 1e-6) AS not_near_ties,
       (SELECT count(*) FROM got g JOIN pp_a a ON a.id = g.id1 JOIN pp_b b ON b.id = g.id2
        WHERE abs(g.value - pp_ref(a.e, b.e)) > 1e-6) AS bad_values;

-- Prepared statements: the operand is a parameter (generic plan).
SET plan_cache_mode = force_generic_plan;
PREPARE pq(float8) AS SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 1.0) WHERE value <= $1;
PREPARE pk(float8, int) AS SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'dot', k => $2) WHERE $1 < value;
EXPLAIN (COSTS OFF) EXECUTE pq(0.5);
EXPLAIN (COSTS OFF) EXECUTE pk(0.5, 3);
SELECT pw_cmp('EXECUTE pq(0.5)', $$SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 1.0) WHERE value <= 0.5$$);
SELECT pw_cmp('EXECUTE pq(NULL)', $$SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 1.0) WHERE value <= NULL$$);
SELECT pw_cmp('EXECUTE pk(0.5, 3)', $$SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'dot', k => 3) WHERE 0.5 < value$$);
DEALLOCATE pq;
DEALLOCATE pk;
RESET plan_cache_mode;

-- Errors are the function's, with pushdown on.
SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l9', threshold => 1) WHERE value <= 0.5;
SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2') WHERE value <= 0.5;
SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'nope', 'l2', threshold => 1) LIMIT 3;

-- EXPLAIN: what was pushed.
EXPLAIN (COSTS OFF) SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 1.0) WHERE value <= 0.5;
EXPLAIN (COSTS OFF) SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 1.0) WHERE value < 0.5 AND id1 % 3 = 1;
EXPLAIN (COSTS OFF) SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'dot', threshold => 0) WHERE value >= 1.5 AND value <= 3;
EXPLAIN (COSTS OFF) SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', k => 5) WHERE value <= 0.4;
EXPLAIN (COSTS OFF) SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 1.0) LIMIT 10;
EXPLAIN (COSTS OFF) SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 1.0) WHERE value <= 0.5 LIMIT 10;
EXPLAIN (COSTS OFF, VERBOSE) SELECT id1 FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 1.0) WHERE value <= 0.5;
-- nothing to push: the function scan
EXPLAIN (COSTS OFF) SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 1.0) WHERE id1 = 3;
EXPLAIN (COSTS OFF) SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 1.0) ORDER BY value LIMIT 10;
-- a whole-row reference to the call's row
EXPLAIN (COSTS OFF) SELECT g FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 1.0) g WHERE g.value <= 0.5;
-- kNN lists are complete only at the end: a LIMIT over a constant k is not pipelined
EXPLAIN (COSTS OFF) SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', k => 5) LIMIT 10;
EXPLAIN (COSTS OFF) SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', k => 5) WHERE value <= 0.4 LIMIT 10;
-- a statement that modifies data or locks rows keeps the function scan (EvalPlanQual)
EXPLAIN (COSTS OFF) UPDATE pp_b SET e = e FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 1.0) g
  WHERE pp_b.id = g.id2 AND g.value <= 0.1;
-- rescans: a pipelined subplan runs again for each outer row (an uncorrelated ALL subplan,
-- not materialized, read partly or whole); the inner side of a nested loop reads its stored
-- rows again
SET enable_material = off;
EXPLAIN (COSTS OFF) SELECT x, x * 0.25 <= ALL (SELECT value FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 1.0) WHERE value <= 0.5) FROM generate_series(0, 3) x;
SELECT pw_same($$SELECT x, x * 0.25 <= ALL (SELECT value FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 1.0) WHERE value <= 0.5) AS a,
                        x - 3 < ALL (SELECT id1 FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 1.0) WHERE value <= 0.5) AS b FROM generate_series(0, 3) x$$);
SET enable_hashjoin = off;
SET enable_mergejoin = off;
EXPLAIN (COSTS OFF) SELECT v.x, g.* FROM (VALUES (1), (2)) v(x) CROSS JOIN gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 1.0) g WHERE g.value <= 0.5;
SELECT pw_same($$SELECT v.x, g.* FROM (VALUES (1), (2)) v(x) CROSS JOIN gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 1.0) g WHERE g.value <= 0.5$$);
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_material;
SET gpu2bs.enable_pushdown = off;
EXPLAIN (COSTS OFF) SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 1.0) WHERE value <= 0.5 LIMIT 10;
RESET gpu2bs.enable_pushdown;

-- A correlated subquery: the pipelined scan runs again with new arguments for each outer row.
EXPLAIN (COSTS OFF) SELECT x, (SELECT count(*) FROM (SELECT 1 FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => x * 0.05) LIMIT 30) s) AS n FROM generate_series(1, 40) x;
SELECT pw_same($$SELECT x, (SELECT count(*) FROM (SELECT 1 FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => x * 0.05) LIMIT 30) s) AS n,
                        (SELECT max(value) <= x * 0.05 FROM (SELECT value FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => x * 0.05) LIMIT 30) s) AS within
                 FROM generate_series(1, 40) x$$);

-- Aborts while a pipelined run is live (a simulated device makes each run reserve device
-- memory): an error in an exception block (a subtransaction), raised in the loop over the run's
-- rows or by the query itself, stops the run, and admission holds nothing for the session after
-- it; a cursor opened before the block keeps its run through the block's abort.
SET gpu2bs.simulate_device_memory = 100;
CREATE FUNCTION pw_abort_sub() RETURNS text LANGUAGE plpgsql AS $$
DECLARE n int := 0; held_loop bigint; held_after_loop bigint; held_after_query bigint;
        c refcursor; r record; got int := 0;
BEGIN
  BEGIN
    FOR r IN SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 1.0) LIMIT 50 LOOP
      n := n + 1;
      IF n = 3 THEN
        SELECT count(*) INTO held_loop FROM gpu2bs_admission() WHERE pid = pg_backend_pid();
        RAISE EXCEPTION 'stop in the loop';
      END IF;
    END LOOP;
  EXCEPTION WHEN raise_exception THEN
    SELECT count(*) INTO held_after_loop FROM gpu2bs_admission() WHERE pid = pg_backend_pid();
  END;
  BEGIN
    PERFORM id1 / (id1 - id1) FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 1.0) LIMIT 50;
  EXCEPTION WHEN division_by_zero THEN
    SELECT count(*) INTO held_after_query FROM gpu2bs_admission() WHERE pid = pg_backend_pid();
  END;
  OPEN c FOR SELECT id1, id2 FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 1.0) LIMIT 40;
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
  RETURN format('loop: %s reservation during, %s after; query: %s after; cursor: %s rows',
                held_loop, held_after_loop, held_after_query, got);
END $$;
SELECT pw_abort_sub();
SELECT count(*) AS held FROM gpu2bs_admission() WHERE pid = pg_backend_pid();
-- The same errors at the top level of a transaction block: the run stops at the abort, before
-- ROLLBACK frees its memory.
CREATE FUNCTION pw_abort_top(in_query boolean) RETURNS void LANGUAGE plpgsql AS $$
DECLARE r record; n int := 0;
BEGIN
  IF in_query THEN
    PERFORM id1 / (id1 - id1) FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 1.0) LIMIT 50;
  END IF;
  FOR r IN SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 1.0) LIMIT 50 LOOP
    n := n + 1;
    IF n = 3 THEN RAISE EXCEPTION 'stop at the top level'; END IF;
  END LOOP;
END $$;
BEGIN;
SELECT pw_abort_top(true);
ROLLBACK;
BEGIN;
SELECT pw_abort_top(false);
ROLLBACK;
SELECT count(*) AS held FROM gpu2bs_admission() WHERE pid = pg_backend_pid();
SELECT count(*) FROM (SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 1.0) LIMIT 10) s;
RESET gpu2bs.simulate_device_memory;
-- a pipelined run stopped by its LIMIT is the last run gpu2bs_info() reports
SELECT gpu_sdh(e[1], e[2], e[3], 4) IS NOT NULL AS sdh FROM pp_b WHERE e IS NOT NULL;
SELECT count(*) FROM (SELECT * FROM gpu_pairwise('pp_a', 'pp_b', 'e', 'l2', threshold => 1.0) LIMIT 10) s;
SELECT value FROM gpu2bs_info() WHERE name = 'last_function';
DROP FUNCTION pw_abort_sub();
DROP FUNCTION pw_abort_top(boolean);

DROP FUNCTION pw_same(text);
DROP FUNCTION pw_cmp(text, text);
DROP FUNCTION pp_ref(real[], float8[]);
DROP TABLE pp_a, pp_b, pp_empty, pp_nulls;
