-- gpu2bs 0.3 -> 0.4 upgrade: run by ALTER EXTENSION gpu2bs UPDATE TO '0.4'.
-- Every object 0.4 adds or changes is created here in the same form as in gpu2bs--0.4.sql, so
-- that a fresh 0.4 install and an upgraded 0.3 install are equal.
\echo Use "ALTER EXTENSION gpu2bs UPDATE TO '0.4'" to load this file. \quit

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
