-- gpu2bs 0.1 -> 0.2 upgrade: run by ALTER EXTENSION gpu2bs UPDATE TO '0.2'.
-- Every object that 0.2 adds or changes relative to 0.1 is created or replaced here, in the same
-- form as in gpu2bs--0.2.sql, so that a fresh 0.2 install and an upgraded 0.1 install are equal.
\echo Use "ALTER EXTENSION gpu2bs UPDATE TO '0.2'" to load this file. \quit

-- Explicit bucket width under its own name, gpu_sdh_fixed: gpu_sdh(x, y, nbuckets, width) and
-- gpu_sdh(x, y, z, nbuckets) both took four arguments, and a call with integer literals
-- (gpu_sdh(x, y, 0, 10)) matched both (42725). The 2-D explicit-width gpu_sdh is dropped; a view
-- or function that uses it stops this update with a dependency error: re-create it with
-- gpu_sdh_fixed first (docs/upgrading.md).
CREATE AGGREGATE gpu_sdh_fixed(x float8, y float8, z float8, nbuckets int4, width float8) (
  SFUNC = gpu2bs_sdh3w_sfunc, STYPE = internal, FINALFUNC = gpu2bs_sdh_final,
  COMBINEFUNC = gpu2bs_points_combine, SERIALFUNC = gpu2bs_points_serialize,
  DESERIALFUNC = gpu2bs_points_deserialize, PARALLEL = SAFE);
CREATE AGGREGATE gpu_sdh_fixed(x float8, y float8, nbuckets int4, width float8) (
  SFUNC = gpu2bs_sdh2w_sfunc, STYPE = internal, FINALFUNC = gpu2bs_sdh_final,
  COMBINEFUNC = gpu2bs_points_combine, SERIALFUNC = gpu2bs_points_serialize,
  DESERIALFUNC = gpu2bs_points_deserialize, PARALLEL = SAFE);
DROP AGGREGATE gpu_sdh(float8, float8, int4, float8);
COMMENT ON FUNCTION gpu2bs_sdh3w_sfunc(internal, float8, float8, float8, int4, float8) IS 'transition function of gpu_sdh_fixed(x, y, z, nbuckets, width); internal';
COMMENT ON FUNCTION gpu2bs_sdh2w_sfunc(internal, float8, float8, int4, float8) IS 'transition function of gpu_sdh_fixed(x, y, nbuckets, width); internal';
COMMENT ON AGGREGATE gpu_sdh(float8, float8, float8, int4, float8) IS
'Spatial distance histogram of 3-D points with explicit bucket width: the same as gpu_sdh_fixed(x, y, z, nbuckets, width), kept under this name for compatibility (a five-argument call is never ambiguous).';
COMMENT ON AGGREGATE gpu_sdh_fixed(float8, float8, float8, int4, float8) IS
'Spatial distance histogram of 3-D points with explicit bucket width (same unit as the coordinates): bigint[nbuckets], element k+1 counts pairs with d in [k*width, (k+1)*width); pairs with d >= nbuckets*width are not counted. Rows with a NULL argument are skipped; NaN or infinite coordinates raise 22023; nbuckets must be 1..1048576 and width positive and finite (22023). NULL for no rows. Method: 2-BS framework, Type-II.';
COMMENT ON AGGREGATE gpu_sdh_fixed(float8, float8, int4, float8) IS
'Spatial distance histogram of 2-D points (x, y) with explicit bucket width: as gpu_sdh_fixed(x, y, z, nbuckets, width) in the plane.';

COMMENT ON FUNCTION gpu2bs_info() IS
'Which engine answers now and why (gpu2bs.device), CPU instruction set and threads, precision, whether the library was built with CUDA, the bytes the backend''s C allocator has in use, the GPU (name, SMs, memory in use and free, driver and runtime versions) when one is usable, and the timings of this session''s last gpu2bs call.';

-- Relation forms of gpu_sdh, gpu_sdh_fixed and gpu_pair_count (new in 0.2).
CREATE FUNCTION gpu_sdh(rel regclass, nbuckets int4, coords text[] DEFAULT NULL)
  RETURNS bigint[]
  AS 'MODULE_PATHNAME', 'gpu2bs_sdh_rel' LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpu_sdh(regclass, int4, text[]) IS
