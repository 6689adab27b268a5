-- gpu2bs 0.5 -> 0.6 upgrade: run by ALTER EXTENSION gpu2bs UPDATE TO '0.6'.
-- Every object 0.6 adds or changes is created here in the same form as in gpu2bs--0.6.sql, so
-- that a fresh 0.6 install and an upgraded 0.5 install are equal.
\echo Use "ALTER EXTENSION gpu2bs UPDATE TO '0.6'" to load this file. \quit

-- meas17 begin
-- gpu_dbscan in FROM runs as the custom scan `gpu2bs dbscan` (gpu2bs.enable_customscan): its
-- planner support function loads the library while the first such query is being planned.
ALTER FUNCTION gpu_dbscan(regclass, float8, int4, text[], text) SUPPORT gpu2bs_simjoin_support;
ALTER FUNCTION gpu_dbscan(regclass, float8, int4, text[], text, float8[]) SUPPORT gpu2bs_simjoin_support;
COMMENT ON FUNCTION gpu2bs_simjoin_support(internal) IS
'planner support function of gpu_simjoin and gpu_dbscan: loads the gpu2bs library while the first query that uses one of them is being planned, so their custom scans (gpu2bs.enable_customscan) are offered from that query on; it supplies no estimates; internal';
-- meas17 end
