// Module magic and _PG_init: registers the settings. Nothing else happens at load time (the
// GPU is initialized lazily, inside a backend, on first use).
#include "pg.h"

extern "C" {
#include "utils/guc.h"
}

#include "admission.h"
#include "settings.h"
#include "simjoin.h"

extern "C" {
PG_MODULE_MAGIC;

void _PG_init(void);

// Registers the gpu2bs.* settings, the admission's shared memory (when preloaded), the
// custom scans of the similarity join, DBSCAN and gpu_pairwise, and the planner hooks.
void _PG_init(void) {
  gpu2bs::pg::define_settings();
  gpu2bs::pg::define_admission();
  gpu2bs::pg::register_simjoin_scan();
  gpu2bs::pg::register_dbscan_scan();
  gpu2bs::pg::register_pairwise_scan();
  gpu2bs::pg::register_join_path();
  gpu2bs::pg::register_agg_read();
  // Last: every gpu2bs.* setting is defined, so placeholders set before the load are kept.
  MarkGUCPrefixReserved("gpu2bs");
}
}
