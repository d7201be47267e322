/* Shared machinery of the experiment drivers (see exp.h). */
#include "experiments/exp.h"

#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bfh_commit.h" /* BFH_COMMIT, generated at build time (cmake/bfhCommit.cmake) */
#include "experiments/exp_authors.h"
#include "filters/bits.h"
#include "filters/hash.h"
/* exp_engine_is_own: the engine kinds' capabilities (engine.h) */
#include "lsm_hooks/testbed.h"

const char *exp_scale_name(exp_scale_t s) {
  return s == EXP_PAPER ? "paper" : s == EXP_MEDIUM ? "medium" : "small";
}

int exp_size_wanted(const exp_ctx_t *x, uint64_t n) {
  return (!x->max_n || n <= x->max_n) && n >= x->min_n;
}

const char *exp_costs_name(int costs) {
  return costs == EXP_COSTS_AUTHORS ? "authors" : "bfh";
}

const char *exp_engine_name(bfh_engine e) {
  const char *name = bfh_engine_name(e);
  return name ? name : "unknown";
}

bfh_engine exp_engine_with(unsigned caps) {
  const bfh_engine_info *e;
  for (size_t i = 0; (e = bfh_engine_at(i)); i++)
    if ((e->caps & caps) == caps) return e->engine;
  return bfh_engine_at(0)->engine;
}

int exp_engine_is_own(bfh_engine e) {
  const engine_kind_t *k = engine_kind(e);
  return k && (k->caps & ENGINE_CAP_OWN);
}

const int EXP_PLACEMENTS[3] = {BFH_PLACEMENT_PAPER, BFH_PLACEMENT_POSITIONAL,
                               BFH_PLACEMENT_SIMILARITY};

/* Indexed by bfh_placement. */
static const char *const PLACEMENT_NAMES[3] = {"similarity", "positional", "paper"};
static const char *const HIERARCHY_SERIES[3] = {"hierarchy-similarity", "hierarchy-positional",
                                                "hierarchy-paper"};

static int placement_index(int placement) {
  return placement == BFH_PLACEMENT_POSITIONAL || placement == BFH_PLACEMENT_PAPER ? placement : 0;
}

const char *exp_placement_name(int placement) {
  return PLACEMENT_NAMES[placement_index(placement)];
}

const char *exp_series_name(bfh_method m, int placement) {
  return m == BFH_SEARCH_HIERARCHY ? HIERARCHY_SERIES[placement_index(placement)]
                                   : exp_method_name(m);
}

const char *exp_method_name(bfh_method m) {
  const char *name = bfh_method_name(m); /* the library's one table of names */
  return name ? name : "?";
}

