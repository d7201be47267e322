/* bfh: the command-line tool. One subcommand per verb (load, put, get, delete, search, scan,
 * stats, repair) for ad-hoc use of a database, and `bfh run` for the paper's tables and
 * figures (one driver per artifact in experiments/exp_*.c). Every subcommand has its own
 * --help (cli_args.c holds the options); doc/bfh.1 is the manual.
 *
 * Output: results on stdout, one per line, in the escaped form of cli_kv.h; everything else
 * (statistics, progress, summaries, errors) on stderr, or with --json one object on stdout.
 * Exit status: 0 success (search, get: found), 1 nothing found, 2 error or bad usage.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bfh.h"
#include "tools/bfh/cli_args.h"
#include "tools/bfh/cli_kv.h"
#include "experiments/exp.h"
#include "tools/bfh/inspect.h"
#include "experiments/report.h"
#include "workloads/workload.h"

enum { EXIT_FOUND = 0, EXIT_NONE = 1, EXIT_ERROR = 2 };

static const cli_cmd_t *current; /* the subcommand running, for its messages */
static char cmdline[4096];       /* the command line, for REPORT.md */

/* ---- Errors and the database -------------------------------------------------------------- */

static int fail(bfh_db *db, const char *what, int rc) {
  fprintf(stderr, "bfh %s: %s: %s: %s\n", current->name, what, bfh_strerror(rc),
          bfh_last_error(db));
  bfh_close(db);
  return EXIT_ERROR;
}

static int close_db(bfh_db *db, int status) {
  int rc = bfh_close(db);
  return rc == BFH_OK ? status : fail(NULL, "close", rc);
}

static int is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Commands other than load and put never create a database: DIR must exist. 0, or the exit
   status after a message. */
static int require_db(const char *dir) {
  if (is_dir(dir)) return 0;
  fprintf(stderr, "bfh %s: %s: no such database (only load and put create one)\n", current->name,
          dir);
  return EXIT_ERROR;
}

/* The read-only mode's default filter cache: $XDG_CACHE_HOME/bfh/leveldb-H (or under
   ~/.cache), H a hash of the database's real path, so that each database keeps its own
   filters across runs, outside its directory. NULL: no home to put it in (memory then). */
static char *default_index_dir(const char *dir) {
  char *real = realpath(dir, NULL);
  if (!real) return NULL;
  uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
  for (const char *p = real; *p; p++) h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
  free(real);
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  char *path = NULL;
  int n = xdg && xdg[0] ? asprintf(&path, "%s/bfh/leveldb-%016llx", xdg, (unsigned long long)h)
          : home && home[0]
              ? asprintf(&path, "%s/.cache/bfh/leveldb-%016llx", home, (unsigned long long)h)
              : -1;
  return n < 0 ? NULL : path;
}

/* A command that only reads opens a LevelDB database read-only unless --read-write: the
   program that owns it may hold it open, and nothing is written into its directory. Says so
   on stderr. *owned: the index directory to free after the open. */
static void choose_read_only(cli_t *c, const char *dir, char **owned) {
  *owned = NULL;
  const bfh_engine_info *eng = bfh_engine_get(c->opt.engine);
  if (!(current->groups & CLI_READ) || !eng || !(eng->caps & BFH_ENGINE_CAN_READ_ONLY) ||
      c->read_write)
    return;
  c->opt.read_only = 1;
  if (c->index_dir && strcmp(c->index_dir, "none") == 0)
    c->opt.index_dir = NULL;
  else
    c->opt.index_dir = c->index_dir ? c->index_dir : (*owned = default_index_dir(dir));
  fprintf(stderr, "bfh %s: reading %s read-only (no LevelDB, no LOCK, no write; filters %s%s)\n",
          current->name, dir, c->opt.index_dir ? "in " : "in memory",
          c->opt.index_dir ? c->opt.index_dir : "");
}

/* Opens DIR; an existing database keeps its stored m and k unless given on the command line
   (read-only: those its filter cache was made with, else the database's). Only create makes
   a database where there is none. 0, or the exit status after a message. */
