-- gpu_pairwise: all-pairs vectors (kNN and threshold) against a float8 brute force in SQL, with
-- near-ties (pairs within float4 rounding of the k-th value or of the threshold) counted.
SET extra_float_digits = 0;
SELECT setseed(0.5);
CREATE TABLE pw_a (id bigint PRIMARY KEY, e real[]);
CREATE TABLE pw_b (id int, e double precision[]);
-- d = 3: random vectors, plus duplicates and a zero vector
INSERT INTO pw_a SELECT g, ARRAY[round(random()*8)-4, round(random()*8)-4, random()*2-1]::real[] FROM generate_series(1, 60) g;
INSERT INTO pw_a VALUES (61, '{1,1,1}'), (62, '{1,1,1}'), (63, '{0,0,0}'), (64, NULL);
INSERT INTO pw_b SELECT g, ARRAY[random()*8-4, random()*8-4, random()*2-1] FROM generate_series(1, 45) g;
INSERT INTO pw_b VALUES (100, NULL), (101, '{1,1,1}');

-- float8 reference of every metric (cosine of a zero vector: distance 1)
CREATE FUNCTION pw_ref(a real[], b float8[], metric text) RETURNS float8 LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE metric
    WHEN 'l1' THEN sum(abs(x - y))
    WHEN 'l2' THEN sqrt(sum((x - y) ^ 2))
    WHEN 'sqeuclidean' THEN sum((x - y) ^ 2)
    WHEN 'dot' THEN sum(x * y)
    WHEN 'lp:3' THEN sum(abs(x - y) ^ 3) ^ (1.0 / 3)
    WHEN 'cosine' THEN CASE WHEN sum(x * x) = 0 OR sum(y * y) = 0 THEN 1
                            ELSE 1 - sum(x * y) / sqrt(sum(x * x) * sum(y * y)) END
  END
  FROM unnest(a::float8[], b) AS t(x, y) $$;

-- kNN of a against b, k = 4: every returned pair's value matches float8, and the returned set
-- equals the float8 top 4 except near-ties.
CREATE TEMP TABLE metrics(m) AS VALUES ('l1'), ('l2'), ('sqeuclidean'), ('cosine'), ('dot'), ('lp:3');
SELECT m,
       count(*) AS rows,
       count(*) FILTER (WHERE abs(g.value - pw_ref(a.e, b.e, m)) > 1e-5 * (1 + abs(g.value))) AS bad_values,
       count(DISTINCT g.id1) AS query_rows
FROM metrics, gpu_pairwise('pw_a', 'pw_b', 'e', m, k => 4) g
JOIN pw_a a ON a.id = g.id1 JOIN pw_b b ON b.id = g.id2
GROUP BY m ORDER BY m;

WITH ref AS (
  SELECT m, a.id AS id1, b.id AS id2, pw_ref(a.e, b.e, m) AS v,
         row_number() OVER (PARTITION BY m, a.id ORDER BY CASE WHEN m = 'dot' THEN -pw_ref(a.e, b.e, m) ELSE pw_ref(a.e, b.e, m) END, b.id) AS rk
  FROM metrics, pw_a a, pw_b b WHERE a.e IS NOT NULL AND b.e IS NOT NULL),
kth AS (SELECT m, id1, max(v) FILTER (WHERE rk = 4) AS v4, min(v) FILTER (WHERE rk = 4) AS v4d FROM ref GROUP BY m, id1),
got AS (SELECT m, g.* FROM metrics, gpu_pairwise('pw_a', 'pw_b', 'e', m, k => 4) g),
diff AS (
  (SELECT m, id1, id2 FROM ref WHERE rk <= 4 EXCEPT SELECT m, id1, id2 FROM got)
  UNION ALL
  (SELECT m, id1, id2 FROM got EXCEPT SELECT m, id1, id2 FROM ref WHERE rk <= 4))
SELECT m, count(diff.id1) AS differing,
       count(diff.id1) FILTER (WHERE abs(r.v - k.v4) > 1e-5 * (1 + abs(k.v4))) AS not_near_ties
FROM metrics LEFT JOIN diff USING (m) LEFT JOIN ref r USING (m, id1, id2) LEFT JOIN kth k USING (m, id1)
GROUP BY m ORDER BY m;

