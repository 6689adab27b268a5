--
-- The literal forms people type: every function with integer, numeric, float and string
-- literals and casts in each position. Each name has one form per number of arguments
-- (gpu_sdh 3 and 4, gpu_sdh_fixed 4 and 5, gpu_sdh_width 3 and 4, gpu_pair_count 3 and 4; the
-- compatibility gpu_sdh with 5), so no call is ambiguous (never 42725). A literal that cannot
-- be converted implicitly (a numeric or bigint bucket count) is 42883, PostgreSQL's own rule.
-- Relation forms with a quoted name take the string-typed form (rel text, ..., coords text); the
-- one call PostgreSQL cannot decide is the one with every argument quoted and an integer
-- parameter beside the aggregate's float8 (gpu_sdh('t', '4', '{x,y}'): 42725), and the pair-expression
-- gpu_pair_count with a regclass first and an untyped second argument (regclass or float8: 42725).
--
SET gpu2bs.precision = float8;
CREATE TABLE lit (id int PRIMARY KEY, x float8, y float8, z float8, xi int, yi int);
INSERT INTO lit VALUES (1, 0, 0, 0, 0, 0), (2, 3, 4, 0, 3, 4), (3, 1, 1, 1, 1, 1), (4, 6, 8, 2, 6, 8);

