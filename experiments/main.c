/* bfh: the command-line tool. Ad-hoc use of a database (load, put, get, delete, search,
 * stats) and `bfh run` for the paper's tables and figures (one driver per artifact in
 * experiments/exp_*.c). Run `bfh help` for the usage. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "experiments/exp.h"
#include "workloads/workload.h"

static const char USAGE[] =
    "usage:\n"
    "  bfh load DIR --num N [db options] [--domain PCT] [--insert seq|random]\n"
    "           [--keys paper|fixed] [--seed S]\n"
    "  bfh put DIR KEY VALUE [db options]\n"
    "  bfh get DIR KEY [db options]\n"
    "  bfh delete DIR KEY [db options]\n"
    "  bfh search DIR VALUE [--method scan|leaves|hierarchy|sliced|auto|standalone]\n"
    "           [--count]\n"
    "           [db options]\n"
    "  bfh stats DIR [db options]\n"
    "  bfh repair DIR [db options]  (salvage a database that refuses to open; damaged\n"
    "           files go to DIR/lost/; m, k from BFH-PARAMS or, if it is damaged, the options)\n"
    "  bfh run EXPERIMENT|all [--scale small|medium|paper] [--engine lsm|leveldb]\n"
    "           [--out DIR] [--work DIR] [--plots DIR] [--queries Q] [--keep] [--no-plot]\n"
    "           [--cold]  (Table I and Fig. 8 also measured with the page cache evicted)\n"
    "           [--max-n N]  (Table I, II, Fig. 6, 8: skip database sizes above N; 0: none;\n"
    "                         default at paper scale 100M: --max-n 500M adds the 500M point)\n"
    "       experiments: fig6 table1 table2 fig7 fig8 fig9 fig10 fig11 fig12 fig13 (table3)\n"
    "                    beyond (not the paper's: time vs N with AUTO's block path)\n"
    "                    tradeoff (not the paper's: write cost vs search time, bfh against\n"
    "                    a stand-alone index; own engine)\n"
    "db options: --engine lsm|leveldb --bits M --hashes K --order D --table-bytes B\n"
    "           --memtable-bytes B --no-value-filters --leaves-on-disk --leaves-on-disk-whole\n"
    "           --placement similarity|positional|paper --sync\n"
    "           --standalone-index  (own engine: also keep a value||key index; once a\n"
    "                                database has one, every open must say so)\n"
    "Numbers take k/M/G suffixes (powers of 10; KiB/MiB/GiB for powers of 2).\n"
    "An existing database is opened with the m and k it was created with (BFH-PARAMS).\n";

static int usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, "bfh: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n%s", USAGE);
  return 2;
}

/* Parses an unsigned number with an optional k/M/G (10^3..) or KiB/MiB/GiB suffix. */
static int parse_num(const char *s, uint64_t *out) {
  errno = 0;
  char *end;
  double v = strtod(s, &end);
  if (errno || end == s || v < 0) return -1;
  double mul = 1;
  if (strcmp(end, "") == 0)
    mul = 1;
  else if (strcmp(end, "k") == 0 || strcmp(end, "K") == 0)
    mul = 1e3;
  else if (strcmp(end, "M") == 0)
    mul = 1e6;
  else if (strcmp(end, "G") == 0)
    mul = 1e9;
  else if (strcmp(end, "KiB") == 0)
    mul = 1024.0;
  else if (strcmp(end, "MiB") == 0)
    mul = 1048576.0;
  else if (strcmp(end, "GiB") == 0)
    mul = 1073741824.0;
  else
    return -1;
  *out = (uint64_t)(v * mul + 0.5);
  return 0;
}

/* Everything the ad-hoc subcommands accept. */
typedef struct cli {
  bfh_options opt;
  int bits_given, hashes_given;
  workload_config_t wl;
  bfh_method method;
  int count_only;
  exp_ctx_t run;
  int max_n_given;
  const char *pos[4]; /* positional arguments */
  int npos;
} cli_t;

static int parse_engine(const char *s, bfh_engine *e) {
  if (strcmp(s, "lsm") == 0)
    *e = BFH_ENGINE_LSM;
  else if (strcmp(s, "leveldb") == 0)
    *e = BFH_ENGINE_LEVELDB;
  else
    return -1;
  return 0;
}

static int parse_method(const char *s, bfh_method *m) {
  for (int i = BFH_SEARCH_SCAN; i <= BFH_SEARCH_STANDALONE; i++)
    if (strcmp(s, exp_method_name((bfh_method)i)) == 0) {
      *m = (bfh_method)i;
      return 0;
    }
  return -1;
}