double exp_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void exp_progress(const char *fmt, ...) {
  if (!isatty(STDERR_FILENO)) return;
  char line[160];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\r\033[K%s", line);
  fflush(stderr);
}

void exp_progress_done(void) {
  if (!isatty(STDERR_FILENO)) return;
  fprintf(stderr, "\r\033[K");
  fflush(stderr);
}

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

static int mkdir_p(const char *path) {
  char tmp[1024];
  snprintf(tmp, sizeof tmp, "%s", path);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
  return 0;
}

/* The rows of c's existing file whose costs cell names another profile than c's, if its
   header is c's (malloc'd text, or NULL). The drivers write no quoted cells. */
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
  if (mkdir_p(x->out_dir) != 0) {
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

/* ---- databases --------------------------------------------------------------------------- */

void exp_db_params_init(exp_db_params_t *p, const exp_ctx_t *x, uint64_t n) {
  memset(p, 0, sizeof *p);
  workload_config_init(&p->wl);
  p->wl.n = n;
  p->engine = x->engine;
  p->m = 2000000;
  p->k = 3;
  p->d = 5;
  p->table_bytes = 2u << 20;
  p->memtable_bytes = 4u << 20;
  p->value_filters = 1;
}

void exp_db_params_shrink(exp_db_params_t *p, double f) {
  if (f <= 1.0) return;
  p->table_bytes = (size_t)((double)p->table_bytes / f);
  /* The memtable is not shrunk below 512 KiB: flushes of a few KiB would only add churn. */
  p->memtable_bytes = (size_t)((double)p->memtable_bytes / f);
  if (p->memtable_bytes < (512u << 10)) p->memtable_bytes = 512u << 10;
  p->m = (uint64_t)((double)p->m / f);
  if (p->m < 64) p->m = 64;
}

void exp_db_options(const exp_db_params_t *p, bfh_options *opt) {
  bfh_options_init(opt);
  opt->engine = p->engine;
  opt->value_filter_bits = p->m;
  opt->value_filter_hashes = p->k;
  opt->order = p->d;
  opt->table_bytes = p->table_bytes;
  opt->memtable_bytes = p->memtable_bytes;
  opt->value_filters = p->value_filters;
  opt->leaves_on_disk = p->leaves_on_disk;
  opt->placement = p->placement;
  if (!p->beyond) { /* the paper's structures only */
    opt->block_filter_bits = 0;
    opt->memtable_index = 0;
  }
  opt->standalone_index = p->standalone;
}

void exp_db_path(const exp_ctx_t *x, const char *name, char *buf, size_t cap) {
  snprintf(buf, cap, "%s/%s", x->work_dir, name);
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  remove(path);
  return 0;
}

void exp_rmtree(const char *path) {
  nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int exp_db_open(const exp_db_params_t *p, const char *dir, bfh_db **db) {
  bfh_options opt;
  exp_db_options(p, &opt);
  int rc = bfh_open(dir, &opt, db);
  if (rc != BFH_OK)
    fprintf(stderr, "bfh: open %s: %s: %s\n", dir, bfh_strerror(rc), bfh_last_error(NULL));
  return rc;
}

int exp_db_build(const exp_ctx_t *x, const exp_db_params_t *p, const char *dir,
                 exp_build_result_t *res) {
  workload_t w;
  if (workload_init(&w, &p->wl) != BFH_OK) {
    fprintf(stderr, "bfh: bad workload (n=%llu, domain %.3g%%)\n", (unsigned long long)p->wl.n,
            p->wl.domain_pct);
    return BFH_E_INVALID;
  }
  if (mkdir_p(x->work_dir) != 0) {
    fprintf(stderr, "bfh: cannot create %s: %s\n", x->work_dir, strerror(errno));
    return BFH_E_IO;
  }
  exp_rmtree(dir);
  bfh_db *db;
  int rc = exp_db_open(p, dir, &db);
  if (rc != BFH_OK) return rc;
  char key[WORKLOAD_MAX_BYTES], val[WORKLOAD_MAX_BYTES];
  uint64_t bytes_put = 0;
  double t0 = exp_now(), last = t0;
  for (uint64_t i = 0; i < p->wl.n; i++) {
    uint64_t id = workload_entry_id(&w, i);
    size_t kl = workload_key(&w, id, key);
    size_t vl = workload_value(&w, workload_value_id(&w, id), val);
    rc = bfh_put(db, key, kl, val, vl);
    bytes_put += kl + vl;
    if (rc != BFH_OK) {
      fprintf(stderr, "bfh: put #%llu into %s: %s: %s\n", (unsigned long long)i, dir,
              bfh_strerror(rc), bfh_last_error(db));
      bfh_close(db);
      return rc;
    }
    if ((i & 0xffff) == 0) {
      double now = exp_now();
      if (now - last > 0.5) {
        double rate = (double)i / (now - t0);
        exp_progress("loading %s: %.1f%%, %.0f puts/s, ETA %.0f s", dir,
                     100.0 * (double)i / (double)p->wl.n, rate, (double)(p->wl.n - i) / rate);
        last = now;
      }
    }
  }
  double t1 = exp_now();
  rc = bfh_flush(db);
  double t2 = exp_now();
  exp_progress_done();
  if (rc != BFH_OK) {
    fprintf(stderr, "bfh: flush %s: %s: %s\n", dir, bfh_strerror(rc), bfh_last_error(db));
    bfh_close(db);
    return rc;
  }
  /* Before the close: its counters (bytes written since the open) go with the handle. */
  bfh_db_stats st;
  int have_stats = exp_db_stats(db, &st);
  rc = bfh_close(db);
  if (rc != BFH_OK) {
    fprintf(stderr, "bfh: close %s: %s\n", dir, bfh_strerror(rc));
    return rc;
  }
  if (isatty(STDERR_FILENO))
    fprintf(stderr, "loaded %s: %llu entries in %.1f s (%.0f ops/s, flush included)\n", dir,
            (unsigned long long)p->wl.n, t2 - t0, (double)p->wl.n / (t2 - t0));
  if (res) {
    res->put_s = t1 - t0;
    res->flush_s = t2 - t1;
    res->total_s = t2 - t0;
    res->bytes_put = bytes_put;
    res->have_stats = have_stats;
    res->stats = st;
  }
  return BFH_OK;
}

/* The identity of a database: every parameter that changes its content. */
static void db_identity(const exp_db_params_t *p, char *buf, size_t cap) {
  snprintf(buf, cap, "%s-n%llu-dom%g-%s-m%llu-k%u-t%zu-mt%zu-vf%d%s%s", exp_engine_name(p->engine),
           (unsigned long long)p->wl.n, p->wl.domain_pct,
           p->wl.order == WORKLOAD_RANDOM ? "rnd" : "seq", (unsigned long long)p->m, p->k,
           p->table_bytes, p->memtable_bytes, p->value_filters, p->beyond ? "-beyond" : "",
           p->standalone ? "-standalone" : "");
  if (p->wl.values == WORKLOAD_VALUES_DRAWN) { /* the exact mode keeps the older names */
    size_t len = strlen(buf);
    snprintf(buf + len, cap - len, "-drawn");
  }
}

#define BUILT_MARK "BFH-EXP-BUILT" /* identity, then put_s flush_s, once the build is complete */

static char **shared_dirs; /* the databases exp_db_get made or found, for exp_db_cleanup */
static size_t nshared;

/* The shared directory of p (into dir) and its identity (into id, 256 bytes). */
static void shared_dir(const exp_ctx_t *x, const exp_db_params_t *p, char *dir, size_t cap,
                       char *id) {
  db_identity(p, id, 256);
  snprintf(dir, cap, "%s/db-%s", x->work_dir, id);
}

/* 1 if dir holds a complete build of identity id (its times into *b). */
static int built(const char *dir, const char *id, exp_build_result_t *b) {
  char mark[1400], line[256] = "";
  snprintf(mark, sizeof mark, "%s/" BUILT_MARK, dir);
  FILE *f = fopen(mark, "r");
  int ok = f && fgets(line, sizeof line, f) && strncmp(line, id, strlen(id)) == 0 &&
           line[strlen(id)] == '\n' && fscanf(f, "%lf %lf", &b->put_s, &b->flush_s) == 2;
  if (f) fclose(f);
  b->total_s = b->put_s + b->flush_s;
  return ok;
}

static int mark_built(const char *dir, const char *id, const exp_build_result_t *b) {
  char mark[1400];
  snprintf(mark, sizeof mark, "%s/" BUILT_MARK, dir);
  FILE *f = fopen(mark, "w");
  if (!f || fprintf(f, "%s\n%.9g %.9g\n", id, b->put_s, b->flush_s) < 0 || fclose(f) != 0) {
    fprintf(stderr, "bfh: cannot write %s\n", mark);
    return BFH_E_IO;
  }
  return BFH_OK;
}

/* Remembers dir for exp_db_cleanup. */
static void register_shared(const char *dir) {
  for (size_t i = 0; i < nshared; i++)
    if (strcmp(shared_dirs[i], dir) == 0) return;
  char **a = realloc(shared_dirs, (nshared + 1) * sizeof *a);
  if (!a) return; /* not registered: left on disk, as with --keep */
  shared_dirs = a;
  if ((a[nshared] = strdup(dir)) != NULL) nshared++;
}

int exp_db_get(const exp_ctx_t *x, const exp_db_params_t *p, char *dir, size_t cap,
               exp_build_result_t *res) {
  char id[256];
  shared_dir(x, p, dir, cap, id);
  exp_build_result_t b = {0};
  if (!built(dir, id, &b)) {
    int rc = exp_db_build(x, p, dir, &b);
    if (rc == BFH_OK) rc = mark_built(dir, id, &b);
    if (rc != BFH_OK) return rc;
  }
  if (res) *res = b;
  register_shared(dir);
  return BFH_OK;
}

int exp_db_adopt(const exp_ctx_t *x, const exp_db_params_t *p, const char *dir,
                 const exp_build_result_t *b) {
  char shared[1200], id[256];
  exp_build_result_t old;
  shared_dir(x, p, shared, sizeof shared, id);
  if (built(shared, id, &old)) {
    exp_db_drop(x, dir);
    return BFH_OK;
  }
  exp_rmtree(shared); /* an incomplete build */
  if (rename(dir, shared) != 0) {
    fprintf(stderr, "bfh: cannot move %s to %s: %s\n", dir, shared, strerror(errno));
    return BFH_E_IO;
  }
  int rc = mark_built(shared, id, b);
  if (rc == BFH_OK) register_shared(shared);
  return rc;
}

void exp_db_cleanup(const exp_ctx_t *x) {
  for (size_t i = 0; i < nshared; i++) {
    if (!x->keep_db) exp_rmtree(shared_dirs[i]);
    free(shared_dirs[i]);
  }
  free(shared_dirs);
  shared_dirs = NULL;
  nshared = 0;
}

int exp_db_stats(bfh_db *db, bfh_db_stats *st) {
  memset(st, 0, sizeof *st);
  return bfh_stats(db, st) == BFH_OK;
}

/* ---- searches ---------------------------------------------------------------------------- */

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

#define MAX_QUERIES 1024

/* The q-quantile of the n sorted values of t, interpolated between the two nearest ranks. */
static double quantile(const double *t, int n, double q) {
  double pos = q * (n - 1);
  int lo = (int)pos;
  return lo + 1 < n ? t[lo] + (pos - lo) * (t[lo + 1] - t[lo]) : t[n - 1];
}

/* ---- cold cache ---- */

static double evict_resident, evict_total; /* pages, summed by evict_entry */

static int evict_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)ftw;
  if (flag != FTW_F || !S_ISREG(sb->st_mode) || sb->st_size == 0) return 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  long page = sysconf(_SC_PAGESIZE);
  size_t pages = (size_t)((sb->st_size + page - 1) / page);
  void *map = mmap(NULL, (size_t)sb->st_size, PROT_READ, MAP_SHARED, fd, 0);
  unsigned char *vec = map != MAP_FAILED ? malloc(pages) : NULL;
  if (vec && mincore(map, (size_t)sb->st_size, vec) == 0) {
    for (size_t i = 0; i < pages; i++) evict_resident += vec[i] & 1;
    evict_total += (double)pages;
  }
  free(vec);
  if (map != MAP_FAILED) munmap(map, (size_t)sb->st_size);
  close(fd);
  return 0;
}

double exp_cache_evict(const char *dir, int *dropped) {
  if (dropped) { /* system-wide, and slow: once per query, before the reopen */
    *dropped = 0;
    sync(); /* dirty pages cannot be dropped */
    FILE *f = fopen("/proc/sys/vm/drop_caches", "w");
    if (f) {
      *dropped = fputs("1", f) >= 0;
      if (fclose(f) != 0) *dropped = 0;
    }
  }
  evict_resident = evict_total = 0;
  if (nftw(dir, evict_entry, 16, FTW_PHYS) != 0 || evict_total == 0) return -1;
  return evict_resident / evict_total;
}

int exp_target_cool(exp_target_t *t, double *resident, int *dropped) {
  /* The files leave the cache only with the handle that maps them. */
  int rc = bfh_close(t->db);
  t->db = NULL;
  if (rc != BFH_OK) {
    fprintf(stderr, "bfh: close %s: %s\n", t->dir, bfh_strerror(rc));
    return rc;
  }
  exp_cache_evict(t->dir, dropped);
  rc = exp_db_open(t->p, t->dir, &t->db);
  if (rc != BFH_OK) return rc;
  double res = exp_cache_evict(t->dir, NULL); /* what the open read */
  *resident += res > 0 ? res : 0;
  return BFH_OK;
}

int exp_search_measure(exp_target_t *tg, const workload_t *w, bfh_method method, int present,
                       int nq, uint64_t seed, int cold, exp_search_result_t *r) {
  if (nq > MAX_QUERIES) nq = MAX_QUERIES;
  if (cold && nq > EXP_COLD_QUERIES) nq = EXP_COLD_QUERIES;
  if (tg->p->authors) {
    cold = 0;
    if (nq > EXP_AUTHORS_QUERIES) nq = EXP_AUTHORS_QUERIES;
  }
  memset(r, 0, sizeof *r);
  r->cold = cold;
  static double t[MAX_QUERIES];
  static uint64_t vids[MAX_QUERIES], expect[MAX_QUERIES];
  for (int q = 0; q < nq; q++)
    vids[q] = present == EXP_QUERY_FIXED ? seed
              : present                  ? workload_present_value_id(w, seed, (uint64_t)q)
                                         : workload_absent_value_id(w, seed, (uint64_t)q);
  /* The truth: the entries holding each value (one pass over the workload for drawn values). */
  if (present) {
    int rc = workload_value_counts(w, vids, (size_t)nq, expect);
    if (rc != BFH_OK) return rc;
  } else {
    memset(expect, 0, (size_t)nq * sizeof expect[0]);
  }
  exp_counters_t sum = {0};
  uint64_t fp = 0, negatives = 0;
  double resident = 0;
  int drops = 0;
  char val[WORKLOAD_MAX_BYTES];
  for (int q = -1; q < nq; q++) {
    /* q = -1: a warm-up query with a value not among the measured ones. */
    uint64_t qi = q < 0 ? (uint64_t)MAX_QUERIES + 7 : (uint64_t)q;
    uint64_t vid = q >= 0    ? vids[q]
                   : present ? workload_present_value_id(w, seed, qi)
                             : workload_absent_value_id(w, seed, qi);
    size_t vl = workload_value(w, vid, val);
    if (cold && q >= 0) {
      int dropped, rc = exp_target_cool(tg, &resident, &dropped);
      if (rc != BFH_OK) return rc;
      drops += dropped;
    }
    bfh_search_stats st;
    memset(&st, 0, sizeof st);
    double t0 = exp_now();
    int rc = tg->p->authors ? exp_authors_search(tg->p->authors, val, vl, method, &st)
                            : bfh_search(tg->db, val, vl, method, NULL, NULL, &st);
    double t1 = exp_now();
    if (rc != BFH_OK && tg->p->authors) return rc; /* printed */
    if (rc != BFH_OK) {
      fprintf(stderr, "bfh: search %.*s (%s): %s: %s\n", (int)vl, val, exp_method_name(method),
              bfh_strerror(rc), bfh_last_error(tg->db));
      return rc;
    }
    if (q < 0) continue;
    if (st.results != expect[q]) r->wrong++;
    t[q] = t1 - t0;
    sum.internal_probes += (double)st.internal_probes;
    sum.leaf_probes += (double)st.leaf_probes;
    sum.leaf_positives += (double)st.leaf_positives;
    sum.tables_scanned += (double)st.tables_scanned;
    sum.tables_matched += (double)st.tables_matched;
    sum.entries_scanned += (double)st.entries_scanned;
    sum.bytes_read += (double)st.bytes_read;
    sum.candidates += (double)st.candidates;
    sum.results += (double)st.results;
    sum.tables_live += (double)st.tables_live;
    sum.block_filters_probed += (double)st.block_filters_probed;
    sum.blocks_read += (double)st.blocks_read;
    sum.internal_maybe += (double)st.internal_maybe;
    if (st.leaf_probes > st.tables_matched && st.leaf_positives >= st.tables_matched) {
      fp += st.leaf_positives - st.tables_matched;
      negatives += st.leaf_probes - st.tables_matched;
    }
  }
  r->queries = nq;
  qsort(t, (size_t)nq, sizeof t[0], cmp_dbl);
  r->time_s = t[(nq - 1) / 2];
  r->time_min_s = t[0];
  r->time_max_s = t[nq - 1];
  r->time_q1_s = quantile(t, nq, 0.25);
  r->time_q3_s = quantile(t, nq, 0.75);
  r->mean = (exp_counters_t){
      .internal_probes = sum.internal_probes / nq,
      .leaf_probes = sum.leaf_probes / nq,
      .leaf_positives = sum.leaf_positives / nq,
      .tables_scanned = sum.tables_scanned / nq,
      .tables_matched = sum.tables_matched / nq,
      .entries_scanned = sum.entries_scanned / nq,
      .bytes_read = sum.bytes_read / nq,
      .candidates = sum.candidates / nq,
      .results = sum.results / nq,
      .tables_live = sum.tables_live / nq,
      .block_filters_probed = sum.block_filters_probed / nq,
      .blocks_read = sum.blocks_read / nq,
      .internal_maybe = sum.internal_maybe / nq,
  };
  r->resident_pct = cold ? 100.0 * resident / nq : 0;
  r->drop_caches = cold && drops == nq;
  /* Only meaningful where the leaf filters were consulted. */
  r->fpr_leaves = (method != BFH_SEARCH_SCAN && negatives) ? (double)fp / (double)negatives : -1;
  return BFH_OK;
}

int exp_measure_into(exp_csv_t *c, const exp_ctx_t *x, exp_target_t *t, const workload_t *w,
                     bfh_method method, int present, int cold, exp_search_result_t *r) {
  const exp_db_params_t *p = t->p;
  exp_progress("n=%llu m=%llu d=%u: %s search (%s values%s)", (unsigned long long)p->wl.n,
               (unsigned long long)p->m, p->d, exp_method_name(method),
               present ? "present" : "absent", cold ? ", cold" : "");
  int rc = exp_search_measure(t, w, method, present, x->queries, EXP_QUERY_SEED, cold, r);
  exp_progress_done();
  if (rc != BFH_OK) return rc;
  exp_csv_db_params(c, x, p);
  exp_csv_search(c, exp_method_name(method), present ? "present" : "absent", r);
  if (r->mean.tables_live > 0)
    exp_csv_shape(c, (double)p->wl.n / r->mean.tables_live, p->value_filters ? p->m : 0);
  if (r->wrong)
    fprintf(stderr,
            "bfh: WARNING: %s search gave a wrong result count for %d of %d queries "
            "(n=%llu m=%llu d=%u)\n",
            exp_method_name(method), r->wrong, r->queries, (unsigned long long)p->wl.n,
            (unsigned long long)p->m, p->d);
  return BFH_OK;
}

void exp_db_drop(const exp_ctx_t *x, const char *dir) {
  if (!x->keep_db) exp_rmtree(dir);
}

/* ---- synthetic leaves -------------------------------------------------------------------- */

void exp_synth_leaf(uint64_t m, uint32_t k, uint64_t leaf, uint64_t entries, uint64_t *words) {
  memset(words, 0, bits_words(m) * sizeof *words);
  char val[WORKLOAD_MAX_BYTES];
  probe_t p;
  for (uint64_t j = 0; j < entries; j++) {
    size_t n = workload_paper_value(leaf * entries + j, val);
    probe_init(&p, bfh_hash64(val, n, BFH_DEFAULT_SEED), m, k);
    for (uint32_t i = 0; i < k; i++) bits_set(words, p.pos[i]);
  }
}

/* ---- plots ------------------------------------------------------------------------------- */

static int is_file(const char *p) {
  struct stat sb;
  return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* Finds <plots>/<name>.gp: the --plots flag, $BFH_PLOTS_DIR, ../plots and ../share/bfh/plots
   next to the executable (a build directory, an installed prefix), the source tree this file
   was compiled from. */
static int find_script(const exp_ctx_t *x, const char *name, char *out, size_t cap) {
  char cand[5][1024];
  int nc = 0;
  if (x->plots_dir) snprintf(cand[nc++], sizeof cand[0], "%s", x->plots_dir);
  const char *env = getenv("BFH_PLOTS_DIR");
  if (env && *env) snprintf(cand[nc++], sizeof cand[0], "%s", env);
  char exe[900];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) *slash = '\0';
    snprintf(cand[nc++], sizeof cand[0], "%s/../plots", exe);
    snprintf(cand[nc++], sizeof cand[0], "%s/../share/bfh/plots", exe);
  }
  char src[900];
  snprintf(src, sizeof src, "%s", __FILE__);
  char *e = strstr(src, "experiments/exp.c");
  if (e && src[0] == '/') {
    *e = '\0';
    snprintf(cand[nc++], sizeof cand[0], "%splots", src);
  }
  for (int i = 0; i < nc; i++) {
    int w = snprintf(out, cap, "%s/%s.gp", cand[i], name);
    if (w > 0 && (size_t)w < cap && is_file(out)) return 1;
  }
  return 0;
}

