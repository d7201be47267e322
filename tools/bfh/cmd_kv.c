/* bfh load, put, get, delete and scan: the commands that write entries or read them by key
 * (cmd.h). Keys and values on the command line and in files are in the escaped text form of
 * cli_kv.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bfh.h"
#include "tools/bfh/cli_db.h"
#include "tools/bfh/cli_kv.h"
#include "tools/bfh/cmd.h"
#include "workloads/workload.h"

/* ---- Progress: a line on a terminal, a summary at the end ---------------------------------- */

typedef struct progress {
  const char *what;
  uint64_t total; /* 0: unknown */
  double t0, last;
  int tty, shown;
} progress_t;

static void progress_start(progress_t *p, const char *what, uint64_t total) {
  p->what = what;
  p->total = total;
  p->t0 = p->last = cli_now();
  p->tty = isatty(STDERR_FILENO);
  p->shown = 0;
}

/* From the first 1024 entries on, then at most four updates a second, so that the terminal
   costs nothing. */
static void progress_tick(progress_t *p, uint64_t done) {
  if (!p->tty || (done & 1023) != 0) return;
  double now = cli_now();
  if (p->shown && now - p->last < 0.25) return;
  p->shown = 1;
  p->last = now;
  double rate = done / (now - p->t0);
  if (p->total)
    fprintf(stderr, "\r\033[K%s: %llu of %llu (%.1f%%), %.0f ops/s, ETA %.0f s", p->what,
            (unsigned long long)done, (unsigned long long)p->total, 100.0 * done / p->total, rate,
            (p->total - done) / rate);
  else
    fprintf(stderr, "\r\033[K%s: %llu, %.0f ops/s", p->what, (unsigned long long)done, rate);
  fflush(stderr);
}

static void progress_end(progress_t *p, uint64_t done) {
  double dt = cli_now() - p->t0;
  if (p->tty) fputs("\r\033[K", stderr);
  fprintf(stderr, "bfh %s: %llu entries in %.3f s (%.0f ops/s)\n", p->what,
          (unsigned long long)done, dt, dt > 0 ? done / dt : 0.0);
}

/* ---- load ---------------------------------------------------------------------------------- */

/* After every --batch puts: flush, so that the entries so far are in tables. */
static int batch_boundary(const cli_t *c, bfh_db *db, uint64_t done) {
  return c->batch && done % c->batch == 0 ? bfh_flush(db) : BFH_OK;
}

static int load_synthetic(cli_t *c, bfh_db *db, workload_t *wl) {
  workload_t w = *wl;
  char key[WORKLOAD_MAX_BYTES], val[WORKLOAD_MAX_BYTES];
  progress_t p;
  progress_start(&p, "load", c->wl.n);
  for (uint64_t i = 0; i < c->wl.n; i++) {
    size_t kl = workload_put_key(&w, i, key), vl = workload_put_value(&w, i, val);
    int rc = bfh_put(db, key, kl, val, vl);
    if (rc == BFH_OK) rc = batch_boundary(c, db, i + 1);
    if (rc != BFH_OK) return cli_db_fail(c, db, "put", rc);
    progress_tick(&p, i + 1);
  }
  int rc = bfh_flush(db);
  if (rc != BFH_OK) return cli_db_fail(c, db, "flush", rc);
  progress_end(&p, c->wl.n);
  return cli_db_close(c, db, 0);
}

static cli_kv_format_t format_of(const cli_t *c, const char *path) {
  if (c->format >= 0) return (cli_kv_format_t)c->format;
  size_t n = strlen(path);
  return n > 4 && strcmp(path + n - 4, ".tsv") == 0 ? CLI_KV_TSV : CLI_KV_CSV;
}

/* Puts every record of r; 0, or the exit status after a message naming file:line. */
static int load_records(cli_t *c, bfh_db *db, cli_kv_reader_t *r, const char *name) {
  progress_t p;
  progress_start(&p, "load", 0);
  uint64_t done = 0;
  int got = c->header ? cli_kv_reader_next(r) : 1; /* the header, unread */
  while (got == 1 && (got = cli_kv_reader_next(r)) == 1) {
    int rc = bfh_put(db, r->key, r->klen, r->val, r->vlen);
    if (rc == BFH_OK) rc = batch_boundary(c, db, done + 1);
    if (rc != BFH_OK) {
      fprintf(stderr, "bfh load: %s:%llu: %s: %s; %llu entries written before it\n", name,
              (unsigned long long)r->line, bfh_strerror(rc), bfh_last_error(db),
              (unsigned long long)done);
      return cli_db_close(c, db, EXIT_ERROR);
    }
    progress_tick(&p, ++done);
  }
  if (got < 0 || ferror(r->in)) {
    fprintf(stderr, "bfh load: %s:%llu: %s; %llu entries written before it\n", name,
            (unsigned long long)r->line, ferror(r->in) ? strerror(errno) : r->why,
            (unsigned long long)done);
    return cli_db_close(c, db, EXIT_ERROR);
  }
  int rc = bfh_flush(db);
  if (rc != BFH_OK) return cli_db_fail(c, db, "flush", rc);
  progress_end(&p, done);
  return cli_db_close(c, db, 0);
}