static int open_db(cli_t *c, const char *dir, int create, bfh_db **db) {
  if (!create && require_db(dir)) return EXIT_ERROR;
  c->opt.create_if_missing = create;
  char *owned;
  choose_read_only(c, dir, &owned);
  bfh_options stored = c->opt;
  if ((c->opt.index_dir && bfh_stored_params(c->opt.index_dir, &stored) == BFH_OK) ||
      bfh_stored_params(dir, &stored) == BFH_OK) {
    if (!cli_args_given(c, "bits")) c->opt.value_filter_bits = stored.value_filter_bits;
    if (!cli_args_given(c, "hashes")) c->opt.value_filter_hashes = stored.value_filter_hashes;
    c->opt.hash_seed = stored.hash_seed;
  }
  int rc = bfh_open(dir, &c->opt, db);
  c->opt.index_dir = NULL; /* read during the open only */
  free(owned);
  if (rc == BFH_OK) return 0;
  fprintf(stderr, "bfh %s: open %s: %s: %s\n", current->name, dir, bfh_strerror(rc),
          bfh_last_error(NULL));
  return EXIT_ERROR;
}

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
  p->t0 = p->last = exp_now();
  p->tty = isatty(STDERR_FILENO);
  p->shown = 0;
}

/* From the first 1024 entries on, then at most four updates a second, so that the terminal
   costs nothing. */
static void progress_tick(progress_t *p, uint64_t done) {
  if (!p->tty || (done & 1023) != 0) return;
  double now = exp_now();
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
  double dt = exp_now() - p->t0;
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
    if (rc != BFH_OK) return fail(db, "put", rc);
    progress_tick(&p, i + 1);
  }
  int rc = bfh_flush(db);
  if (rc != BFH_OK) return fail(db, "flush", rc);
  progress_end(&p, c->wl.n);
  return close_db(db, 0);
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
      return close_db(db, EXIT_ERROR);
    }
    progress_tick(&p, ++done);
  }
  if (got < 0 || ferror(r->in)) {
    fprintf(stderr, "bfh load: %s:%llu: %s; %llu entries written before it\n", name,
            (unsigned long long)r->line, ferror(r->in) ? strerror(errno) : r->why,
            (unsigned long long)done);
    return close_db(db, EXIT_ERROR);
  }
  int rc = bfh_flush(db);
  if (rc != BFH_OK) return fail(db, "flush", rc);
  progress_end(&p, done);
  return close_db(db, 0);
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

static int cmd_load(cli_t *c) {
  int synthetic = cli_args_given(c, "synthetic") || cli_args_given(c, "num");
  if (synthetic == !!c->from)
    return cli_args_usage_error(current, "give either --from FILE or --synthetic N");
  if (c->from && !strcmp(c->from, "-") && isatty(STDIN_FILENO))
    fprintf(stderr, "bfh load: reading key,value records from the terminal\n");
  /* The input first: a bad one creates nothing in DIR. */
  workload_t w;
  FILE *in = NULL;
  if (synthetic && workload_init(&w, &c->wl) != BFH_OK)
    return cli_args_usage_error(current, "bad --synthetic or --domain");
  if (!synthetic && !(in = strcmp(c->from, "-") == 0 ? stdin : fopen(c->from, "rb"))) {
    fprintf(stderr, "bfh load: %s: %s\n", c->from, strerror(errno));
    return EXIT_ERROR;
  }
  bfh_db *db;
  int rc = open_db(c, c->pos[0], 1, &db);
  if (rc) {
    if (in && in != stdin) fclose(in);
    return rc;
  }
  return synthetic ? load_synthetic(c, db, &w) : load_from(c, db, in);
}

/* ---- put, get, delete ---------------------------------------------------------------------- */

static int cmd_put(cli_t *c) {
  bfh_db *db;
  int rc = open_db(c, c->pos[0], 1, &db);
  if (rc) return rc;
  rc = bfh_put(db, c->pos[1], strlen(c->pos[1]), c->pos[2], strlen(c->pos[2]));
  return rc == BFH_OK ? close_db(db, 0) : fail(db, "put", rc);
}

