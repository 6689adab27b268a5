-- gpu2bs demo queries (run by scripts/demo.sh after loading the real data).
\pset footer off
\echo
\echo '== engine (gpu2bs_info)'
SELECT name, value FROM gpu2bs_info() WHERE name IN ('engine', 'engine_reason', 'cpu_isa', 'cpu_threads', 'precision', 'device_name');
SELECT (value LIKE 'cuda%') OR :full = 1 AS run_big FROM gpu2bs_info() WHERE name = 'engine' \gset

\echo
\echo '== data'
SELECT 'pts (Hipparcos, unit sphere)' AS relation, count(*) FROM pts
UNION ALL SELECT 'pts2d (Hipparcos, ra/dec degrees)', count(*) FROM pts2d
UNION ALL SELECT 'atoms (mdanalysistests bigbox.gro)', count(*) FROM atoms
UNION ALL SELECT 'atoms_big (periodic replication)', count(*) FROM atoms_big;

\timing on
\echo
\echo '== similarity self-join of 117,955 stars: pairs closer than 0.5 degree (chord 0.0087265)'
SELECT count(*) AS pairs, round(avg(dist)::numeric, 6) AS mean_chord FROM gpu_simjoin('pts', 0.0087265);
\echo '== the same in 2-D (ra, dec in degrees), eps = 0.5'
SELECT count(*) AS pairs FROM gpu_simjoin('pts2d', 0.5);
\echo '== closest star pairs'
SELECT id1 AS hip1, id2 AS hip2, round(degrees(2 * asin(dist / 2))::numeric * 3600, 3) AS arcsec
  FROM gpu_simjoin('pts', 0.0001) ORDER BY dist, id1 LIMIT 5;

\echo
\echo '== spatial distance histogram of 132,303 atoms, 500 buckets (8.75e9 pairs; tens of seconds on 2 CPU cores)'
CREATE TEMP TABLE atoms_sdh AS SELECT gpu_sdh(x, y, z, 500) AS h, gpu_sdh_width(x, y, z, 500) AS w FROM atoms;
SELECT w AS bucket_width_angstrom, (SELECT sum(c) FROM unnest(h) c) AS total_pairs,
       132303::bigint * 132302 / 2 AS expected, h[1:8] AS first_buckets FROM atoms_sdh;
\echo '== angular separations of all 6.96e9 star pairs (SDH over unit vectors, 201 chord buckets of 0.01: chords lie in [0, 2]; tens of seconds on 2 CPU cores)'
CREATE TEMP TABLE stars_sdh AS SELECT gpu_sdh_fixed(x, y, z, 201, 0.01) AS h, 0.01::float8 AS w FROM pts;
SELECT (SELECT sum(c) FROM unnest(h) c) AS pairs_counted, 117955::bigint * 117954 / 2 AS all_pairs FROM stars_sdh;
\echo '== pairs closer than 0.5 degree, per arcminute of separation'
CREATE TEMP TABLE stars_close AS
  SELECT floor(degrees(2 * asin(dist / 2)) * 60)::int AS arcmin, count(*) AS pairs
    FROM gpu_simjoin('pts', 0.0087265) GROUP BY 1 ORDER BY 1;
SELECT sum(pairs) AS pairs, (SELECT pairs FROM stars_close WHERE arcmin = 0) AS within_1_arcmin FROM stars_close;
\echo '== pair count within 3 Angstrom, 1,000,000 atoms'
SELECT gpu_pair_count(x, y, z, 3.0) AS pairs_within_3A FROM atoms_big;
\echo '== similarity self-join of 1,000,000 atoms within 1.2 Angstrom (O-H bonds)'
SELECT count(*) AS pairs FROM gpu_simjoin('atoms_big', 1.2);
\if :run_big
\echo '== spatial distance histogram of 1,000,000 atoms, 500 buckets'
SELECT (SELECT sum(c) FROM unnest(h) c) AS total_pairs, h[1:6] AS first_buckets
  FROM (SELECT gpu_sdh(x, y, z, 500) AS h FROM atoms_big) s;