-- self kNN: the row itself is excluded, ties (duplicates 61, 62) by id
SELECT * FROM gpu_pairwise('pw_a', 'pw_a', 'e', 'l2', k => 2) WHERE id1 IN (61, 62, 63) ORDER BY id1, value, id2;
-- cosine with the zero vector: distance 1 to everything
SELECT count(*), min(value), max(value) FROM gpu_pairwise('pw_a', 'pw_a', 'e', 'cosine', k => 70) WHERE id1 = 63;
-- k larger than the other side: every row of b with a vector (46)
SELECT count(*), count(DISTINCT id2) FROM gpu_pairwise('pw_a', 'pw_b', 'e', 'l1', k => 1000) WHERE id1 = 1;
-- self kNN with k >= n - 1: n - 1 per row
SELECT count(*) FROM gpu_pairwise('pw_a', 'pw_a', 'e', 'dot', k => 500);
-- dot: larger is better
SELECT bool_and(value >= 0) FROM gpu_pairwise('pw_a', 'pw_b', 'e', 'dot', k => 1) WHERE id1 = 61;

-- threshold: equal to the float8 brute force except near-ties at the threshold
WITH t(m, thr) AS (VALUES ('l1', 3.0), ('l2', 2.0), ('sqeuclidean', 4.0), ('cosine', 0.3), ('dot', 5.0), ('lp:3', 2.0)),
ref AS (SELECT m, thr, a.id AS id1, b.id AS id2, pw_ref(a.e, b.e, m) AS v FROM t, pw_a a, pw_b b
        WHERE a.e IS NOT NULL AND b.e IS NOT NULL),
got AS (SELECT m, g.* FROM t, gpu_pairwise('pw_a', 'pw_b', 'e', m, threshold => thr) g),
want AS (SELECT m, id1, id2 FROM ref WHERE CASE WHEN m = 'dot' THEN v >= thr ELSE v <= thr END),
diff AS ((SELECT * FROM want EXCEPT SELECT m, id1, id2 FROM got) UNION ALL (SELECT m, id1, id2 FROM got EXCEPT SELECT * FROM want))
SELECT m, (SELECT count(*) FROM got WHERE got.m = t.m) AS rows, count(d.id1) AS differing,
       count(d.id1) FILTER (WHERE abs(r.v - t.thr) > 1e-5 * (1 + abs(t.thr))) AS not_near_ties
FROM t LEFT JOIN diff d USING (m) LEFT JOIN ref r USING (m, id1, id2)
GROUP BY m, t.m ORDER BY m;

-- self threshold: unordered pairs once, id1 < id2; the duplicates at distance 0
SELECT count(*), bool_and(id1 < id2) FROM gpu_pairwise('pw_a', 'pw_a', 'e', 'l2', threshold => 1.5);
SELECT * FROM gpu_pairwise('pw_a', 'pw_a', 'e', 'l2', threshold => 0);

-- d = 1 and d = 768, 4096: the CPU engine against the float8 reference
CREATE TABLE pw_d (id int PRIMARY KEY, e real[]);
INSERT INTO pw_d SELECT g, array_agg(random()::real) FROM generate_series(1, 30) g, generate_series(1, 768) GROUP BY g;
SELECT count(*), count(*) FILTER (WHERE abs(g.value - pw_ref(a.e, b.e::float8[], 'l2')) > 1e-4) AS bad
FROM gpu_pairwise('pw_d', 'pw_d', 'e', 'l2', k => 3) g JOIN pw_d a ON a.id = g.id1 JOIN pw_d b ON b.id = g.id2;
TRUNCATE pw_d;
INSERT INTO pw_d SELECT g, array_agg(random()::real) FROM generate_series(1, 12) g, generate_series(1, 4096) GROUP BY g;
SELECT count(*), count(*) FILTER (WHERE abs(g.value - pw_ref(a.e, b.e::float8[], 'cosine')) > 1e-5) AS bad
FROM gpu_pairwise('pw_d', 'pw_d', 'e', 'cosine', k => 2) g JOIN pw_d a ON a.id = g.id1 JOIN pw_d b ON b.id = g.id2;
TRUNCATE pw_d;
INSERT INTO pw_d VALUES (1, '{1}'), (2, '{3}'), (3, '{-2}'), (4, '{3}');
SELECT * FROM gpu_pairwise('pw_d', 'pw_d', 'e', 'l1', k => 2) ORDER BY id1, value, id2;

