-- gpu2bs 0.5 -> 0.6 upgrade: run by ALTER EXTENSION gpu2bs UPDATE TO '0.6'.
-- Every object 0.6 adds or changes is created here in the same form as in gpu2bs--0.6.sql, so
-- that a fresh 0.6 install and an upgraded 0.5 install are equal.
\echo Use "ALTER EXTENSION gpu2bs UPDATE TO '0.6'" to load this file. \quit
