-- gpu2bs.devices: the values its check hook accepts and refuses (22023), and the answers on the
-- CPU engine, which ignores the list. The splits across devices and the join's slabs are tested
-- on the GPU by test/gpu/test_multigpu.cpp (bit for bit against one device).
LOAD 'gpu2bs';
SHOW gpu2bs.devices;
SET gpu2bs.devices = 'ALL';
SET gpu2bs.devices = '0';
SET gpu2bs.devices = ' 1 , 0 ';
SHOW gpu2bs.devices;
SET gpu2bs.devices = '';
SET gpu2bs.devices = '0,0';
SET gpu2bs.devices = 'gpu0';
SET gpu2bs.devices = '-1';
SET gpu2bs.devices = '0,';
SHOW gpu2bs.devices;
RESET gpu2bs.devices;
SHOW gpu2bs.devices;
SET gpu2bs.device = cpu;
SET gpu2bs.precision = float8;
CREATE TEMP TABLE mg AS
  SELECT i AS id, (i % 97) * 0.01 AS x, (i % 89) * 0.01 AS y, (i % 83) * 0.01 AS z
  FROM generate_series(1, 3000) i;
CREATE TEMP TABLE mg_ref AS
  SELECT gpu_sdh(x, y, z, 16) AS h, gpu_pair_count(x, y, z, 0.1) AS c FROM mg;
SET gpu2bs.devices = '1,0';
SELECT gpu_sdh(x, y, z, 16) = (SELECT h FROM mg_ref) AS same_sdh,
       gpu_pair_count(x, y, z, 0.1) = (SELECT c FROM mg_ref) AS same_count FROM mg;
SELECT value FROM gpu2bs_info() WHERE name = 'last_devices';
RESET gpu2bs.devices;
RESET gpu2bs.device;
RESET gpu2bs.precision;
