-- CPU engine vs GPU engine, bit for bit, inside PostgreSQL, on random and real data.
-- Each case runs the same query with gpu2bs.device = cpu and = gpu and compares the results
-- with EXCEPT ALL both ways (histogram arrays, counts, join rows with their float8 dist, and
-- gpu_dbscan's (id, cluster) rows).
-- Needs tables u3 (random 3-D), u2 (numpy default_rng(1) 2-D), stars (Hipparcos unit vectors),
-- atoms (mdanalysistests bigbox.gro), made by test/gpu/device_suite.sh.
\set ON_ERROR_STOP 1
\pset footer off
CREATE OR REPLACE FUNCTION pg_temp.g2_diff(q text)
RETURNS TABLE(prec text, query text, rows_cpu bigint, rows_gpu bigint, identical boolean,
              ms_cpu numeric, ms_gpu numeric) LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz; p text;
BEGIN
  FOREACH p IN ARRAY ARRAY['float4', 'float8'] LOOP
    PERFORM set_config('gpu2bs.precision', p, true);
    PERFORM set_config('gpu2bs.device', 'cpu', true);
    t0 := clock_timestamp();
    EXECUTE 'CREATE TEMP TABLE d_cpu AS ' || q;
    ms_cpu := round(extract(epoch FROM clock_timestamp() - t0)::numeric * 1000, 1);
    PERFORM set_config('gpu2bs.device', 'gpu', true);
    t0 := clock_timestamp();
    EXECUTE 'CREATE TEMP TABLE d_gpu AS ' || q;
    ms_gpu := round(extract(epoch FROM clock_timestamp() - t0)::numeric * 1000, 1);
    SELECT count(*) INTO rows_cpu FROM d_cpu;
    SELECT count(*) INTO rows_gpu FROM d_gpu;
    identical := NOT EXISTS (SELECT * FROM d_cpu EXCEPT ALL SELECT * FROM d_gpu)
             AND NOT EXISTS (SELECT * FROM d_gpu EXCEPT ALL SELECT * FROM d_cpu);
    DROP TABLE d_cpu, d_gpu;
    prec := p; query := q;
    RETURN NEXT;
  END LOOP;
END $$;

CREATE TEMP TABLE cases(q text);
INSERT INTO cases VALUES
 ('SELECT gpu_sdh(x, y, z, 1) AS h FROM u3'),
 ('SELECT gpu_sdh(x, y, z, 10) AS h FROM u3'),
 ('SELECT gpu_sdh(x, y, z, 500) AS h FROM u3'),
 ('SELECT gpu_sdh(x, y, z, 5000) AS h FROM u3'),
 ('SELECT gpu_sdh(x, y, z, 50000) AS h FROM u3'),
 ('SELECT gpu_sdh(x, y, z, 100, 0.004) AS h FROM u3'),
 ('SELECT gpu_sdh(x, y, 300) AS h FROM u3'),
 ('SELECT gpu_sdh_fixed(x, y, 64, 0.01) AS h FROM u3'),
 ('SELECT gpu_sdh(x, y, z, 500) AS h FROM atoms'),
 ('SELECT gpu_sdh(x, y, z, 50, 0.5) AS h FROM atoms'),
 ('SELECT gpu_sdh(x, y, z, 500) AS h FROM stars'),
 ('SELECT gpu_sdh(x, y, z, 7) AS h FROM dup'),
 ('SELECT gpu_sdh(x, y, z, 7) AS h FROM u3 WHERE id <= 2'),
 ('SELECT gpu_sdh(x, y, z, 7) AS h FROM u3 WHERE id <= 1'),
 ('SELECT gpu_pair_count(x, y, z, 0.01) AS c FROM u3'),
 ('SELECT gpu_pair_count(x, y, z, 0.2) AS c FROM u3'),
 ('SELECT gpu_pair_count(x, y, z, ''Infinity'') AS c FROM u3'),
 ('SELECT gpu_pair_count(x, y, 0.003) AS c FROM u2'),
 ('SELECT gpu_pair_count(x, y, z, 3.0) AS c FROM atoms'),
 ('SELECT gpu_pair_count(x, y, z, 0.0087265) AS c FROM stars'),
 ('SELECT * FROM gpu_simjoin(''stars'', 0.0087265)'),
 ('SELECT * FROM gpu_simjoin(''stars'', 0.03)'),
 ('SELECT * FROM gpu_simjoin(''u2'', 0.0025)'),
 ('SELECT * FROM gpu_simjoin(''atoms'', 1.2)'),
 ('SELECT * FROM gpu_simjoin(''u3'', 0.02)'),
 ('SELECT * FROM gpu_simjoin(''u6'', 0.3)'),
 ('SELECT * FROM gpu_simjoin(''u3'', ''atoms_scaled'', 0.01)'),
 ('SELECT * FROM gpu_simjoin(''dup'', 0.5)'),
 ('SELECT * FROM gpu_simjoin(''u3'', 1e-9)'),
 ('SELECT * FROM gpu_dbscan(''stars'', 0.0087265, 5)'),
 ('SELECT * FROM gpu_dbscan(''u2'', 0.003, 10)'),
 ('SELECT * FROM gpu_dbscan(''atoms'', 1.2, 4)'),
 ('SELECT * FROM gpu_dbscan(''u3'', 0.02, 2)'),
 ('SELECT * FROM gpu_dbscan(''dup'', 0.5, 3)'),
 ('SELECT * FROM gpu_dbscan(''u2'', 0.003, 1)');

CREATE TEMP TABLE diff AS SELECT d.* FROM cases, LATERAL pg_temp.g2_diff(cases.q) d;
SELECT * FROM diff;
SELECT count(*) FILTER (WHERE identical) AS identical_cases,
       count(*) FILTER (WHERE NOT identical) AS differing_cases FROM diff;
