--
-- Pair expressions (gpu_pair_count(a, b, predicate), gpu_pair_sum, gpu_pair_histogram, gpu_join):
-- every operator and function of the language against PostgreSQL's own evaluation of the same
-- SQL over a nested-loop join, with gpu2bs.precision = float8 (results must be equal), self
-- (a = b: unordered pairs of distinct rows, a.id < b.id) and two relations; NULLs, NaN,
-- infinities, evaluation errors (the same SQLSTATE as PostgreSQL), empty inputs, unsupported
-- constructs and privileges.
--
SET gpu2bs.precision = float8;
SET extra_float_digits = 0;
CREATE TABLE pe (id int PRIMARY KEY, x float8, y float8, z float8, u float8, i int, k bigint, n numeric, r real);
INSERT INTO pe SELECT g,
  ((g * 37) % 64) / 64.0, ((g * 11) % 32) / 16.0 - 1, 1 + ((g * 5) % 16) / 8.0,
  ((g * 13) % 33) / 16.0 - 1, (g * 7) % 10 - 3, (g * 3) % 11, ((g * 17) % 23) / 7.0, ((g * 19) % 40) / 8.0
  FROM generate_series(1, 60) g;
INSERT INTO pe VALUES (61, NULL, 0.5, 1.5, 0, NULL, NULL, NULL, NULL),
  (62, 'NaN', 'NaN', 2, 0.5, 1, 2, 'NaN', 'NaN'), (63, 'Infinity', 0.25, 3, -0.5, 2, 3, 1, 'Infinity'),
  (64, '-Infinity', 0, 1.25, 1, 3, 4, 2, '-Infinity'), (65, 0.5, NULL, NULL, NULL, 4, 5, 3, 0.5);
CREATE TABLE pe2 (id int PRIMARY KEY, x float8, y float8, z float8, u float8, i int, k bigint, n numeric, r real);
INSERT INTO pe2 SELECT g, ((g * 29) % 48) / 48.0, ((g * 7) % 24) / 12.0 - 1, 1 + ((g * 3) % 8) / 4.0,
  ((g * 5) % 17) / 8.0 - 1, (g * 3) % 8 - 2, g % 5, (g % 9) / 4.0, ((g * 3) % 20) / 4.0
  FROM generate_series(1, 45) g;
INSERT INTO pe2 VALUES (46, 'NaN', NULL, 2, 0, NULL, 1, NULL, 'NaN');
CREATE TABLE pe0 (id int PRIMARY KEY, x float8, y float8);

