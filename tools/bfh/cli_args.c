/* The option table of the bfh command and its getopt_long parser (cli_args.h). */
#include "tools/bfh/cli_args.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "tools/bfh/cli_kv.h"

/* How an option's argument is stored into its field of cli_t. K_METHOD: a search method, by
   its name in the library's one table (bfh_method_name). */
typedef enum kind {
  K_FLAG,
  K_U64,
  K_U32,
  K_SIZE,
  K_INT,
  K_DOUBLE,
  K_STR,
  K_CHOICE,
  K_METHOD,
  K_ATTR /* NAME=EXTRACTOR, repeatable: appended to attrs */
} kind_t;

typedef struct choice {
  const char *name;
  int value;
} choice_t;

typedef struct spec {
  const char *name;
  int groups;
  kind_t kind;
  size_t offset;           /* of the field in cli_t */
  int flag_value;          /* K_FLAG: the value stored */
  const choice_t *choices; /* K_CHOICE: ended by {NULL} */
  const char *arg, *help;  /* arg: the argument's name in the help (NULL: none) */
} spec_t;

#define AT(field) offsetof(cli_t, field)

/* From the library's table of engines (bfh_engine_at), filled by set_defaults. */
static choice_t ENGINES[16];
static char engine_names[128]; /* "lsm|leveldb" */
static const choice_t PLACEMENTS[] = {{"similarity", BFH_PLACEMENT_SIMILARITY},
                                      {"positional", BFH_PLACEMENT_POSITIONAL},
                                      {"paper", BFH_PLACEMENT_PAPER},
                                      {0}};
static const choice_t COMPRESSIONS[] = {{"default", BFH_COMPRESSION_DEFAULT},
                                        {"none", BFH_COMPRESSION_NONE},
                                        {"snappy", BFH_COMPRESSION_SNAPPY},
                                        {0}};
static const choice_t FORMATS[] = {{"csv", CLI_KV_CSV}, {"tsv", CLI_KV_TSV}, {0}};
static const choice_t ORDERS[] = {{"seq", WORKLOAD_SEQUENTIAL},
                                  {"sequential", WORKLOAD_SEQUENTIAL},
                                  {"random", WORKLOAD_RANDOM},
                                  {0}};
static const choice_t KEY_FORMATS[] = {
    {"paper", WORKLOAD_FORMAT_PAPER}, {"fixed", WORKLOAD_FORMAT_FIXED}, {0}};

