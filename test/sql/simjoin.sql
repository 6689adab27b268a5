--
-- gpu_simjoin: distance similarity join, checked against the SQL brute force (ref_simjoin,
-- cmp_pairs in setup: counts, and the pairs only one side has, as multisets, must be 0).
-- Lattice tables: squared distances are exact, and every eps used here lies strictly between
-- two squared-distance steps (multiples of 0.25), so float4 and float8 must both match exactly.
--
SET gpu2bs.precision = float8;

-- self-join, default key (the primary key) and default coordinates (every float8 column)
SELECT eps, c.* FROM (VALUES (0.5), (1.1), (2.1), (3.3)) v(eps),
  cmp_pairs(format('SELECT id1, id2 FROM gpu_simjoin(%L, %s)', 'pts3', eps),
            format('SELECT id1, id2 FROM ref_simjoin(%L, NULL, %s, %L)', 'pts3', eps, '{x,y,z}')) c
ORDER BY eps;
SET gpu2bs.precision = float4;
SELECT eps, c.* FROM (VALUES (0.5), (1.1), (2.1), (3.3)) v(eps),
  cmp_pairs(format('SELECT id1, id2 FROM gpu_simjoin(%L, %s)', 'pts3', eps),
            format('SELECT id1, id2 FROM ref_simjoin(%L, NULL, %s, %L)', 'pts3', eps, '{x,y,z}')) c
ORDER BY eps;
SET gpu2bs.precision = float8;

-- id1 < id2 always; dist is the distance (float8: to 1e-12; here exactly, distances of the
-- lattice are exact); the first pairs in order
SELECT count(*) AS n, count(*) FILTER (WHERE g.id1 >= g.id2) AS not_ordered,
       count(*) FILTER (WHERE g.dist <> w.dist) AS dist_differs
FROM gpu_simjoin('pts3', 2.1) g JOIN ref_simjoin('pts3', NULL, 2.1, '{x,y,z}') w USING (id1, id2);
SELECT * FROM gpu_simjoin('pts3', 1.1) ORDER BY id1, id2 LIMIT 12;
-- float4: dist is the float4 square root of the (exact) squared distance
SET gpu2bs.precision = float4;
SELECT count(*) AS n, count(*) FILTER (WHERE g.dist <> w.dist::float4::float8) AS dist_differs
FROM gpu_simjoin('pts3', 2.1) g JOIN ref_simjoin('pts3', NULL, 2.1, '{x,y,z}') w USING (id1, id2);
SET gpu2bs.precision = float8;

-- continuous random points: no pair within 1e-9 of eps, dist within 1e-12
SELECT eps, c.*,
       (SELECT count(*) FROM ref_dists('cloud3') d WHERE abs(d - eps) < 1e-9 * eps) AS near_eps
FROM (VALUES (0.05), (0.15)) v(eps),
  cmp_pairs(format('SELECT id1, id2 FROM gpu_simjoin(%L, %s)', 'cloud3', eps),
            format('SELECT id1, id2 FROM ref_simjoin(%L, NULL, %s, %L)', 'cloud3', eps, '{x,y,z}')) c
ORDER BY eps;
SELECT count(*) AS n, count(*) FILTER (WHERE g.id1 >= g.id2) AS not_ordered,
       max(abs(g.dist - w.dist)) < 1e-12 AS dist_ok
FROM gpu_simjoin('cloud3', 0.15) g JOIN ref_simjoin('cloud3', NULL, 0.15, '{x,y,z}') w USING (id1, id2);

-- 2-D table (bigint key)
SELECT * FROM cmp_pairs($$SELECT id1, id2 FROM gpu_simjoin('pts2', 1.6)$$,
                        $$SELECT id1, id2 FROM ref_simjoin('pts2', NULL, 1.6, '{x,y}')$$);

-- named coordinates: a 2-D join of 3-D rows, in any column order
SELECT * FROM cmp_pairs($$SELECT id1, id2 FROM gpu_simjoin('pts3', 1.1, coords => '{x,y}')$$,
                        $$SELECT id1, id2 FROM ref_simjoin('pts3', NULL, 1.1, '{x,y}')$$);
