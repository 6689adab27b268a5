-- gpu2bs 0.3 -> 0.4 upgrade: run by ALTER EXTENSION gpu2bs UPDATE TO '0.4'.
-- Every object 0.4 adds or changes is created here in the same form as in gpu2bs--0.4.sql, so
-- that a fresh 0.4 install and an upgraded 0.3 install are equal.
\echo Use "ALTER EXTENSION gpu2bs UPDATE TO '0.4'" to load this file. \quit

-- cc17 begin
-- gpu_dbscan's description: both engines run the grid passes themselves (the GPU on the device).
COMMENT ON FUNCTION gpu_dbscan(regclass, float8, int4, text[], text) IS
'DBSCAN clustering (Ester, Kriegel, Sander and Xu, KDD 1996) of the points of rel, with the meaning of PostGIS ST_ClusterDBSCAN(geom, eps, minpoints): one row (id bigint, cluster int4) per point read, in ascending id order. A point is a core point when at least minpoints points (itself included; minpoints >= 1) lie within Euclidean distance <= eps (inclusive, coordinate units, as ST_DWithin; computed in gpu2bs.precision exactly as gpu_simjoin keeps pairs); clusters are the connected components of the core points linked by pairs within eps, numbered 0, 1, ... in ascending order of the smallest id among their points; a border point (not core, within eps of a core point) joins the cluster of its nearest core point (ties by the smaller core id), a deterministic rule where ST_ClusterDBSCAN''s depends on row order; every other point is noise (cluster NULL). Points are read exactly as gpu_simjoin(rel, eps, coords, id) reads them: coordinates named in coords (2 to 6 numeric columns, or one PostGIS geometry(Point) / geometry(PointZ) column), else every float8 column except the key; key: the named integer column, else the single-column integer primary key, else an integer column named id (keys should be unique: equal keys are separate points whose ties follow read order). Rows with a NULL key or coordinate are skipped (no row returned); no rows for a NULL rel, eps or minpoints. Errors: eps <= 0 or NaN, minpoints < 1, NaN/infinite coordinates, mixed SRIDs, non-point geometries, geography columns (22023); missing relation (42P01) or column (42703); non-numeric coordinate or non-integer key column (42804); not a table or view (42809); no SELECT privilege (42501); more than 2^32 - 1 points or 2^31 - 1 clusters (54000); the relation rewritten after this REPEATABLE READ transaction''s snapshot (40001). Query cancel is honoured while the join runs. Method: the grid similarity self-join (Gowanlock and Karsin 2018, Gallet and Gowanlock 2019: cells of side >= eps, a point''s neighbours in its cell and the 3^d adjacent cells), no pair stored. Both engines, with no pair handed over (GPU: on the device, one thread per point; CPU: on gpu2bs.cpu_threads workers): neighbour counts and core flags, then a union-find of the core points (ECL-CC, Jaiganesh and Burtscher 2018: the larger root hooked under the smaller by compare-and-swap, path halving, pointer jumping) and the nearest core point of every other point; only core flags and one cluster representative per point are kept (the GPU copies back 5 bytes a point); the CPU computes distances with its vectorized join kernels. Both engines give the same labels.';
-- cc17 end

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

-- rdf17 begin
------------------------------------------------------------------------------------------------
-- Radial distribution function (2-BS Type-II over one or two relations, periodic boxes)
------------------------------------------------------------------------------------------------

CREATE FUNCTION gpu_rdf(a regclass, b regclass, nbuckets int4, r_max float8, box float8[] DEFAULT NULL, coords text[] DEFAULT NULL)
  RETURNS TABLE(r_lo float8, r_hi float8, pairs bigint, g float8)
  AS 'MODULE_PATHNAME', 'gpu2bs_rdf' LANGUAGE C STABLE PARALLEL RESTRICTED ROWS 500;
COMMENT ON FUNCTION gpu_rdf(regclass, regclass, int4, float8, float8[], text[]) IS
'Radial distribution function g(r) of the points of a around the points of b: nbuckets rows (r_lo, r_hi, pairs, g) for the buckets [k*w, (k+1)*w), w = r_max / nbuckets (coordinate units), in ascending r. a = b (the same relation) is the self form: pairs counts unordered pairs of distinct rows; otherwise every (row of a, row of b). A pair counts in bucket floor(d / w) computed as gpu_sdh_fixed(rel, nbuckets, w) does in gpu2bs.precision (pairs with d >= r_max are not counted). box: one length per coordinate (0 or NULL: that axis is not periodic); on a periodic axis of length L coordinates are wrapped into [0, L) in float8 and the difference is the minimum image (d = xa - xb; d - L when d > L/2, d + L when d < -L/2, each one rounded operation). g = pairs / (N_a * N_b / V * S) for two relations and g = 2 * pairs / (N * (N - 1) / V * S) for the self form, S the volume of the shell between r_lo and r_hi (4/3 pi (r_hi^3 - r_lo^3) in 3-D, pi (r_hi^2 - r_lo^2) in 2-D, the D-ball shell otherwise), V the product over axes of the periodic length or, on a non-periodic axis, the extent of the bounding box of a and b: freud density.RDF(normalization_mode=''finite_size'') and MDAnalysis InterRDF(exclusion_block=(1, 1)) for the self form, both with their defaults for two relations. g is NULL where the denominator is 0 (fewer than 2 points, V = 0). Coordinates as gpu_sdh(rel, nbuckets, coords) reads them (2 to 6 named numeric columns or one PostGIS point column, else every float8 column); rows with a NULL coordinate are skipped; no rows for a NULL a, b, nbuckets or r_max. Errors: nbuckets outside 1..1048576, r_max <= 0, NaN or infinite, r_max greater than half the shortest periodic length, box with a number of elements other than the coordinates, a negative, NaN or infinite length, or more than one dimension, relations with different numbers of coordinates or SRIDs, NaN/infinite coordinates (22023); missing relation (42P01) or column (42703); non-numeric column (42804); no SELECT privilege (42501). Method: 2-BS framework Type-II (histogram output privatized per block) over cell lists of side >= r_max, each pair examined once (self: the own cell and the neighbour cells of larger id).';
-- rdf17 end
