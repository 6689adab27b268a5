--
-- gpu2bs.sdh_method: resolution of whole cell pairs (density map) gives the same histograms and
-- pair counts as brute force, on random, clustered and lattice points (exact ties at bucket
-- edges), both precisions, derived and explicit widths.
--
-- (the first call loads the library, which defines the setting)
SELECT gpu_pair_count(x, y, 1.0::float8) FROM (VALUES (0.0::float8, 0.0::float8)) v(x, y);
SHOW gpu2bs.sdh_method;
SELECT setseed(0.25);
CREATE TEMP TABLE r2 AS SELECT random() AS x, random() AS y FROM generate_series(1, 3000);
CREATE TEMP TABLE r3 AS SELECT random() AS x, random() AS y, random() AS z FROM generate_series(1, 3000);
-- Gaussian blobs around 4 centres
CREATE TEMP TABLE c3 AS
  SELECT (i % 4) * 0.3 + 0.02 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()) AS x,
         (i % 2) * 0.5 + 0.02 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()) AS y,
         0.02 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()) AS z
  FROM generate_series(1, 3000) i;
-- integer lattice, every point repeated twice: many pairs exactly on bucket edges
CREATE TEMP TABLE l2 AS SELECT (i % 15)::float8 AS x, ((i / 15) % 15)::float8 AS y FROM generate_series(0, 449) i;
CREATE TEMP TABLE l3 AS SELECT (i % 8)::float8 AS x, ((i / 8) % 8)::float8 AS y, ((i / 64) % 8)::float8 AS z FROM generate_series(0, 1023) i;

CREATE TEMP TABLE runs(method text, prec text, name text, h bigint[]);
CREATE FUNCTION run_all(m text, p text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('gpu2bs.sdh_method', m, true);
  PERFORM set_config('gpu2bs.precision', p, true);
  INSERT INTO runs SELECT m, p, 'r2 sdh 20', gpu_sdh(x, y, 20) FROM r2;
  INSERT INTO runs SELECT m, p, 'r2 sdh 5 w 0.1', gpu_sdh_fixed(x, y, 5, 0.1::float8) FROM r2;
  INSERT INTO runs SELECT m, p, 'r3 sdh 50', gpu_sdh(x, y, z, 50) FROM r3;
  INSERT INTO runs SELECT m, p, 'c3 sdh 30', gpu_sdh(x, y, z, 30) FROM c3;
  INSERT INTO runs SELECT m, p, 'l2 sdh 10 w 1', gpu_sdh_fixed(x, y, 10, 1.0::float8) FROM l2;
  INSERT INTO runs SELECT m, p, 'l2 sdh 21', gpu_sdh(x, y, 21) FROM l2;
  INSERT INTO runs SELECT m, p, 'l3 sdh 6 w 1', gpu_sdh_fixed(x, y, z, 6, 1.0::float8) FROM l3;
  INSERT INTO runs SELECT m, p, 'r2 count 0.05', ARRAY[gpu_pair_count(x, y, 0.05::float8)] FROM r2;
  INSERT INTO runs SELECT m, p, 'c3 count 0.03', ARRAY[gpu_pair_count(x, y, z, 0.03::float8)] FROM c3;
  INSERT INTO runs SELECT m, p, 'l2 count 2', ARRAY[gpu_pair_count(x, y, 2.0::float8)] FROM l2;
  INSERT INTO runs SELECT m, p, 'l3 count 1', ARRAY[gpu_pair_count(x, y, z, 1.0::float8)] FROM l3;
END $$;
BEGIN; SELECT run_all('brute', 'float4'); COMMIT;
BEGIN; SELECT run_all('resolve', 'float4'); COMMIT;
BEGIN; SELECT run_all('brute', 'float8'); COMMIT;
BEGIN; SELECT run_all('resolve', 'float8'); COMMIT;
BEGIN; SELECT run_all('auto', 'float4'); COMMIT;
-- every case: resolve and auto equal brute force
SELECT b.prec, b.name, r.h = b.h AS resolve_equals_brute,
       coalesce(a.h = b.h, true) AS auto_equals_brute
FROM runs b JOIN runs r ON r.method = 'resolve' AND r.prec = b.prec AND r.name = b.name
LEFT JOIN runs a ON a.method = 'auto' AND a.prec = b.prec AND a.name = b.name
WHERE b.method = 'brute' ORDER BY b.prec, b.name;
-- the lattice histogram itself (float8, width 1: bucket k holds the pairs with k <= d < k + 1)
SELECT h FROM runs WHERE method = 'resolve' AND prec = 'float8' AND name = 'l2 sdh 10 w 1';
SET gpu2bs.sdh_method = 'bogus';
RESET gpu2bs.sdh_method;