/* Every long option, one row each. */
static const spec_t SPECS[] = {
    {"engine", CLI_DB | CLI_RUN, K_CHOICE, AT(opt.engine), 0, ENGINES, engine_names,
     "engine of the database (default: the one that wrote DIR; lsm for a new one)"},
    {"bits", CLI_DB, K_U64, AT(opt.value_filter_bits), 0, NULL, "M",
     "bits per value filter, for a new database (default 2M)"},
    {"hashes", CLI_DB, K_U32, AT(opt.value_filter_hashes), 0, NULL, "K",
     "hash functions per value filter, for a new database (default 8 in the lean layout "
     "with maps, else 3)"},
    {"order", CLI_DB, K_U32, AT(opt.order), 0, NULL, "D", "order of the hierarchy (default 5)"},
    {"table-bytes", CLI_DB, K_SIZE, AT(opt.table_bytes), 0, NULL, "B",
     "target table file size (default 2MiB)"},
    {"memtable-bytes", CLI_DB, K_SIZE, AT(opt.memtable_bytes), 0, NULL, "B",
     "memtable size (default 4MiB; 64KiB..4GiB)"},
    {"no-value-filters", CLI_DB, K_FLAG, AT(opt.value_filters), 0, NULL, NULL,
     "engine only: no value filters (searches scan)"},
    {"leaves-on-disk", CLI_DB, K_FLAG, AT(opt.leaves_on_disk), BFH_LEAVES_ON_DISK, NULL, NULL,
     "read leaf filters from the table files on demand"},
    {"leaves-on-disk-whole", CLI_DB, K_FLAG, AT(opt.leaves_on_disk), BFH_LEAVES_ON_DISK_WHOLE, NULL,
     NULL, "read each leaf filter whole for every probe (the paper's code)"},
    {"placement", CLI_DB, K_CHOICE, AT(opt.placement), 0, PLACEMENTS, "similarity|positional|paper",
     "where the hierarchy puts a new leaf"},
    {"compression", CLI_DB | CLI_RUN, K_CHOICE, AT(opt.compression), 0, COMPRESSIONS,
     "default|none|snappy",
     "LevelDB, RocksDB: compression of the tables written (default: the engine's, snappy; "
     "bfh run: none for the paper's artifacts, as the authors' LevelDB)"},
    {"sync", CLI_DB, K_FLAG, AT(opt.sync), 1, NULL, NULL, "every write durable when it returns"},
    {"standalone-index", CLI_DB, K_FLAG, AT(opt.standalone_index), 1, NULL, NULL,
     "also keep a value||key index, read-write (once a database has one, every open must say so)"},
    {"cuckoo-index", CLI_DB, K_FLAG, AT(opt.cuckoo_index), 1, NULL, NULL,
     "keep the Cuckoo Index (search --method cuckoo; stats report its bytes)"},
    {"index-bits", CLI_DB, K_U32, AT(opt.index_bits_per_value), 0, NULL, "B",
     "lean index bits per value (default 11); 0: the paper's layout (search's default for "
     "leaves|hierarchy|sliced)"},
    {"no-block-maps", CLI_DB, K_FLAG, AT(opt.block_maps), 0, NULL, NULL,
     "lean index, own engine: no value-to-block maps (block filters in memory instead)"},
    {"attr", CLI_DB, K_ATTR, AT(attrs), 0, NULL, "NAME=EXTRACTOR",
     "declare an attribute, once per attribute: EXTRACTOR is json:PATH, csv:N, tsv:N, "
     "bytes:OFF:LEN or value, :int appended for an integer, then :range for ranges and "
     "prefixes through the filters (doc/query.md); or pair:A,B, a composite of two declared "
     "attributes that narrows an AND of equalities on both; stored when DIR is created, and "
     "a later open needs none"},
    {"column-family", CLI_DB, K_STR, AT(opt.column_family), 0, NULL, "NAME",
     "RocksDB engine: the column family to read, write and search (default: default)"},
    {"from", CLI_FROM, K_STR, AT(from), 0, NULL, "FILE",
     "read key,value records from FILE (- for stdin)"},
    {"format", CLI_FROM | CLI_SCAN, K_CHOICE, AT(format), 0, FORMATS, "csv|tsv",
     "record format (load: default from the file name's .tsv, else csv; scan: csv)"},
    {"header", CLI_FROM, K_FLAG, AT(header), 1, NULL, NULL, "skip the first line of the input"},
    {"batch", CLI_FROM | CLI_SYNTH, K_U64, AT(batch), 0, NULL, "N",
     "flush after every N puts, writing them into tables (default 0: once, at the end)"},
    {"synthetic", CLI_SYNTH, K_U64, AT(synthetic), 0, NULL, "N", "generate N entries"},
    {"num", CLI_SYNTH, K_U64, AT(synthetic), 0, NULL, "N", "same as --synthetic N"},
    {"domain", CLI_SYNTH, K_DOUBLE, AT(wl.domain_pct), 0, NULL, "PCT",
     "distinct values as a percentage of N (default 100)"},
    {"insert", CLI_SYNTH, K_CHOICE, AT(wl.order), 0, ORDERS, "seq|random",
     "insertion order (default seq)"},
    {"keys", CLI_SYNTH, K_CHOICE, AT(wl.format), 0, KEY_FORMATS, "paper|fixed",
     "key format (default paper)"},
    {"seed", CLI_SYNTH, K_U64, AT(wl.seed), 0, NULL, "S", "generator seed (default 42)"},
    {"method", CLI_SEARCH, K_METHOD, AT(method), 0, NULL, NULL, "search method (default auto)"},
    {"where", CLI_SEARCH, K_STR, AT(where), 0, NULL, "EXPR",
     "search by a predicate over the attributes instead of a VALUE (doc/query.md): "
     "NAME = 'text', NAME = 123, NAME IN ('a', 'b'), <, <=, >, >=, NAME BETWEEN 1 AND 9, "
     "NAME LIKE 'pre%', AND, OR, parentheses"},
    {"newest", CLI_SEARCH, K_U64, AT(newest), 0, NULL, "K",
     "with --where: the K matching keys written last, newest first (default 0: every key)"},
    {"count", CLI_SEARCH, K_FLAG, AT(count_only), 1, NULL, NULL,
     "print the number of keys found only"},
    {"json", CLI_JSON, K_FLAG, AT(json), 1, NULL, NULL, "one JSON document on stdout"},
    {"csv", CLI_JSON, K_FLAG, AT(csv), 1, NULL, NULL, "CSV on stdout: a header line, then rows"},
    {"read-only", CLI_READ, K_FLAG, AT(opt.read_only), 1, NULL, NULL,
     "read the database's files without its LOCK or any write, beside a live writer (the default)"},
    {"read-write", CLI_READ, K_FLAG, AT(read_write), 1, NULL, NULL,
     "open the database for writing (LevelDB, RocksDB: with their library; takes the LOCK)"},
    {"index-dir", CLI_READ, K_STR, AT(index_dir), 0, NULL, "DIR|none",
     "read-only LevelDB or RocksDB: where its filters are kept (default: under "
     "$XDG_CACHE_HOME/bfh); none: memory"},
    {"scale", CLI_RUN, K_STR, AT(run.scale), 0, NULL, "small|medium|paper|N",
     "database sizes (default small); N: N entries in the paper's geometry (e.g. 10M)"},
    {"out", CLI_RUN, K_STR, AT(run.out_dir), 0, NULL, "DIR", "results directory (default results)"},
    {"work", CLI_RUN, K_STR, AT(run.work_dir), 0, NULL, "DIR",
     "where the databases are built (default OUT/db, removed after)"},
    {"plots", CLI_RUN, K_STR, AT(run.plots_dir), 0, NULL, "DIR", "gnuplot scripts directory"},
    {"queries", CLI_RUN, K_INT, AT(run.queries), 0, NULL, "Q",
     "queries per point, 5..1000 (default 30)"},
    {"keep", CLI_RUN, K_FLAG, AT(run.keep_db), 1, NULL, NULL,
     "keep the databases (--work reuses them)"},
    {"no-plot", CLI_RUN, K_FLAG, AT(run.no_plot), 1, NULL, NULL, "write the CSV files only"},
    {"cold", CLI_RUN, K_FLAG, AT(run.cold), 1, NULL, NULL,
     "Table I and Fig. 8 also measured with the page cache evicted"},
    {"max-n", CLI_RUN, K_U64, AT(run.max_n), 0, NULL, "N",
     "skip database sizes above N (0: none; paper scale default 100M)"},
    {"min-n", CLI_RUN, K_U64, AT(run.min_n), 0, NULL, "N",
     "skip database sizes below N (--scale paper --min-n 500M: the 500M point alone)"},
    {"costs", CLI_RUN, K_STR, AT(run.costs), 0, NULL, "bfh|authors",
     "cost profile (default bfh; authors: see above)"},
    {"series", CLI_RUN, K_STR, AT(run.series), 0, NULL, "LIST",
     "fig8, fig11: only these series (comma-separated, as in the CSV's series column); ycsb: "
     "only these sources and methods (bare: the ingest alone)"},
    {"cache", CLI_RUN, K_STR, AT(run.cache), 0, NULL, "warm|cold|both",
     "fig8, fig11: only the warm or cold rows (default warm, both with --cold)"},
    {"cold-queries", CLI_RUN, K_INT, AT(run.cold_queries), 0, NULL, "N",
     "fig8: queries per cold point, 1..10 (default 10)"},
};
#define NSPECS (sizeof SPECS / sizeof SPECS[0])
_Static_assert(NSPECS <= CLI_MAX_OPTS, "cli_t.given holds a flag per option");

