-- gpu2bs 0.6: two-body statistics on the GPU or on every CPU core.
-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION gpu2bs" to load this file. \quit

------------------------------------------------------------------------------------------------
-- Aggregate support: the state is a buffer of the points (internal), merged by the combine
-- function in parallel plans, and the engine runs in the final function.
------------------------------------------------------------------------------------------------

CREATE FUNCTION gpu2bs_sdh3_sfunc(internal, float8, float8, float8, int4) RETURNS internal
  AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION gpu2bs_sdh3w_sfunc(internal, float8, float8, float8, int4, float8) RETURNS internal
  AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION gpu2bs_sdh2_sfunc(internal, float8, float8, int4) RETURNS internal
  AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION gpu2bs_sdh2w_sfunc(internal, float8, float8, int4, float8) RETURNS internal
  AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION gpu2bs_count3_sfunc(internal, float8, float8, float8, float8) RETURNS internal
  AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION gpu2bs_count2_sfunc(internal, float8, float8, float8) RETURNS internal
  AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION gpu2bs_points_combine(internal, internal) RETURNS internal
  AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION gpu2bs_points_serialize(internal) RETURNS bytea
  AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION gpu2bs_points_deserialize(bytea, internal) RETURNS internal
  AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
-- Final functions read gpu2bs.precision and gpu2bs.device: STABLE.
CREATE FUNCTION gpu2bs_sdh_final(internal) RETURNS bigint[]
  AS 'MODULE_PATHNAME' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION gpu2bs_sdh_width_final(internal) RETURNS float8
  AS 'MODULE_PATHNAME' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION gpu2bs_pair_count_final(internal) RETURNS bigint
  AS 'MODULE_PATHNAME' LANGUAGE C STABLE PARALLEL SAFE;

COMMENT ON FUNCTION gpu2bs_sdh3_sfunc(internal, float8, float8, float8, int4) IS 'transition function of gpu_sdh(x, y, z, nbuckets); internal';
COMMENT ON FUNCTION gpu2bs_sdh3w_sfunc(internal, float8, float8, float8, int4, float8) IS 'transition function of gpu_sdh_fixed(x, y, z, nbuckets, width); internal';
COMMENT ON FUNCTION gpu2bs_sdh2_sfunc(internal, float8, float8, int4) IS 'transition function of gpu_sdh(x, y, nbuckets); internal';
COMMENT ON FUNCTION gpu2bs_sdh2w_sfunc(internal, float8, float8, int4, float8) IS 'transition function of gpu_sdh_fixed(x, y, nbuckets, width); internal';
COMMENT ON FUNCTION gpu2bs_count3_sfunc(internal, float8, float8, float8, float8) IS 'transition function of gpu_pair_count(x, y, z, r); internal';
COMMENT ON FUNCTION gpu2bs_count2_sfunc(internal, float8, float8, float8) IS 'transition function of gpu_pair_count(x, y, r); internal';
COMMENT ON FUNCTION gpu2bs_points_combine(internal, internal) IS 'combine function of the gpu2bs aggregates: concatenates point buffers (a histogram of a union is not the sum of the parts); internal';
COMMENT ON FUNCTION gpu2bs_points_serialize(internal) IS 'serializes a gpu2bs point buffer for parallel aggregation; internal';
COMMENT ON FUNCTION gpu2bs_points_deserialize(bytea, internal) IS 'deserializes a gpu2bs point buffer; internal';
COMMENT ON FUNCTION gpu2bs_sdh_final(internal) IS 'final function of gpu_sdh: runs the engine; internal';
COMMENT ON FUNCTION gpu2bs_sdh_width_final(internal) IS 'final function of gpu_sdh_width; internal';
COMMENT ON FUNCTION gpu2bs_pair_count_final(internal) IS 'final function of gpu_pair_count: runs the engine; internal';

------------------------------------------------------------------------------------------------
-- Spatial distance histogram (2-BS Type-II)
------------------------------------------------------------------------------------------------

CREATE AGGREGATE gpu_sdh(x float8, y float8, z float8, nbuckets int4) (
  SFUNC = gpu2bs_sdh3_sfunc, STYPE = internal, FINALFUNC = gpu2bs_sdh_final,
  COMBINEFUNC = gpu2bs_points_combine, SERIALFUNC = gpu2bs_points_serialize,
  DESERIALFUNC = gpu2bs_points_deserialize, PARALLEL = SAFE);
CREATE AGGREGATE gpu_sdh(x float8, y float8, z float8, nbuckets int4, width float8) (
  SFUNC = gpu2bs_sdh3w_sfunc, STYPE = internal, FINALFUNC = gpu2bs_sdh_final,
  COMBINEFUNC = gpu2bs_points_combine, SERIALFUNC = gpu2bs_points_serialize,
  DESERIALFUNC = gpu2bs_points_deserialize, PARALLEL = SAFE);
