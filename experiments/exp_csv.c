/* The drivers' CSV files: a header of named columns, rows set cell by cell, the rows a run
 * does not measure kept (the other cost profile's; with exp_csv_open_subset, the other series,
 * caches and sizes), and the columns every database and search experiment shares
 * (exp.h). */
#include "experiments/exp.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
  unsigned keys;     /* EXP_CSV_KEY_* (exp_csv_open_subset), 0: a run replaces its profile's rows */
  size_t kept;       /* rows kept from the existing file */
};

/* The cell of column col (>= 0) of line, and its length in *len; NULL if the line is short. */
static const char *cell_at(const char *line, int col, size_t *len) {
  const char *cell = line;
  for (int i = 0; i < col && cell; i++) {
    cell = strchr(cell, ',');
    if (cell) cell++;
  }
  if (cell) *len = strcspn(cell, ",\n");
  return cell;
}

static int cell_is(const char *cell, size_t len, const char *v) {
  return cell && len == strlen(v) && strncmp(cell, v, len) == 0;
}

static int col_index(const exp_csv_t *c, const char *name) {
  for (size_t i = 0; i < c->ncols; i++)
    if (strcmp(c->cols[i], name) == 0) return (int)i;
  return -1;
}

/* Does the run x measure the row `line` of an existing file (exp_csv_open_subset)? */
static int row_replaced(const exp_csv_t *c, const exp_ctx_t *x, const char *line) {
  size_t len = 0;
  const char *cell = cell_at(line, col_index(c, "costs"), &len);
  if (!cell) return 1;
  if (!cell_is(cell, len, c->costs)) return 0; /* the other cost profile's */
  if (!c->keys) return 1;
  int col = col_index(c, "scale");
  if (col >= 0 && (cell = cell_at(line, col, &len)) &&
      !cell_is(cell, len, exp_scale_name(x->scale)))
    return 1; /* another scale's, with the run's costs */
  if ((c->keys & EXP_CSV_KEY_SERIES) && (col = col_index(c, "series")) >= 0 &&
      (cell = cell_at(line, col, &len))) {
    char series[CSV_CELL];
    snprintf(series, sizeof series, "%.*s", (int)len, cell);
    if (!exp_sweep_series_wanted(x, series)) return 0;
  }
  if ((c->keys & EXP_CSV_KEY_CACHE) && (col = col_index(c, "cache")) >= 0 &&
      (cell = cell_at(line, col, &len))) {
    const int bit = len >= 4 && strncmp(cell, "cold", 4) == 0 ? EXP_CACHE_COLD : EXP_CACHE_WARM;
    if (!(exp_cache_wanted(x) & bit)) return 0;
  }
  unsigned by_n = c->keys & EXP_CSV_KEY_N;
  if ((c->keys & EXP_CSV_KEY_DB_N) && (col = col_index(c, "source")) >= 0 &&
      (cell = cell_at(line, col, &len)))
    by_n = cell_is(cell, len, "db");
  if (by_n && (col = col_index(c, "n")) >= 0 && (cell = cell_at(line, col, &len)) && len > 0 &&
      !exp_size_wanted(x, strtoull(cell, NULL, 10)))
    return 0;
  return 1;
}

/* The rows of c's existing file (if its header is c's) that the run x does not measure, as
   one string (caller frees; NULL: none). */
static char *keep_rows(exp_csv_t *c, const exp_ctx_t *x) {
  FILE *f = exp_fopen(c->path, "r");
  if (!f) return NULL;
  size_t wlen = 0; /* the header c writes: its columns, comma-separated */
  for (size_t i = 0; i < c->ncols; i++) wlen += (i ? 1 : 0) + strlen(c->cols[i]);
  char *want = malloc(wlen + 1), *header = NULL;
  size_t hcap = 0;
  for (size_t i = 0, w = 0; want && i < c->ncols; i++)
    w += (size_t)sprintf(want + w, "%s%s", i ? "," : "", c->cols[i]);
  if (want && c->ncols == 0) want[0] = '\0';
  char *out = NULL, *line = NULL;
  size_t len = 0, cap = 0, lcap = 0;
  if (want && col_index(c, "costs") >= 0 && getline(&header, &hcap, f) > 0 &&
      strcspn(header, "\n") == wlen && strncmp(header, want, wlen) == 0) {
    ssize_t n;
    while ((n = getline(&line, &lcap, f)) > 0) {
      if (row_replaced(c, x, line)) continue;
      if (len + (size_t)n + 1 > cap) {
        cap = (len + (size_t)n + 1) * 2;
        char *o = realloc(out, cap);
        if (!o) break;
        out = o;
      }
      memcpy(out + len, line, (size_t)n);
      len += (size_t)n;
      out[len] = '\0';
      c->kept++;
    }
  }
  free(line);
  free(header);
  free(want);
  fclose(f);
  return out;
}

/* A file replaced whole: its new content written to path.tmp (into *tmp, 1100 bytes), which
   replace_commit renames over path once it is on disk, or removes. */
static FILE *replace_open(const char *path, char *tmp) {
  snprintf(tmp, 1100, "%s.tmp", path);
  return exp_fopen(tmp, "w");
}

