/* bfh: the command-line tool. One subcommand per verb (load, put, get, delete, search, scan,
 * stats, tables, check, repair) for ad-hoc use of a database, and `bfh run` for the paper's
 * tables and figures (the drivers of experiments/drivers.h). This file is the table of
 * subcommands and the dispatch; each group of subcommands has its file (cmd.h). Every
 * subcommand has its own --help (cli_args.c holds the options); doc/bfh.1 is the manual.
 *
 * Output: results on stdout, one per line, in the escaped form of cli_kv.h; everything else
 * (statistics, progress, summaries, errors) on stderr, or with --json one object on stdout.
 * Exit status: 0 success (search, get: found), 1 nothing found, 2 error or bad usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "tools/bfh/cli_args.h"
#include "tools/bfh/cmd.h"

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
    "Prints every key whose value is VALUE, or with --where EXPR every key whose value\n"
    "satisfies the predicate EXPR over the declared attributes (doc/query.md), one per line,\n"
    "escaped as `bfh scan` writes keys (\\\\ \\n \\t \\r \\0 \\xHH; a leading # as \\x23).\n"
    "Statistics go to stderr; with --json, one object on stdout: {\"value\" (or \"where\"),\n"
    "\"method\", \"keys\": [...], \"method_used\",\n"
    "\"count\", \"seconds\", \"stats\": {the bfh_search_stats fields}}, strings in the\n"
    "escaped form; with --csv, a line \"key\" then one key per line as a CSV field.\n"
    "Exit status: 0 found, 1 nothing found, 2 error.\n"
    "It reads the database read-only, as tables, get, scan and stats do: bfh's own readers of\n"
    "CURRENT, the MANIFEST, the tables and the logs, without the LOCK and without writing into\n"
    "the directory, so a database that a writer holds open can be searched (the own engine's,\n"
    "and one that LevelDB or RocksDB holds, without them; their filters are cached in\n"
    "--index-dir). --read-write opens it for writing.\n";

static const char RUN_HELP[] =
    "Experiments: fig6 table1 table2 fig7 fig8 fig9 fig10 fig11 fig12 fig13 table3, beyond\n"
    "(time vs N with AUTO's block path), tradeoff (write cost vs search time against a\n"
    "stand-alone index, on the --engine given),\n"
    "memory (index memory vs search time: the paper's layout, the lean layout, the Cuckoo\n"
    "Index, the stand-alone index; run only when named), attributes (ingest and index memory\n"
    "with three JSON attributes against the whole value), ycsb (YCSB's workloads recast for\n"
    "value search on every engine, method and record source), shards (scale-out simulated:\n"
    "1 to 16 shards and per-shard summaries), ranges (a table's range filters against\n"
    "Grafite's bound) (these four run only when named), or all (then REPORT.md, the paper's\n"
    "numbers and ours side by side, commit and command line included); report draws every\n"
    "plot and writes REPORT.md from the CSVs already in --out, measuring nothing (a CSV\n"
    "named <artifact>-<anything>.csv, e.g. a kept fig9-medium.csv, with its artifact's plot).\n"
    "--costs authors (own engine) runs the paper's searches with the authors' implementation\n"
    "costs: table scans that format every entry as a text line and parse it back, leaf filters\n"
    "loaded whole from a file each and deserialised bit by bit, key lookups timed as the first\n"
    "get after a reopen; at most 10 queries per point; with --cold (Table I, fig8) the\n"
    "database's files, leaf files included, evicted before each cold query. Every CSV has a\n"
    "costs column, and a run replaces only its own profile's rows, so runs with both\n"
    "profiles share one CSV and plot.\n"
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
    {"search", cmd_search, CLI_DB | CLI_READ | CLI_SEARCH | CLI_JSON, 1, 2,
     "DIR (VALUE | --where EXPR)", "print the keys whose value is VALUE, or satisfies EXPR",
     SEARCH_HELP},
    {"scan", cmd_scan, CLI_DB | CLI_READ | CLI_SCAN, 1, 1, "DIR",
     "print every live key,value in key order, in the form load --from reads", NULL},
    {"stats", cmd_stats, CLI_DB | CLI_READ | CLI_JSON, 1, 1, "DIR",
     "sizes of the database and its filters", NULL},
    {"tables", cmd_tables, CLI_DB | CLI_READ | CLI_JSON, 1, 1, "DIR",
     "per live table: number, level, entries, bytes, key range, value filter fill and FPR", NULL},
    {"index", cmd_index, CLI_DB | CLI_READ | CLI_JSON, 2, 3,
     "list DIR | add DIR NAME=EXTRACTOR | drop DIR NAME",
     "the attributes DIR indexes; add one (its items built into every table) or drop one", NULL},
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
  const cli_cmd_t *cmd = find_command(name);
  if (!cmd) {
    fprintf(stderr, "bfh: unknown command '%s'\nTry 'bfh --help'.\n", name);
    return EXIT_ERROR;
  }
  /* The command line as typed, quoted where a shell would need it. */
  size_t cap = 1;
  for (int i = 0; i < argc; i++) cap += strlen(i == 0 ? "bfh" : argv[i]) + 3; /* " 'a'" */
  char *cmdline = malloc(cap);
  if (!cmdline) {
    fprintf(stderr, "bfh: out of memory\n");
    return EXIT_ERROR;
  }
  size_t len = 0;
  cmdline[0] = '\0';
  for (int i = 0; i < argc; i++) {
    const char *a = i == 0 ? "bfh" : argv[i];
    int quote = *a == '\0' || strpbrk(a, " \t\n'\"\\$`*?[]{}()<>|&;#~") != NULL;
    len += (size_t)sprintf(cmdline + len, "%s%s%s%s", i ? " " : "", quote ? "'" : "", a,
                           quote ? "'" : "");
  }
  static cli_t c;
  int rc = cli_args_parse(cmd, argc - 1, argv + 1, &c);
  c.cmdline = cmdline;
  rc = rc >= 0 ? rc : cmd->run(&c);
  free(cmdline);
  return rc;
}
