/* The subcommands of bfh, one file per group; main.c's table names them, with their options
 * (cli_args.h) and help. Each takes the parsed command line and returns the exit status
 * (EXIT_FOUND, EXIT_NONE, EXIT_ERROR).
 */
#ifndef BFH_TOOLS_BFH_CMD_H
#define BFH_TOOLS_BFH_CMD_H

#include "tools/bfh/cli_args.h"

/* cmd_kv.c: entries by key, and every entry in key order. */
int cmd_load(cli_t *c);
int cmd_put(cli_t *c);
int cmd_get(cli_t *c);
int cmd_delete(cli_t *c);
int cmd_scan(cli_t *c);

/* cmd_search.c: a search by value, and the sizes of a database and its filters. */
int cmd_search(cli_t *c);
int cmd_stats(cli_t *c);

/* cmd_inspect.c: the live tables, a check of every checksum, repair. */
int cmd_tables(cli_t *c);
int cmd_index(cli_t *c); /* index list DIR: the declared attributes */
int cmd_check(cli_t *c);
int cmd_repair(cli_t *c);

/* cmd_run.c: the paper's tables and figures (the experiments' harness). */
int cmd_run(cli_t *c);

#endif