-- the call's result as text, or its SQLSTATE and message
CREATE FUNCTION try_call(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text;
BEGIN
  EXECUTE 'SELECT (' || q || ')::text FROM lit' INTO r;
  RETURN r;
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

SELECT call, try_call(call) AS result FROM (VALUES
  -- gpu_sdh, 2-D (x, y, nbuckets)
  ('gpu_sdh(x, y, 4)'), ('gpu_sdh(x, y, 4::int2)'), ('gpu_sdh(x, y, ''4'')'),
  ('gpu_sdh(xi, yi, 4)'), ('gpu_sdh(x::real, y::numeric, 4)'), ('gpu_sdh(x, y, 4::bigint)'),
  ('gpu_sdh(x, y, 4.0)'), ('gpu_sdh(x, y, 4e0)'),
  -- gpu_sdh, 3-D (x, y, z, nbuckets): integer z literals are the 3-D form with z constant
  ('gpu_sdh(x, y, z, 4)'), ('gpu_sdh(x, y, 0, 4)'), ('gpu_sdh(x, y, 0.0, 4)'), ('gpu_sdh(x, y, 0e0, 4)'),
  ('gpu_sdh(x, y, 0::int, 4)'), ('gpu_sdh(x, y, 0::float8, 4::int2)'), ('gpu_sdh(xi, yi, 0, 4)'),
  ('gpu_sdh(x, y, ''0'', ''4'')'), ('gpu_sdh(x, y, z, 4.0)'), ('gpu_sdh(1, 2, 3, 4)'),
  -- gpu_sdh_fixed, 2-D (x, y, nbuckets, width)
  ('gpu_sdh_fixed(x, y, 4, 5)'), ('gpu_sdh_fixed(x, y, 4, 5.0)'), ('gpu_sdh_fixed(x, y, 4, 5e0)'),
  ('gpu_sdh_fixed(x, y, 4, 5::real)'), ('gpu_sdh_fixed(x, y, 4, ''5'')'), ('gpu_sdh_fixed(x, y, 4, 2.5::numeric)'),
  ('gpu_sdh_fixed(xi, yi, 4::int2, 5)'), ('gpu_sdh_fixed(x, y, 4.0, 5)'),
  -- gpu_sdh_fixed, 3-D (x, y, z, nbuckets, width)
  ('gpu_sdh_fixed(x, y, z, 4, 5)'), ('gpu_sdh_fixed(x, y, 0, 4, 5)'), ('gpu_sdh_fixed(x, y, 0.0, 4, 2.5)'),
  ('gpu_sdh_fixed(x, y, z, 4, 2.5e0)'), ('gpu_sdh_fixed(x, y, z, ''4'', ''2.5'')'),
  -- gpu_sdh with five arguments (compatibility name of gpu_sdh_fixed, 3-D)
  ('gpu_sdh(x, y, z, 4, 5)'), ('gpu_sdh(x, y, 0, 4, 2.5)'),
  -- the 2-D explicit-width gpu_sdh of 0.1 is gone: its calls are the 3-D form or 42883
  ('gpu_sdh(x, y, 4, 5)'), ('gpu_sdh(x, y, 4, 5.0)'),
  -- gpu_sdh_width, 2-D and 3-D
  ('gpu_sdh_width(x, y, 4)'), ('gpu_sdh_width(x, y, ''4'')'), ('gpu_sdh_width(x, y, z, 4)'),
  ('gpu_sdh_width(x, y, 0, 4)'), ('gpu_sdh_width(x, y, 0.0, 4::int2)'), ('gpu_sdh_width(x, y, 4.0)'),
  -- gpu_pair_count, 2-D (x, y, r) and 3-D (x, y, z, r)
  ('gpu_pair_count(x, y, 5)'), ('gpu_pair_count(x, y, 5.0)'), ('gpu_pair_count(x, y, 5e0)'),
  ('gpu_pair_count(x, y, ''5'')'), ('gpu_pair_count(x, y, 5::real)'), ('gpu_pair_count(xi, yi, 5::bigint)'),
  ('gpu_pair_count(x, y, z, 5)'), ('gpu_pair_count(x, y, 0, 5)'), ('gpu_pair_count(x, y, 0, 5.0)'),
  ('gpu_pair_count(x, y, 0.0, 5)'), ('gpu_pair_count(x, y, z, ''Infinity'')'), ('gpu_pair_count(1, 2, 3, 4)'),
  -- relation forms with an untyped name: the text form takes them, never the float8 aggregate
  ('gpu_pair_count(''lit'', 5, ''{x,y}'')'), ('gpu_pair_count(''lit'', 5.0, ''{x,y}'')'),
  ('gpu_pair_count(''lit'', 5)'), ('gpu_pair_count(''lit'', 5, coords => ''{x,y}'')'),
  ('gpu_pair_count(''lit''::regclass, 5, ''{x,y}'')'), ('gpu_pair_count(''public.lit'', ''5'', ''{x,y,z}'')'),
  ('gpu_pair_count(''nosuch'', 5)'), ('gpu_pair_count(NULL, 5)'),
  -- gpu_pair_count, pair expressions (a, b, predicate): quoted names take the string twin; a
  -- second argument that reads as a number stays the distance r of (rel, r, coords)
  ('gpu_pair_count(''lit'', ''lit'', ''a.x < b.x'')'), ('gpu_pair_count(''lit''::regclass, ''lit''::regclass, ''a.x < b.x'')'),
  ('gpu_pair_count(''lit'', ''lit'', predicate => ''a.x + b.y <= 5'')'), ('gpu_pair_count(''lit'', ''5'', ''{x,y}'')'),
  ('gpu_pair_count(''lit'', '' 5e0 '', ''{x,y}'')'), ('gpu_pair_count(''lit''::regclass, ''lit'', ''a.x < b.x'')'),
  ('gpu_pair_count(''lit'', ''lit'', ''a.x < b.xx'')'),
  ('gpu_sdh(''lit'', 4, ''{x,y}'')'), ('gpu_sdh(''lit'', 4)'), ('gpu_sdh(''lit'', ''4'', ''{xi,yi}'')'),
  ('gpu_sdh_fixed(''lit'', 4, 5, ''{x,y}'')'), ('gpu_sdh_fixed(''lit'', 4, 5.0, ''{x,y}'')'),
  ('gpu_sdh_fixed(''lit'', 4, 5)')
) v(call);

-- the 3-D form with a constant z is the 2-D histogram of the same points
SELECT gpu_sdh(x, y, 0, 10) = gpu_sdh(x, y, 10) AS sdh_same,
       gpu_sdh_width(x, y, 0, 10) = gpu_sdh_width(x, y, 10) AS width_same,
       gpu_sdh_fixed(x, y, 0, 10, 1) = gpu_sdh_fixed(x, y, 10, 1) AS fixed_same,
       gpu_pair_count(x, y, 0, 5) = gpu_pair_count(x, y, 5) AS count_same
FROM lit;

-- one form per name and number of arguments
SELECT p.proname, p.pronargs, count(*) AS forms
FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
  AND d.refclassid = 'pg_extension'::regclass
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'gpu2bs'
WHERE p.prokind = 'a'
GROUP BY 1, 2 ORDER BY 1, 2;

DROP FUNCTION try_call(text);
DROP TABLE lit;
