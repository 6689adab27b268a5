-- Device memory admission without a GPU: gpu2bs.simulate_device_memory makes CPU engine calls
-- reserve what the GPU engine would need on a device of that size (the budget is 90 % of it).
-- Results do not change; gpu2bs_info() reports each reservation; a call that cannot fit even in
-- blocks fails with 53200; holds end with their transaction. Waits and cancels between sessions:
-- test/specs/admission_wait.spec.
SET gpu2bs.precision = float8;
CREATE TEMP TABLE adm AS
  SELECT (i % 101) * 0.01 AS x, (i % 103) * 0.01 AS y, (i % 107) * 0.01 AS z
  FROM generate_series(1, 50000) i;
CREATE TEMP TABLE adm_ref AS
  SELECT gpu_sdh(x, y, z, 20) AS h, gpu_pair_count(x, y, z, 0.05) AS c FROM adm;
SET gpu2bs.simulate_device_memory = 100;
SHOW gpu2bs.simulate_device_memory;
-- in memory: 50000 3-D float8 points want 3 x (1.2 MB + 1 MB) and get it
SELECT gpu_sdh(x, y, z, 20) = (SELECT h FROM adm_ref) AS same FROM adm;
SELECT name, value FROM gpu2bs_info()
WHERE name IN ('last_admission_want_bytes', 'last_admission_granted_bytes', 'last_admission_blocks')
ORDER BY name;
-- a per-query limit below the request: granted the limit, the GPU would run in blocks
SET gpu2bs.gpu_memory_limit = '2MB';
SELECT gpu_sdh(x, y, z, 20) = (SELECT h FROM adm_ref) AS same FROM adm;
SELECT gpu_pair_count(x, y, z, 0.05) = (SELECT c FROM adm_ref) AS same FROM adm;
SELECT name, value FROM gpu2bs_info()
WHERE name IN ('last_admission_want_bytes', 'last_admission_granted_bytes', 'last_admission_blocks')
ORDER BY name;
-- below three blocks of 8192 points: 53200
SET gpu2bs.gpu_memory_limit = '1MB';
SELECT gpu_sdh(x, y, z, 20) FROM adm;
RESET gpu2bs.gpu_memory_limit;
-- nothing is left reserved after the calls
SELECT count(*) FROM gpu2bs_admission();
-- a device too small even for three blocks of 8192 points: 53200
SET gpu2bs.simulate_device_memory = 1;
SELECT gpu_sdh(x, y, z, 20) FROM adm;
SET gpu2bs.simulate_device_memory = 100;
-- a hold lasts until the end of its transaction (commit or rollback)
BEGIN;
SELECT gpu2bs_admission_hold(10);
SELECT state, want_bytes, granted_bytes FROM gpu2bs_admission() WHERE pid = pg_backend_pid();
SELECT gpu2bs_admission_hold(1);  -- a second reservation of the same session: 55000
ROLLBACK;
SELECT count(*) FROM gpu2bs_admission() WHERE pid = pg_backend_pid();
BEGIN;
SELECT gpu2bs_admission_hold(5);
COMMIT;
SELECT count(*) FROM gpu2bs_admission() WHERE pid = pg_backend_pid();
-- a gpu2bs call in a transaction that holds memory: 55000 (one reservation per session)
BEGIN;
SELECT gpu2bs_admission_hold(20);
SELECT gpu_sdh(x, y, z, 20) = (SELECT h FROM adm_ref) AS same FROM adm;
COMMIT;
SELECT gpu2bs_admission_hold(0);
SELECT gpu2bs_admission_hold(1000);  -- more than the 90 MB budget: 53200
-- only superusers may hold (the function is revoked from PUBLIC)
SELECT has_function_privilege('public', 'gpu2bs_admission_hold(int)', 'execute') AS public_may_hold;
RESET gpu2bs.simulate_device_memory;
RESET gpu2bs.precision;