/* Parses argv[first..argc). Returns 0, or an exit status (2) after printing the usage. */
static int parse_args(int argc, char **argv, int first, cli_t *c) {
  bfh_options_init(&c->opt);
  workload_config_init(&c->wl);
  c->method = BFH_SEARCH_AUTO;
  c->run.scale = EXP_SMALL;
  c->run.engine = BFH_ENGINE_LSM;
  c->run.out_dir = "results";
  c->run.queries = 30;
  for (int i = first; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    uint64_t num = 0;
#define NEED_VALUE()                                 \
  if (!v) return usage_error("%s needs a value", a); \
  i++
#define NEED_NUM() \
  NEED_VALUE();    \
  if (parse_num(v, &num) != 0) return usage_error("bad number '%s'", v)
#define NEED_U32() \
  NEED_NUM();      \
  if (num > UINT32_MAX) return usage_error("%s is out of range (at most 4294967295)", v)
    if (strcmp(a, "--engine") == 0) {
      NEED_VALUE();
      if (parse_engine(v, &c->opt.engine) != 0) return usage_error("unknown engine '%s'", v);
      c->run.engine = c->opt.engine;
    } else if (strcmp(a, "--bits") == 0) {
      NEED_NUM();
      c->opt.value_filter_bits = num;
      c->bits_given = 1;
    } else if (strcmp(a, "--hashes") == 0) {
      NEED_U32();
      c->opt.value_filter_hashes = (uint32_t)num;
      c->hashes_given = 1;
    } else if (strcmp(a, "--order") == 0) {
      NEED_U32();
      c->opt.order = (uint32_t)num;
    } else if (strcmp(a, "--table-bytes") == 0) {
      NEED_NUM();
      c->opt.table_bytes = (size_t)num;
    } else if (strcmp(a, "--memtable-bytes") == 0) {
      NEED_NUM();
      c->opt.memtable_bytes = (size_t)num;
    } else if (strcmp(a, "--no-value-filters") == 0) {
      c->opt.value_filters = 0;
    } else if (strcmp(a, "--leaves-on-disk") == 0) {
      c->opt.leaves_on_disk = BFH_LEAVES_ON_DISK;
    } else if (strcmp(a, "--leaves-on-disk-whole") == 0) {
      c->opt.leaves_on_disk = BFH_LEAVES_ON_DISK_WHOLE;
    } else if (strcmp(a, "--sync") == 0) {
      c->opt.sync = 1;
    } else if (strcmp(a, "--standalone-index") == 0) {
      c->opt.standalone_index = 1;
    } else if (strcmp(a, "--placement") == 0) {
      NEED_VALUE();
      if (strcmp(v, "similarity") == 0)
        c->opt.placement = BFH_PLACEMENT_SIMILARITY;
      else if (strcmp(v, "positional") == 0)
        c->opt.placement = BFH_PLACEMENT_POSITIONAL;
      else if (strcmp(v, "paper") == 0)
        c->opt.placement = BFH_PLACEMENT_PAPER;
      else
        return usage_error("unknown placement '%s'", v);
    } else if (strcmp(a, "--num") == 0) {
      NEED_NUM();
      c->wl.n = num;
    } else if (strcmp(a, "--domain") == 0) {
      NEED_VALUE();
      c->wl.domain_pct = strtod(v, NULL);
    } else if (strcmp(a, "--insert") == 0) {
      NEED_VALUE();
      if (strcmp(v, "seq") == 0 || strcmp(v, "sequential") == 0)
        c->wl.order = WORKLOAD_SEQUENTIAL;
      else if (strcmp(v, "random") == 0)
        c->wl.order = WORKLOAD_RANDOM;
      else
        return usage_error("unknown insertion order '%s'", v);
    } else if (strcmp(a, "--keys") == 0) {
      NEED_VALUE();
      if (strcmp(v, "paper") == 0)
        c->wl.format = WORKLOAD_FORMAT_PAPER;
      else if (strcmp(v, "fixed") == 0)
        c->wl.format = WORKLOAD_FORMAT_FIXED;
      else
        return usage_error("unknown key format '%s'", v);
    } else if (strcmp(a, "--seed") == 0) {
      NEED_NUM();
      c->wl.seed = num;
    } else if (strcmp(a, "--method") == 0) {
      NEED_VALUE();
      if (parse_method(v, &c->method) != 0) return usage_error("unknown method '%s'", v);
    } else if (strcmp(a, "--count") == 0) {
      c->count_only = 1;
    } else if (strcmp(a, "--scale") == 0) {
      NEED_VALUE();
      if (strcmp(v, "small") == 0)
        c->run.scale = EXP_SMALL;
      else if (strcmp(v, "medium") == 0)
        c->run.scale = EXP_MEDIUM;
      else if (strcmp(v, "paper") == 0)
        c->run.scale = EXP_PAPER;
      else
        return usage_error("unknown scale '%s'", v);
    } else if (strcmp(a, "--out") == 0) {
      NEED_VALUE();
      c->run.out_dir = v;
    } else if (strcmp(a, "--work") == 0) {
      NEED_VALUE();
      c->run.work_dir = v;
    } else if (strcmp(a, "--plots") == 0) {
      NEED_VALUE();
      c->run.plots_dir = v;
    } else if (strcmp(a, "--queries") == 0) {
      NEED_NUM();
      c->run.queries = num < 5 ? 5 : (int)(num > 1000 ? 1000 : num);
    } else if (strcmp(a, "--keep") == 0) {
      c->run.keep_db = 1;
    } else if (strcmp(a, "--cold") == 0) {
      c->run.cold = 1;
    } else if (strcmp(a, "--max-n") == 0) {
      NEED_NUM();
      c->run.max_n = num;
      c->max_n_given = 1;
    } else if (strcmp(a, "--no-plot") == 0) {
      c->run.no_plot = 1;
    } else if (a[0] == '-' && a[1] == '-') {
      return usage_error("unknown option '%s'", a);
    } else if (c->npos < 4) {
      c->pos[c->npos++] = a;
    } else {
      return usage_error("too many arguments at '%s'", a);
    }
#undef NEED_VALUE
#undef NEED_NUM
#undef NEED_U32
  }
  return 0;
}

