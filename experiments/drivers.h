/* The paper's drivers: one function per artifact of `bfh run` (experiments/exp_<name>.c), and
 * the one table that names them, says which CSV files each writes and in which order `all`
 * runs them. `bfh run` dispatches through it, names its output files from it, and REPORT.md
 * finds the CSVs by it.
 */
#ifndef BFH_EXPERIMENTS_DRIVERS_H
#define BFH_EXPERIMENTS_DRIVERS_H

#include <stddef.h>

#include "experiments/exp.h"

typedef int (*exp_driver_fn)(const exp_ctx_t *x);
int exp_table1(const exp_ctx_t *x);
int exp_fig6(const exp_ctx_t *x);
int exp_table2(const exp_ctx_t *x);
int exp_fig7(const exp_ctx_t *x);
int exp_fig8(const exp_ctx_t *x);
int exp_fig9(const exp_ctx_t *x);
int exp_fig10_12(const exp_ctx_t *x); /* writes fig10.csv and fig12.csv */
int exp_fig11(const exp_ctx_t *x);
int exp_fig13(const exp_ctx_t *x);  /* Fig. 13 and Table III */
int exp_beyond(const exp_ctx_t *x); /* beyond the paper: time vs N with AUTO's block path */
/* Beyond the paper: write cost against search time, bfh's embedded index against a
   stand-alone one (writes tradeoff.csv and tradeoff_goals.csv). */
int exp_tradeoff(const exp_ctx_t *x);
/* Beyond the paper: index memory against search time, the paper's layout, the lean layout,
   the Cuckoo Index and the stand-alone index (writes memory.csv; not run by `all`). */
int exp_memory(const exp_ctx_t *x);
/* Beyond the paper: declared attributes' cost at ingest and in memory, three JSON attributes
   against the whole value (writes attributes.csv). */
int exp_attributes(const exp_ctx_t *x);
/* Beyond the paper: YCSB's core workloads recast for value search, on every engine, method
   and record source (writes ycsb.csv and ycsb_cdf.csv; not run by `all`). */
int exp_ycsb(const exp_ctx_t *x);
/* The names --series may give ycsb, i = 0, 1, ...: its sources, then bare and the methods;
   NULL past the last. A list naming a source runs only the sources it names, one naming a
   method (or bare) only those methods; --engine runs one engine. */
const char *exp_ycsb_series_at(size_t i);
/* Beyond the paper: scale-out simulated, N shards and a coordinator's per-shard summaries
   (writes shards.csv; not run by `all`). */
int exp_shards(const exp_ctx_t *x);
/* Beyond the paper: a table's range filters against Grafite's bound, the per-table range
   filter and dyadic prefixes in a Bloom filter (writes ranges.csv; not run by `all`). */
int exp_ranges(const exp_ctx_t *x);

/* A row of the table: the driver's name (as `bfh run` takes it), its function, and the CSV
   files it writes in <out>, comma-separated names without ".csv". `bfh run NAME` runs the row
   whose name or one of whose outputs is NAME (fig12 is fig10's sweep, table3 is fig13's). */
typedef struct exp_driver {
  const char *name;
  exp_driver_fn fn;
  const char *outputs;
  int on_request; /* 1: run only when named, not by `bfh run all` (too long for its budget) */
} exp_driver_t;

/* The i-th driver, in the order `bfh run all` runs them (it skips those on_request), or
   NULL past the last. */
const exp_driver_t *exp_driver_at(size_t i);
/* The driver named name, or writing the CSV name (see above); NULL if none. */
const exp_driver_t *exp_driver_find(const char *name);
/* The i-th output of every driver, in table order, into out (cap bytes): "fig10", "fig12",
   ...; 0, or -1 past the last. */
int exp_driver_output_at(size_t i, char *out, size_t cap);

#endif
