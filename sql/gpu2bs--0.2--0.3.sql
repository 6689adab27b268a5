-- gpu2bs 0.2 -> 0.3 upgrade: run by ALTER EXTENSION gpu2bs UPDATE TO '0.3'.
-- Every object that 0.3 adds or changes relative to 0.2 is created or replaced here, in the same
-- form as in gpu2bs--0.3.sql, so that a fresh 0.3 install and an upgraded 0.2 install are equal.
\echo Use "ALTER EXTENSION gpu2bs UPDATE TO '0.3'" to load this file. \quit

-- gpu_dbscan
------------------------------------------------------------------------------------------------
-- DBSCAN clustering on the similarity self-join
------------------------------------------------------------------------------------------------

CREATE FUNCTION gpu_dbscan(rel regclass, eps float8, minpoints int4, coords text[] DEFAULT NULL, id text DEFAULT NULL)
  RETURNS TABLE(id bigint, cluster int4)
  AS 'MODULE_PATHNAME', 'gpu2bs_dbscan' LANGUAGE C STABLE PARALLEL RESTRICTED ROWS 100000;
COMMENT ON FUNCTION gpu_dbscan(regclass, float8, int4, text[], text) IS
'DBSCAN clustering (Ester, Kriegel, Sander and Xu, KDD 1996) of the points of rel, with the meaning of PostGIS ST_ClusterDBSCAN(geom, eps, minpoints): one row (id bigint, cluster int4) per point read, in ascending id order. A point is a core point when at least minpoints points (itself included; minpoints >= 1) lie within Euclidean distance <= eps (inclusive, coordinate units, as ST_DWithin; computed in gpu2bs.precision exactly as gpu_simjoin keeps pairs); clusters are the connected components of the core points linked by pairs within eps, numbered 0, 1, ... in ascending order of the smallest id among their points; a border point (not core, within eps of a core point) joins the cluster of its nearest core point (ties by the smaller core id), a deterministic rule where ST_ClusterDBSCAN''s depends on row order; every other point is noise (cluster NULL). Points are read exactly as gpu_simjoin(rel, eps, coords, id) reads them: coordinates named in coords (2 to 6 numeric columns, or one PostGIS geometry(Point) / geometry(PointZ) column), else every float8 column except the key; key: the named integer column, else the single-column integer primary key, else an integer column named id (keys should be unique: equal keys are separate points whose ties follow read order). Rows with a NULL key or coordinate are skipped (no row returned); no rows for a NULL rel, eps or minpoints. Errors: eps <= 0 or NaN, minpoints < 1, NaN/infinite coordinates, mixed SRIDs, non-point geometries (22023); missing relation (42P01) or column (42703); non-numeric column (42804); not a table or view (42809); no SELECT privilege (42501); more than 2^32 - 1 points (54000); the relation rewritten after this REPEATABLE READ transaction''s snapshot (40001). Query cancel is honoured while the join runs. Method: grid similarity self-join (the similarity-join papers: grid of cells of side >= eps, unidirectional cell pattern) run twice, never storing pairs: neighbour counts (both ends of each pair; on the GPU the per-point Group reduction of the join kernel), then a union-find (union by rank, path halving) over the core-core pairs and the nearest core point of every other point, on the host, O(n) memory.';
-- end gpu_dbscan
