/* The drivers' CSV files: a header of named columns, rows set cell by cell, the rows of the
 * other cost profile kept, and the columns every database and search experiment shares
 * (exp.h). */
#include "experiments/exp.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "bfh_commit.h" /* BFH_COMMIT, generated at build time (cmake/bfhCommit.cmake) */

/* ---- CSV --------------------------------------------------------------------------------- */

#define CSV_MAX_COLS 64
#define CSV_CELL 48

struct exp_csv {
  FILE *f;
  char path[1024];
  size_t ncols;
  const char *cols[CSV_MAX_COLS];
  char cells[CSV_MAX_COLS][CSV_CELL];
  int err;
  const char *costs; /* the run's cost profile, the costs cell of every row not set */
};

static char *keep_other_costs(const exp_csv_t *c) {
  FILE *f = fopen(c->path, "r");
  if (!f) return NULL;
  char header[4096] = "", want[4096] = "";
  size_t w = 0;
  int col = -1;
  for (size_t i = 0; i < c->ncols && w < sizeof want; i++) {
    if (strcmp(c->cols[i], "costs") == 0) col = (int)i;
    w += (size_t)snprintf(want + w, sizeof want - w, "%s%s", i ? "," : "", c->cols[i]);
  }
  char *out = NULL, *line = NULL;
  size_t len = 0, cap = 0, lcap = 0;
  if (col >= 0 && fgets(header, sizeof header, f) && strcspn(header, "\n") == strlen(want) &&
      strncmp(header, want, strlen(want)) == 0) {
    ssize_t n;
    while ((n = getline(&line, &lcap, f)) > 0) {
      const char *cell = line; /* the costs cell */
      for (int i = 0; i < col && cell; i++) {
        cell = strchr(cell, ',');
        if (cell) cell++;
      }
      size_t cl = cell ? strcspn(cell, ",\n") : 0;
      if (!cell || (cl == strlen(c->costs) && strncmp(cell, c->costs, cl) == 0)) continue;
      if (len + (size_t)n + 1 > cap) {
        cap = (len + (size_t)n + 1) * 2;
        char *o = realloc(out, cap);
        if (!o) break;
        out = o;
      }
      memcpy(out + len, line, (size_t)n);
      len += (size_t)n;
      out[len] = '\0';
    }
  }
  free(line);
  fclose(f);
  return out;
}

exp_csv_t *exp_csv_open(const exp_ctx_t *x, const char *name, const char *const *cols) {
  if (exp_mkdir_p(x->out_dir) != 0) {
    fprintf(stderr, "bfh: cannot create %s: %s\n", x->out_dir, strerror(errno));
    return NULL;
  }
  exp_csv_t *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  snprintf(c->path, sizeof c->path, "%s/%s.csv", x->out_dir, name);
  c->costs = exp_costs_name(x->costs);
  int has_costs = 0;
  for (size_t i = 0; cols[i] && c->ncols < CSV_MAX_COLS; i++) {
    c->cols[c->ncols++] = cols[i];
    has_costs |= strcmp(cols[i], "costs") == 0;
  }
  if (!has_costs && c->ncols < CSV_MAX_COLS) c->cols[c->ncols++] = "costs";
  /* Every CSV has the columns of EXP_COMMON_COLS, at the end unless cols has them. */
  for (size_t j = 0; EXP_COMMON_COLS[j] && c->ncols < CSV_MAX_COLS; j++) {
    size_t i = 0;
    while (i < c->ncols && strcmp(c->cols[i], EXP_COMMON_COLS[j]) != 0) i++;
    if (i == c->ncols) c->cols[c->ncols++] = EXP_COMMON_COLS[j];
  }
  char *kept = keep_other_costs(c);
  c->f = fopen(c->path, "w");
  if (!c->f) {
    fprintf(stderr, "bfh: cannot write %s: %s\n", c->path, strerror(errno));
    free(kept);
    free(c);
    return NULL;
  }
  for (size_t i = 0; i < c->ncols; i++) fprintf(c->f, "%s%s", i ? "," : "", c->cols[i]);
  fputc('\n', c->f);
  if (kept) fputs(kept, c->f);
  free(kept);
  return c;
}

const char *exp_commit(void) {
  return BFH_COMMIT;
}

void exp_csv_shape(exp_csv_t *c, double entries_per_table, uint64_t m) {
  if (!(entries_per_table > 0)) return;
  exp_csv_dbl(c, "entries_per_table", entries_per_table);
  if (m) exp_csv_dbl(c, "bits_per_value", (double)m / entries_per_table);
}

static char *cell(exp_csv_t *c, const char *col) {
  for (size_t i = 0; i < c->ncols; i++)
    if (strcmp(c->cols[i], col) == 0) return c->cells[i];
  if (!c->err) fprintf(stderr, "bfh: %s: no column named '%s' (ignored)\n", c->path, col);
  c->err = 1;
  return NULL;
}

void exp_csv_str(exp_csv_t *c, const char *col, const char *v) {
  char *p = cell(c, col);
  if (p) snprintf(p, CSV_CELL, "%s", v);
}

void exp_csv_u64(exp_csv_t *c, const char *col, uint64_t v) {
  char *p = cell(c, col);
  if (p) snprintf(p, CSV_CELL, "%llu", (unsigned long long)v);
}

void exp_csv_dbl(exp_csv_t *c, const char *col, double v) {
  char *p = cell(c, col);
  if (p) snprintf(p, CSV_CELL, "%.6g", v);
}

