-- gpu2bs 0.4 -> 0.5 upgrade: run by ALTER EXTENSION gpu2bs UPDATE TO '0.5'.
-- Every object 0.5 adds or changes is created here in the same form as in gpu2bs--0.5.sql, so
-- that a fresh 0.5 install and an upgraded 0.4 install are equal.
\echo Use "ALTER EXTENSION gpu2bs UPDATE TO '0.5'" to load this file. \quit

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