-- empty relations
CREATE TABLE pw_empty (id int PRIMARY KEY, e real[]);
SELECT count(*) FROM gpu_pairwise('pw_empty', 'pw_a', 'e', 'l2', k => 3);
SELECT count(*) FROM gpu_pairwise('pw_a', 'pw_empty', 'e', 'l2', threshold => 1);
SELECT count(*) FROM gpu_pairwise('pw_empty', 'pw_empty', 'e', 'l2', k => 3);
-- NULL arguments: no rows
SELECT count(*) FROM gpu_pairwise(NULL, 'pw_a', 'e', 'l2', k => 3);

-- errors
SELECT * FROM gpu_pairwise('pw_a', 'pw_b', 'e', 'hamming', k => 3);
SELECT * FROM gpu_pairwise('pw_a', 'pw_b', 'e', 'lp:0.5', k => 3);
SELECT * FROM gpu_pairwise('pw_a', 'pw_b', 'e', 'l2');
SELECT * FROM gpu_pairwise('pw_a', 'pw_b', 'e', 'l2', k => 3, threshold => 1);
SELECT * FROM gpu_pairwise('pw_a', 'pw_b', 'e', 'l2', k => 0);
SELECT * FROM gpu_pairwise('pw_a', 'pw_b', 'e', 'l2', threshold => 'NaN');
SELECT * FROM gpu_pairwise('pw_a', 'pw_b', 'nope', 'l2', k => 1);
SELECT * FROM gpu_pairwise('pw_a', 'pw_b', 'id', 'l2', k => 1);
SELECT * FROM gpu_pairwise('pw_a', 'pw_d', 'e', 'l2', k => 1);
INSERT INTO pw_d VALUES (5, '{1,2}');
SELECT * FROM gpu_pairwise('pw_d', 'pw_d', 'e', 'l2', k => 1);
UPDATE pw_d SET e = '{1,NULL}' WHERE id = 5;
SELECT * FROM gpu_pairwise('pw_d', 'pw_d', 'e', 'l2', k => 1);
UPDATE pw_d SET e = '{NaN}' WHERE id = 5;
SELECT * FROM gpu_pairwise('pw_d', 'pw_d', 'e', 'l2', k => 1);
UPDATE pw_d SET e = '{}' WHERE id = 5;
SELECT * FROM gpu_pairwise('pw_d', 'pw_d', 'e', 'l2', k => 1);
UPDATE pw_d SET e = '{{1},{2}}' WHERE id = 5;
SELECT * FROM gpu_pairwise('pw_d', 'pw_d', 'e', 'l2', k => 1);
INSERT INTO pw_b VALUES (200, '{1e300,0,0}');
SELECT * FROM gpu_pairwise('pw_a', 'pw_b', 'e', 'l2', k => 1);
SET gpu2bs.pairwise_precision = fast;
SELECT count(*) FROM gpu_pairwise('pw_a', 'pw_a', 'e', 'l2', k => 2);
RESET gpu2bs.pairwise_precision;
SET gpu2bs.max_result_rows = 10;
SELECT count(*) FROM gpu_pairwise('pw_a', 'pw_a', 'e', 'l2', k => 2);
SELECT count(*) FROM gpu_pairwise('pw_a', 'pw_a', 'e', 'l2', threshold => 100);
RESET gpu2bs.max_result_rows;
-- read as the calling user: no SELECT privilege is 42501, row-level security applies
CREATE ROLE regress_gpu2bs_pw;
GRANT SELECT ON pw_a TO regress_gpu2bs_pw;
ALTER TABLE pw_a ENABLE ROW LEVEL SECURITY;
CREATE POLICY pw_few ON pw_a FOR SELECT USING (id <= 5);
SET ROLE regress_gpu2bs_pw;
SELECT count(*), max(id1), max(id2) FROM gpu_pairwise('pw_a', 'pw_a', 'e', 'l2', k => 10);
SELECT count(*) FROM gpu_pairwise('pw_a', 'pw_b', 'e', 'l2', k => 1);
RESET ROLE;
DROP POLICY pw_few ON pw_a;
REVOKE ALL ON pw_a FROM regress_gpu2bs_pw;
DROP ROLE regress_gpu2bs_pw;
DROP TABLE pw_a, pw_b, pw_d, pw_empty;
DROP FUNCTION pw_ref;