int exp_plot(const exp_ctx_t *x, const char *name) {
  if (x->no_plot) return 0;
  char script[1100];
  if (!find_script(x, name, script, sizeof script)) {
    fprintf(stderr, "bfh: plots/%s.gp not found (use --plots DIR); no plot\n", name);
    return 0;
  }
  if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
    fprintf(stderr, "bfh: gnuplot not installed; %s.csv not plotted\n", name);
    return 0;
  }
  /* gnuplot's chatter goes to a log, shown only if it fails. */
  char log[1200], cmd[4000];
  snprintf(log, sizeof log, "%s/%s.gnuplot.log", x->out_dir, name);
  snprintf(cmd, sizeof cmd, "gnuplot -e \"in='%s/%s.csv'; out='%s/%s'\" '%s' >'%s' 2>&1",
           x->out_dir, name, x->out_dir, name, script, log);
  int rc = system(cmd);
  if (rc != 0) {
    fprintf(stderr, "bfh: gnuplot failed for %s (status %d); its output is in %s\n", name, rc, log);
    return -1;
  }
  remove(log);
  return 0;
}

int exp_target_open(exp_target_t *t, exp_db_params_t *p, int authors) {
  return authors ? exp_authors_target(p, t->dir, &p->authors) : exp_db_open(p, t->dir, &t->db);
}

