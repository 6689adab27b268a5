-- gpu2bs 0.2 -> 0.3 upgrade: run by ALTER EXTENSION gpu2bs UPDATE TO '0.3'.
-- 0.3 adds pair expressions (user-defined two-body operators); every object it adds is created
-- here in the same form as in gpu2bs--0.3.sql, so that a fresh 0.3 install and an upgraded 0.2
-- install are equal. Nothing of 0.2 changes.
\echo Use "ALTER EXTENSION gpu2bs UPDATE TO '0.3'" to load this file. \quit

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