\else
\echo '(1,000,000-atom SDH skipped on the CPU engine; DEMO_FULL=1 runs it)'
\endif
\timing off

\echo
\echo '== cross-checks against plain SQL (gpu2bs.precision = float8: results must be equal)'
SET gpu2bs.precision = float8;
CREATE TEMP VIEW pts_sub AS SELECT * FROM pts WHERE id % 25 = 0;
CREATE TEMP TABLE j_gpu AS SELECT id1, id2 FROM gpu_simjoin('pts_sub', 0.05);
CREATE TEMP TABLE j_sql AS SELECT a.id AS id1, b.id AS id2 FROM pts_sub a JOIN pts_sub b
  ON a.id < b.id AND (a.x - b.x)^2 + (a.y - b.y)^2 + (a.z - b.z)^2 <= 0.05^2;
SELECT (SELECT count(*) FROM pts_sub) AS stars, (SELECT count(*) FROM j_gpu) AS gpu_simjoin_pairs,
       (SELECT count(*) FROM j_sql) AS sql_pairs,
       (SELECT count(*) FROM (SELECT * FROM j_gpu EXCEPT SELECT * FROM j_sql) d) AS only_gpu2bs,
       (SELECT count(*) FROM (SELECT * FROM j_sql EXCEPT SELECT * FROM j_gpu) d) AS only_sql;
CREATE TEMP VIEW atoms_sub AS SELECT * FROM atoms WHERE id <= 2500;
SELECT gpu_sdh_width(x, y, z, 50) AS w FROM atoms_sub \gset
WITH d AS (SELECT sqrt((a.x - b.x)^2 + (a.y - b.y)^2 + (a.z - b.z)^2) AS d
             FROM atoms_sub a JOIN atoms_sub b ON a.id < b.id),
     k AS (SELECT least(floor(d / :w)::int, 49) AS k FROM d),
     sql AS (SELECT array_agg(coalesce(c, 0) ORDER BY b) AS h
               FROM generate_series(0, 49) b LEFT JOIN (SELECT k, count(*) c FROM k GROUP BY k) x ON x.k = b)
SELECT (SELECT gpu_sdh(x, y, z, 50) FROM atoms_sub) = sql.h AS sdh_equal_to_sql, sql.h[1:6] AS first_buckets FROM sql;
SELECT (SELECT gpu_pair_count(x, y, z, 2.5) FROM atoms_sub) AS gpu_pair_count,
       (SELECT count(*) FROM atoms_sub a JOIN atoms_sub b ON a.id < b.id
         AND (a.x - b.x)^2 + (a.y - b.y)^2 + (a.z - b.z)^2 <= 2.5^2) AS sql_count;
RESET gpu2bs.precision;
\echo
\echo '== where the time of the last call went'
SELECT name, value FROM gpu2bs_info() WHERE name LIKE 'last%';

-- histograms for the plots (scripts/demo_plots.py)
\copy (SELECT k - 1 AS bucket, w AS width, h[k] AS pairs FROM atoms_sdh, generate_series(1, 500) k ORDER BY k) TO 'build/demo/atoms_sdh.csv' WITH (FORMAT csv, HEADER true)
\copy (SELECT k - 1 AS bucket, w AS width, h[k] AS pairs FROM stars_sdh, generate_series(1, 201) k ORDER BY k) TO 'build/demo/stars_sdh.csv' WITH (FORMAT csv, HEADER true)
\copy (SELECT g AS arcmin, coalesce(pairs, 0) AS pairs FROM generate_series(0, 30) g LEFT JOIN stars_close ON arcmin = g ORDER BY g) TO 'build/demo/stars_close.csv' WITH (FORMAT csv, HEADER true)
