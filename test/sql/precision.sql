--
-- gpu2bs.precision: float4 (default) rounds coordinates to float4 and computes in float4;
-- float8 computes in float8. On data where no pair lies within float4 rounding of an edge
-- both agree with the exact answer; elsewhere they may differ only on such pairs.
--
-- in a new session, a SET made before the library is loaded applies once it loads
SET gpu2bs.precision = float8;
SELECT value FROM gpu2bs_info() WHERE name = 'precision';
SHOW gpu2bs.precision;
RESET gpu2bs.precision;
SHOW gpu2bs.precision;
SELECT value FROM gpu2bs_info() WHERE name = 'precision';
SET gpu2bs.precision = float8;

-- lattice data (exact in float4): identical results in both precisions
CREATE TEMP TABLE p8 AS SELECT
  (SELECT gpu_sdh(x, y, z, 10) FROM pts3) AS sdh, (SELECT gpu_sdh(x, y, z, 20, 0.73) FROM pts3) AS sdhw,
  (SELECT gpu_sdh(x, y, 12) FROM pts2) AS sdh2, (SELECT gpu_pair_count(x, y, z, 2.5) FROM pts3) AS pc,
  (SELECT gpu_sdh_width(x, y, z, 10) FROM pts3) AS w;
CREATE TEMP TABLE j8 AS SELECT * FROM gpu_simjoin('pts3', 2.1);
SET gpu2bs.precision = float4;
SELECT sdh = (SELECT gpu_sdh(x, y, z, 10) FROM pts3) AS sdh, sdhw = (SELECT gpu_sdh(x, y, z, 20, 0.73) FROM pts3) AS sdhw,
       sdh2 = (SELECT gpu_sdh(x, y, 12) FROM pts2) AS sdh2, pc = (SELECT gpu_pair_count(x, y, z, 2.5) FROM pts3) AS pc,
       w = (SELECT gpu_sdh_width(x, y, z, 10) FROM pts3) AS w_is_float8_in_both
FROM p8;
SELECT * FROM cmp_pairs($$SELECT id1, id2 FROM gpu_simjoin('pts3', 2.1)$$, $$SELECT id1, id2 FROM j8$$);
-- the float4 distance is the float8 one rounded to float4
SELECT count(*) AS n, count(*) FILTER (WHERE g.dist = j8.dist::float4::float8) AS rounded,
       count(*) FILTER (WHERE g.dist = j8.dist) AS exact_anyway
FROM gpu_simjoin('pts3', 2.1) g JOIN j8 USING (id1, id2);

-- continuous random data: float4 may differ from float8 only on pairs whose float8 distance
-- is within float4 rounding (here 1e-6) of eps, r or a bucket edge; count them
SET gpu2bs.precision = float8;
CREATE TEMP TABLE c8 AS SELECT gpu_pair_count(x, y, z, 0.2) AS pc, gpu_sdh(x, y, z, 16) AS sdh,
  gpu_sdh(x, y, z, 30, 0.05) AS sdhw, gpu_sdh_width(x, y, z, 16) AS w FROM cloud3;
CREATE TEMP TABLE cj8 AS SELECT * FROM gpu_simjoin('cloud3', 0.2);
SET gpu2bs.precision = float4;
CREATE TEMP TABLE c4 AS SELECT gpu_pair_count(x, y, z, 0.2) AS pc, gpu_sdh(x, y, z, 16) AS sdh,
  gpu_sdh(x, y, z, 30, 0.05) AS sdhw FROM cloud3;
CREATE TEMP TABLE cj4 AS SELECT * FROM gpu_simjoin('cloud3', 0.2);
CREATE TEMP TABLE cd AS SELECT d FROM ref_dists('cloud3') d;
SELECT abs(c4.pc - c8.pc) <= (SELECT count(*) FROM cd WHERE abs(d - 0.2) < 1e-6) AS pair_count_ok,
       (SELECT sum(abs(a - b)) FROM unnest(c4.sdh, c8.sdh) u(a, b))
         <= 2 * (SELECT count(*) FROM cd WHERE abs(d / c8.w - round(d / c8.w)) * c8.w < 1e-6 AND round(d / c8.w) BETWEEN 1 AND 15)
         AS sdh_ok,
       (SELECT sum(abs(a - b)) FROM unnest(c4.sdhw, c8.sdhw) u(a, b))
         <= 2 * (SELECT count(*) FROM cd WHERE abs(d / 0.05 - round(d / 0.05)) * 0.05 < 1e-6 AND round(d / 0.05) BETWEEN 1 AND 30)
         AS sdh_explicit_ok
