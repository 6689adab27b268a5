-- gpu2bs 0.1 -> 0.2 upgrade: run by ALTER EXTENSION gpu2bs UPDATE TO '0.2'.
-- Every object that 0.2 adds or changes relative to 0.1 is created or replaced here, in the same
-- form as in gpu2bs--0.2.sql, so that a fresh 0.2 install and an upgraded 0.1 install are equal.
\echo Use "ALTER EXTENSION gpu2bs UPDATE TO '0.2'" to load this file. \quit

-- Relation forms of gpu_sdh and gpu_pair_count (new in 0.2).
CREATE FUNCTION gpu_sdh(rel regclass, nbuckets int4, coords text[] DEFAULT NULL, width float8 DEFAULT NULL)
  RETURNS bigint[]
  AS 'MODULE_PATHNAME', 'gpu2bs_sdh_rel' LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpu_sdh(regclass, int4, text[], float8) IS
'Spatial distance histogram of the rows of rel, read as gpu_simjoin reads them (one query as the calling user, no per-row aggregate calls): bigint[nbuckets], element k+1 counts the unordered pairs with distance d in [k*w, (k+1)*w). Coordinates: the columns named in coords (2 to 6, any numeric type), else every float8 column in column order. width NULL (default): w = bounding-box diagonal / nbuckets and a pair at d = diagonal counts in the last bucket, as gpu_sdh(x, y, z, nbuckets); width given by name (width => w, coordinate units, positive and finite): pairs with d >= nbuckets*w are not counted, as gpu_sdh(x, y, z, nbuckets, width). Rows with a NULL coordinate are skipped; NULL for no rows or a NULL rel or nbuckets. Errors: nbuckets outside 1..1048576, bad width, NaN/infinite coordinates, fewer than 2 or more than 6 coordinates (22023); missing relation (42P01) or column (42703); non-numeric column (42804); no SELECT privilege (42501). Method: 2-BS framework (Type-II output, tiling, output privatization).';

CREATE FUNCTION gpu_pair_count(rel regclass, r float8, coords text[] DEFAULT NULL)
  RETURNS bigint
  AS 'MODULE_PATHNAME', 'gpu2bs_pair_count_rel' LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpu_pair_count(regclass, float8, text[]) IS
'Two-point correlation count of the rows of rel, read as gpu_simjoin reads them (one query as the calling user, no per-row aggregate calls): the number (bigint) of unordered pairs with distance <= r (coordinate units, >= 0, +Infinity counts all pairs). Coordinates: the columns named in coords (2 to 6, any numeric type), else every float8 column in column order. Rows with a NULL coordinate are skipped; NULL for no rows or a NULL rel or r. Errors: NaN or negative r, NaN/infinite coordinates, fewer than 2 or more than 6 coordinates (22023); missing relation (42P01) or column (42703); non-numeric column (42804); no SELECT privilege (42501). Method: 2-BS framework, Type-I output, on the similarity join''s grid index when it examines fewer pairs.';