/* Opens DIR; an existing database keeps its stored m and k unless given on the command line. */
static int open_db(cli_t *c, const char *dir, bfh_db **db) {
  bfh_options stored = c->opt;
  if (bfh_stored_params(dir, &stored) == BFH_OK) {
    if (!c->bits_given) c->opt.value_filter_bits = stored.value_filter_bits;
    if (!c->hashes_given) c->opt.value_filter_hashes = stored.value_filter_hashes;
    c->opt.hash_seed = stored.hash_seed;
  }
  int rc = bfh_open(dir, &c->opt, db);
  if (rc != BFH_OK)
    fprintf(stderr, "bfh: open %s: %s: %s\n", dir, bfh_strerror(rc), bfh_last_error(NULL));
  return rc;
}

static int fail(bfh_db *db, const char *what, int rc) {
  fprintf(stderr, "bfh: %s: %s: %s\n", what, bfh_strerror(rc), bfh_last_error(db));
  bfh_close(db);
  return 1;
}

static int cmd_load(cli_t *c) {
  if (c->npos != 1) return usage_error("load needs DIR%s", "");
  workload_t w;
  if (workload_init(&w, &c->wl) != BFH_OK) return usage_error("bad --num or --domain%s", "");
  bfh_db *db;
  if (open_db(c, c->pos[0], &db) != BFH_OK) return 1;
  char key[WORKLOAD_MAX_BYTES], val[WORKLOAD_MAX_BYTES];
  double t0 = exp_now(), last = t0;
  for (uint64_t i = 0; i < c->wl.n; i++) {
    size_t kl = workload_put_key(&w, i, key), vl = workload_put_value(&w, i, val);
    int rc = bfh_put(db, key, kl, val, vl);
    if (rc != BFH_OK) return fail(db, "put", rc);
    if ((i & 0xffff) == 0 && exp_now() - last > 0.5) {
      last = exp_now();
      exp_progress("loading: %.1f%%", 100.0 * (double)i / (double)c->wl.n);
    }
  }
  double t1 = exp_now();
  int rc = bfh_flush(db);
  double t2 = exp_now();
  exp_progress_done();
  if (rc != BFH_OK) return fail(db, "flush", rc);
  printf(
      "loaded %llu entries (%llu distinct values, %s order) in %.3f s (puts %.3f s, flush "
      "%.3f s)\n",
      (unsigned long long)c->wl.n, (unsigned long long)w.domain,
      c->wl.order == WORKLOAD_RANDOM ? "random" : "sequential", t2 - t0, t1 - t0, t2 - t1);
  rc = bfh_close(db);
  if (rc != BFH_OK) return fail(NULL, "close", rc);
  return 0;
}

