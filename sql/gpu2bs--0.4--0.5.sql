-- gpu2bs 0.4 -> 0.5 upgrade: run by ALTER EXTENSION gpu2bs UPDATE TO '0.5'.
-- Every object 0.5 adds or changes is created here in the same form as in gpu2bs--0.5.sql, so
-- that a fresh 0.5 install and an upgraded 0.4 install are equal.
\echo Use "ALTER EXTENSION gpu2bs UPDATE TO '0.5'" to load this file. \quit