void exp_target_close(exp_target_t *t, exp_db_params_t *p) {
  if (t->db) bfh_close(t->db);
  t->db = NULL;
  exp_authors_close(p->authors);
  p->authors = NULL;
}

int exp_authors_target(const exp_db_params_t *p, const char *dir, struct exp_authors **out) {
  *out = NULL;
  if (!exp_engine_is_own(p->engine)) {
    fprintf(stderr,
            "bfh: the authors' costs are measured with the own engine only (--engine lsm)\n");
    return BFH_E_UNSUPPORTED;
  }
  bfh_options opt;
  exp_db_options(p, &opt);
  return exp_authors_open(dir, p->m, p->k, opt.hash_seed, p->d, p->placement, out);
}

/* The placements of the hierarchy series: the paper's tree and ours. */
static const int SWEEP_PLACEMENTS[] = {BFH_PLACEMENT_PAPER, BFH_PLACEMENT_SIMILARITY};

/* Measures method on t (present values, and absent ones with absent_too) and writes a row
   each, named series. */
static int measure_rows(exp_csv_t *c, const exp_ctx_t *x, exp_target_t *t, const workload_t *w,
                        bfh_method method, int absent_too, int cold, const char *series,
                        void (*cells)(exp_csv_t *c, const void *arg), const void *arg) {
  for (int present = 1; present >= (absent_too ? 0 : 1); present--) {
    exp_search_result_t r;
    if (exp_measure_into(c, x, t, w, method, present, cold, &r) != BFH_OK) return -1;
    exp_csv_str(c, "series", series);
    if (cells) cells(c, arg);
    exp_csv_row(c);
  }
  return 0;
}