/* getopt_long's val for row i (above every short option). */
#define VAL(i) (256 + (int)(i))

static void engines_list(void) {
  const bfh_engine_info *e;
  engine_names[0] = 0;
  for (size_t i = 0; i + 1 < sizeof ENGINES / sizeof ENGINES[0] && (e = bfh_engine_at(i)); i++) {
    ENGINES[i] = (choice_t){e->name, (int)e->engine};
    snprintf(engine_names + strlen(engine_names), sizeof engine_names - strlen(engine_names),
             "%s%s", i ? "|" : "", e->name);
  }
}

static void set_defaults(cli_t *c) {
  engines_list();
  memset(c, 0, sizeof *c);
  bfh_options_init(&c->opt);
  workload_config_init(&c->wl);
  c->method = BFH_SEARCH_AUTO;
  c->format = -1;
  c->run.out_dir = "results";
  c->run.queries = 30;
}

static const uint64_t POW10[] = {1,      10,      100,      1000,      10000,
                                 100000, 1000000, 10000000, 100000000, 1000000000};

static int suffix_multiplier(const char *s, uint64_t *mul) {
  static const struct {
    const char *s;
    uint64_t mul;
  } SUFFIXES[] = {{"", 1},           {"k", 1000},       {"K", 1000},       {"M", 1000000},
                  {"G", 1000000000}, {"KiB", 1u << 10}, {"MiB", 1u << 20}, {"GiB", 1u << 30}};
  for (size_t i = 0; i < sizeof SUFFIXES / sizeof SUFFIXES[0]; i++)
    if (strcmp(s, SUFFIXES[i].s) == 0) {
      *mul = SUFFIXES[i].mul;
      return 0;
    }
  return -1;
}

