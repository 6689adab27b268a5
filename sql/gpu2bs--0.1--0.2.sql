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
CREATE FUNCTION gpu_sdh_fixed(rel regclass, nbuckets int4, width float8, coords text[] DEFAULT NULL)
  RETURNS bigint[]
  AS 'MODULE_PATHNAME', 'gpu2bs_sdh_fixed_rel' LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpu_sdh_fixed(regclass, int4, float8, text[]) IS
'Spatial distance histogram of the rows of rel with explicit bucket width (coordinate units, positive and finite), read as gpu_simjoin reads them: bigint[nbuckets], element k+1 counts pairs with d in [k*width, (k+1)*width); pairs with d >= nbuckets*width are not counted; as gpu_sdh_fixed(x, y, z, nbuckets, width) over the same rows. Coordinates, rows and errors as gpu_sdh(rel, nbuckets, coords); a bad width is 22023; NULL for a NULL width. Method: 2-BS framework, Type-II.';

CREATE FUNCTION gpu_pair_count(rel regclass, r float8, coords text[] DEFAULT NULL)
  RETURNS bigint
  AS 'MODULE_PATHNAME', 'gpu2bs_pair_count_rel' LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpu_pair_count(regclass, float8, text[]) IS
'Two-point correlation count of the rows of rel, read as gpu_simjoin reads them (one query as the calling user, no per-row aggregate calls): the number (bigint) of unordered pairs with distance <= r (coordinate units, >= 0, +Infinity counts all pairs). Coordinates: the columns named in coords (2 to 6, any numeric type), else every float8 column in column order. Rows with a NULL coordinate are skipped; NULL for no rows or a NULL rel or r. Errors: NaN or negative r, NaN/infinite coordinates, fewer than 2 or more than 6 coordinates (22023); missing relation (42P01) or column (42703); non-numeric column (42804); no SELECT privilege (42501). Method: 2-BS framework, Type-I output, on the similarity join''s grid index when it examines fewer pairs.';