'Spatial distance histogram of the rows of rel, read as gpu_simjoin reads them (one query as the calling user, no per-row aggregate calls): bigint[nbuckets], element k+1 counts the unordered pairs with distance d in [k*w, (k+1)*w), w = bounding-box diagonal / nbuckets; a pair at d = diagonal counts in the last bucket; as gpu_sdh(x, y, z, nbuckets) over the same rows. Coordinates: the columns named in coords (2 to 6, any numeric type), else every float8 column in column order. Rows with a NULL coordinate are skipped; NULL for no rows or a NULL rel or nbuckets. Errors: nbuckets outside 1..1048576, NaN/infinite coordinates, fewer than 2 or more than 6 coordinates (22023); missing relation (42P01) or column (42703); non-numeric column (42804); not a table or view (42809); no SELECT privilege (42501). Method: 2-BS framework (Type-II output, tiling, output privatization).';
CREATE FUNCTION gpu_sdh(rel text, nbuckets int4, coords text DEFAULT NULL)
  RETURNS bigint[]
  AS $$ SELECT @extschema@.gpu_sdh(rel::regclass, nbuckets, coords::text[]) $$ LANGUAGE sql STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpu_sdh(text, int4, text) IS
'The relation named by a string (gpu_sdh(rel regclass, nbuckets, coords) with rel read as a regclass, schema-qualified and quoted names as in ''s."T"''::regclass, and coords as a text[] literal such as ''{x,y}''). It makes calls with untyped literals, such as gpu_sdh(''t'', ..., ''{x,y}''), choose the relation form: string-typed parameters are the ones PostgreSQL prefers for untyped literals, where the float8 aggregate of the same name would otherwise be chosen and fail reading ''t'' as a number. Errors as the regclass form; a missing relation is 42P01.';
CREATE FUNCTION gpu_sdh_fixed(rel regclass, nbuckets int4, width float8, coords text[] DEFAULT NULL)
  RETURNS bigint[]
  AS 'MODULE_PATHNAME', 'gpu2bs_sdh_fixed_rel' LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpu_sdh_fixed(regclass, int4, float8, text[]) IS
'Spatial distance histogram of the rows of rel with explicit bucket width (coordinate units, positive and finite), read as gpu_simjoin reads them: bigint[nbuckets], element k+1 counts pairs with d in [k*width, (k+1)*width); pairs with d >= nbuckets*width are not counted; as gpu_sdh_fixed(x, y, z, nbuckets, width) over the same rows. Coordinates, rows and errors as gpu_sdh(rel, nbuckets, coords); a bad width is 22023; NULL for a NULL width. Method: 2-BS framework, Type-II.';
CREATE FUNCTION gpu_sdh_fixed(rel text, nbuckets int4, width float8, coords text DEFAULT NULL)
  RETURNS bigint[]
  AS $$ SELECT @extschema@.gpu_sdh_fixed(rel::regclass, nbuckets, width, coords::text[]) $$ LANGUAGE sql STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpu_sdh_fixed(text, int4, float8, text) IS
'The relation named by a string (gpu_sdh_fixed(rel regclass, nbuckets, width, coords) with rel read as a regclass, schema-qualified and quoted names as in ''s."T"''::regclass, and coords as a text[] literal such as ''{x,y}''). It makes calls with untyped literals, such as gpu_sdh_fixed(''t'', ..., ''{x,y}''), choose the relation form: string-typed parameters are the ones PostgreSQL prefers for untyped literals, where the float8 aggregate of the same name would otherwise be chosen and fail reading ''t'' as a number. Errors as the regclass form; a missing relation is 42P01.';

CREATE FUNCTION gpu_pair_count(rel regclass, r float8, coords text[] DEFAULT NULL)
  RETURNS bigint
  AS 'MODULE_PATHNAME', 'gpu2bs_pair_count_rel' LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpu_pair_count(regclass, float8, text[]) IS
'Two-point correlation count of the rows of rel, read as gpu_simjoin reads them (one query as the calling user, no per-row aggregate calls): the number (bigint) of unordered pairs with distance <= r (coordinate units, >= 0, +Infinity counts all pairs). Coordinates: the columns named in coords (2 to 6, any numeric type), else every float8 column in column order. Rows with a NULL coordinate are skipped; NULL for no rows or a NULL rel or r. Errors: NaN or negative r, NaN/infinite coordinates, fewer than 2 or more than 6 coordinates (22023); missing relation (42P01) or column (42703); non-numeric column (42804); no SELECT privilege (42501). Method: 2-BS framework, Type-I output, on the similarity join''s grid index when it examines fewer pairs.';
CREATE FUNCTION gpu_pair_count(rel text, r float8, coords text DEFAULT NULL)
  RETURNS bigint
  AS $$ SELECT @extschema@.gpu_pair_count(rel::regclass, r, coords::text[]) $$ LANGUAGE sql STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpu_pair_count(text, float8, text) IS
