/* bfh search and bfh stats: a search by value with its statistics, and the sizes of a
 * database and its filters (cmd.h). */
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "bfh.h"
#include "tools/bfh/cli_db.h"
#include "tools/bfh/cli_kv.h"
#include "tools/bfh/cmd.h"

/* ---- search -------------------------------------------------------------------------------- */

/* The library's name of a search method, or "?" for a value that names none. */
static const char *method_name(int m) {
  const char *name = bfh_method_name((bfh_method)m);
  return name ? name : "?";
}

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

#define STAT_FIELDS(X)    \
  X(internal_probes)      \
  X(leaf_probes)          \
  X(leaf_positives)       \
  X(tables_scanned)       \
  X(tables_matched)       \
  X(entries_scanned)      \
  X(bytes_read)           \
  X(candidates)           \
  X(results)              \
  X(elapsed_ns)           \
  X(block_filters_probed) \
  X(blocks_read)          \
  X(internal_maybe)       \
  X(map_chunks_read)      \
  X(tables_zoned)         \
  X(tables_ranged)        \
  X(range_pieces_read)

static void search_stats_json(const bfh_search_stats *st) {
  fputs("\"stats\":{", stdout);
#define JSON_FIELD(f) printf("\"" #f "\":%llu,", (unsigned long long)st->f);
  STAT_FIELDS(JSON_FIELD)
#undef JSON_FIELD
  printf("\"tables_live\":%u}", st->tables_live);
}

static void search_stats_text(const cli_t *c, const bfh_search_stats *st, double secs) {
  fprintf(stderr, "# method %s (ran %s): %llu results in %.6f s\n#", method_name(c->method),
          method_name(st->method_used), (unsigned long long)st->results, secs);
#define TEXT_FIELD(f) fprintf(stderr, " " #f " %llu", (unsigned long long)st->f);
  STAT_FIELDS(TEXT_FIELD)
#undef TEXT_FIELD
  fprintf(stderr, " tables_live %u\n", st->tables_live);
}

/* The positional arguments and search options agree: DIR VALUE, or DIR and --where EXPR
   (with --newest only then). 0, or the usage error's exit status. */
static int check_search_args(const cli_t *c) {
  if (c->where && c->npos == 2)
    return cli_args_usage_error(c->cmd, "--where and a VALUE exclude each other (got '%s')",
                                c->pos[1]);
  if (!c->where && c->npos < 2)
    return cli_args_usage_error(c->cmd, "search needs a VALUE or --where EXPR");
  if (!c->where && c->newest) return cli_args_usage_error(c->cmd, "--newest needs --where");
  return 0;
}

int cmd_search(cli_t *c) {
  int rc = check_search_args(c);
  if (rc) return rc;
  bfh_db *db;
  /* --method cuckoo keeps the Cuckoo Index (built from the tables at this search). */
  if (c->method == BFH_SEARCH_CUCKOO) c->opt.cuckoo_index = 1;
  /* The paper's methods run in the paper's configuration (every leaf's m bits, the hierarchy,
     the bit-sliced index) unless --index-bits says otherwise (doc/search.md "The lean index"). */
  if ((c->method == BFH_SEARCH_LEAVES || c->method == BFH_SEARCH_HIERARCHY ||
       c->method == BFH_SEARCH_SLICED) &&
      !cli_args_given(c, "index-bits"))
    c->opt.index_bits_per_value = 0;
  rc = cli_db_open(c, c->pos[0], 0, &db);
  if (rc) return rc;
  const char *val = c->where ? c->where : c->pos[1];
  bfh_search_stats st;
  memset(&st, 0, sizeof st);
  hits_t hits = {c->json, c->csv, 0};
  if (c->csv && !c->count_only) puts("key");
  if (c->json) {
    fputs(c->where ? "{\"where\":" : "{\"value\":", stdout);
    cli_kv_write_json(stdout, val, strlen(val));
    printf(",\"method\":\"%s\",\"keys\":[", method_name(c->method));
  }
  bfh_match_fn fn = c->count_only ? NULL : print_key;
  double t0 = cli_now();
  rc = c->where ? bfh_query(db, c->where, (bfh_method)c->method, c->newest, fn, &hits, &st)
                : bfh_search(db, val, strlen(val), (bfh_method)c->method, fn, &hits, &st);
  double secs = cli_now() - t0;
  if (rc != BFH_OK) {
    if (c->json) puts("]}"); /* the object stays whole; the status says it failed */
    return cli_db_fail(c, db, "search", rc);
  }
  if (c->json) {
    printf("],\"method_used\":\"%s\",\"count\":%llu,\"seconds\":%.6f,", method_name(st.method_used),
           (unsigned long long)st.results, secs);
    search_stats_json(&st);
    puts("}");
  } else {
    if (c->count_only) printf("%llu\n", (unsigned long long)st.results);
    search_stats_text(c, &st, secs);
  }
  return cli_db_close(c, db, st.results ? EXIT_FOUND : EXIT_NONE);
}