static int cmd_delete(cli_t *c) {
  bfh_db *db;
  int rc = open_db(c, c->pos[0], 0, &db);
  if (rc) return rc;
  rc = bfh_delete(db, c->pos[1], strlen(c->pos[1]));
  return rc == BFH_OK ? close_db(db, 0) : fail(db, "delete", rc);
}

static int cmd_get(cli_t *c) {
  bfh_db *db;
  int rc = open_db(c, c->pos[0], 0, &db);
  if (rc) return rc;
  void *val = NULL;
  size_t len = 0;
  rc = bfh_get(db, c->pos[1], strlen(c->pos[1]), &val, &len);
  if (rc == BFH_NOT_FOUND) return close_db(db, EXIT_NONE);
  if (rc != BFH_OK) return fail(db, "get", rc);
  cli_kv_write_field(stdout, val, len, 0);
  fputc('\n', stdout);
  bfh_free(val);
  return close_db(db, EXIT_FOUND);
}

/* ---- search -------------------------------------------------------------------------------- */

typedef struct hits {
  int json, csv;
  uint64_t n;
} hits_t;

static int print_key(void *arg, const void *key, size_t len) {
  hits_t *h = arg;
  if (h->json) {
    fputs(h->n ? "," : "", stdout);
    cli_kv_write_json(stdout, key, len);
  } else {
    cli_kv_write_field(stdout, key, len, h->csv);
    fputc('\n', stdout);
  }
  h->n++;
  return 0;
}

#define STAT_FIELDS(X) \
  X(internal_probes)   \
  X(leaf_probes)       \
  X(leaf_positives)    \
  X(tables_scanned)    \
  X(tables_matched)    \
  X(entries_scanned)   \
  X(bytes_read)        \
  X(candidates) X(results) X(elapsed_ns) X(block_filters_probed) X(blocks_read) X(internal_maybe)

static void search_stats_json(const bfh_search_stats *st) {
  fputs("\"stats\":{", stdout);
#define JSON_FIELD(f) printf("\"" #f "\":%llu,", (unsigned long long)st->f);
  STAT_FIELDS(JSON_FIELD)
#undef JSON_FIELD
  printf("\"tables_live\":%u}", st->tables_live);
}

static void search_stats_text(const cli_t *c, const bfh_search_stats *st, double secs) {
  fprintf(stderr, "# method %s (ran %s): %llu results in %.6f s\n#",
          exp_method_name((bfh_method)c->method), exp_method_name((bfh_method)st->method_used),
          (unsigned long long)st->results, secs);
#define TEXT_FIELD(f) fprintf(stderr, " " #f " %llu", (unsigned long long)st->f);
  STAT_FIELDS(TEXT_FIELD)
#undef TEXT_FIELD
  fprintf(stderr, " tables_live %u\n", st->tables_live);
}

static int cmd_search(cli_t *c) {
  bfh_db *db;
  int rc = open_db(c, c->pos[0], 0, &db);
  if (rc) return rc;
  const char *val = c->pos[1];
  bfh_search_stats st;
  memset(&st, 0, sizeof st);
  hits_t hits = {c->json, c->csv, 0};
  if (c->csv && !c->count_only) puts("key");
  if (c->json) {
    fputs("{\"value\":", stdout);
    cli_kv_write_json(stdout, val, strlen(val));
    printf(",\"method\":\"%s\",\"keys\":[", exp_method_name((bfh_method)c->method));
  }
  double t0 = exp_now();
  rc = bfh_search(db, val, strlen(val), (bfh_method)c->method, c->count_only ? NULL : print_key,
                  &hits, &st);
  double secs = exp_now() - t0;
  if (rc != BFH_OK) {
    if (c->json) puts("]}"); /* the object stays whole; the status says it failed */
    return fail(db, "search", rc);
  }
  if (c->json) {
    printf("],\"method_used\":\"%s\",\"count\":%llu,\"seconds\":%.6f,",
           exp_method_name((bfh_method)st.method_used), (unsigned long long)st.results, secs);
    search_stats_json(&st);
    puts("}");
  } else {
    if (c->count_only) printf("%llu\n", (unsigned long long)st.results);
    search_stats_text(c, &st, secs);
  }
  return close_db(db, st.results ? EXIT_FOUND : EXIT_NONE);
}