int cli_args_parse_num(const char *s, uint64_t *out) {
  const char *p = s;
  uint64_t whole = 0, frac = 0, mul;
  size_t fdigits = 0;
  if (*p < '0' || *p > '9') return -1;
  for (; *p >= '0' && *p <= '9'; p++)
    if (__builtin_mul_overflow(whole, 10, &whole) ||
        __builtin_add_overflow(whole, *p - '0', &whole))
      return -1;
  if (*p == '.')
    for (p++; *p >= '0' && *p <= '9'; p++) {
      if (fdigits == 9) return -1; /* finer than any suffix can make whole */
      frac = frac * 10 + (uint64_t)(*p - '0');
      fdigits++;
    }
  if (suffix_multiplier(p, &mul) != 0) return -1;
  uint64_t v, fpart;
  if (__builtin_mul_overflow(whole, mul, &v)) return -1;
  /* frac / 10^fdigits * mul must be whole: (frac * mul) divisible by 10^fdigits. */
  if (__builtin_mul_overflow(frac, mul, &fpart) || fpart % POW10[fdigits] != 0) return -1;
  if (__builtin_add_overflow(v, fpart / POW10[fdigits], &v)) return -1;
  *out = v;
  return 0;
}

static int parse_double(const char *s, double *out) {
  errno = 0;
  char *end;
  *out = strtod(s, &end);
  return errno || end == s || *end ? -1 : 0;
}

