-- gpu2bs 0.3 -> 0.4 upgrade: run by ALTER EXTENSION gpu2bs UPDATE TO '0.4'.
-- Every object 0.4 adds or changes is created here in the same form as in gpu2bs--0.4.sql, so
-- that a fresh 0.4 install and an upgraded 0.3 install are equal.
\echo Use "ALTER EXTENSION gpu2bs UPDATE TO '0.4'" to load this file. \quit

-- scale12 begin
-------------------------------------------------------------------------------------------------
-- Device-memory admission across sessions (docs/concurrency.md)
-------------------------------------------------------------------------------------------------

CREATE FUNCTION gpu2bs_admission()
  RETURNS TABLE(pid int, state text, want_bytes bigint, min_bytes bigint, granted_bytes bigint,
                since timestamptz)
  AS 'MODULE_PATHNAME', 'gpu2bs_admission' LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpu2bs_admission() IS
'Device memory admission: one row per backend with a reservation in the shared budget gpu2bs.gpu_memory_total: its process id (join pg_stat_activity on pid), state (granted, or waiting: wait_event_type and wait_event Extension in pg_stat_activity), the bytes it asked for (want_bytes), the least it runs with (min_bytes: SDH and pair count in blocks of points), the bytes granted, and when it asked. Empty when no GPU call runs. docs/concurrency.md.';

CREATE FUNCTION gpu2bs_admission_hold(megabytes int) RETURNS int
  AS 'MODULE_PATHNAME', 'gpu2bs_admission_hold' LANGUAGE C VOLATILE PARALLEL UNSAFE STRICT;
REVOKE ALL ON FUNCTION gpu2bs_admission_hold(int) FROM PUBLIC;
COMMENT ON FUNCTION gpu2bs_admission_hold(int) IS
'Test hook (superuser by default): reserves megabytes (int, > 0) of the shared device memory budget until the end of the transaction, waiting like a GPU call (cancellable) while they are not free, and returns the megabytes granted. With gpu2bs.simulate_device_memory it lets tests without a GPU fill the budget. Errors: 22023 for megabytes <= 0; 53200 when it exceeds gpu2bs.gpu_memory_total; 55000 when this session already holds a reservation or no budget is known. docs/concurrency.md.';
-- scale12 end