/* exp_measure_methods with the authors' costs. */
static int measure_methods_authors(exp_csv_t *c, const exp_ctx_t *x, exp_db_params_t *p,
                                   const char *dir, const workload_t *w, int absent_too,
                                   void (*cells)(exp_csv_t *c, const void *arg), const void *arg) {
  int rc = 0;
  p->leaves_on_disk = BFH_LEAVES_ON_DISK_WHOLE; /* a file per leaf, read whole */
  for (size_t pi = 0; pi < 2 && rc == 0; pi++) {
    p->placement = SWEEP_PLACEMENTS[pi];
    exp_target_t t = {NULL, p, dir};
    if (exp_authors_target(p, dir, &p->authors) != BFH_OK) return -1;
    char series[40];
    if (pi == 0) {
      rc = measure_rows(c, x, &t, w, BFH_SEARCH_SCAN, 0, 0, bfh_method_name(BFH_SEARCH_SCAN), cells,
                        arg);
      if (rc == 0)
        rc = measure_rows(c, x, &t, w, BFH_SEARCH_LEAVES, absent_too, 0, "leaves-file", cells, arg);
    }
    snprintf(series, sizeof series, "%s-file", exp_series_name(BFH_SEARCH_HIERARCHY, p->placement));
    if (rc == 0)
      rc = measure_rows(c, x, &t, w, BFH_SEARCH_HIERARCHY, absent_too, 0, series, cells, arg);
    exp_authors_close(p->authors);
    p->authors = NULL;
  }
  return rc;
}