void exp_csv_row(exp_csv_t *c) {
  exp_csv_str(c, "commit", BFH_COMMIT);
  char *costs = cell(c, "costs");
  if (costs && !costs[0]) snprintf(costs, CSV_CELL, "%s", c->costs);
  for (size_t i = 0; i < c->ncols; i++) {
    fprintf(c->f, "%s%s", i ? "," : "", c->cells[i]);
    c->cells[i][0] = '\0';
  }
  fputc('\n', c->f);
  fflush(c->f);
}

int exp_csv_close(exp_csv_t *c) {
  if (!c) return 0;
  int rc = ferror(c->f) ? -1 : 0;
  if (fclose(c->f) != 0) rc = -1;
  if (rc) fprintf(stderr, "bfh: error writing %s\n", c->path);
  free(c);
  return rc;
}

const char *const EXP_DB_COLS[] = {
    "engine",      "scale",          "n",         "domain_pct",  "insert_order", "m", "k", "d",
    "table_bytes", "leaves_on_disk", "placement", "domain_mode", "costs",        NULL};
const char *const EXP_COMMON_COLS[] = {"commit", "entries_per_table", "bits_per_value", NULL};
const char *const EXP_SEARCH_COLS[] = {"method",
                                       "query",
                                       "cache",
                                       "resident_pct",
                                       "queries",
                                       "wrong",
                                       "time_s",
                                       "time_min_s",
                                       "time_max_s",
                                       "time_q1_s",
                                       "time_q3_s",
                                       "internal_probes",
                                       "leaf_probes",
                                       "leaf_positives",
                                       "tables_scanned",
                                       "tables_matched",
                                       "tables_live",
                                       "entries_scanned",
                                       "bytes_read",
                                       "candidates",
                                       "results",
                                       "fpr_leaves",
                                       "block_filters_probed",
                                       "blocks_read",
                                       "internal_maybe",
                                       NULL};

void exp_cols_cat(const char **out, size_t cap, ...) {
  size_t n = 0;
  va_list ap;
  va_start(ap, cap);
  const char *const *list;
  while ((list = va_arg(ap, const char *const *)) != NULL)
    for (size_t i = 0; list[i] && n + 1 < cap; i++) out[n++] = list[i];
  va_end(ap);
  out[n] = NULL;
}

void exp_csv_db_params(exp_csv_t *c, const exp_ctx_t *x, const exp_db_params_t *p) {
  exp_csv_str(c, "engine", exp_engine_name(p->engine));
  exp_csv_str(c, "scale", exp_scale_name(x->scale));
  exp_csv_u64(c, "n", p->wl.n);
  exp_csv_dbl(c, "domain_pct", p->wl.domain_pct);
  exp_csv_str(c, "insert_order", p->wl.order == WORKLOAD_RANDOM ? "random" : "sequential");
  exp_csv_u64(c, "m", p->m);
  exp_csv_u64(c, "k", p->k);
  exp_csv_u64(c, "d", p->d);
  exp_csv_u64(c, "table_bytes", p->table_bytes);
  exp_csv_u64(c, "leaves_on_disk", (uint64_t)p->leaves_on_disk);
  exp_csv_str(c, "placement", exp_placement_name(p->placement));
  exp_csv_str(c, "domain_mode", workload_values_name(p->wl.values));
  exp_csv_str(c, "costs", exp_costs_name(x->costs));
}

void exp_csv_search(exp_csv_t *c, const char *method, const char *query,
                    const exp_search_result_t *r) {
  exp_csv_str(c, "method", method);
  exp_csv_str(c, "query", query);
  exp_csv_str(c, "cache", !r->cold ? "warm" : r->drop_caches ? "cold+drop_caches" : "cold");
  if (r->cold) exp_csv_dbl(c, "resident_pct", r->resident_pct);
  exp_csv_u64(c, "queries", (uint64_t)r->queries);
  exp_csv_u64(c, "wrong", (uint64_t)r->wrong);
  exp_csv_dbl(c, "time_s", r->time_s);
  exp_csv_dbl(c, "time_min_s", r->time_min_s);
  exp_csv_dbl(c, "time_max_s", r->time_max_s);
  exp_csv_dbl(c, "time_q1_s", r->time_q1_s);
  exp_csv_dbl(c, "time_q3_s", r->time_q3_s);
  exp_csv_dbl(c, "internal_probes", r->mean.internal_probes);
  exp_csv_dbl(c, "leaf_probes", r->mean.leaf_probes);
  exp_csv_dbl(c, "leaf_positives", r->mean.leaf_positives);
  exp_csv_dbl(c, "tables_scanned", r->mean.tables_scanned);
  exp_csv_dbl(c, "tables_matched", r->mean.tables_matched);
  exp_csv_dbl(c, "tables_live", r->mean.tables_live);
  exp_csv_dbl(c, "entries_scanned", r->mean.entries_scanned);
  exp_csv_dbl(c, "bytes_read", r->mean.bytes_read);
  exp_csv_dbl(c, "candidates", r->mean.candidates);
  exp_csv_dbl(c, "results", r->mean.results);
  if (r->fpr_leaves >= 0) exp_csv_dbl(c, "fpr_leaves", r->fpr_leaves);
  exp_csv_dbl(c, "block_filters_probed", r->mean.block_filters_probed);
  exp_csv_dbl(c, "blocks_read", r->mean.blocks_read);
  exp_csv_dbl(c, "internal_maybe", r->mean.internal_maybe);
}