/* ---- scan ---------------------------------------------------------------------------------- */

/* Every live entry through the public ordered iterator (bfh_iter_*). */
static int scan_db(bfh_db *db, cli_kv_format_t fmt) {
  bfh_iter *it;
  int rc = bfh_iter_create(db, &it);
  if (rc != BFH_OK) return fail(db, "scan", rc);
  for (bfh_iter_seek_first(it); bfh_iter_valid(it); bfh_iter_next(it)) {
    size_t kl, vl;
    const void *k = bfh_iter_key(it, &kl), *v = bfh_iter_value(it, &vl);
    cli_kv_write_record(stdout, fmt, k, kl, v, vl);
  }
  rc = bfh_iter_status(it);
  bfh_iter_destroy(it);
  if (rc != BFH_OK) return fail(db, "scan", rc);
  return close_db(db, 0);
}

static int cmd_scan(cli_t *c) {
  cli_kv_format_t fmt = c->format >= 0 ? (cli_kv_format_t)c->format : CLI_KV_CSV;
  const bfh_engine_info *eng = bfh_engine_get(c->opt.engine);
  /* Read-only where the engine can (unless --read-write): a scan needs no value filters, so
     none are built or kept. */
  if (eng && (eng->caps & BFH_ENGINE_CAN_READ_ONLY) && !c->read_write) {
    c->opt.value_filters = 0;
    if (!c->index_dir) c->index_dir = "none";
  }
  bfh_db *db;
  int rc = open_db(c, c->pos[0], 0, &db);
  return rc ? rc : scan_db(db, fmt);
}

/* ---- stats, repair ------------------------------------------------------------------------- */

/* One figure of `bfh stats`: its JSON and CSV name, its label in the text form, its value. */
typedef struct stat_row {
  const char *name, *label;
  char value[32];
} stat_row_t;

static void stats_print(const cli_t *c, const bfh_db_stats *st, uint64_t m, uint32_t k,
                        uint32_t d) {
  stat_row_t rows[] = {{"engine", "engine", ""},
                       {"m", "m (filter bits)", ""},
                       {"k", "k (hashes)", ""},
                       {"d", "d (order)", ""},
                       {"tables", "tables", ""},
                       {"table_bytes", "table bytes", ""},
                       {"leaf_filters", "leaf filters", ""},
                       {"leaf_bytes", "leaf bytes", ""},
                       {"internal_bytes", "internal bytes", ""},
                       {"sliced_bytes", "sliced bytes", ""},
                       {"hierarchy_height", "hierarchy height", ""},
                       {"mean_leaf_fill", "mean leaf fill", ""}};
  const unsigned long long u[] = {0,
                                  m,
                                  k,
                                  d,
                                  st->tables,
                                  st->table_bytes,
                                  st->leaf_filters,
                                  st->leaf_filter_bytes,
                                  st->internal_bytes,
                                  st->sliced_bytes,
                                  st->hierarchy_height};
  size_t n = sizeof rows / sizeof rows[0];
  snprintf(rows[0].value, sizeof rows[0].value, "%s", exp_engine_name(c->opt.engine));
  for (size_t i = 1; i + 1 < n; i++) snprintf(rows[i].value, sizeof rows[i].value, "%llu", u[i]);
  snprintf(rows[n - 1].value, sizeof rows[n - 1].value, "%.4f", st->mean_leaf_fill);
  for (size_t i = 0; i < n; i++) {
    if (c->json) /* the engine is the one string */
      printf(i ? ",\"%s\":%s" : "{\"%s\":\"%s\"", rows[i].name, rows[i].value);
    else if (c->csv)
      printf("%s%s", i ? "," : "", rows[i].name);
    else
      printf("%-18s%s\n", rows[i].label, rows[i].value);
  }
  if (c->json) puts("}");
  if (!c->csv) return;
  putchar('\n');
  for (size_t i = 0; i < n; i++) printf("%s%s", i ? "," : "", rows[i].value);
  putchar('\n');
}