/* ---- stats, repair ------------------------------------------------------------------------- */

/* One figure of `bfh stats`: its JSON and CSV name, its label in the text form, its value. */
typedef struct stat_row {
  const char *name, *label;
  char value[32];
} stat_row_t;

/* The most memory this process has held resident so far (getrusage's ru_maxrss): what a
   machine running the open needs, the index's loading included; 0 if not known. */
static uint64_t peak_rss_bytes(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0 || ru.ru_maxrss < 0) return 0;
#ifdef __APPLE__
  return (uint64_t)ru.ru_maxrss; /* bytes there */
#else
  return (uint64_t)ru.ru_maxrss * 1024; /* kilobytes */
#endif
}

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
                       {"block_filter_bytes", "block filter bytes", ""},
                       {"index_bytes", "index bytes (RAM)", ""},
                       {"cuckoo_bytes", "cuckoo index bytes (RAM)", ""},
                       {"memtable_index_bytes", "memtable index (RAM)", ""},
                       {"index_load_peak_bytes", "index load peak", ""},
                       {"leaf_chunks_damaged", "leaf chunks bad", ""},
                       {"peak_rss_bytes", "peak RSS (process)", ""},
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
                                  st->hierarchy_height,
                                  st->block_filter_bytes,
                                  st->index_bytes,
                                  st->cuckoo_bytes,
                                  st->memtable_index_bytes,
                                  st->index_load_peak_bytes,
                                  st->leaf_chunks_damaged,
                                  peak_rss_bytes()};
  size_t n = sizeof rows / sizeof rows[0];
  const char *engine_name = bfh_engine_name(c->opt.engine);
  snprintf(rows[0].value, sizeof rows[0].value, "%s", engine_name ? engine_name : "unknown");
  for (size_t i = 1; i + 1 < n; i++) snprintf(rows[i].value, sizeof rows[i].value, "%llu", u[i]);
  snprintf(rows[n - 1].value, sizeof rows[n - 1].value, "%.4f", st->mean_leaf_fill);
  int width = 0; /* the text form's labels, padded to the longest and two spaces */
  for (size_t i = 0; i < n; i++)
    if ((int)strlen(rows[i].label) > width) width = (int)strlen(rows[i].label);
  for (size_t i = 0; i < n; i++) {
    if (c->json) /* the engine is the one string */
      printf(i ? ",\"%s\":%s" : "{\"%s\":\"%s\"", rows[i].name, rows[i].value);
    else if (c->csv)
      printf("%s%s", i ? "," : "", rows[i].name);
    else
      printf("%-*s%s\n", width + 2, rows[i].label, rows[i].value);
  }
  if (c->json) puts("}");
  if (!c->csv) return;
  putchar('\n');
  for (size_t i = 0; i < n; i++) printf("%s%s", i ? "," : "", rows[i].value);
  putchar('\n');
}

int cmd_stats(cli_t *c) {
  bfh_db *db;
  int rc = cli_db_open(c, c->pos[0], 0, &db);
  if (rc) return rc;
  bfh_db_stats st;
  memset(&st, 0, sizeof st);
  /* --cuckoo-index: build it (a CUCKOO search builds it from the live tables) to report it. */
  if (c->opt.cuckoo_index) (void)bfh_search(db, "", 0, BFH_SEARCH_CUCKOO, NULL, NULL, NULL);
  if (bfh_stats(db, &st) != BFH_OK) return cli_db_fail(c, db, "stats", BFH_E_UNSUPPORTED);
  /* What the handle uses; with value filters off it has none, and the options (with the m
     and k open_db read from BFH-PARAMS) are shown. */
  uint64_t m = st.value_filters ? st.value_filter_bits : c->opt.value_filter_bits;
  uint32_t k = st.value_filters ? st.value_filter_hashes : c->opt.value_filter_hashes;
  uint32_t d = st.value_filters ? st.order : c->opt.order;
  stats_print(c, &st, m, k, d);
  return cli_db_close(c, db, 0);
}