-- gpu_pair_count(ra, rb, pred) against count(*) over the nested loop (a.id < b.id when ra = rb);
-- 'same: N' when both give N (or the same SQLSTATE), else both results
CREATE FUNCTION pe_check(ra text, rb text, pred text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE g text; p text;
BEGIN
  BEGIN
    EXECUTE format('SELECT gpu_pair_count(%L::regclass, %L::regclass, %L)::text', ra, rb, pred) INTO g;
  EXCEPTION WHEN OTHERS THEN g := 'ERROR ' || SQLSTATE;
  END;
  BEGIN
    EXECUTE format('SELECT count(*)::text FROM %I a, %I b WHERE %s (%s)', ra, rb,
                   CASE WHEN ra = rb THEN 'a.id < b.id AND' ELSE '' END, pred) INTO p;
  EXCEPTION WHEN OTHERS THEN p := 'ERROR ' || SQLSTATE;
  END;
  RETURN CASE WHEN g = p THEN 'same: ' || g ELSE 'DIFFERENT: gpu2bs ' || g || ', postgres ' || p END;
END $$;

-- every operator and function, self and two relations
SELECT pred, pe_check('pe', 'pe', pred) AS self, pe_check('pe', 'pe2', pred) AS two FROM (VALUES
  ('a.x + b.x > 1'), ('a.x - b.x < 0.25'), ('a.x * b.y >= 0.125'), ('a.x / b.z < 0.2'),
  ('-a.x < b.y'), ('+a.x <= b.x'), ('abs(a.x - b.x) <= 0.25'), ('@(a.y - b.y) < 0.5'),
  ('sqrt(abs(a.x * b.y)) > 0.3'), ('|/ b.z > a.z'),
  ('(a.x - b.x)^2 + (a.y - b.y)^2 <= 0.0625'), ('power(a.y - b.y, 3) > 0.01'), ('pow(a.z, 0.5) < b.z'),
  ('(a.x - b.x) ^ -2 > 100'), ('least(a.x, b.x, 0.5) > 0.2'), ('greatest(a.x, b.y) < 0.75'),
  ('least(a.x, NULL, b.y) < 0'), ('greatest(a.y, b.y) = a.y'),
  ('sin(a.y) < cos(b.y)'), ('tan(a.y - b.y) > 0.1'), ('asin(a.u) < acos(b.u)'), ('atan(a.y) > atan2(b.y, b.z)'),
  ('radians(a.z * 60) < degrees(b.z) / 100'), ('exp(a.y) > 1 + b.y'), ('ln(a.z) < b.z - 1'),
  ('a.x = b.x'), ('a.x <> b.x'), ('a.x < b.x'), ('a.x <= b.x'), ('a.x > b.x'), ('a.x >= b.x'),
  ('a.i < b.i'), ('a.i = b.k'), ('a.k >= b.i'), ('a.n < b.n'), ('a.n = b.n'), ('a.r <= b.r'),
  ('a.r = b.x'), ('a.x < b.r'), ('a.i < 2.5'), ('a.n < b.x'), ('a.r + b.x > 1'), ('a.x - b.r < 0'),
  ('a.i::float8 / 2 < b.x'), ('a.n::float8 * 2 > b.z'), ('a.k::float8 + b.i < 5'),
  ('a.x < b.x AND a.y > b.y'), ('a.x < b.x OR a.y > b.y'), ('NOT (a.x < b.x)'), ('a.x < 0.5 AND b.x > 0.5 OR a.y = b.y'),
  ('CASE WHEN a.z > 2 THEN a.x / a.z ELSE b.x END < 0.25'), ('CASE WHEN a.x > b.x THEN a.y > b.y WHEN a.x < b.x THEN a.y < b.y END'),
  ('a.x IS NULL OR b.y IS NULL'), ('a.x + b.x IS NOT NULL AND a.i > b.i'), ('(a.x + NULL) > 0 IS NULL'),
  ('a.x < b.x AND NULL'), ('a.x < b.x OR NULL'), ('true'), ('false'), ('NULL'),
  ('abs(a.x - b.x) + abs(a.y - b.y) <= 0.25 AND a.i < b.i')
) v(pred);

-- gpu_pair_sum: exact sums (dyadic values) equal; transcendental sums to 9 digits
SELECT gpu_pair_sum('pe', 'pe', 'a.x * b.y', 'a.x < b.x') = (SELECT sum(a.x * b.y) FROM pe a, pe b WHERE a.id < b.id AND a.x < b.x) AS self_sum,
       gpu_pair_sum('pe', 'pe2', 'a.x - b.x') = (SELECT sum(a.x - b.x) FROM pe a, pe2 b WHERE a.x - b.x IS NOT NULL) AS two_sum_nan,
       gpu_pair_sum('pe', 'pe2', 'a.z * b.z', 'a.z > b.z') = (SELECT sum(a.z * b.z) FROM pe a, pe2 b WHERE a.z > b.z) AS two_sum,
       round(gpu_pair_sum('pe', 'pe', '1 / sqrt((a.x - b.x)^2 + (a.y - b.y)^2 + 0.01)', 'a.x < 1')::numeric, 6) =
       round((SELECT sum(1 / sqrt((a.x - b.x)^2 + (a.y - b.y)^2 + 0.01)) FROM pe a, pe b WHERE a.id < b.id AND a.x < 1)::numeric, 6) AS energy,
       gpu_pair_sum('pe', 'pe', 'a.x', 'false') IS NULL AS none_kept;

-- gpu_pair_histogram against width_bucket
CREATE FUNCTION pe_hist(ra text, rb text, v text, lo float8, hi float8, nb int, pred text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE g bigint[]; p bigint[];
BEGIN
  EXECUTE format('SELECT gpu_pair_histogram(%L::regclass, %L::regclass, %L, %s, %s, %s, %L)', ra, rb, v, lo, hi, nb, pred) INTO g;
  EXECUTE format('SELECT array_agg(coalesce(c, 0) ORDER BY k) FROM generate_series(1, %s) k LEFT JOIN
                    (SELECT width_bucket(%s, %s::float8, %s::float8, %s) w, count(*) c FROM %I a, %I b
                      WHERE %s (%s) AND (%s) IS NOT NULL GROUP BY 1) h ON h.w = k',
                 nb, v, lo, hi, nb, ra, rb, CASE WHEN ra = rb THEN 'a.id < b.id AND' ELSE '' END,
                 coalesce(pred, 'true'), v) INTO p;
  RETURN CASE WHEN g = p THEN 'same: ' || g::text ELSE 'DIFFERENT: ' || g::text || ' ' || p::text END;
END $$;
SELECT pe_hist('pe', 'pe', 'sqrt((a.x - b.x)^2 + (a.y - b.y)^2)', 0, 1.5, 6, 'a.x < 1 AND b.x < 1');
SELECT pe_hist('pe', 'pe2', 'a.z * b.z', 1, 9, 8, NULL);
SELECT pe_hist('pe', 'pe2', 'degrees(acos(greatest(-1, least(1, a.u * b.u))))', 0, 180, 9, 'a.u IS NOT NULL');

-- gpu_join against the nested loop (both differences empty)
SELECT (SELECT count(*) FROM gpu_join('pe', 'pe', 'abs(a.x - b.x) < 0.1 AND a.y >= b.y')) AS pairs,
       (SELECT count(*) FROM (SELECT * FROM gpu_join('pe', 'pe', 'abs(a.x - b.x) < 0.1 AND a.y >= b.y')
                              EXCEPT SELECT least(a.id, b.id), greatest(a.id, b.id) FROM pe a, pe b
                              WHERE a.id < b.id AND abs(a.x - b.x) < 0.1 AND a.y >= b.y) d) AS extra,
       (SELECT count(*) FROM pe a, pe b WHERE a.id < b.id AND abs(a.x - b.x) < 0.1 AND a.y >= b.y) AS postgres;
SELECT (SELECT count(*) FROM (SELECT a.id, b.id FROM pe a, pe2 b WHERE a.x < b.x AND a.i = b.i
                              EXCEPT SELECT * FROM gpu_join('pe', 'pe2', 'a.x < b.x AND a.i = b.i')) d) AS missing,
       (SELECT count(*) FROM gpu_join('pe', 'pe2', 'a.x < b.x AND a.i = b.i')) AS pairs;
SELECT * FROM gpu_join('pe', 'pe2', 'a.x = 0.5 AND b.x = 0.5', id => 'id') ORDER BY 1, 2 LIMIT 5;

-- evaluation errors: the SQLSTATE PostgreSQL raises
SELECT pred, pe_check('pe', 'pe2', pred) AS result FROM (VALUES
  ('a.x / (b.y - b.y) > 0'), ('sqrt(a.y - 2) > 0'), ('ln(a.x - a.x) > 0'), ('ln(a.y - 2) > 0'),
  ('exp(a.z * 1000) > 0'), ('asin(a.z + 2) > 0'), ('1e308 * (a.z + 1) * 10 > 0'), ('power(a.y - 5, 0.5) > 0'),
  ('power(a.x - a.x, -1) > 0'), ('sin(a.x) > 0'), ('1e-300 * (a.z * 1e-300) > 0'),
  ('CASE WHEN b.y <> 0 THEN a.x / b.y ELSE 0 END > 1')
) v(pred);

-- empty inputs
SELECT gpu_pair_count('pe0', 'pe0', 'a.x < b.x') AS self_empty, gpu_pair_count('pe0', 'pe', 'a.x < b.x') AS two_empty,
       gpu_pair_sum('pe0', 'pe', 'a.x') AS sum_empty, gpu_pair_histogram('pe0', 'pe0', 'a.x', 0, 1, 3) AS hist_empty,
       (SELECT count(*) FROM gpu_join('pe', 'pe0', 'true')) AS join_empty;
SELECT gpu_pair_count('pe', 'pe', NULL) AS null_pred, gpu_pair_count(NULL::regclass, 'pe'::regclass, 'true') AS null_rel,
       gpu_pair_histogram('pe', 'pe', 'a.x', NULL, 1, 3) AS null_lo;

-- float4 precision: float32 arithmetic, as PostgreSQL's real operators compute it
SET gpu2bs.precision = float4;
SELECT gpu_pair_count('pe', 'pe2', 'a.x + b.x > 1.1') = (SELECT count(*) FROM pe a, pe2 b WHERE a.x::real + b.x::real > 1.1::real) AS f4_add,
       gpu_pair_count('pe', 'pe', 'a.x * b.y < a.z / b.z') = (SELECT count(*) FROM pe a, pe b WHERE a.id < b.id AND a.x::real * b.y::real < a.z::real / b.z::real) AS f4_mul_div;
-- float4 counts of a distance bound over full tiles (the GPU kernel counts them by the bit
-- patterns of the distance)
CREATE TABLE pe4 AS SELECT g AS id, ((g * 0.6180339887498949) % 1)::float8 AS x,
  ((g * 0.7548776662466927) % 1)::float8 AS y FROM generate_series(1, 700) g;
SELECT gpu_pair_count('pe4', 'pe4', '(a.x - b.x)^2 + (a.y - b.y)^2 <= 0.0025') =
         (SELECT count(*) FROM pe4 a, pe4 b WHERE a.id < b.id AND (a.x::real - b.x::real) * (a.x::real - b.x::real) + (a.y::real - b.y::real) * (a.y::real - b.y::real) <= 0.0025::real) AS f4_d2,
       gpu_pair_count('pe4', 'pe4', 'sqrt((a.x - b.x)^2 + (a.y - b.y)^2) < 0.05') =
         (SELECT count(*) FROM pe4 a, pe4 b WHERE a.id < b.id AND sqrt(((a.x::real - b.x::real) * (a.x::real - b.x::real) + (a.y::real - b.y::real) * (a.y::real - b.y::real))::float8)::real < 0.05::real) AS f4_dist,
       gpu_pair_count('pe4', 'pe4', '0.07 >= abs(a.x - b.x) + abs(a.y - b.y)') =
         (SELECT count(*) FROM pe4 a, pe4 b WHERE a.id < b.id AND 0.07::real >= abs(a.x::real - b.x::real) + abs(a.y::real - b.y::real)) AS f4_manhattan,
       gpu_pair_count('pe4', 'pe4', '(a.x - b.x)^2 + (a.y - b.y)^2 <= 0.0025') > 0 AS f4_nonzero;
DROP TABLE pe4;
SET gpu2bs.precision = float8;

-- unsupported constructs and analysis errors
CREATE TABLE pet (id int PRIMARY KEY, s text, x float8);
INSERT INTO pet VALUES (1, 'a', 1), (2, 'b', 2);
CREATE FUNCTION pe_err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE q;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
SELECT q, pe_err(q) FROM (VALUES
  ('SELECT gpu_pair_count(''pe'', ''pe'', ''a.x < random()'')'),
  ('SELECT gpu_pair_count(''pe'', ''pe'', ''a.x < (SELECT max(x) FROM pe)'')'),
  ('SELECT gpu_pair_count(''pet'', ''pet'', ''a.s < b.s'')'),
  ('SELECT gpu_pair_count(''pet'', ''pet'', ''length(a.s) < b.x'')'),
  ('SELECT gpu_pair_count(''pe'', ''pe'', ''a.w < 1'')'),
  ('SELECT gpu_pair_count(''pe'', ''pe'', ''c.x < 1'')'),
  ('SELECT gpu_pair_count(''pe'', ''pe'', ''x < 1'')'),
  ('SELECT gpu_pair_count(''pe'', ''pe'', ''a.x'')'),
  ('SELECT gpu_pair_count(''pe'', ''pe'', ''a.x < 1; DROP TABLE pe'')'),
  ('SELECT gpu_pair_count(''pe'', ''pe'', ''a.x < 1 FROM pe'')'),
  ('SELECT gpu_pair_count(''pe'', ''pe'', ''a.x <'')'),
  ('SELECT gpu_pair_count(''pe'', ''pe'', ''sum(a.x) > 0'')'),
  ('SELECT gpu_pair_count(''pe'', ''pe'', ''a.x IN (0.5, 0.25)'')'),
  ('SELECT gpu_pair_count(''pe'', ''pe'', ''coalesce(a.x, 0) > b.x'')'),
  ('SELECT gpu_pair_count(''pe'', ''pe'', ''a.i + 1 > b.i'')'),
  ('SELECT gpu_pair_count(''pe'', ''pe'', ''a.n + 0.5 > b.n'')'),
  ('SELECT gpu_pair_count(''pe'', ''pe'', ''power(a.x, b.x) > 0'')'),
  ('SELECT gpu_pair_count(''pe'', ''pe'', ''a.ctid = b.ctid'')'),
  ('SELECT gpu_pair_count(''pe'', ''pe'', ''a.x::real < b.x'')'),
  ('SELECT gpu_pair_count(''pe'', ''pe'', ''a.x < $1'')'),
  ('SELECT gpu_pair_sum(''pe'', ''pe'', ''a.x < b.x'')'),
  ('SELECT gpu_pair_histogram(''pe'', ''pe'', ''a.x'', 0, 1, 0)'),
  ('SELECT gpu_pair_histogram(''pe'', ''pe'', ''a.x'', 1, 1, 4)'),
  ('SELECT gpu_pair_histogram(''pe'', ''pe'', ''a.x'', 0, ''Infinity'', 4)'),
  ('SELECT gpu_pair_histogram(''pe'', ''pe'', ''a.x'', 1, 0, 4)'),
  ('SELECT gpu_pair_histogram(''pe'', ''pe'', ''a.x - b.x'', 0, 1, 4)'),
  ('SELECT count(*) FROM gpu_join(''pe0'', ''pet'', ''a.x < b.x'', id => ''s'')'),
  ('SELECT gpu_pair_count(''nosuch'', ''pe'', ''true'')')
) v(q);

-- privileges: SELECT on the relation, or on every column the expression names
CREATE ROLE pe_user;
CREATE TABLE pe_secret (id int PRIMARY KEY, x float8, y float8);
INSERT INTO pe_secret VALUES (1, 0, 0), (2, 1, 1), (3, 2, 2);
GRANT SELECT (id, x) ON pe_secret TO pe_user;
SET ROLE pe_user;
SELECT pe_err('SELECT gpu_pair_count(''pe_secret'', ''pe_secret'', ''a.y < b.y'')') AS column_denied;
SELECT gpu_pair_count('pe_secret', 'pe_secret', 'a.x < b.x') AS column_granted;
SELECT pe_err('SELECT gpu_pair_count(''pe_secret'', ''pe'', ''b.x < a.x'')') AS table_denied;
RESET ROLE;
DROP TABLE pe_secret;
DROP ROLE pe_user;

SELECT name FROM gpu2bs_info() WHERE name = 'nvrtc_library';