static int cmd_stats(cli_t *c) {
  bfh_db *db;
  int rc = open_db(c, c->pos[0], 0, &db);
  if (rc) return rc;
  bfh_db_stats st;
  if (!exp_db_stats(db, &st)) return fail(db, "stats", BFH_E_UNSUPPORTED);
  /* What the handle uses; with value filters off it has none, and the options (with the m
     and k open_db read from BFH-PARAMS) are shown. */
  uint64_t m = st.value_filters ? st.value_filter_bits : c->opt.value_filter_bits;
  uint32_t k = st.value_filters ? st.value_filter_hashes : c->opt.value_filter_hashes;
  uint32_t d = st.value_filters ? st.order : c->opt.order;
  stats_print(c, &st, m, k, d);
  return close_db(db, 0);
}

/* ---- tables, check ------------------------------------------------------------------------ */

static inspect_format output_format(const cli_t *c) {
  return c->json ? INSPECT_JSON : c->csv ? INSPECT_CSV : INSPECT_TEXT;
}

static int cmd_tables(cli_t *c) {
  bfh_db *db;
  int rc = open_db(c, c->pos[0], 0, &db);
  if (rc) return rc;
  rc = inspect_tables(db, output_format(c), stdout);
  if (rc) fprintf(stderr, "bfh tables: %s\n", bfh_last_error(db));
  return close_db(db, rc);
}

static int cmd_check(cli_t *c) {
  if (require_db(c->pos[0])) return EXIT_ERROR;
  return inspect_check(c->pos[0], &c->opt, output_format(c), stdout, stderr);
}

static int cmd_repair(cli_t *c) {
  if (require_db(c->pos[0])) return EXIT_ERROR;
  bfh_repair_report r;
  int rc = bfh_repair(c->pos[0], &c->opt, &r);
  if (rc != BFH_OK) return fail(NULL, "repair", rc);
  const bfh_engine_info *eng = bfh_engine_get(c->opt.engine);
  if (eng && !(eng->caps & BFH_ENGINE_CAN_REPAIR_REPORT)) {
    printf("repaired by the %s engine's own repair (its log says what it kept)\n", eng->name);
    return 0;
  }
  printf("logs              %llu read, %llu records kept, %llu bytes dropped\n",
         (unsigned long long)r.logs, (unsigned long long)r.log_records,
         (unsigned long long)r.log_bytes_dropped);
  printf("tables            %llu read, %llu damaged (%llu blocks dropped), %llu lost\n",
         (unsigned long long)r.tables, (unsigned long long)r.tables_damaged,
         (unsigned long long)r.blocks_dropped, (unsigned long long)r.tables_lost);
  printf("written           %llu keys in %llu tables\n", (unsigned long long)r.keys_out,
         (unsigned long long)r.tables_out);
  printf("moved to lost/    %llu files%s\n", (unsigned long long)r.files_moved,
         r.params_rewritten ? " (BFH-PARAMS written from the options)" : "");
  return 0;
}

/* ---- run ----------------------------------------------------------------------------------- */

static const struct {
  const char *name;
  exp_driver_fn fn;
} EXPERIMENTS[] = {
    /* Fig. 6 first: the databases it builds last are the ones Table I, II and Fig. 8 use. */
    {"fig6", exp_fig6},         {"table1", exp_table1}, {"table2", exp_table2},
    {"fig7", exp_fig7},         {"fig8", exp_fig8},     {"fig9", exp_fig9},
    {"fig10", exp_fig10_12},    {"fig11", exp_fig11},   {"fig12", exp_fig10_12},
    {"fig13", exp_fig13},       {"table3", exp_fig13},  {"beyond", exp_beyond},
    {"tradeoff", exp_tradeoff},
};
#define NEXP (sizeof EXPERIMENTS / sizeof EXPERIMENTS[0])

