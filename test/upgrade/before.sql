-- Objects a user builds on gpu2bs 0.1 before upgrading: a table, a view over gpu_simjoin, SQL
-- functions calling gpu_sdh and gpu_pair_count, a materialized view over gpu_sdh_width.
CREATE SCHEMA upg;
SELECT setseed(0.25);
CREATE TABLE upg.pts (id int PRIMARY KEY, x float8, y float8, z float8);
INSERT INTO upg.pts SELECT g, floor(random() * 40) / 4, floor(random() * 40) / 4, floor(random() * 40) / 4
  FROM generate_series(1, 500) g;
CREATE VIEW upg.close_pairs AS SELECT id1, id2, dist FROM gpu_simjoin('upg.pts', 1.0);
CREATE FUNCTION upg.histogram(n int) RETURNS bigint[] LANGUAGE sql STABLE
  AS 'SELECT gpu_sdh(x, y, z, n) FROM upg.pts';
CREATE FUNCTION upg.pairs_within(r float8) RETURNS bigint LANGUAGE sql STABLE
  BEGIN ATOMIC SELECT gpu_pair_count(x, y, z, r) FROM upg.pts; END;
CREATE MATERIALIZED VIEW upg.width AS SELECT gpu_sdh_width(x, y, z, 16) AS w FROM upg.pts;
