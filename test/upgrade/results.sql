-- What the objects of before.sql return (compared before and after the upgrade).
SELECT count(*) AS pairs, sum(id1 * 1000 + id2) AS id_sum, round(sum(dist)::numeric, 6) AS dist_sum
  FROM upg.close_pairs;
SELECT upg.histogram(16);
SELECT upg.pairs_within(2.0);
REFRESH MATERIALIZED VIEW upg.width;
SELECT w FROM upg.width;
SELECT (SELECT gpu_sdh(x, y, z, 16, (SELECT w FROM upg.width)) FROM upg.pts) = upg.histogram(16) AS same_histogram;
