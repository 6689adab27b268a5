-- gpu2bs 0.3 -> 0.4 upgrade: run by ALTER EXTENSION gpu2bs UPDATE TO '0.4'.
-- Every object 0.4 adds or changes is created here in the same form as in gpu2bs--0.4.sql, so
-- that a fresh 0.4 install and an upgraded 0.3 install are equal.
\echo Use "ALTER EXTENSION gpu2bs UPDATE TO '0.4'" to load this file. \quit
