/* The options of the bfh command: one table of every long option (name, argument, the
 * field it sets, help), each option in one or more groups; a subcommand accepts the groups
 * it names, parsed with getopt_long, and its --help lists exactly those options. Adding an
 * option is one row of the table in cli_args.c.
 */
#ifndef BFH_TOOLS_BFH_CLI_ARGS_H
#define BFH_TOOLS_BFH_CLI_ARGS_H

#include <stdint.h>
#include <stdio.h>

#include "bfh.h"
#include "workloads/workload.h"

/* The exit statuses of every command: 0 success (search, get: found), 1 nothing found, 2 error
   or bad usage. */
enum { EXIT_FOUND = 0, EXIT_NONE = 1, EXIT_ERROR = 2 };

/* Option groups (bit flags). */
enum {
  CLI_DB = 1 << 0,     /* how the database is opened */
  CLI_FROM = 1 << 1,   /* load --from */
  CLI_SYNTH = 1 << 2,  /* load --synthetic */
  CLI_SEARCH = 1 << 3, /* search's method and count */
  CLI_JSON = 1 << 4,   /* machine-readable output */
  CLI_SCAN = 1 << 5,   /* scan's output format */
  CLI_RUN = 1 << 6,    /* bfh run */
  CLI_READ = 1 << 7    /* commands that only read: how a LevelDB database is read */
};

#define CLI_MAX_POS 4
#define CLI_MAX_OPTS 64
#define CLI_MAX_ATTRS 64       /* --attr given at most this many times */
#define CLI_MAX_ATTR_BYTES 512 /* the bytes of one NAME=EXTRACTOR */

/* bfh run's options as given (tools/bfh/cmd_run.c makes the experiments' context of them;
   scale and costs are names it checks against the experiments' tables, NULL: the default). */
typedef struct cli_run {
  const char *scale, *costs;
  const char *out_dir, *work_dir, *plots_dir;
  const char *series, *cache; /* Fig. 8 and 11's rows: series names, warm|cold|both */
  int queries, keep_db, no_plot, cold, cold_queries;
  uint64_t max_n, min_n;
} cli_run_t;

struct cli_cmd;

/* Everything the subcommands accept. */
typedef struct cli {
  const struct cli_cmd *cmd; /* the subcommand parsed, for its messages */
  const char *cmdline;       /* the command line as typed (quoted where needed), for REPORT.md */
  bfh_options opt;
  workload_config_t wl;
  int method; /* a bfh_method */
  int count_only;
  const char *where; /* search --where EXPR: a search by a predicate; NULL: by VALUE */
  uint64_t newest;   /* search --newest K (0: every key) */
  int json;
  int csv;
  int read_write;        /* LevelDB engine: open it with LevelDB even to read */
  const char *index_dir; /* read-only mode: --index-dir DIR|none; NULL: the default */
  const char *from;      /* load --from: a file, or "-" for stdin */
  int format;            /* a cli_kv_format_t, or -1: from the file name */
  int header;            /* load: skip the first line */
  uint64_t batch;        /* load: puts between flushes (0: one flush at the end) */
  uint64_t synthetic;    /* load --synthetic N */
  cli_run_t run;
  bfh_attribute attrs[CLI_MAX_ATTRS]; /* --attr NAME=EXTRACTOR, in order (opt.attributes) */
  char attr_text[CLI_MAX_ATTRS][CLI_MAX_ATTR_BYTES + 1]; /* their text, split at the '=' */
  size_t nattrs;
  unsigned char given[CLI_MAX_OPTS]; /* per row of the option table: set on the command line */
  const char *pos[CLI_MAX_POS];
  int npos;
} cli_t;

/* A subcommand: its name, the groups of options it takes, its positional arguments. */
typedef struct cli_cmd {
  const char *name;
  int (*run)(cli_t *c);
  int groups;
  int min_pos, max_pos;
  const char *args;    /* "DIR KEY VALUE" */
  const char *summary; /* one line */
  const char *help;    /* more lines for its --help, or NULL */
} cli_cmd_t;

/* Fills c with the defaults, then parses argv[0..argc) (argv[0] is the subcommand's name).
   Returns -1 when the command may run, or the exit status to leave with: 0 after --help
   (printed on stdout), 2 after a usage error (printed on stderr). */
int cli_args_parse(const cli_cmd_t *cmd, int argc, char **argv, cli_t *c);
/* Was the option called name (without dashes) on the command line? */
int cli_args_given(const cli_t *c, const char *name);
/* Prints the usage of cmd with its options to out. */
void cli_args_help(const cli_cmd_t *cmd, FILE *out);
/* Reports a usage error of cmd on stderr (with a hint to its --help) and returns 2. */
int cli_args_usage_error(const cli_cmd_t *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Parses a whole number: digits with an optional fraction and a k/M/G (powers of 10) or
   KiB/MiB/GiB suffix, as long as the result is whole ("1.5k" yes, "1.5" no). 0 or -1. */
int cli_args_parse_num(const char *s, uint64_t *out);

#endif