static int cmd_put(cli_t *c) {
  if (c->npos != 3) return usage_error("put needs DIR KEY VALUE%s", "");
  bfh_db *db;
  if (open_db(c, c->pos[0], &db) != BFH_OK) return 1;
  int rc = bfh_put(db, c->pos[1], strlen(c->pos[1]), c->pos[2], strlen(c->pos[2]));
  if (rc != BFH_OK) return fail(db, "put", rc);
  rc = bfh_close(db);
  return rc == BFH_OK ? 0 : fail(NULL, "close", rc);
}

static int cmd_delete(cli_t *c) {
  if (c->npos != 2) return usage_error("delete needs DIR KEY%s", "");
  bfh_db *db;
  if (open_db(c, c->pos[0], &db) != BFH_OK) return 1;
  int rc = bfh_delete(db, c->pos[1], strlen(c->pos[1]));
  if (rc != BFH_OK) return fail(db, "delete", rc);
  rc = bfh_close(db);
  return rc == BFH_OK ? 0 : fail(NULL, "close", rc);
}

static int cmd_get(cli_t *c) {
  if (c->npos != 2) return usage_error("get needs DIR KEY%s", "");
  bfh_db *db;
  if (open_db(c, c->pos[0], &db) != BFH_OK) return 1;
  void *val = NULL;
  size_t len = 0;
  int rc = bfh_get(db, c->pos[1], strlen(c->pos[1]), &val, &len);
  int status = 0;
  if (rc == BFH_OK) {
    fwrite(val, 1, len, stdout);
    fputc('\n', stdout);
    bfh_free(val);
  } else if (rc == BFH_NOT_FOUND) {
    fprintf(stderr, "bfh: %s: not found\n", c->pos[1]);
    status = 1;
  } else {
    return fail(db, "get", rc);
  }
  rc = bfh_close(db);
  return rc == BFH_OK ? status : fail(NULL, "close", rc);
}

static int print_key(void *arg, const void *key, size_t len) {
  (void)arg;
  fwrite(key, 1, len, stdout);
  fputc('\n', stdout);
  return 0;
}

static int cmd_search(cli_t *c) {
  if (c->npos != 2) return usage_error("search needs DIR VALUE%s", "");
  bfh_db *db;
  if (open_db(c, c->pos[0], &db) != BFH_OK) return 1;
  bfh_search_stats st;
  memset(&st, 0, sizeof st);
  double t0 = exp_now();
  int rc = bfh_search(db, c->pos[1], strlen(c->pos[1]), c->method, c->count_only ? NULL : print_key,
                      NULL, &st);
  double t1 = exp_now();
  if (rc != BFH_OK) return fail(db, "search", rc);
  printf("# method %s (ran %s): %llu results in %.6f s\n", exp_method_name(c->method),
         exp_method_name((bfh_method)st.method_used), (unsigned long long)st.results, t1 - t0);
  printf("# internal_probes %llu leaf_probes %llu leaf_positives %llu tables_live %u\n",
         (unsigned long long)st.internal_probes, (unsigned long long)st.leaf_probes,
         (unsigned long long)st.leaf_positives, st.tables_live);
  printf(
      "# tables_scanned %llu tables_matched %llu entries_scanned %llu bytes_read %llu "
      "candidates %llu elapsed_ns %llu\n",
      (unsigned long long)st.tables_scanned, (unsigned long long)st.tables_matched,
      (unsigned long long)st.entries_scanned, (unsigned long long)st.bytes_read,
      (unsigned long long)st.candidates, (unsigned long long)st.elapsed_ns);
  rc = bfh_close(db);
  return rc == BFH_OK ? 0 : fail(NULL, "close", rc);
}