SELECT * FROM cmp_pairs($$SELECT id1, id2 FROM gpu_simjoin('pts3', 1.1, coords => '{z,x}')$$,
                        $$SELECT id1, id2 FROM ref_simjoin('pts3', NULL, 1.1, '{x,z}')$$);
SELECT * FROM cmp_pairs($$SELECT id1, id2 FROM gpu_simjoin('pts3', 2.1, '{x,y,z}', 'id')$$,
                        $$SELECT id1, id2 FROM gpu_simjoin('pts3', 2.1)$$);

-- NULL keys and NULL coordinates are skipped; the key is the integer column named id
SELECT * FROM cmp_pairs($$SELECT id1, id2 FROM gpu_simjoin('pts3_null', 3.3)$$,
                        $$SELECT id1, id2 FROM ref_simjoin('pts3_null', NULL, 3.3, '{x,y,z}')$$);
-- with 2 coordinates, rows whose only NULL is z take part
SELECT * FROM cmp_pairs($$SELECT id1, id2 FROM gpu_simjoin('pts3_null', 2.1, coords => '{x,y}')$$,
                        $$SELECT id1, id2 FROM ref_simjoin('pts3_null', NULL, 2.1, '{x,y}')$$);

-- the default key is the single-column integer primary key, ahead of a column named id
CREATE TABLE pkrule (k int PRIMARY KEY, id int, x float8, y float8);
INSERT INTO pkrule SELECT id, -id, x, y FROM pts2 WHERE id <= 300;
SELECT * FROM cmp_pairs($$SELECT id1, id2 FROM gpu_simjoin('pkrule', 2.1)$$,
                        $$SELECT id1, id2 FROM ref_simjoin('pkrule', NULL, 2.1, '{x,y}', 'k')$$);
SELECT * FROM cmp_pairs($$SELECT id1, id2 FROM gpu_simjoin('pkrule', 2.1, id => 'id')$$,
                        $$SELECT id1, id2 FROM ref_simjoin('pkrule', NULL, 2.1, '{x,y}', 'id')$$);
SELECT min(id1) > 0 AS primary_key_used FROM gpu_simjoin('pkrule', 2.1);

-- explicit key column: id => 'col' (no primary key and no column named id)
CREATE TABLE stars (star_id bigint, seq int, ra float8, dec float8);
INSERT INTO stars SELECT 1000 - id, id, x, y FROM pts2 WHERE id <= 300;
SELECT * FROM cmp_pairs($$SELECT id1, id2 FROM gpu_simjoin('stars', 2.1, id => 'star_id')$$,
                        $$SELECT id1, id2 FROM ref_simjoin('stars', NULL, 2.1, '{ra,dec}', 'star_id')$$);
SELECT * FROM cmp_pairs($$SELECT id1, id2 FROM gpu_simjoin('stars', 2.1, '{ra,dec}', 'seq')$$,
                        $$SELECT id1, id2 FROM ref_simjoin('stars', NULL, 2.1, '{ra,dec}', 'seq')$$);

-- a view, a temporary table, an unlogged table, a materialized view, a partitioned table and
-- an inheritance parent: all give the pairs of the same rows
CREATE VIEW pts3_v AS SELECT id, x, y, z FROM pts3 WHERE id <= 400;
CREATE TEMP TABLE pts3_t AS SELECT * FROM pts3 WHERE id % 2 = 0;
CREATE UNLOGGED TABLE pts3_u (id int PRIMARY KEY, x float8, y float8, z float8, k int UNIQUE);
INSERT INTO pts3_u SELECT *, 7 * id FROM pts3 WHERE id % 3 <> 0;
CREATE MATERIALIZED VIEW pts3_m AS SELECT id, x, y, z FROM pts3 WHERE id > 100;
CREATE TABLE pts3_p (id int PRIMARY KEY, x float8, y float8, z float8) PARTITION BY RANGE (id);
CREATE TABLE pts3_p1 PARTITION OF pts3_p FOR VALUES FROM (MINVALUE) TO (200);
CREATE TABLE pts3_p2 PARTITION OF pts3_p FOR VALUES FROM (200) TO (450);
CREATE TABLE pts3_p3 PARTITION OF pts3_p FOR VALUES FROM (450) TO (MAXVALUE);
INSERT INTO pts3_p SELECT * FROM pts3;
CREATE TABLE pts3_i (id int, x float8, y float8, z float8);
CREATE TABLE pts3_i1 () INHERITS (pts3_i);
INSERT INTO pts3_i SELECT * FROM pts3 WHERE id <= 300;
INSERT INTO pts3_i1 SELECT * FROM pts3 WHERE id > 300;
SELECT rel, c.* FROM (VALUES ('pts3_v'), ('pts3_t'), ('pts3_u'), ('pts3_m'), ('pts3_p'), ('pts3_i'), ('pts3_i1')) r(rel),
  cmp_pairs(format('SELECT id1, id2 FROM gpu_simjoin(%L, 2.1)', rel),
            format('SELECT id1, id2 FROM ref_simjoin(%L, NULL, 2.1, %L)', rel, '{x,y,z}')) c