/* "scan|leaves|...": every search method's name, from the library's table. */
static const char *method_names(char *buf, size_t n) {
  size_t at = 0;
  buf[0] = '\0';
  for (int m = 0; bfh_method_name((bfh_method)m) && at < n; m++)
    at += (size_t)snprintf(buf + at, n - at, "%s%s", m ? "|" : "", bfh_method_name((bfh_method)m));
  return buf;
}

/* Stores arg into sp's field. 0, or 2 after a usage error. */
static int store(const cli_cmd_t *cmd, const spec_t *sp, const char *arg, cli_t *c) {
  void *field = (char *)c + sp->offset;
  uint64_t num = 0;
  int is_num = sp->kind == K_U64 || sp->kind == K_U32 || sp->kind == K_SIZE || sp->kind == K_INT;
  if (is_num && cli_args_parse_num(arg, &num) != 0)
    return cli_args_usage_error(
        cmd, "--%s: '%s' is not a whole number (k/M/G, KiB/MiB/GiB suffixes)", sp->name, arg);
  if ((sp->kind == K_U32 || sp->kind == K_INT) && num > INT32_MAX)
    return cli_args_usage_error(cmd, "--%s: %s is out of range", sp->name, arg);
  switch (sp->kind) {
    case K_FLAG:
      *(int *)field = sp->flag_value;
      break;
    case K_U64:
      *(uint64_t *)field = num;
      break;
    case K_U32:
      *(uint32_t *)field = (uint32_t)num;
      break;
    case K_SIZE:
      *(size_t *)field = (size_t)num;
      break;
    case K_INT:
      *(int *)field = (int)num;
      break;
    case K_STR:
      *(const char **)field = arg;
      break;
    case K_DOUBLE:
      if (parse_double(arg, (double *)field) != 0)
        return cli_args_usage_error(cmd, "--%s: '%s' is not a number", sp->name, arg);
      break;
    case K_METHOD: {
      int m = 0;
      while (bfh_method_name((bfh_method)m) && strcmp(bfh_method_name((bfh_method)m), arg) != 0)
        m++;
      char names[160];
      if (!bfh_method_name((bfh_method)m))
        return cli_args_usage_error(cmd, "--%s: unknown value '%s' (one of %s)", sp->name, arg,
                                    method_names(names, sizeof names));
      *(int *)field = m;
      break;
    }
    case K_ATTR: {
      const char *eq = strchr(arg, '=');
      if (!eq || eq == arg || !eq[1])
        return cli_args_usage_error(cmd, "--%s: '%s' is not NAME=EXTRACTOR", sp->name, arg);
      if (c->nattrs == CLI_MAX_ATTRS)
        return cli_args_usage_error(cmd, "--%s: at most %d attributes", sp->name, CLI_MAX_ATTRS);
      if (strlen(arg) > CLI_MAX_ATTR_BYTES)
        return cli_args_usage_error(cmd, "--%s: a declaration of more than %d bytes", sp->name,
                                    CLI_MAX_ATTR_BYTES);
      char *copy = c->attr_text[c->nattrs];
      strcpy(copy, arg);
      copy[eq - arg] = '\0';
      c->attrs[c->nattrs++] = (bfh_attribute){copy, copy + (eq - arg) + 1};
      c->opt.attributes = c->attrs;
      c->opt.attribute_count = c->nattrs;
      break;
    }
    case K_CHOICE: {
      const choice_t *ch = sp->choices;
      while (ch->name && strcmp(ch->name, arg) != 0) ch++;
      if (!ch->name)
        return cli_args_usage_error(cmd, "--%s: unknown value '%s' (one of %s)", sp->name, arg,
                                    sp->arg);
      *(int *)field = ch->value;
      break;
    }
  }
  return 0;
}