static int cmd_repair(cli_t *c) {
  if (c->npos != 1) return usage_error("repair needs DIR%s", "");
  bfh_repair_report r;
  int rc = bfh_repair(c->pos[0], &c->opt, &r);
  if (rc != BFH_OK) return fail(NULL, "repair", rc);
  if (c->opt.engine == BFH_ENGINE_LEVELDB) {
    printf("repaired by LevelDB's RepairDB (its LOG file says what it kept)\n");
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

static int cmd_stats(cli_t *c) {
  if (c->npos != 1) return usage_error("stats needs DIR%s", "");
  bfh_db *db;
  if (open_db(c, c->pos[0], &db) != BFH_OK) return 1;
  bfh_db_stats st;
  if (!exp_db_stats(db, &st)) return fail(db, "stats", BFH_E_UNSUPPORTED);
  int rc;
  /* What the handle uses; with value filters off it has none, and the options (with the m
     and k open_db read from BFH-PARAMS) are shown. */
  uint64_t m = st.value_filters ? st.value_filter_bits : c->opt.value_filter_bits;
  uint32_t k = st.value_filters ? st.value_filter_hashes : c->opt.value_filter_hashes;
  uint32_t d = st.value_filters ? st.order : c->opt.order;
  printf("engine            %s\n", exp_engine_name(c->opt.engine));
  printf("m, k, d           %llu, %u, %u\n", (unsigned long long)m, k, d);
  printf("tables            %llu\n", (unsigned long long)st.tables);
  printf("table bytes       %llu\n", (unsigned long long)st.table_bytes);
  printf("leaf filters      %llu\n", (unsigned long long)st.leaf_filters);
  printf("leaf bytes        %llu\n", (unsigned long long)st.leaf_filter_bytes);
  printf("internal bytes    %llu\n", (unsigned long long)st.internal_bytes);
  printf("sliced bytes      %llu\n", (unsigned long long)st.sliced_bytes);
  printf("hierarchy height  %u\n", st.hierarchy_height);
  printf("mean leaf fill    %.4f\n", st.mean_leaf_fill);
  rc = bfh_close(db);
  return rc == BFH_OK ? 0 : fail(NULL, "close", rc);
}

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

static int cmd_run(cli_t *c) {
  if (c->npos != 1) return usage_error("run needs an experiment name or 'all'%s", "");
  exp_ctx_t *x = &c->run;
  char work[1100];
  int own_work = !x->work_dir;
  if (own_work) {
    snprintf(work, sizeof work, "%s/db", x->out_dir);
    x->work_dir = work;
  }
  /* The 500M point of Table I and Fig. 8 alone would take longer than the rest of the paper
     scale together (~25 GB of inserts, then cold scans of it): asked for, not by default. */
  if (x->scale == EXP_PAPER && !c->max_n_given) {
    x->max_n = EXP_PAPER_DEFAULT_MAX_N;
    printf("paper scale: database sizes up to %llu (--max-n 500M adds the 500M point)\n",
           (unsigned long long)x->max_n);
  }
  const char *what = c->pos[0];
  int failures = 0;
  double t0 = exp_now();
  if (strcmp(what, "all") == 0) {
    for (size_t i = 0; i < NEXP; i++) {
      /* fig12 shares fig10's sweep and table3 is fig13's: run each driver once. */
      if (strcmp(EXPERIMENTS[i].name, "fig12") == 0 || strcmp(EXPERIMENTS[i].name, "table3") == 0)
        continue;
      failures += run_one(x, EXPERIMENTS[i].name, EXPERIMENTS[i].fn) != 0;
    }
    printf("all      done in %7.1f s (%s scale, engine %s), %d failed\n", exp_now() - t0,
           exp_scale_name(x->scale), exp_engine_name(x->engine), failures);
  } else {
    size_t i = 0;
    while (i < NEXP && strcmp(EXPERIMENTS[i].name, what) != 0) i++;
    if (i == NEXP) return usage_error("unknown experiment '%s'", what);
    failures = run_one(x, what, EXPERIMENTS[i].fn) != 0;
  }
  exp_db_cleanup(x);                                    /* the shared databases, unless --keep */
  if (!x->keep_db && own_work) exp_rmtree(x->work_dir); /* only the directory we chose */
  return failures ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
      strcmp(argv[1], "-h") == 0) {
    fputs(USAGE, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  static cli_t c;
  int rc = parse_args(argc, argv, 2, &c);
  if (rc) return rc;
  const char *cmd = argv[1];
  if (strcmp(cmd, "load") == 0) return cmd_load(&c);
  if (strcmp(cmd, "put") == 0) return cmd_put(&c);
  if (strcmp(cmd, "get") == 0) return cmd_get(&c);
  if (strcmp(cmd, "delete") == 0) return cmd_delete(&c);
  if (strcmp(cmd, "search") == 0) return cmd_search(&c);
  if (strcmp(cmd, "stats") == 0) return cmd_stats(&c);
  if (strcmp(cmd, "repair") == 0) return cmd_repair(&c);
  if (strcmp(cmd, "run") == 0) return cmd_run(&c);
  return usage_error("unknown command '%s'", cmd);
}