ORDER BY rel;
SELECT * FROM cmp_pairs($$SELECT id1, id2 FROM gpu_simjoin('pts3_p', 2.1)$$,
                        $$SELECT id1, id2 FROM gpu_simjoin('pts3', 2.1)$$);
-- an integer column can be the key instead of the primary key
SELECT * FROM cmp_pairs($$SELECT id1, id2 FROM gpu_simjoin('pts3_u', 2.1, id => 'k')$$,
                        $$SELECT id1, id2 FROM ref_simjoin('pts3_u', NULL, 2.1, '{x,y,z}', 'k')$$);

-- quoted mixed-case, schema-qualified names (relation, schema, columns)
CREATE SCHEMA "My Schema";
CREATE TABLE "My Schema"."Pts" ("Key" int PRIMARY KEY, "X" float8, "y Y" float8, "Z""q" float8, note text);
INSERT INTO "My Schema"."Pts" SELECT id, x, y, z, 'p' || id FROM pts3;
SELECT * FROM cmp_pairs($$SELECT id1, id2 FROM gpu_simjoin('"My Schema"."Pts"', 2.1)$$,
                        $$SELECT id1, id2 FROM gpu_simjoin('pts3', 2.1)$$);
SELECT * FROM cmp_pairs($$SELECT id1, id2 FROM gpu_simjoin('"My Schema"."Pts"', 2.1, '{X,"y Y"}', 'Key')$$,
                        $$SELECT id1, id2 FROM gpu_simjoin('pts3', 2.1, '{x,y}')$$);
SELECT * FROM cmp_pairs($$SELECT id1, id2 FROM gpu_simjoin('"My Schema"."Pts"', 2.1, '{X,"Z\"q"}')$$,
                        $$SELECT id1, id2 FROM gpu_simjoin('pts3', 2.1, '{x,z}')$$);

-- integer, numeric and float4 coordinate columns when named (converted to float8); unnamed,
-- only the float8 columns are coordinates
CREATE TABLE mixed (id smallint PRIMARY KEY, a int, b bigint, c smallint, d numeric, e real, f float8, g float8);
INSERT INTO mixed SELECT id, 2 * x, 2 * y, 2 * z, x, y, x, y FROM pts3 WHERE id <= 500;
SELECT * FROM cmp_pairs($$SELECT id1, id2 FROM gpu_simjoin('mixed', 4.2, '{a,b,c}')$$,
                        $$SELECT id1, id2 FROM ref_simjoin('mixed', NULL, 4.2, '{a,b,c}')$$);
SELECT * FROM cmp_pairs($$SELECT id1, id2 FROM gpu_simjoin('mixed', 4.2, '{a,b,c}')$$,
                        $$SELECT id1, id2 FROM gpu_simjoin('pts3', 2.1) WHERE id2 <= 500$$);
SELECT * FROM cmp_pairs($$SELECT id1, id2 FROM gpu_simjoin('mixed', 1.6, '{d,e}')$$,
                        $$SELECT id1, id2 FROM gpu_simjoin('pts3', 1.6, '{x,y}') WHERE id2 <= 500$$);
SELECT * FROM cmp_pairs($$SELECT id1, id2 FROM gpu_simjoin('mixed', 1.6)$$,
                        $$SELECT id1, id2 FROM gpu_simjoin('pts3', 1.6, '{x,y}') WHERE id2 <= 500$$);