'The relation named by a string (gpu_pair_count(rel regclass, r, coords) with rel read as a regclass, schema-qualified and quoted names as in ''s."T"''::regclass, and coords as a text[] literal such as ''{x,y}''). It makes calls with untyped literals, such as gpu_pair_count(''t'', ..., ''{x,y}''), choose the relation form: string-typed parameters are the ones PostgreSQL prefers for untyped literals, where the float8 aggregate of the same name would otherwise be chosen and fail reading ''t'' as a number. Errors as the regclass form; a missing relation is 42P01.';

-- gpu_simjoin reads PostGIS point columns and locks the relation it resolved to.
COMMENT ON FUNCTION gpu_simjoin(regclass, float8, text[], text) IS
'Distance similarity self-join: every unordered pair of rows of rel whose Euclidean distance is <= eps (inclusive, coordinate units), once, as (id1, id2, dist) with id1 < id2. Coordinates: the columns named in coords (a one-dimensional array; 2 to 6 columns of any numeric type, or one PostGIS geometry(Point) column for 2-D or geometry(PointZ) for 3-D, every row with the same SRID), else every float8 column except the key, in column order. Key (id): the named integer column, else the single-column integer primary key, else an integer column named id. Rows with a NULL key or coordinate are skipped. Errors: eps <= 0 or NaN, NaN/infinite coordinates, mixed SRIDs, non-point geometries, geography columns (22023); missing relation (42P01) or column (42703); non-numeric column (42804); no SELECT privilege (42501); more than gpu2bs.max_result_rows pairs (54000); the relation rewritten by a transaction that committed after this REPEATABLE READ transaction''s snapshot (40001). The relation is the one the regclass resolved to, locked with AccessShareLock before its columns are read. Method: 2-BS framework Type-III (direct output buffer), grid index with a unidirectional cell pattern (similarity-join load-imbalance paper).';
COMMENT ON FUNCTION gpu_simjoin(regclass, regclass, float8, text[], text) IS
'Distance similarity join of two relations: every pair (a row, b row) with distance <= eps, as (id1 from a, id2 from b, dist). Columns as in gpu_simjoin(rel, eps); both relations must have the same number of coordinates and, for PostGIS columns, the same SRID (22023). Same errors and method as the self-join.';

------------------------------------------------------------------------------------------------
-- All-pairs vectors
------------------------------------------------------------------------------------------------

CREATE FUNCTION gpu_pairwise(a regclass, b regclass, vec text, metric text, k int DEFAULT NULL,
                             threshold float8 DEFAULT NULL, id text DEFAULT NULL)
  RETURNS TABLE(id1 bigint, id2 bigint, value float8)
  AS 'MODULE_PATHNAME', 'gpu2bs_pairwise' LANGUAGE C STABLE PARALLEL RESTRICTED ROWS 100000;
COMMENT ON FUNCTION gpu_pairwise(regclass, regclass, text, text, int, float8, text) IS
'All-pairs matrix over vectors (Sarje and Aluru, All-pairs computations on many-core graphics processors, 2013: tiles r x c, subtiles, slices of d'' dimensions): value(u, v) for rows u of a and v of b, from the real[] or double precision[] column vec of both (every vector the same length d, 1 to 65535; computed in float4 from the elements rounded to float4). metric: l1, l2 (Euclidean), sqeuclidean, cosine (1 - cosine similarity; a zero vector has distance 1 to every vector), dot (dot product, larger is better), lp:<p> (1 <= p <= 64). Exactly one of k (the k best rows of b for each row of a, best first: smallest value, largest for dot; ties by the smaller id2; fewer when b has fewer rows) and threshold (every pair with value <= threshold, >= for dot). When a and b are the same relation, each row''s pair with itself is excluded, and threshold returns each unordered pair once with id1 < id2. Key (id): the named integer column, else the single-column integer primary key, else an integer column named id. Rows with a NULL key or vector are skipped; a NULL a, b, vec or metric returns no rows. Result (id1 from a, id2 from b, value in float8). Errors (22023): unknown metric, neither or both of k and threshold, k < 1, NaN threshold, vectors of different lengths, empty vectors, NULL or non-finite elements; missing relation (42P01) or column (42703); wrong column type (42804); no SELECT privilege (42501); more than gpu2bs.max_result_rows rows (54000). gpu2bs.pairwise_precision = fast uses TF32 tensor cores on the GPU for l2, sqeuclidean, cosine and dot, re-ranked exactly (same result as exact).';