CREATE AGGREGATE gpu_sdh(x float8, y float8, nbuckets int4) (
  SFUNC = gpu2bs_sdh2_sfunc, STYPE = internal, FINALFUNC = gpu2bs_sdh_final,
  COMBINEFUNC = gpu2bs_points_combine, SERIALFUNC = gpu2bs_points_serialize,
  DESERIALFUNC = gpu2bs_points_deserialize, PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_sdh(float8, float8, float8, int4) IS
'Spatial distance histogram of 3-D points: bigint[nbuckets], element k+1 counts the unordered pairs {i, j}, i <> j, with distance d in [k*w, (k+1)*w), w = bounding-box diagonal / nbuckets (gpu_sdh_width gives w); a pair at d = diagonal counts in the last bucket, so the counts sum to N(N-1)/2. Rows with a NULL argument are skipped; NaN or infinite coordinates raise 22023; nbuckets must be 1..1048576 (22023). NULL for no rows. Method: 2-BS framework (Type-II output, tiling, output privatization).';
COMMENT ON AGGREGATE gpu_sdh(float8, float8, float8, int4, float8) IS
'Spatial distance histogram of 3-D points with explicit bucket width: the same as gpu_sdh_fixed(x, y, z, nbuckets, width), kept under this name for compatibility (a five-argument call is never ambiguous).';
COMMENT ON AGGREGATE gpu_sdh(float8, float8, int4) IS
'Spatial distance histogram of 2-D points (x, y): as gpu_sdh(x, y, z, nbuckets) in the plane.';

-- Explicit bucket width under its own name: every gpu_sdh, gpu_sdh_fixed, gpu_sdh_width and
-- gpu_pair_count has one form per number of arguments, so a call with literal arguments
-- (gpu_sdh(x, y, 0, 10): 3-D with z = 0) never matches two forms.
CREATE AGGREGATE gpu_sdh_fixed(x float8, y float8, z float8, nbuckets int4, width float8) (
  SFUNC = gpu2bs_sdh3w_sfunc, STYPE = internal, FINALFUNC = gpu2bs_sdh_final,
  COMBINEFUNC = gpu2bs_points_combine, SERIALFUNC = gpu2bs_points_serialize,
  DESERIALFUNC = gpu2bs_points_deserialize, PARALLEL = SAFE);
CREATE AGGREGATE gpu_sdh_fixed(x float8, y float8, nbuckets int4, width float8) (
  SFUNC = gpu2bs_sdh2w_sfunc, STYPE = internal, FINALFUNC = gpu2bs_sdh_final,
  COMBINEFUNC = gpu2bs_points_combine, SERIALFUNC = gpu2bs_points_serialize,
  DESERIALFUNC = gpu2bs_points_deserialize, PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_sdh_fixed(float8, float8, float8, int4, float8) IS
'Spatial distance histogram of 3-D points with explicit bucket width (same unit as the coordinates): bigint[nbuckets], element k+1 counts pairs with d in [k*width, (k+1)*width); pairs with d >= nbuckets*width are not counted. Rows with a NULL argument are skipped; NaN or infinite coordinates raise 22023; nbuckets must be 1..1048576 and width positive and finite (22023). NULL for no rows. Method: 2-BS framework, Type-II.';
COMMENT ON AGGREGATE gpu_sdh_fixed(float8, float8, int4, float8) IS
'Spatial distance histogram of 2-D points (x, y) with explicit bucket width: as gpu_sdh_fixed(x, y, z, nbuckets, width) in the plane.';

CREATE AGGREGATE gpu_sdh_width(x float8, y float8, z float8, nbuckets int4) (
  SFUNC = gpu2bs_sdh3_sfunc, STYPE = internal, FINALFUNC = gpu2bs_sdh_width_final,
  COMBINEFUNC = gpu2bs_points_combine, SERIALFUNC = gpu2bs_points_serialize,
  DESERIALFUNC = gpu2bs_points_deserialize, PARALLEL = SAFE);
CREATE AGGREGATE gpu_sdh_width(x float8, y float8, nbuckets int4) (
  SFUNC = gpu2bs_sdh2_sfunc, STYPE = internal, FINALFUNC = gpu2bs_sdh_width_final,
  COMBINEFUNC = gpu2bs_points_combine, SERIALFUNC = gpu2bs_points_serialize,
  DESERIALFUNC = gpu2bs_points_deserialize, PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_sdh_width(float8, float8, float8, int4) IS
'Bucket width w (float8, coordinate units) that gpu_sdh(x, y, z, nbuckets) uses on the same rows: the bounding-box diagonal divided by nbuckets; bucket k spans [k*w, (k+1)*w).';
COMMENT ON AGGREGATE gpu_sdh_width(float8, float8, int4) IS
'Bucket width w that gpu_sdh(x, y, nbuckets) uses on the same rows (2-D).';

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

------------------------------------------------------------------------------------------------
-- Pair count / two-point correlation count (2-BS Type-I)
------------------------------------------------------------------------------------------------

CREATE AGGREGATE gpu_pair_count(x float8, y float8, z float8, r float8) (
  SFUNC = gpu2bs_count3_sfunc, STYPE = internal, FINALFUNC = gpu2bs_pair_count_final,
  COMBINEFUNC = gpu2bs_points_combine, SERIALFUNC = gpu2bs_points_serialize,
  DESERIALFUNC = gpu2bs_points_deserialize, PARALLEL = SAFE);
CREATE AGGREGATE gpu_pair_count(x float8, y float8, r float8) (
  SFUNC = gpu2bs_count2_sfunc, STYPE = internal, FINALFUNC = gpu2bs_pair_count_final,
  COMBINEFUNC = gpu2bs_points_combine, SERIALFUNC = gpu2bs_points_serialize,
  DESERIALFUNC = gpu2bs_points_deserialize, PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_pair_count(float8, float8, float8, float8) IS
'Two-point correlation count: the number (bigint) of unordered pairs of 3-D points with distance <= r (r in coordinate units, >= 0, +Infinity counts all pairs; NaN or negative r raises 22023). Rows with a NULL argument are skipped; NaN or infinite coordinates raise 22023; NULL for no rows. Method: 2-BS framework, Type-I output (per-thread registers, one reduction), grid index when it examines fewer pairs.';
COMMENT ON AGGREGATE gpu_pair_count(float8, float8, float8) IS
'Two-point correlation count of 2-D points (x, y): unordered pairs with distance <= r.';

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

------------------------------------------------------------------------------------------------
-- Distance similarity join (2-BS Type-III)
------------------------------------------------------------------------------------------------

CREATE FUNCTION gpu2bs_simjoin_support(internal) RETURNS internal
  AS 'MODULE_PATHNAME' LANGUAGE C STRICT;
COMMENT ON FUNCTION gpu2bs_simjoin_support(internal) IS
'planner support function of gpu_simjoin: loads the gpu2bs library while the first query that uses gpu_simjoin is being planned, so the custom scan (gpu2bs.enable_customscan) is offered from that query on; it supplies no estimates; internal';

CREATE FUNCTION gpu_simjoin(rel regclass, eps float8, coords text[] DEFAULT NULL, id text DEFAULT NULL)
  RETURNS TABLE(id1 bigint, id2 bigint, dist float8)
  AS 'MODULE_PATHNAME', 'gpu2bs_simjoin_self' LANGUAGE C STABLE PARALLEL RESTRICTED ROWS 100000
  SUPPORT gpu2bs_simjoin_support;
COMMENT ON FUNCTION gpu_simjoin(regclass, float8, text[], text) IS
'Distance similarity self-join: every unordered pair of rows of rel whose Euclidean distance is <= eps (inclusive, coordinate units), once, as (id1, id2, dist) with id1 < id2. Coordinates: the columns named in coords (a one-dimensional array; 2 to 6 columns of any numeric type, or one PostGIS geometry(Point) column for 2-D or geometry(PointZ) for 3-D, every row with the same SRID), else every float8 column except the key, in column order. Key (id): the named integer column, else the single-column integer primary key, else an integer column named id. Rows with a NULL key or coordinate are skipped. Errors: eps <= 0 or NaN, NaN/infinite coordinates, mixed SRIDs, non-point geometries, geography columns (22023); missing relation (42P01) or column (42703); non-numeric column (42804); no SELECT privilege (42501); more than gpu2bs.max_result_rows pairs (54000); the relation rewritten by a transaction that committed after this REPEATABLE READ transaction''s snapshot (40001). The relation is the one the regclass resolved to, locked with AccessShareLock before its columns are read. Method: 2-BS framework Type-III (direct output buffer), grid index with a unidirectional cell pattern (similarity-join load-imbalance paper).';

CREATE FUNCTION gpu_simjoin(a regclass, b regclass, eps float8, coords text[] DEFAULT NULL, id text DEFAULT NULL)
  RETURNS TABLE(id1 bigint, id2 bigint, dist float8)
  AS 'MODULE_PATHNAME', 'gpu2bs_simjoin_two' LANGUAGE C STABLE PARALLEL RESTRICTED ROWS 100000
  SUPPORT gpu2bs_simjoin_support;
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

------------------------------------------------------------------------------------------------
-- Pair expressions: user-defined two-body operators (2-BS framework, section 4 "Automated Code
-- Optimization for 2-BS" and section 6 case studies: RDF as Type-II, nested-loop join as
-- Type-III). The expression text is parsed and analyzed by PostgreSQL as the calling user over
-- the two relations as a and b; docs/pair-expressions.md lists the language.
------------------------------------------------------------------------------------------------

CREATE FUNCTION gpu_pair_count(a regclass, b regclass, predicate text)
  RETURNS bigint
  AS 'MODULE_PATHNAME', 'gpu2bs_pair_expr_count' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpu_pair_count(regclass, regclass, text) IS
'Pair count with a user-defined predicate (2-BS Type-I): the number (bigint) of pairs (a row, b row) for which predicate, a boolean SQL expression over the columns of the two rows named a.col and b.col, is true; with a = b the unordered pairs of distinct rows, each once. The language: numeric columns (smallint, integer, bigint, real, double precision, numeric, read as float8), constants, float8 + - * /, unary minus, abs, sqrt, ^ and power with a constant exponent, least, greatest, sin, cos, tan, asin, acos, atan, atan2, radians, degrees, exp, ln, comparisons, AND, OR, NOT, CASE, IS [NOT] NULL; NULLs and NaN as PostgreSQL treats them. With gpu2bs.precision = float8 the result equals PostgreSQL''s own count of the same predicate over a nested-loop join. NULL for a NULL argument. Errors: anything else in the expression (0A000), unknown column (42703), unknown relation alias (42P01), not boolean (42804), syntax (42601), no SELECT privilege (42501), evaluation errors as PostgreSQL raises them (22012 division by zero, 22003 overflow/underflow/input out of range, 2201E logarithm, 2201F square root and power). Method: 2-BS framework section 4 (code generation) and 6, Type-I output.';

CREATE FUNCTION gpu_pair_count(a text, b text, predicate text)
  RETURNS bigint
  AS $$ SELECT CASE WHEN b ~* '^\s*[-+]?([0-9]+\.?[0-9]*([e][-+]?[0-9]+)?|\.[0-9]+([e][-+]?[0-9]+)?|infinity|inf|nan)\s*$'
                    THEN @extschema@.gpu_pair_count(a::regclass, b::float8, predicate::text[])
                    ELSE @extschema@.gpu_pair_count(a::regclass, b::regclass, predicate) END $$
  LANGUAGE sql STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpu_pair_count(text, text, text) IS
'The relations named by strings (gpu_pair_count(a regclass, b regclass, predicate) with a and b read as regclass, for example ''s."T"''). It makes calls with three untyped literals, such as gpu_pair_count(''pts'', ''pts'', ''a.x < b.x''), choose the pair-expression form; a second argument that reads as a number (''5'', ''0.5e1'', ''Infinity'') is the distance of gpu_pair_count(rel, r, coords) and the third its coords, as before 0.3. Errors as the regclass forms; a missing relation is 42P01.';

CREATE FUNCTION gpu_pair_sum(a regclass, b regclass, value text, predicate text DEFAULT NULL)
  RETURNS float8
  AS 'MODULE_PATHNAME', 'gpu2bs_pair_expr_sum' LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpu_pair_sum(regclass, regclass, text, text) IS
'Sum of a user-defined pair value (2-BS Type-I), for example pair energies 1 / sqrt((a.x-b.x)^2 + (a.y-b.y)^2): the float8 sum of value over the pairs (a row, b row) for which predicate is true (every pair when predicate is NULL) and value is not NULL; with a = b the unordered pairs of distinct rows. Expressions as in gpu_pair_count(a, b, predicate); value is a number. Values are computed in gpu2bs.precision and summed in float64 in the fixed order of docs/pair-expressions.md (the CPU engine: the same on every run and thread count), so the sum can differ from PostgreSQL''s sum() in the last bits. NULL when no pair is kept or for a NULL a, b or value. Errors as gpu_pair_count(a, b, predicate); an infinite sum of finite values is 22003. Method: 2-BS framework sections 4 and 6, Type-I output.';

CREATE FUNCTION gpu_pair_histogram(a regclass, b regclass, value text, lo float8, hi float8, nbuckets int,
                                   predicate text DEFAULT NULL)
  RETURNS bigint[]
  AS 'MODULE_PATHNAME', 'gpu2bs_pair_expr_histogram' LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpu_pair_histogram(regclass, regclass, text, float8, float8, int, text) IS
'Histogram of a user-defined pair value (2-BS Type-II), for example angular separations: bigint[nbuckets] whose element k+1 counts the kept pairs with width_bucket(value, lo, hi, nbuckets) = k + 1, exactly as PostgreSQL computes width_bucket; values outside [lo, hi) are not counted. Pairs as in gpu_pair_sum (predicate NULL: every pair; NULL values skipped). lo < hi, both finite (value units); nbuckets 1 to 100000000. NULL for a NULL argument other than predicate. Errors as gpu_pair_count(a, b, predicate); a NaN value, NaN or infinite bounds, lo = hi, nbuckets < 1 are 2201G as in width_bucket; lo > hi is 22023; nbuckets too large 54000. Method: 2-BS framework sections 4 and 6 (case study I), Type-II output with privatized histograms.';

CREATE FUNCTION gpu_join(a regclass, b regclass, predicate text, id text DEFAULT NULL)
  RETURNS TABLE(id1 bigint, id2 bigint)
  AS 'MODULE_PATHNAME', 'gpu2bs_pair_expr_join' LANGUAGE C STABLE PARALLEL RESTRICTED ROWS 100000;
COMMENT ON FUNCTION gpu_join(regclass, regclass, text, text) IS
'Theta nested-loop join (2-BS Type-III): every pair (a row, b row) for which predicate (as in gpu_pair_count(a, b, predicate)) is true, as (id1 from a, id2 from b); with a = b the unordered pairs of distinct rows, once, with id1 <= id2. Keys: the column named by id in both relations (an integer column), else each relation''s single-column integer primary key, else its integer column "id"; rows with a NULL key are skipped. No rows for a NULL a, b or predicate. Errors as gpu_pair_count(a, b, predicate); no key column (42703), key not an integer (42804); more pairs than gpu2bs.max_result_rows (54000). Method: 2-BS framework sections 4 and 6 (case study II, nested-loop join), Type-III output through result pages.';

------------------------------------------------------------------------------------------------
-- Introspection
------------------------------------------------------------------------------------------------

CREATE FUNCTION gpu2bs_info() RETURNS TABLE(name text, value text)
  AS 'MODULE_PATHNAME', 'gpu2bs_info' LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpu2bs_info() IS
'Which engine answers now and why (gpu2bs.device), CPU instruction set and threads, precision, whether the library was built with CUDA, the bytes the backend''s C allocator has in use, the GPU (name, SMs, memory in use and free, driver and runtime versions) when one is usable, and the timings of this session''s last gpu2bs call.';

-- gpu_dbscan
------------------------------------------------------------------------------------------------
-- DBSCAN clustering on the similarity self-join
------------------------------------------------------------------------------------------------

CREATE FUNCTION gpu_dbscan(rel regclass, eps float8, minpoints int4, coords text[] DEFAULT NULL, id text DEFAULT NULL)
  RETURNS TABLE(id bigint, cluster int4)
  AS 'MODULE_PATHNAME', 'gpu2bs_dbscan' LANGUAGE C STABLE PARALLEL RESTRICTED ROWS 100000;
COMMENT ON FUNCTION gpu_dbscan(regclass, float8, int4, text[], text) IS
'DBSCAN clustering (Ester, Kriegel, Sander and Xu, KDD 1996) of the points of rel, with the meaning of PostGIS ST_ClusterDBSCAN(geom, eps, minpoints): one row (id bigint, cluster int4) per point read, in ascending id order. A point is a core point when at least minpoints points (itself included; minpoints >= 1) lie within Euclidean distance <= eps (inclusive, coordinate units, as ST_DWithin; computed in gpu2bs.precision exactly as gpu_simjoin keeps pairs); clusters are the connected components of the core points linked by pairs within eps, numbered 0, 1, ... in ascending order of the smallest id among their points; a border point (not core, within eps of a core point) joins the cluster of its nearest core point (ties by the smaller core id), a deterministic rule where ST_ClusterDBSCAN''s depends on row order; every other point is noise (cluster NULL). Points are read exactly as gpu_simjoin(rel, eps, coords, id) reads them: coordinates named in coords (2 to 6 numeric columns, or one PostGIS geometry(Point) / geometry(PointZ) column), else every float8 column except the key; key: the named integer column, else the single-column integer primary key, else an integer column named id (keys should be unique: equal keys are separate points whose ties follow read order). Rows with a NULL key or coordinate are skipped (no row returned); no rows for a NULL rel, eps or minpoints. Errors: eps <= 0 or NaN, minpoints < 1, NaN/infinite coordinates, mixed SRIDs, non-point geometries, geography columns (22023); missing relation (42P01) or column (42703); non-numeric coordinate or non-integer key column (42804); not a table or view (42809); no SELECT privilege (42501); more than 2^32 - 1 points or 2^31 - 1 clusters (54000); the relation rewritten after this REPEATABLE READ transaction''s snapshot (40001). Query cancel is honoured while the join runs. Method: grid similarity self-join (Gowanlock and Karsin 2018, Gallet and Gowanlock 2019: cells of side >= eps, unidirectional cell pattern, each pair examined once) run twice, never storing pairs: neighbour counts (both ends of each pair; on the GPU the per-point Group reduction of the join kernel), then a union-find (roots linked by index with compare-and-swap, path halving; the pairs of each hand-over shared among gpu2bs.cpu_threads threads) over the core-core pairs and the nearest core point of every other point, on the host, O(n) memory.';
-- end gpu_dbscan

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

-- xi begin
------------------------------------------------------------------------------------------------
-- Two-point correlation functions xi(r) and w(theta) (DD, DR, RR in bins of arbitrary edges)
------------------------------------------------------------------------------------------------

CREATE FUNCTION gpu_xi(data regclass, randoms regclass, edges float8[], estimator text DEFAULT 'landy-szalay', box float8[] DEFAULT NULL, coords text[] DEFAULT NULL, angular boolean DEFAULT false, patch text DEFAULT NULL)
  RETURNS TABLE(r_lo float8, r_hi float8, dd bigint, dr bigint, rr float8, xi float8, xi_err float8)
  AS 'MODULE_PATHNAME', 'gpu2bs_xi' LANGUAGE C STABLE PARALLEL RESTRICTED ROWS 30;
COMMENT ON FUNCTION gpu_xi(regclass, regclass, float8[], text, float8[], text[], boolean, text) IS
'Two-point correlation function of the points of data: one row (r_lo, r_hi, dd, dr, rr, xi, xi_err) per bin [edges[k], edges[k+1]) in ascending order. edges: 2 to 4097 strictly increasing non-negative finite values (coordinate units; degrees with angular). Bin k counts a pair when fl(edges[k]^2) <= d2 < fl(edges[k+1]^2), the squares computed in float8 and rounded once to gpu2bs.precision, d2 the squared distance as every gpu2bs distance (minimum image on periodic axes, as gpu_rdf). dd: unordered pairs of distinct data rows; dr: every (data row, randoms row); rr: unordered pairs of distinct randoms rows. Normalized counts f_DD = dd / (N_D (N_D - 1) / 2), f_DR = dr / (N_D N_R), f_RR = rr / (N_R (N_R - 1) / 2); estimator ''landy-szalay'' (default, also ''ls''): xi = (f_DD - 2 f_DR + f_RR) / f_RR; ''natural'' (also ''peebles-hauser''): xi = f_DD / f_RR - 1. randoms NULL with a box periodic on every axis: analytic RR, f_RR = S / V (S the D-ball shell volume between the edges, V the product of the box lengths), rr = N_D (N_D - 1) / 2 * f_RR (float8), dr NULL, xi = f_DD / f_RR - 1 for both estimators. box: one length per coordinate (0 or NULL: not periodic); the last edge at most half the shortest periodic length. angular => true: coords name (ra, dec) in degrees, each point becomes the unit vector (cos dec cos ra, cos dec sin ra, sin dec) in float8 and each edge theta the chord 2 sin(theta pi / 360), so bins are of angular separation (w(theta)); randoms required, no box. patch: an integer column of data and randoms naming jackknife patches (rows with a NULL patch skipped): xi is computed again leaving out each of the P distinct patches (data and randoms), one more pass over DD, DR and RR per patch, and xi_err = sqrt((P - 1) / P * sum_k (xi_k - mean)^2); xi_err is NULL without patch, with fewer than 2 patches or where some xi_k is NULL. xi is NULL where a denominator is 0 (fewer than 2 data or random rows, an empty RR bin). Coordinates as gpu_rdf reads them; rows with a NULL coordinate are skipped; no rows for a NULL data or edges. Errors (22023): edges with fewer than 2 or more than 4097 elements, a NULL, negative, NaN or infinite element, not strictly increasing, squares not strictly increasing or out of range in the precision; angular edges outside [0, 180]; an unknown estimator; randoms NULL without a box periodic on every axis; angular with a box or other than 2 coordinates, dec outside [-90, 90]; patch without randoms; the box errors of gpu_rdf; relations with different numbers of coordinates or SRIDs; NaN/infinite coordinates. More than 10000 patches (54000). Missing relation (42P01) or column (42703), non-numeric column or non-integer patch column (42804), no SELECT privilege (42501). Method: the cell lists of gpu_rdf (cells of side >= the last edge) with each candidate pair binned by a binary search over the squared edges, one pass per count; the CPU and GPU engines give equal counts. Landy and Szalay, ApJ 412 (1993) 64; Peebles and Hauser, ApJS 28 (1974) 19.';
-- xi end

-- periodic begin
-- Periodic boxes: gpu_sdh_fixed, gpu_pair_count, gpu_simjoin and gpu_dbscan over a box of one
-- length per axis (0 or NULL: not periodic), minimum-image distances as gpu_rdf computes them.
-- box is the last argument and no argument of these forms has a default, so no call of an
-- earlier form (positional or named) can match them. gpu_sdh_fixed's text form makes calls
-- with untyped literals choose the relation form; gpu_pair_count's box form is called with rel
-- typed (::regclass) or in named notation, as a four-argument call with untyped literals and a
-- numeric r resolves to the aggregate gpu_pair_count(x, y, z, r).
CREATE FUNCTION gpu_sdh_fixed(rel regclass, nbuckets int4, width float8, coords text[], box float8[])
  RETURNS bigint[]
  AS 'MODULE_PATHNAME', 'gpu2bs_sdh_fixed_rel_box' LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpu_sdh_fixed(regclass, int4, float8, text[], float8[]) IS
'Spatial distance histogram of the rows of rel over a periodic box: bigint[nbuckets], element k+1 counts the unordered pairs of distinct rows whose minimum-image distance d lies in [k*width, (k+1)*width) (coordinate units); pairs with d >= nbuckets*width are not counted. coords as in gpu_sdh_fixed(rel, nbuckets, width, coords) (NULL: every float8 column). box: float8[], one length per coordinate (0 or NULL: that axis is not periodic); on a periodic axis of length L coordinates are wrapped into [0, L) and the axis difference dx becomes dx - L when dx > L/2, dx + L when dx < -L/2 (as gpu_rdf). A NULL box or one without a periodic axis is gpu_sdh_fixed(rel, nbuckets, width, coords). NULL for no rows or a NULL rel, nbuckets or width. Errors: nbuckets*width above half the shortest periodic length, a box with another number of elements than coordinates, a negative, NaN or infinite length, a multi-dimensional box, nbuckets outside 1..1048576, width not positive finite (22023); otherwise as gpu_sdh_fixed(rel, nbuckets, width, coords). Method: 2-BS framework (Type-II output, output privatization) over cell lists that wrap on periodic axes (the gpu_rdf engine).';
CREATE FUNCTION gpu_sdh_fixed(rel text, nbuckets int4, width float8, coords text, box float8[])
  RETURNS bigint[]
  AS $$ SELECT @extschema@.gpu_sdh_fixed(rel::regclass, nbuckets, width, coords::text[], box) $$ LANGUAGE sql STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpu_sdh_fixed(text, int4, float8, text, float8[]) IS
'The relation named by a string: gpu_sdh_fixed(rel regclass, nbuckets, width, coords, box) with rel read as a regclass and coords as a text[] literal, so that calls with untyped literals choose the relation form over the five-argument aggregate. Errors as the regclass form; a missing relation is 42P01.';
CREATE FUNCTION gpu_pair_count(rel regclass, r float8, coords text[], box float8[])
  RETURNS bigint
  AS 'MODULE_PATHNAME', 'gpu2bs_pair_count_rel_box' LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpu_pair_count(regclass, float8, text[], float8[]) IS
'Number of unordered pairs of distinct rows of rel whose minimum-image distance over a periodic box is <= r (inclusive, coordinate units). Call it with rel typed (''t''::regclass) or in named notation (rel => ''t'', r => ..., coords => NULL, box => ...): four untyped or numeric arguments resolve to the aggregate gpu_pair_count(x, y, z, r). coords as in gpu_pair_count(rel, r, coords); box as in gpu_sdh_fixed(rel, nbuckets, width, coords, box); a NULL box or one without a periodic axis is gpu_pair_count(rel, r, coords). NULL for no rows or a NULL rel or r. Errors: r above half the shortest periodic length, negative or NaN r, box errors as gpu_sdh_fixed''s box form (22023); otherwise as gpu_pair_count(rel, r, coords). Method: 2-BS framework (Type-I output) over cell lists that wrap on periodic axes.';
CREATE FUNCTION gpu_simjoin(rel regclass, eps float8, coords text[], id text, box float8[])
  RETURNS TABLE(id1 bigint, id2 bigint, dist float8)
  AS 'MODULE_PATHNAME', 'gpu2bs_simjoin_self_box' LANGUAGE C STABLE PARALLEL RESTRICTED ROWS 100000;
COMMENT ON FUNCTION gpu_simjoin(regclass, float8, text[], text, float8[]) IS
'Distance similarity self-join over a periodic box: every unordered pair of rows of rel whose minimum-image distance is <= eps (inclusive, coordinate units), once, as (id1, id2, dist) with id1 < id2 and dist the minimum-image distance. coords and id as in gpu_simjoin(rel, eps, coords, id) (NULL: the defaults); box as in gpu_sdh_fixed(rel, nbuckets, width, coords, box); the grid of cells wraps on periodic axes (1 or at least 3 cells per periodic axis, so no pair is found twice). A NULL box or one without a periodic axis is gpu_simjoin(rel, eps, coords, id). Errors as gpu_simjoin(rel, eps, coords, id), plus: eps above half the shortest periodic length and box errors (22023). Runs without the custom scan: filters, aggregates, ORDER BY and LIMIT over it run in PostgreSQL. Method: grid similarity join (similarity-join paper) over a wrapping grid.';
CREATE FUNCTION gpu_simjoin(a regclass, b regclass, eps float8, coords text[], id text, box float8[])
  RETURNS TABLE(id1 bigint, id2 bigint, dist float8)
  AS 'MODULE_PATHNAME', 'gpu2bs_simjoin_two_box' LANGUAGE C STABLE PARALLEL RESTRICTED ROWS 100000;
COMMENT ON FUNCTION gpu_simjoin(regclass, regclass, float8, text[], text, float8[]) IS
'Distance similarity join of two relations over a periodic box: every pair (a row, b row) whose minimum-image distance is <= eps, as (id1 from a, id2 from b, dist). box, errors and execution as gpu_simjoin(rel, eps, coords, id, box); a NULL box or one without a periodic axis is gpu_simjoin(a, b, eps, coords, id).';
CREATE FUNCTION gpu_dbscan(rel regclass, eps float8, minpoints int4, coords text[], id text, box float8[])
  RETURNS TABLE(id bigint, cluster int4)
  AS 'MODULE_PATHNAME', 'gpu2bs_dbscan_box' LANGUAGE C STABLE PARALLEL RESTRICTED ROWS 100000;
COMMENT ON FUNCTION gpu_dbscan(regclass, float8, int4, text[], text, float8[]) IS
'DBSCAN clustering over a periodic box: gpu_dbscan(rel, eps, minpoints, coords, id) with minimum-image distances (box as in gpu_sdh_fixed(rel, nbuckets, width, coords, box)), so clusters continue across the faces of periodic axes. A NULL box or one without a periodic axis is gpu_dbscan(rel, eps, minpoints, coords, id). Errors as that form, plus: eps above half the shortest periodic length and box errors (22023). Method: DBSCAN (Ester et al., KDD 1996) over the pairs of the periodic similarity join.';
-- periodic end
-- weights begin
-- Weighted SDH and pair count (2-BS Type-II / Type-I with pair weights w_i * w_j summed exactly).
CREATE FUNCTION gpu_sdh_weighted(rel regclass, nbuckets int4, weight text, width float8 DEFAULT NULL, coords text[] DEFAULT NULL)
  RETURNS TABLE(bucket int4, lo float8, hi float8, pairs bigint, weight_sum float8)
  AS 'MODULE_PATHNAME', 'gpu2bs_sdh_weighted_rel' LANGUAGE C STABLE PARALLEL RESTRICTED ROWS 500;
COMMENT ON FUNCTION gpu_sdh_weighted(regclass, int4, text, float8, text[]) IS
'Weighted spatial distance histogram of the rows of rel: nbuckets rows (bucket 1..nbuckets, lo = (bucket-1)*w, hi = bucket*w in coordinate units, pairs, weight_sum), pairs being the unordered pairs of rows with distance in [lo, hi) as gpu_sdh(rel, nbuckets, coords) counts them (width NULL: w = bounding-box diagonal / nbuckets, a pair at the diagonal in the last bucket) or as gpu_sdh_fixed(rel, nbuckets, width, coords) does (pairs beyond nbuckets*width not counted), and weight_sum the sum over those pairs of w_i * w_j, w the numeric column named by weight (read as float8). weight_sum does not depend on the engine, the thread count or the order of the rows: each product is rounded to float8, then to a fixed-point grid 2^(E-62) with 2^(E-1) <= max|w|^2 < 2^E, summed exactly in 128-bit integers and rounded to float8 once; |weight_sum - sum of the rounded products| <= 0.5 ulp(weight_sum) + pairs * max|w|^2 * 2^-62, exact for integer weights (max|w|^2 < 2^62) and dyadic fractions of few bits. Coordinates as gpu_sdh reads them (the weight column is not one of the default float8 coordinates). Rows with a NULL coordinate or weight are skipped; no rows for a NULL rel, nbuckets or weight, or a relation without rows. Errors: nbuckets outside 1..1048576, a bad width (as gpu_sdh_fixed), NaN/infinite coordinates or weights, max|w|^2 or a weight_sum beyond float8 range (22023); missing relation (42P01) or column (42703); non-numeric column (42804); no SELECT privilege (42501). Method: 2-BS framework Type-II, all-pairs tiles with per-block privatized count and 128-bit sum per bucket on the GPU, per-worker ones on the CPU (no resolution, whatever gpu2bs.sdh_method says).';
CREATE FUNCTION gpu_pair_count_weighted(rel regclass, r float8, weight text, coords text[] DEFAULT NULL)
  RETURNS TABLE(pairs bigint, weight_sum float8)
  AS 'MODULE_PATHNAME', 'gpu2bs_pair_count_weighted_rel' LANGUAGE C STABLE PARALLEL RESTRICTED ROWS 1;
COMMENT ON FUNCTION gpu_pair_count_weighted(regclass, float8, text, text[]) IS
'Weighted two-point correlation count of the rows of rel: one row (pairs, weight_sum), pairs the unordered pairs with distance <= r (coordinate units, >= 0, +Infinity counts all pairs) as gpu_pair_count(rel, r, coords) counts them, weight_sum the sum of w_i * w_j over those pairs, w the numeric column named by weight (read as float8), summed as gpu_sdh_weighted sums (order-independent, identical on both engines, |weight_sum - sum of the float8 products| <= 0.5 ulp(weight_sum) + pairs * max|w|^2 * 2^-62). Coordinates as gpu_pair_count reads them (the weight column is not one of the default float8 coordinates). Rows with a NULL coordinate or weight are skipped; no rows for a NULL rel, r or weight, or a relation without rows. Errors: NaN or negative r, NaN/infinite coordinates or weights, max|w|^2 or weight_sum beyond float8 range (22023); missing relation (42P01) or column (42703); non-numeric column (42804); no SELECT privilege (42501). Method: 2-BS framework Type-I (per-thread register count and 128-bit sum, one reduction), all-pairs tiles (no grid or resolution).';
-- weights end

-- meas17 begin
-- gpu_dbscan in FROM runs as the custom scan `gpu2bs dbscan` (gpu2bs.enable_customscan): its
-- planner support function loads the library while the first such query is being planned.
ALTER FUNCTION gpu_dbscan(regclass, float8, int4, text[], text) SUPPORT gpu2bs_simjoin_support;
ALTER FUNCTION gpu_dbscan(regclass, float8, int4, text[], text, float8[]) SUPPORT gpu2bs_simjoin_support;
COMMENT ON FUNCTION gpu2bs_simjoin_support(internal) IS
'planner support function of gpu_simjoin and gpu_dbscan: loads the gpu2bs library while the first query that uses one of them is being planned, so their custom scans (gpu2bs.enable_customscan) are offered from that query on; it supplies no estimates; internal';
-- meas17 end
-- rdfw17 begin
-- Weighted radial distribution function (2-BS Type-II with pair weights w_i * w_j summed exactly).
CREATE FUNCTION gpu_rdf_weighted(a regclass, b regclass, nbuckets int4, r_max float8, weight text, box float8[] DEFAULT NULL, coords text[] DEFAULT NULL)
  RETURNS TABLE(r_lo float8, r_hi float8, pairs bigint, weight_sum float8, g float8)
  AS 'MODULE_PATHNAME', 'gpu2bs_rdf_weighted' LANGUAGE C STABLE PARALLEL RESTRICTED ROWS 500;
COMMENT ON FUNCTION gpu_rdf_weighted(regclass, regclass, int4, float8, text, float8[], text[]) IS
'Weighted radial distribution function of the points of a around the points of b: nbuckets rows (r_lo, r_hi, pairs, weight_sum, g), the buckets, pairs, box, coordinates and self form (a = b) of gpu_rdf(a, b, nbuckets, r_max, box, coords), weight_sum the sum over the bucket''s pairs of w_i * w_j, w the numeric column named by weight in each relation (read as float8). weight_sum is summed as gpu_sdh_weighted sums (each product rounded to float8, then to the fixed-point grid 2^(E-62) with 2^(E-1) <= max|w|^2 < 2^E over both relations, summed exactly in 128-bit integers and rounded to float8 once: independent of the engine, the thread count and the order of the rows; |weight_sum - sum of the rounded products| <= 0.5 ulp(weight_sum) + pairs * max|w|^2 * 2^-62). g = m * weight_sum / (rho_w * S) with S and V as gpu_rdf, m = 2 and rho_w = ((sum w)^2 - sum w^2) / V for the self form, m = 1 and rho_w = (sum w_a)(sum w_b) / V for two relations, sum w and sum w^2 exact sums on the same kind of grid rounded once: the ratio of the bucket''s weight to the weight an ideal gas of the same weights puts there; with every weight 1 it is gpu_rdf''s g. g is NULL where rho_w * S is 0 or not finite. Rows with a NULL coordinate or weight are skipped; no rows for a NULL a, b, nbuckets, r_max or weight. Errors: those of gpu_rdf, NaN/infinite weights, max|w|^2 or a sum beyond float8 range (22023); missing relation (42P01) or column (42703); non-numeric column (42804); no SELECT privilege (42501). Method: 2-BS framework Type-II over the cell lists of gpu_rdf, a count and a 128-bit sum per bucket privatized per block (GPU) or per worker (CPU).';
-- Weighted two-point correlation function (DD, DR, RR with pair weights w_i * w_j).
CREATE FUNCTION gpu_xi_weighted(data regclass, randoms regclass, edges float8[], weight text, estimator text DEFAULT 'landy-szalay', box float8[] DEFAULT NULL, coords text[] DEFAULT NULL, angular boolean DEFAULT false, patch text DEFAULT NULL)
  RETURNS TABLE(r_lo float8, r_hi float8, dd bigint, dr bigint, rr float8, dd_w float8, dr_w float8, rr_w float8, xi float8, xi_err float8)
  AS 'MODULE_PATHNAME', 'gpu2bs_xi_weighted' LANGUAGE C STABLE PARALLEL RESTRICTED ROWS 30;
COMMENT ON FUNCTION gpu_xi_weighted(regclass, regclass, float8[], text, text, float8[], text[], boolean, text) IS
'Weighted two-point correlation function of the points of data: one row (r_lo, r_hi, dd, dr, rr, dd_w, dr_w, rr_w, xi, xi_err) per bin [edges[k], edges[k+1]), the bins, counts (dd, dr, rr), edges, estimator, box, coords, angular and patch of gpu_xi(data, randoms, edges, estimator, box, coords, angular, patch), dd_w, dr_w and rr_w the sums of w_i * w_j over the same pairs (Corrfunc weight_type ''pair_product''), w the numeric column named by weight in each relation (read as float8), summed exactly as gpu_sdh_weighted sums (independent of engine, threads and row order). xi uses the weighted sums normalized by the weighted numbers of pairs: f_DD = dd_w / (((sum w_D)^2 - sum w_D^2) / 2), f_DR = dr_w / (sum w_D * sum w_R), f_RR = rr_w / (((sum w_R)^2 - sum w_R^2) / 2), sums of w and w^2 exact and rounded once; Landy-Szalay xi = (f_DD - 2 f_DR + f_RR) / f_RR, natural xi = f_DD / f_RR - 1. randoms NULL with a box periodic on every axis: analytic RR, f_RR = S / V as gpu_xi, rr = N_D (N_D - 1) / 2 * f_RR, rr_w = ((sum w_D)^2 - sum w_D^2) / 2 * f_RR, dr and dr_w NULL, xi = f_DD / f_RR - 1. With every weight 1, dd_w = dd, dr_w = dr, rr_w = rr and xi is gpu_xi''s. xi is NULL where a denominator is not positive. patch: the jackknife of gpu_xi, each xi_k from the weighted sums and totals of the rows outside patch k, xi_err = sqrt((P - 1) / P * sum_k (xi_k - mean)^2), NULL without patch, with fewer than 2 patches or where some xi_k is NULL. Rows with a NULL coordinate, weight or patch are skipped; no rows for a NULL data, edges or weight. Errors: those of gpu_xi, NaN/infinite weights, max|w|^2 or a sum beyond float8 range (22023); missing relation (42P01) or column (42703); non-numeric weight column or non-integer patch column (42804); more than 10000 patches (54000); no SELECT privilege (42501). Method: the weighted cell-list kernels of gpu_rdf_weighted with bin edges, one pass per count (P + 1 passes with patches). Landy and Szalay, ApJ 412 (1993) 64; Sinha and Garrison, MNRAS 491 (2020) 3022 (Corrfunc).';
-- rdfw17 end