SELECT * FROM gpu_simjoin('mixed', 0.6, '{a,d}') ORDER BY id1, id2 LIMIT 5;

-- domains over float8 count as float8 columns, and a domain over an integer type as a key
CREATE DOMAIN nonneg8 AS float8 CHECK (VALUE >= 0);
CREATE DOMAIN key4 AS int CHECK (VALUE > 0);
CREATE TABLE dom3 (id key4 PRIMARY KEY, x nonneg8, y nonneg8, z nonneg8);
INSERT INTO dom3 SELECT * FROM pts3;
SELECT * FROM cmp_pairs($$SELECT id1, id2 FROM gpu_simjoin('dom3', 2.1)$$,
                        $$SELECT id1, id2 FROM gpu_simjoin('pts3', 2.1)$$);
SELECT * FROM cmp_pairs($$SELECT id1, id2 FROM gpu_simjoin('dom3', 2.1, '{x,z}', 'id')$$,
                        $$SELECT id1, id2 FROM gpu_simjoin('pts3', 2.1, '{x,z}')$$);

-- extreme keys, inserted largest first: the self-join still reports id1 < id2
CREATE TABLE bigkeys (id bigint PRIMARY KEY, x float8, y float8);
INSERT INTO bigkeys VALUES (9223372036854775807, 0, 0), (-9223372036854775808, 0, 0.5),
  (0, 0.5, 0), (-1, 10, 10), (1, 10, 10.25), (4294967296, 0.25, 0.25);
SELECT * FROM gpu_simjoin('bigkeys', 0.8) ORDER BY id1, id2;

-- two relations: every (a, b) pair, id1 from a, id2 from b
CREATE TABLE pts3b (id int PRIMARY KEY, x float8, y float8, z float8);
INSERT INTO pts3b SELECT id, x + 0.5, y, z - 0.5 FROM pts3 WHERE id % 2 = 1;
SELECT eps, c.* FROM (VALUES (0.6), (1.6), (2.9)) v(eps),
  cmp_pairs(format('SELECT id1, id2 FROM gpu_simjoin(%L, %L, %s)', 'pts3', 'pts3b', eps),
            format('SELECT id1, id2 FROM ref_simjoin(%L, %L, %s, %L)', 'pts3', 'pts3b', eps, '{x,y,z}')) c
ORDER BY eps;
SELECT * FROM cmp_pairs($$SELECT id1, id2 FROM gpu_simjoin('pts3b', 'pts3', 1.6)$$,
                        $$SELECT id2 AS id1, id1 AS id2 FROM gpu_simjoin('pts3', 'pts3b', 1.6)$$);
-- 2-D: pts2 against the (x, y) projection of pts3
SELECT * FROM cmp_pairs($$SELECT id1, id2 FROM gpu_simjoin('pts2', 'pts3', 1.1, '{x,y}')$$,
                        $$SELECT id1, id2 FROM ref_simjoin('pts2', 'pts3', 1.1, '{x,y}')$$);
SELECT count(*) AS n, count(*) FILTER (WHERE g.dist <> w.dist) AS dist_differs
FROM gpu_simjoin('pts3', 'pts3b', 2.9) g JOIN ref_simjoin('pts3', 'pts3b', 2.9, '{x,y,z}') w USING (id1, id2);
-- a relation joined with itself in the two-relation form: (i, i) at 0 and both orders
SELECT count(*) AS n, count(*) FILTER (WHERE id1 = id2) AS same_row, count(*) FILTER (WHERE id1 < id2) AS lt,
       count(*) FILTER (WHERE id1 > id2) AS gt, (SELECT count(*) FROM gpu_simjoin('pts3', 1.1)) AS self_pairs
FROM gpu_simjoin('pts3', 'pts3', 1.1);
-- an empty side
SELECT count(*) FROM gpu_simjoin('pts3', 'empty3', 'Infinity'::float8);
SELECT count(*) FROM gpu_simjoin('empty3', 'pts3', 'Infinity'::float8);

-- duplicates: pairs at distance 0
SELECT * FROM gpu_simjoin('two3', 0.001);
SELECT count(*) AS zero_dist_pairs FROM gpu_simjoin('pts3', 0.1);
SELECT count(*) FILTER (WHERE dist = 0) AS zero_dist, count(*) AS n FROM gpu_simjoin('pts3', 1.1);