static int run_one(const exp_ctx_t *x, const char *name, exp_driver_fn fn) {
  double t0 = exp_now();
  int rc = fn(x);
  double dt = exp_now() - t0;
  if (rc == 0)
    printf("%-8s done in %7.1f s -> %s/%s.csv%s%s%s\n", name, dt, x->out_dir,
           fn == exp_fig10_12 ? "fig10"
           : fn == exp_fig13  ? "fig13"
                              : name,
           fn == exp_fig10_12 || fn == exp_fig13 ? ", " : "",
           fn == exp_fig10_12 || fn == exp_fig13 ? x->out_dir : "",
           fn == exp_fig10_12 ? "/fig12.csv"
           : fn == exp_fig13  ? "/table3.csv"
                              : "");
  else
    printf("%-8s FAILED after %.1f s\n", name, dt);
  fflush(stdout);
  return rc;
}

/* Runs the experiments `what` names; returns how many failed, or -1 for an unknown name.
   both_costs: `all` also runs Fig. 8, and at the medium scale Fig. 13 (with Table III), with the
   authors' costs (their Fig. 13 at the small scale would triple the main job's time). */
static int run_experiments(exp_ctx_t *x, const char *what, int both_costs) {
  if (strcmp(what, "report") == 0) { /* REPORT.md from the CSVs already in --out */
    exp_report_run_t run = {cmdline, -1, 0};
    if (exp_report_write(x, &run) != 0) return 1;
    printf("report   -> %s/REPORT.md\n", x->out_dir);
    return 0;
  }
  if (strcmp(what, "all") != 0) {
    size_t i = 0;
    while (i < NEXP && strcmp(EXPERIMENTS[i].name, what) != 0) i++;
    return i == NEXP ? -1 : run_one(x, what, EXPERIMENTS[i].fn) != 0;
  }
  int failures = 0;
  for (size_t i = 0; i < NEXP; i++) {
    /* fig12 shares fig10's sweep and table3 is fig13's: run each driver once. */
    if (strcmp(EXPERIMENTS[i].name, "fig12") == 0 || strcmp(EXPERIMENTS[i].name, "table3") == 0)
      continue;
    failures += run_one(x, EXPERIMENTS[i].name, EXPERIMENTS[i].fn) != 0;
  }
  if (both_costs) {
    exp_ctx_t xa = *x;
    xa.costs = EXP_COSTS_AUTHORS;
    int fig13 = x->scale == EXP_MEDIUM;
    printf("%s again with the authors' costs (--costs bfh: bfh's only)\n",
           fig13 ? "fig8 and fig13" : "fig8");
    failures += run_one(&xa, "fig8", exp_fig8) != 0;
    if (fig13) failures += run_one(&xa, "fig13", exp_fig13) != 0;
  }
  return failures;
}

static int cmd_run(cli_t *c) {
  exp_ctx_t *x = &c->run;
  const char *what = c->pos[0];
  char work[1100];
  int own_work = !x->work_dir;
  if (own_work) {
    snprintf(work, sizeof work, "%s/db", x->out_dir);
    x->work_dir = work;
  }
  /* The 500M point of Table I and Fig. 8 alone would take longer than the rest of the paper
     scale together (~25 GB of inserts, then cold scans of it): asked for, not by default
     (--max-n 500M, or --min-n 500M for that point alone). */
  if (x->scale == EXP_PAPER && !cli_args_given(c, "max-n") && !cli_args_given(c, "min-n") &&
      strcmp(what, "report") != 0) {
    x->max_n = EXP_PAPER_DEFAULT_MAX_N;
    printf("paper scale: database sizes up to %llu (--max-n 500M adds the 500M point)\n",
           (unsigned long long)x->max_n);
  }
  double t0 = exp_now();
  /* `all` at small and medium scale with the own engine shows Fig. 8 (and at medium Fig. 13)
     under both cost profiles, unless --costs names one. */
  int both_costs = strcmp(what, "all") == 0 && !cli_args_given(c, "costs") &&
                   x->scale != EXP_PAPER && exp_engine_is_own(x->engine);
  int failures = run_experiments(x, what, both_costs);
  if (failures < 0) return cli_args_usage_error(current, "unknown experiment '%s'", what);
  if (strcmp(what, "all") == 0) {
    printf("all      done in %7.1f s (%s scale, engine %s), %d failed\n", exp_now() - t0,
           exp_scale_name(x->scale), exp_engine_name(x->engine), failures);
    /* The paper and ours side by side, from the CSVs just written. */
    exp_report_run_t run = {cmdline, exp_now() - t0, failures};
    if (exp_report_write(x, &run) == 0)
      printf("report   -> %s/REPORT.md\n", x->out_dir);
    else
      failures++;
  }
  fprintf(stderr, "bfh run: %s in %.1f s, %d failed\n", what, exp_now() - t0, failures);
  exp_db_cleanup(x);                                    /* the shared databases, unless --keep */
  if (!x->keep_db && own_work) exp_rmtree(x->work_dir); /* only the directory we chose */
  return failures ? 1 : 0;
}