int exp_measure_methods(exp_csv_t *c, const exp_ctx_t *x, exp_db_params_t *p, int absent_too,
                        int cold_too, void (*cells)(exp_csv_t *c, const void *arg),
                        const void *arg) {
  static const bfh_method methods[] = {BFH_SEARCH_SCAN, BFH_SEARCH_LEAVES, BFH_SEARCH_HIERARCHY,
                                       BFH_SEARCH_SLICED};
  char dir[1200];
  if (exp_db_get(x, p, dir, sizeof dir, NULL) != BFH_OK) return -1;
  workload_t w;
  workload_init(&w, &p->wl);
  if (x->costs == EXP_COSTS_AUTHORS)
    return measure_methods_authors(c, x, p, dir, &w, absent_too, cells, arg);
  int rc = 0;
  /* Leaves in memory; on disk, k words read per probe (ours); on disk, read whole per probe
     (the paper's classical Bloom scan). Every warm point first: a cold point evicts the
     database, and a warm point measured after it would read its tables from storage. */
  static const int leaves[] = {BFH_LEAVES_IN_MEMORY, BFH_LEAVES_ON_DISK, BFH_LEAVES_ON_DISK_WHOLE};
  static const char *const suffix[] = {"-mem", "-disk", "-whole"};
  for (int cold = 0; cold <= cold_too && rc == 0; cold++) {
    for (int li = 0; li < 3 && rc == 0; li++) {
      for (size_t pi = 0; pi < 2 && rc == 0; pi++) {
        p->leaves_on_disk = leaves[li];
        p->placement = SWEEP_PLACEMENTS[pi];
        exp_target_t t = {NULL, p, dir};
        if (exp_db_open(p, dir, &t.db) != BFH_OK) {
          rc = -1;
          break;
        }
        for (size_t mi = 0; mi < sizeof methods / sizeof methods[0] && rc == 0; mi++) {
          int scan = methods[mi] == BFH_SEARCH_SCAN;
          /* The scan reads no filter: measured once; only the hierarchy has a placement. */
          if (scan && (li > 0 || pi > 0)) continue;
          if (pi > 0 && methods[mi] != BFH_SEARCH_HIERARCHY) continue;
          char series[48]; /* "hierarchy-similarity-whole" at most */
          snprintf(series, sizeof series, "%s%s", exp_series_name(methods[mi], p->placement),
                   scan ? "" : suffix[li]);
          rc = measure_rows(c, x, &t, &w, methods[mi], absent_too && !scan, cold, series, cells,
                            arg);
        }
        if (t.db) bfh_close(t.db);
      }
    }
  }
  return rc;
}

void exp_fig10_db(const exp_ctx_t *x, uint64_t m, exp_db_params_t *p) {
  uint64_t n = x->scale == EXP_SMALL ? 1000000 : 10000000;
  exp_db_params_init(p, x, n);
  p->m = m;
  exp_db_params_shrink(p, 10000000.0 / (double)n);
}