/* The long options of cmd's groups, for getopt_long; n rows then a zero row. */
static void long_options(const cli_cmd_t *cmd, struct option *lo) {
  size_t n = 0;
  for (size_t i = 0; i < NSPECS; i++)
    if (SPECS[i].groups & cmd->groups)
      lo[n++] = (struct option){
          SPECS[i].name, SPECS[i].kind == K_FLAG ? no_argument : required_argument, NULL, VAL(i)};
  lo[n++] = (struct option){"help", no_argument, NULL, 'h'};
  lo[n] = (struct option){0, 0, 0, 0};
}

/* The option argv[optind - 1] that getopt stopped at, for a message. */
static const char *offending(char **argv, int opt) {
  static char name[64];
  if (opt >= 256) {
    snprintf(name, sizeof name, "--%s", SPECS[opt - 256].name);
    return name;
  }
  return argv[optind - 1];
}

int cli_args_parse(const cli_cmd_t *cmd, int argc, char **argv, cli_t *c) {
  set_defaults(c);
  c->cmd = cmd;
  struct option lo[NSPECS + 2];
  long_options(cmd, lo);
  opterr = 0;
  optind = 1;
  int ch, rc;
  while ((ch = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
    if (ch == 'h') {
      cli_args_help(cmd, stdout);
      return 0;
    }
    if (ch == ':')
      return cli_args_usage_error(cmd, "option '%s' needs an argument", offending(argv, optopt));
    if (ch == '?') return cli_args_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
    c->given[ch - 256] = 1;
    if ((rc = store(cmd, &SPECS[ch - 256], optarg, c)) != 0) return rc;
  }
  for (int i = optind; i < argc; i++) {
    if (c->npos == cmd->max_pos)
      return cli_args_usage_error(cmd, "too many arguments at '%s'", argv[i]);
    c->pos[c->npos++] = argv[i];
  }
  if (c->npos < cmd->min_pos) return cli_args_usage_error(cmd, "%s needs %s", cmd->name, cmd->args);
  if (c->json && c->csv) return cli_args_usage_error(cmd, "--json and --csv exclude each other");
  c->wl.n = c->synthetic;
  /* Without --engine, a database that exists is opened with the engine that wrote it. */
  bfh_engine found;
  if ((cmd->groups & CLI_DB) && !cli_args_given(c, "engine") &&
      bfh_engine_detect(c->pos[0], &found) == BFH_OK)
    c->opt.engine = found;
  return -1;
}

int cli_args_given(const cli_t *c, const char *name) {
  for (size_t i = 0; i < NSPECS; i++)
    if (strcmp(SPECS[i].name, name) == 0) return c->given[i];
  return 0;
}

void cli_args_help(const cli_cmd_t *cmd, FILE *out) {
  fprintf(out, "usage: bfh %s %s%s\n  %s\n", cmd->name, cmd->args, cmd->groups ? " [options]" : "",
          cmd->summary);
  if (cmd->help) fprintf(out, "\n%s", cmd->help);
  fprintf(out, "\noptions:\n");
  for (size_t i = 0; i < NSPECS; i++) {
    const spec_t *sp = &SPECS[i];
    if (!(sp->groups & cmd->groups)) continue;
    char left[80], names[160];
    const char *arg = sp->kind == K_METHOD ? method_names(names, sizeof names) : sp->arg;
    snprintf(left, sizeof left, "--%s%s%s", sp->name, arg ? " " : "", arg ? arg : "");
    if (strlen(left) > 26)
      fprintf(out, "  %s\n  %-26s %s\n", left, "", sp->help); /* a long choice list */
    else
      fprintf(out, "  %-26s %s\n", left, sp->help);
  }
  fprintf(out, "  %-26s %s\n", "-h, --help", "this help");
  if (cmd->groups & (CLI_DB | CLI_SYNTH | CLI_FROM | CLI_RUN))
    fprintf(out, "Numbers take k/M/G (powers of 10) or KiB/MiB/GiB suffixes.\n");
}

int cli_args_usage_error(const cli_cmd_t *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "bfh %s: ", cmd->name);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\nTry 'bfh %s --help'.\n", cmd->name);
  return 2;
}