/* ---- The subcommands ----------------------------------------------------------------------- */

static int cmd_version(cli_t *c) {
  (void)c;
  printf("bfh %s\n", bfh_version());
  return 0;
}

static const char LOAD_HELP[] =
    "Records (--from): one key,value pair per record; CSV per RFC 4180 (fields may be\n"
    "enclosed in double quotes, \"\" is a quote inside them, and quoted fields may hold\n"
    "commas and line breaks) or TSV (one tab between the fields, no quoting). In both\n"
    "formats, after the quotes are removed, \\\\ \\n \\t \\r \\0 and \\xHH stand for one byte\n"
    "each (so a literal backslash is \\\\); no other backslash sequence is allowed. Blank\n"
    "lines are skipped. `bfh scan` writes this form. A bad record stops the load with\n"
    "FILE:LINE and the number of entries written before it (those stay in the database).\n"
    "The entries are flushed into tables at the end (and every --batch N puts).\n";

static const char SEARCH_HELP[] =
    "Prints every key whose value is VALUE, one per line, escaped as `bfh scan` writes\n"
    "keys (\\\\ \\n \\t \\r \\0 \\xHH; a leading # as \\x23). Statistics go to stderr; with\n"
    "--json, one object on stdout: {\"value\", \"method\", \"keys\": [...], \"method_used\",\n"
    "\"count\", \"seconds\", \"stats\": {the bfh_search_stats fields}}, strings in the\n"
    "escaped form; with --csv, a line \"key\" then one key per line as a CSV field.\n"
    "Exit status: 0 found, 1 nothing found, 2 error.\n"
    "With --engine leveldb it reads the database read-only, as tables, get and stats do: bfh's\n"
    "own readers of CURRENT, the MANIFEST, the tables and the logs, without LevelDB, without its\n"
    "LOCK and without writing into its directory, so a database its program holds open can be\n"
    "searched; its filters are cached in --index-dir. --read-write opens it with LevelDB.\n";

static const char RUN_HELP[] =
    "Experiments: fig6 table1 table2 fig7 fig8 fig9 fig10 fig11 fig12 fig13 table3, beyond\n"
    "(time vs N with AUTO's block path), tradeoff (write cost vs search time against a\n"
    "stand-alone index; own engine), or all (then REPORT.md, the paper's numbers and ours side\n"
    "by side, commit and command line included); report writes REPORT.md alone from the CSVs\n"
    "already in --out.\n"
    "--costs authors (own engine) runs the paper's searches with the authors' implementation\n"
    "costs: table scans that format every entry as a text line and parse it back, leaf filters\n"
    "loaded whole from a file each and deserialised bit by bit, key lookups timed as the first\n"
    "get after a reopen; at most 10 queries per point. Every CSV has a costs column, and a run\n"
    "replaces only its own profile's rows, so runs with both profiles share one CSV and plot.\n"
    "`all` at small and medium scale with the own engine runs fig8 (at medium also fig13) a\n"
    "second time with the authors' costs unless --costs is given.\n";

