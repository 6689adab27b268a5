-- gpu2bs 0.4 -> 0.5 upgrade: run by ALTER EXTENSION gpu2bs UPDATE TO '0.5'.
-- Every object 0.5 adds or changes is created here in the same form as in gpu2bs--0.5.sql, so
-- that a fresh 0.5 install and an upgraded 0.4 install are equal.
\echo Use "ALTER EXTENSION gpu2bs UPDATE TO '0.5'" to load this file. \quit

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
