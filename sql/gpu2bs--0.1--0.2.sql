-- gpu2bs 0.1 -> 0.2 upgrade: run by ALTER EXTENSION gpu2bs UPDATE TO '0.2'.
-- Every object that 0.2 adds or changes relative to 0.1 is created or replaced here, in the same
-- form as in gpu2bs--0.2.sql, so that a fresh 0.2 install and an upgraded 0.1 install are equal.
\echo Use "ALTER EXTENSION gpu2bs UPDATE TO '0.2'" to load this file. \quit

------------------------------------------------------------------------------------------------
-- All-pairs vectors
------------------------------------------------------------------------------------------------

CREATE FUNCTION gpu_pairwise(a regclass, b regclass, vec text, metric text, k int DEFAULT NULL,
                             threshold float8 DEFAULT NULL, id text DEFAULT NULL)
  RETURNS TABLE(id1 bigint, id2 bigint, value float8)
  AS 'MODULE_PATHNAME', 'gpu2bs_pairwise' LANGUAGE C STABLE PARALLEL RESTRICTED ROWS 100000;
COMMENT ON FUNCTION gpu_pairwise(regclass, regclass, text, text, int, float8, text) IS
'All-pairs matrix over vectors (Sarje and Aluru, All-pairs computations on many-core graphics processors, 2013: tiles r x c, subtiles, slices of d'' dimensions): value(u, v) for rows u of a and v of b, from the real[] or double precision[] column vec of both (every vector the same length d, 1 to 65535; computed in float4 from the elements rounded to float4). metric: l1, l2 (Euclidean), sqeuclidean, cosine (1 - cosine similarity; a zero vector has distance 1 to every vector), dot (dot product, larger is better), lp:<p> (1 <= p <= 64). Exactly one of k (the k best rows of b for each row of a, best first: smallest value, largest for dot; ties by the smaller id2; fewer when b has fewer rows) and threshold (every pair with value <= threshold, >= for dot). When a and b are the same relation, each row''s pair with itself is excluded, and threshold returns each unordered pair once with id1 < id2. Key (id): the named integer column, else the single-column integer primary key, else an integer column named id. Rows with a NULL key or vector are skipped; a NULL a, b, vec or metric returns no rows. Result (id1 from a, id2 from b, value in float8). Errors (22023): unknown metric, neither or both of k and threshold, k < 1, NaN threshold, vectors of different lengths, empty vectors, NULL or non-finite elements; missing relation (42P01) or column (42703); wrong column type (42804); no SELECT privilege (42501); more than gpu2bs.max_result_rows rows (54000). gpu2bs.pairwise_precision = fast uses TF32 tensor cores on the GPU for l2, sqeuclidean, cosine and dot, re-ranked exactly (same result as exact).';