/* 0, or -1 with errno set and path left as it was. */
static int replace_commit(FILE *o, const char *tmp, const char *path) {
  int ok = fflush(o) == 0 && !ferror(o) && fsync(fileno(o)) == 0;
  ok = fclose(o) == 0 && ok;
  if (ok && rename(tmp, path) == 0) return 0;
  int saved = errno;
  remove(tmp);
  errno = saved;
  return -1;
}

/* Replaces c's file by its header and the kept rows before the run measures anything. A run
   killed mid-way (the end of a session during a piece of the 500M point) then leaves every row
   it kept and every row it wrote (exp_csv_row flushes each); through the stream of the
   truncated file, all the kept rows but its first buffer stayed in memory until the first
   row. 0, or -1 with errno set. */
static int write_head(const exp_csv_t *c, const char *kept) {
  char tmp[1100];
  FILE *o = replace_open(c->path, tmp);
  if (!o) return -1;
  for (size_t i = 0; i < c->ncols; i++) fprintf(o, "%s%s", i ? "," : "", c->cols[i]);
  fputc('\n', o);
  if (kept) fputs(kept, o);
  return replace_commit(o, tmp, c->path);
}

exp_csv_t *exp_csv_open(const exp_ctx_t *x, const char *name, const char *const *cols) {
  return exp_csv_open_subset(x, name, cols, 0);
}

exp_csv_t *exp_csv_open_subset(const exp_ctx_t *x, const char *name, const char *const *cols,
                               unsigned keys) {
  if (exp_mkdir_p(x->out_dir) != 0) {
    fprintf(stderr, "bfh: cannot create %s: %s\n", x->out_dir, strerror(errno));
    return NULL;
  }
  exp_csv_t *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  snprintf(c->path, sizeof c->path, "%s/%s.csv", x->out_dir, name);
  c->costs = exp_costs_name(x->costs);
  c->keys = keys;
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
  char *kept = keep_rows(c, x);
  int rc = write_head(c, kept);
  free(kept);
  if (rc == 0) c->f = exp_fopen(c->path, "a");
  if (!c->f) {
    fprintf(stderr, "bfh: cannot write %s: %s\n", c->path, strerror(errno));
    free(c);
    return NULL;
  }
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

typedef struct csv_line {
  const char *text;
  long len; /* with its '\n' */
  double n;
  size_t at; /* its place in the file: the sort is stable */
} csv_line_t;

static int line_cmp(const void *a, const void *b) {
  const csv_line_t *x = a, *y = b;
  if (x->n != y->n) return x->n < y->n ? -1 : 1;
  return x->at < y->at ? -1 : x->at > y->at;
}

/* Rewrites c's file (closed) with its rows in the order of column n, stably: rows kept from
   an earlier run and this run's interleave as one run would have written them. 0 or -1. */
static int sort_by_n(const exp_csv_t *c) {
  const int col = col_index(c, "n");
  if (col < 0) return 0;
  FILE *f = exp_fopen(c->path, "r");
  if (!f) return -1;
  char *text = NULL;
  long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
  if (size > 0 && fseek(f, 0, SEEK_SET) == 0 && (text = malloc((size_t)size + 1)) &&
      fread(text, 1, (size_t)size, f) != (size_t)size) {
    free(text);
    text = NULL;
  }
  fclose(f);
  if (!text) return -1;
  text[size] = '\0';
  if (!strchr(text, '\n')) { /* a header only, unfinished: nothing to sort */
    free(text);
    return 0;
  }
  size_t nl = 0; /* the lines, each ending in '\n' (the writer ends every line) */
  for (long i = 0; i < size; i++) nl += text[i] == '\n';
  csv_line_t *lines = calloc(nl ? nl : 1, sizeof *lines);
  if (!lines) {
    free(text);
    return -1;
  }
  char *p = strchr(text, '\n'); /* after the header */
  size_t rows = 0;
  while (p && *++p) {
    char *end = strchr(p, '\n');
    if (!end) break;
    size_t cl = 0;
    const char *v = cell_at(p, col, &cl);
    lines[rows] = (csv_line_t){p, end - p + 1, v && cl ? strtod(v, NULL) : -1, rows};
    rows++;
    p = end;
  }
  qsort(lines, rows, sizeof *lines, line_cmp);
  char tmp[1100];
  int rc = -1;
  FILE *o = replace_open(c->path, tmp);
  if (o) {
    fwrite(text, 1, (size_t)(strchr(text, '\n') - text + 1), o); /* the header */
    for (size_t i = 0; i < rows; i++) fwrite(lines[i].text, 1, (size_t)lines[i].len, o);
    rc = replace_commit(o, tmp, c->path);
  }
  free(lines);
  free(text);
  return rc;
}

int exp_csv_close(exp_csv_t *c) {
  if (!c) return 0;
  int rc = ferror(c->f) ? -1 : 0;
  if (fclose(c->f) != 0) rc = -1;
  if (rc == 0 && c->keys && c->kept && sort_by_n(c) != 0) rc = -1;
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
