-- Every object that belongs to the gpu2bs extension, with its full definition, one line each,
-- sorted: two databases whose outputs are equal have equal gpu2bs installs.
WITH ext AS (SELECT oid FROM pg_extension WHERE extname = 'gpu2bs'),
members AS (
  SELECT d.classid, d.objid, d.objsubid FROM pg_depend d, ext
   WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid AND d.deptype = 'e')
SELECT pg_describe_object(m.classid, m.objid, m.objsubid) || ' | ' ||
       coalesce(obj_description(m.objid, m.classid::regclass::text), '<no comment>') || ' | ' ||
       CASE
         WHEN m.classid = 'pg_proc'::regclass THEN (
           SELECT concat_ws(' ; ', p.prokind, p.provolatile, p.proparallel, p.proisstrict,
                            p.prosecdef, p.procost, p.prorows, p.prosupport::regproc::text,
                            p.proretset, pg_get_function_arguments(p.oid),
                            pg_get_function_result(p.oid), p.prosrc, p.probin,
                            p.proacl::text, p.proconfig::text,
                            (SELECT concat_ws(' ; ', a.aggkind, a.aggtransfn::text,
                                              a.aggfinalfn::text, a.aggcombinefn::text,
                                              a.aggserialfn::text, a.aggdeserialfn::text,
                                              a.aggtranstype::regtype::text, a.aggtransspace,
                                              a.aggfinalextra, a.aggfinalmodify, a.agginitval,
                                              a.aggmtransfn::text, a.aggsortop::regoper::text)
                               FROM pg_aggregate a WHERE a.aggfnoid = p.oid))
             FROM pg_proc p WHERE p.oid = m.objid)
         WHEN m.classid = 'pg_type'::regclass THEN (
           SELECT concat_ws(' ; ', t.typtype, t.typlen, t.typinput::text, t.typoutput::text,
                            format_type(t.oid, NULL), t.typacl::text)
             FROM pg_type t WHERE t.oid = m.objid)
         WHEN m.classid = 'pg_class'::regclass THEN (
           SELECT concat_ws(' ; ', c.relkind, c.relacl::text,
                            CASE WHEN c.relkind IN ('v', 'm') THEN pg_get_viewdef(c.oid) END,
                            (SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum)
                               FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped))
             FROM pg_class c WHERE c.oid = m.objid)
         WHEN m.classid = 'pg_cast'::regclass THEN (
           SELECT concat_ws(' ; ', c.castfunc::regproc::text, c.castcontext, c.castmethod)
             FROM pg_cast c WHERE c.oid = m.objid)
         WHEN m.classid = 'pg_operator'::regclass THEN (
           SELECT concat_ws(' ; ', o.oprcode::text, o.oprcom::regoper::text, o.oprnegate::regoper::text,
                            o.oprrest::text, o.oprjoin::text)
             FROM pg_operator o WHERE o.oid = m.objid)
         ELSE '<definition not compared>'
       END AS object
  FROM members m
 ORDER BY 1;
