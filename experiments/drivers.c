/* The table of the paper's drivers (drivers.h). */
#include "experiments/drivers.h"

#include <stdio.h>
#include <string.h>

/* Fig. 6 first: the databases it builds last are the ones Table I, II and Fig. 8 use. */
static const exp_driver_t DRIVERS[] = {
    {"fig6", exp_fig6, "fig6", 0},
    {"table1", exp_table1, "table1", 0},
    {"table2", exp_table2, "table2", 0},
    {"fig7", exp_fig7, "fig7", 0},
    {"fig8", exp_fig8, "fig8", 0},
    {"fig9", exp_fig9, "fig9", 0},
    {"fig10", exp_fig10_12, "fig10,fig12", 0},
    {"fig11", exp_fig11, "fig11", 0},
    {"fig13", exp_fig13, "fig13,table3", 0},
    {"beyond", exp_beyond, "beyond", 0},
    {"tradeoff", exp_tradeoff, "tradeoff,tradeoff_goals", 0},
    {"memory", exp_memory, "memory", 1},
    {"attributes", exp_attributes, "attributes", 1},
    {"ycsb", exp_ycsb, "ycsb,ycsb_cdf", 1},
    {"shards", exp_shards, "shards", 1},
    {"ranges", exp_ranges, "ranges", 1},
};
#define NDRIVERS (sizeof DRIVERS / sizeof DRIVERS[0])

const exp_driver_t *exp_driver_at(size_t i) {
  return i < NDRIVERS ? &DRIVERS[i] : NULL;
}

/* Is name one of the comma-separated names of list? */
static int listed(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
    if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == '\0')) return 1;
  return 0;
}

const exp_driver_t *exp_driver_find(const char *name) {
  for (size_t i = 0; i < NDRIVERS; i++)
    if (strcmp(DRIVERS[i].name, name) == 0) return &DRIVERS[i];
  for (size_t i = 0; i < NDRIVERS; i++)
    if (listed(DRIVERS[i].outputs, name)) return &DRIVERS[i];
  return NULL;
}

int exp_driver_output_at(size_t i, char *out, size_t cap) {
  for (size_t d = 0; d < NDRIVERS; d++) {
    const char *p = DRIVERS[d].outputs;
    for (;;) {
      size_t len = strcspn(p, ",");
      if (i-- == 0) {
        snprintf(out, cap, "%.*s", (int)len, p);
        return 0;
      }
      if (!p[len]) break;
      p += len + 1;
    }
  }
  return -1;
}
