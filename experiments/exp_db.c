/* The drivers' databases: their parameters, building one from a workload, and the cache that
 * builds each content once per run and shares it between artifacts (exp.h). */
#include "experiments/exp.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Not public (api/testbed.h): the index loader, to wait for it after an open. */
#include "api/testbed.h"

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
  p->compression = x->compression;
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
  opt->index_bits_per_value = p->index_bits_per_value; /* 0 unless a driver asks */
  opt->block_maps = p->block_maps;                     /* 0 unless a driver asks: no map written */
  opt->cuckoo_index = p->cuckoo;
  if (!p->beyond) { /* the paper's structures only */
    opt->block_filter_bits_per_value = 0;
    opt->memtable_index = 0;
  }
  /* The paper's authors' LevelDB had no snappy: no compression unless asked for. */
  opt->compression = p->compression >= 0 ? (bfh_compression)p->compression
                     : p->beyond         ? BFH_COMPRESSION_DEFAULT
                                         : BFH_COMPRESSION_NONE;
  opt->standalone_index = p->standalone;
}

uint32_t exp_db_layout_hashes(const exp_db_params_t *p) {
  exp_db_params_t q = *p;
  q.k = 0; /* bfh_options.value_filter_hashes 0: the layout's */
  bfh_options opt;
  exp_db_options(&q, &opt);
  return bfh_internal_filter_hashes(&opt);
}

void exp_db_path(const exp_ctx_t *x, const char *name, char *buf, size_t cap) {
  snprintf(buf, cap, "%s/%s", x->work_dir, name);
}

int exp_db_open(const exp_db_params_t *p, const char *dir, bfh_db **db) {
  bfh_options opt;
  exp_db_options(p, &opt);
  int rc = bfh_open(dir, &opt, db);
  if (rc != BFH_OK) {
    fprintf(stderr, "bfh: open %s: %s: %s\n", dir, bfh_strerror(rc), bfh_last_error(NULL));
    return rc;
  }
  /* The drivers measure searches over the whole index: the leaves an open leaves to the
     background loader are read before the first query (doc/search.md "Open cost"; a search
     from the shell does not wait). */
  index_sync_t *sync = bfh_internal_sync(*db);
  err_t err;
  err_clear(&err);
  if (sync && (rc = index_sync_loader_wait(sync, NULL, &err)) != BFH_OK) {
    fprintf(stderr, "bfh: open %s: loading the index: %s\n", dir, err.msg);
    bfh_close(*db);
    *db = NULL;
    return rc;
  }
  if ((rc = exp_db_settle(*db)) != BFH_OK) {
    bfh_close(*db);
    *db = NULL;
  }
  return rc;
}

int exp_db_settle(bfh_db *db) {
  /* The leaves an open read (or a flush added) wait in the index's queue until the next
     query applies them: filling the bit-sliced index and building the hierarchy, seconds at
     100M. A timed search must not pay for that. */
  value_index_t *vi = bfh_internal_index(db);
  err_t err;
  err_clear(&err);
  int rc = vi ? value_index_apply(vi, &err) : BFH_OK;
  if (rc != BFH_OK) fprintf(stderr, "bfh: building the value index: %s\n", err.msg);
  return rc;
}

int exp_db_quiesce(bfh_db *db) {
  err_t err;
  err_clear(&err);
  int rc = engine_lsm_wait_idle(bfh_internal_engine(db), &err);
  if (rc != BFH_OK) {
    fprintf(stderr, "bfh: waiting for background work: %s\n", err.msg);
    return rc;
  }
  return exp_db_settle(db);
}

int exp_db_build(const exp_ctx_t *x, const exp_db_params_t *p, const char *dir,
                 exp_build_result_t *res) {
  workload_t w;
  if (workload_init(&w, &p->wl) != BFH_OK) {
    fprintf(stderr, "bfh: bad workload (n=%llu, domain %.3g%%)\n", (unsigned long long)p->wl.n,
            p->wl.domain_pct);
    return BFH_E_INVALID;
  }
  if (exp_mkdir_p(x->work_dir) != 0) {
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
  if (p->compression >= 0) { /* --compression given: the default's names stay */
    size_t len = strlen(buf);
    snprintf(buf + len, cap - len, "-compression%d", p->compression);
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
  FILE *f = exp_fopen(mark, "r");
  int ok = f && fgets(line, sizeof line, f) && strncmp(line, id, strlen(id)) == 0 &&
           line[strlen(id)] == '\n' && fscanf(f, "%lf %lf", &b->put_s, &b->flush_s) == 2;
  if (f) fclose(f);
  b->total_s = b->put_s + b->flush_s;
  return ok;
}

static int mark_built(const char *dir, const char *id, const exp_build_result_t *b) {
  char mark[1400];
  snprintf(mark, sizeof mark, "%s/" BUILT_MARK, dir);
  FILE *f = exp_fopen(mark, "w");
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

int exp_db_kept(const exp_ctx_t *x, const exp_db_params_t *p, char *dir, size_t cap,
                exp_build_result_t *res) {
  char id[256];
  shared_dir(x, p, dir, cap, id);
  exp_build_result_t b = {0};
  if (!x->keep_db || !built(dir, id, &b)) return 0;
  bfh_db *db;
  if (exp_db_open(p, dir, &db) != BFH_OK) return 0;
  b.have_stats = exp_db_stats(db, &b.stats);
  if (bfh_close(db) != BFH_OK) return 0;
  *res = b;
  register_shared(dir);
  return 1;
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

void exp_db_drop(const exp_ctx_t *x, const char *dir) {
  if (!x->keep_db) exp_rmtree(dir);
}

void exp_fig10_db(const exp_ctx_t *x, uint64_t m, exp_db_params_t *p) {
  double shrink;
  uint64_t n = exp_one_size(x, 10000000, 10000000, 1000000, &shrink);
  exp_db_params_init(p, x, n);
  p->m = m;
  exp_db_params_shrink(p, shrink);
}