static const cli_cmd_t COMMANDS[] = {
    {"load", cmd_load, CLI_DB | CLI_FROM | CLI_SYNTH, 1, 1, "DIR (--from FILE|- | --synthetic N)",
     "load key,value records, or generated entries, into DIR (created if missing)", LOAD_HELP},
    {"put", cmd_put, CLI_DB, 3, 3, "DIR KEY VALUE", "write one entry (DIR created if missing)",
     NULL},
    {"get", cmd_get, CLI_DB | CLI_READ, 2, 2, "DIR KEY",
     "print KEY's value, escaped; exit 0 found, 1 not found, 2 error", NULL},
    {"delete", cmd_delete, CLI_DB, 2, 2, "DIR KEY", "delete one key", NULL},
    {"search", cmd_search, CLI_DB | CLI_READ | CLI_SEARCH | CLI_JSON, 2, 2, "DIR VALUE",
     "print the keys whose value is VALUE", SEARCH_HELP},
    {"scan", cmd_scan, CLI_DB | CLI_READ | CLI_SCAN, 1, 1, "DIR",
     "print every live key,value in key order, in the form load --from reads", NULL},
    {"stats", cmd_stats, CLI_DB | CLI_READ | CLI_JSON, 1, 1, "DIR",
     "sizes of the database and its filters", NULL},
    {"tables", cmd_tables, CLI_DB | CLI_READ | CLI_JSON, 1, 1, "DIR",
     "per live table: number, level, entries, bytes, key range, value filter fill and FPR", NULL},
    {"check", cmd_check, CLI_DB | CLI_JSON, 1, 1, "DIR",
     "verify every checksum; report damage by file and offset; exit 0 clean, 1 damaged, 2 error",
     NULL},
    {"repair", cmd_repair, CLI_DB, 1, 1, "DIR",
     "salvage a database that refuses to open (damaged files go to DIR/lost/)", NULL},
    {"run", cmd_run, CLI_RUN, 1, 1, "EXPERIMENT|all",
     "reproduce the paper's tables and figures (CSV, plots)", RUN_HELP},
    {"version", cmd_version, 0, 0, 0, "", "print the version", NULL},
};
#define NCOMMANDS (sizeof COMMANDS / sizeof COMMANDS[0])

static void usage(FILE *out) {
  fputs("usage: bfh COMMAND [ARGS] [OPTIONS]   (bfh COMMAND --help for its options)\n\n", out);
  for (size_t i = 0; i < NCOMMANDS; i++)
    fprintf(out, "  %-8s %s\n", COMMANDS[i].name, COMMANDS[i].summary);
  fputs("\n  --version  print the version\n  --help     this help\n", out);
}

static const cli_cmd_t *find_command(const char *name) {
  for (size_t i = 0; i < NCOMMANDS; i++)
    if (strcmp(COMMANDS[i].name, name) == 0) return &COMMANDS[i];
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return EXIT_ERROR;
  }
  const char *name = argv[1];
  if (!strcmp(name, "help") || !strcmp(name, "--help") || !strcmp(name, "-h")) {
    const cli_cmd_t *cmd = argc > 2 ? find_command(argv[2]) : NULL;
    if (cmd)
      cli_args_help(cmd, stdout);
    else
      usage(stdout);
    return 0;
  }
  if (!strcmp(name, "--version")) name = "version";
  current = find_command(name);
  if (!current) {
    fprintf(stderr, "bfh: unknown command '%s'\nTry 'bfh --help'.\n", name);
    return EXIT_ERROR;
  }
  /* The command line as typed, quoted where a shell would need it. */
  size_t len = 0;
  for (int i = 0; i < argc && len + 1 < sizeof cmdline; i++) {
    const char *a = i == 0 ? "bfh" : argv[i];
    int quote = *a == '\0' || strpbrk(a, " \t\n'\"\\$`*?[]{}()<>|&;#~") != NULL;
    int w = snprintf(cmdline + len, sizeof cmdline - len, "%s%s%s%s", i ? " " : "",
                     quote ? "'" : "", a, quote ? "'" : "");
    if (w < 0) break;
    len += (size_t)w;
  }
  if (len >= sizeof cmdline) len = sizeof cmdline - 1;
  cmdline[len] = '\0';
  static cli_t c;
  int rc = cli_args_parse(current, argc - 1, argv + 1, &c);
  return rc >= 0 ? rc : current->run(&c);
}