/* Reads the records of in (c->from, opened by cmd_load; closed here). */
static int load_from(cli_t *c, bfh_db *db, FILE *in) {
  int is_stdin = in == stdin;
  cli_kv_reader_t r;
  cli_kv_reader_init(&r, in, format_of(c, c->from));
  int status = load_records(c, db, &r, is_stdin ? "<stdin>" : c->from);
  cli_kv_reader_release(&r);
  if (!is_stdin) fclose(in);
  return status;
}

int cmd_load(cli_t *c) {
  int synthetic = cli_args_given(c, "synthetic") || cli_args_given(c, "num");
  if (synthetic == !!c->from)
    return cli_args_usage_error(c->cmd, "give either --from FILE or --synthetic N");
  if (c->from && !strcmp(c->from, "-") && isatty(STDIN_FILENO))
    fprintf(stderr, "bfh load: reading key,value records from the terminal\n");
  /* The input first: a bad one creates nothing in DIR. */
  workload_t w;
  FILE *in = NULL;
  if (synthetic && workload_init(&w, &c->wl) != BFH_OK)
    return cli_args_usage_error(c->cmd, "bad --synthetic or --domain");
  if (!synthetic && !(in = strcmp(c->from, "-") == 0 ? stdin : fopen(c->from, "rb"))) {
    fprintf(stderr, "bfh load: %s: %s\n", c->from, strerror(errno));
    return EXIT_ERROR;
  }
  bfh_db *db;
  int rc = cli_db_open(c, c->pos[0], 1, &db);
  if (rc) {
    if (in && in != stdin) fclose(in);
    return rc;
  }
  return synthetic ? load_synthetic(c, db, &w) : load_from(c, db, in);
}

/* ---- put, get, delete ---------------------------------------------------------------------- */

int cmd_put(cli_t *c) {
  bfh_db *db;
  int rc = cli_db_open(c, c->pos[0], 1, &db);
  if (rc) return rc;
  rc = bfh_put(db, c->pos[1], strlen(c->pos[1]), c->pos[2], strlen(c->pos[2]));
  return rc == BFH_OK ? cli_db_close(c, db, 0) : cli_db_fail(c, db, "put", rc);
}

int cmd_delete(cli_t *c) {
  bfh_db *db;
  int rc = cli_db_open(c, c->pos[0], 0, &db);
  if (rc) return rc;
  rc = bfh_delete(db, c->pos[1], strlen(c->pos[1]));
  return rc == BFH_OK ? cli_db_close(c, db, 0) : cli_db_fail(c, db, "delete", rc);
}

int cmd_get(cli_t *c) {
  bfh_db *db;
  int rc = cli_db_open(c, c->pos[0], 0, &db);
  if (rc) return rc;
  void *val = NULL;
  size_t len = 0;
  rc = bfh_get(db, c->pos[1], strlen(c->pos[1]), &val, &len);
  if (rc == BFH_NOT_FOUND) return cli_db_close(c, db, EXIT_NONE);
  if (rc != BFH_OK) return cli_db_fail(c, db, "get", rc);
  cli_kv_write_field(stdout, val, len, 0);
  fputc('\n', stdout);
  bfh_free(val);
  return cli_db_close(c, db, EXIT_FOUND);
}

/* ---- scan ---------------------------------------------------------------------------------- */

/* Every live entry through the public ordered iterator (bfh_iter_*). */
static int scan_db(const cli_t *c, bfh_db *db, cli_kv_format_t fmt) {
  bfh_iter *it;
  int rc = bfh_iter_create(db, &it);
  if (rc != BFH_OK) return cli_db_fail(c, db, "scan", rc);
  for (bfh_iter_seek_first(it); bfh_iter_valid(it); bfh_iter_next(it)) {
    size_t kl, vl;
    const void *k = bfh_iter_key(it, &kl), *v = bfh_iter_value(it, &vl);
    cli_kv_write_record(stdout, fmt, k, kl, v, vl);
  }
  rc = bfh_iter_status(it);
  bfh_iter_destroy(it);
  if (rc != BFH_OK) return cli_db_fail(c, db, "scan", rc);
  return cli_db_close(c, db, 0);
}

int cmd_scan(cli_t *c) {
  cli_kv_format_t fmt = c->format >= 0 ? (cli_kv_format_t)c->format : CLI_KV_CSV;
  const bfh_engine_info *eng = bfh_engine_get(c->opt.engine);
  /* Read-only where the engine can (unless --read-write): a scan needs no value filters, so
     none are built or kept. */
  if (eng && (eng->caps & BFH_ENGINE_CAN_READ_ONLY) && !c->read_write) {
    c->opt.value_filters = 0;
    if (!c->index_dir) c->index_dir = "none";
  }
  bfh_db *db;
  int rc = cli_db_open(c, c->pos[0], 0, &db);
  return rc ? rc : scan_db(c, db, fmt);
}