-- eps = Infinity (or huge) on a small table: all N(N-1)/2 pairs
CREATE TEMP TABLE small40 AS SELECT * FROM pts3 WHERE id <= 40;
SELECT count(*) AS n, count(DISTINCT (id1, id2)) AS n_distinct, 40 * 39 / 2 AS want,
       count(*) FILTER (WHERE id1 >= id2) AS not_ordered
FROM gpu_simjoin('small40', 'Infinity');
SELECT * FROM cmp_pairs($$SELECT id1, id2 FROM gpu_simjoin('small40', 'Infinity')$$,
                        $$SELECT a.id AS id1, b.id AS id2 FROM small40 a JOIN small40 b ON a.id < b.id$$);
SELECT count(*) AS n FROM gpu_simjoin('small40', 1e150);
SELECT count(*) AS n FROM gpu_simjoin('same3', 'Infinity');
SELECT count(*) AS n FROM gpu_simjoin('same3', 1e-150);
SELECT count(*) AS n FROM gpu_simjoin('one3', 'Infinity');
SELECT count(*) AS n FROM gpu_simjoin('empty3', 'Infinity');

-- NULL relation or eps: no rows
SELECT count(*) FROM gpu_simjoin(NULL, 1);
SELECT count(*) FROM gpu_simjoin('pts3', NULL);
SELECT count(*) FROM gpu_simjoin('pts3', NULL, 1);

-- gpu2bs.max_result_rows: more pairs than the limit is an error (54000); exactly the limit
-- is not; 0 means no limit
SELECT count(*) FROM gpu_simjoin('pts3', 1.1);
SET gpu2bs.max_result_rows = 86;
SELECT count(*) FROM gpu_simjoin('pts3', 1.1);
SET gpu2bs.max_result_rows = 85;
SELECT sqlstate_of($$SELECT count(*) FROM gpu_simjoin('pts3', 1.1)$$);
SET gpu2bs.max_result_rows = 10;
SELECT sqlstate_of($$SELECT * FROM gpu_simjoin('pts3', 'Infinity')$$);
SELECT sqlstate_of($$SELECT * FROM gpu_simjoin('pts3', 'pts3b', 2.9)$$);
SET gpu2bs.max_result_rows = 0;
SELECT count(*) FROM gpu_simjoin('pts3', 'Infinity');
RESET gpu2bs.max_result_rows;

-- small result pages (64 pairs each: thousands of pages) give the same result
CREATE TEMP TABLE big_pages AS SELECT * FROM gpu_simjoin('pts3', 4.5);
SET gpu2bs.result_page_pairs = 64;
SELECT * FROM cmp_pairs($$SELECT id1, id2 FROM gpu_simjoin('pts3', 4.5)$$, $$SELECT id1, id2 FROM big_pages$$);
SELECT count(*) FROM (SELECT * FROM gpu_simjoin('pts3', 4.5) EXCEPT ALL SELECT * FROM big_pages) d;
SELECT count(*) AS n FROM gpu_simjoin('pts3', 'Infinity');
SELECT * FROM cmp_pairs($$SELECT id1, id2 FROM gpu_simjoin('pts3', 'pts3b', 2.9)$$,
                        $$SELECT id1, id2 FROM ref_simjoin('pts3', 'pts3b', 2.9, '{x,y,z}')$$);
RESET gpu2bs.result_page_pairs;

-- several calls in one query (LATERAL), and in the select list
SELECT r.rel, count(j.*) AS n FROM (VALUES ('pts3'::regclass), ('pts2'), ('two3'), ('empty3')) r(rel)
  LEFT JOIN LATERAL gpu_simjoin(r.rel, 1.1) j ON true GROUP BY r.rel ORDER BY r.rel::text;
SELECT (gpu_simjoin('two3', 1)).*;
-- the join sees the transaction's own uncommitted rows
BEGIN;
INSERT INTO two3 VALUES (3, 0.1, 0.2, 0.35);
SELECT * FROM gpu_simjoin('two3', 0.06) ORDER BY id1, id2;
ROLLBACK;
SELECT * FROM gpu_simjoin('two3', 0.06) ORDER BY id1, id2;

RESET gpu2bs.precision;