FROM c4, c8;
SELECT (SELECT count(*) FROM (SELECT id1, id2 FROM cj4 EXCEPT SELECT id1, id2 FROM cj8) a)
     + (SELECT count(*) FROM (SELECT id1, id2 FROM cj8 EXCEPT SELECT id1, id2 FROM cj4) b)
       <= (SELECT count(*) FROM cd WHERE abs(d - 0.2) < 1e-6) AS simjoin_ok,
       (SELECT max(abs(cj4.dist - cj8.dist)) FROM cj4 JOIN cj8 USING (id1, id2)) < 1e-6 AS dist_close,
       (SELECT count(*) FROM cj4 WHERE dist <> dist::float4::float8) AS dist_not_float4;

-- a deterministic difference: coordinates that float4 cannot tell apart. Near 1e6 float4
-- steps are 0.0625, so 1000000.03 rounds to 1000000; float8 keeps the 0.03.
CREATE TEMP TABLE close_pair (id int PRIMARY KEY, x float8, y float8);
INSERT INTO close_pair VALUES (1, 1000000, 0), (2, 1000000.03, 0), (3, 1000000.5, 0);
SET gpu2bs.precision = float4;
SELECT gpu_pair_count(x, y, 0.01) AS pc_r001, gpu_pair_count(x, y, 0) AS pc_r0,
       gpu_sdh_fixed(x, y, 2, 0.25) AS sdh FROM close_pair;
SELECT * FROM gpu_simjoin('close_pair', 0.01) ORDER BY id1, id2;
SELECT * FROM gpu_simjoin('close_pair', 0.6) ORDER BY id1, id2;
SET gpu2bs.precision = float8;
SELECT gpu_pair_count(x, y, 0.01) AS pc_r001, gpu_pair_count(x, y, 0) AS pc_r0,
       gpu_sdh_fixed(x, y, 2, 0.25) AS sdh FROM close_pair;
SELECT * FROM gpu_simjoin('close_pair', 0.01) ORDER BY id1, id2;
SELECT id1, id2, abs(dist - 0.03) < 1e-9 AS is_003 FROM gpu_simjoin('close_pair', 0.04) ORDER BY id1, id2;

-- eps, r and widths are float8 parameters rounded once: an eps or r equal to an exact
-- distance includes the pair in both precisions (3-4-5 triangle scaled by 0.5: exact)
CREATE TEMP TABLE tri (id int PRIMARY KEY, x float8, y float8);
INSERT INTO tri VALUES (1, 0, 0), (2, 1.5, 0), (3, 0, 2);
SET gpu2bs.precision = float4;
SELECT gpu_pair_count(x, y, 1.5) AS r15, gpu_pair_count(x, y, 2) AS r2, gpu_pair_count(x, y, 2.5) AS r25,
       gpu_sdh_fixed(x, y, 6, 0.5) AS sdh FROM tri;
SELECT * FROM gpu_simjoin('tri', 2.5) ORDER BY id1, id2;
SET gpu2bs.precision = float8;
SELECT gpu_pair_count(x, y, 1.5) AS r15, gpu_pair_count(x, y, 2) AS r2, gpu_pair_count(x, y, 2.5) AS r25,
       gpu_sdh_fixed(x, y, 6, 0.5) AS sdh FROM tri;
SELECT * FROM gpu_simjoin('tri', 2.5) ORDER BY id1, id2;

RESET gpu2bs.precision;

-- gpu2bs_info(): the engine-independent rows, and the last function run in this session
SELECT name, value FROM gpu2bs_info() WHERE name IN ('precision', 'last_function') ORDER BY name;
-- the library's version is the installed extension's (default_version of gpu2bs.control)
SELECT value = (SELECT extversion FROM pg_extension WHERE extname = 'gpu2bs') AS library_matches_extension
FROM gpu2bs_info() WHERE name = 'version';
SELECT count(*) AS n FROM gpu2bs_info() WHERE name IN ('engine', 'engine_reason', 'cpu_threads');
SELECT gpu_pair_count(x, y, z, 1) FROM pts3;
SELECT value FROM gpu2bs_info() WHERE name = 'last_function';
