/* What the subcommands of bfh share (tools/bfh/cmd_*.c): the exit statuses, opening the
 * database a command names (read-only where the engine can and the command only reads), and
 * reporting a failed call of the library. Every message starts "bfh COMMAND:".
 */
#ifndef BFH_TOOLS_BFH_CLI_DB_H
#define BFH_TOOLS_BFH_CLI_DB_H

#include <time.h>

#include "bfh.h"
#include "tools/bfh/cli_args.h"

/* Prints "bfh COMMAND: what: status: last error" on stderr, closes db (may be NULL) and
   returns EXIT_ERROR. */
int cli_db_fail(const cli_t *c, bfh_db *db, const char *what, int rc);
/* Closes db; status, or EXIT_ERROR after a message if the close failed. */
int cli_db_close(const cli_t *c, bfh_db *db, int status);
/* Commands other than load and put never create a database: dir must exist. 0, or
   EXIT_ERROR after a message. */
int cli_db_require(const cli_t *c, const char *dir);
/* Opens dir for c's command (*db: a new handle, close with cli_db_close); an existing
   database keeps its stored m and k unless given on the command line (read-only: those its
   filter cache was made with, else the database's). Only create makes a database where there
   is none. A command that only reads (CLI_READ) opens the database read-only where its engine
   can (the own engine, LevelDB, RocksDB) unless --read-write, and says so on stderr. 0, or EXIT_ERROR after a message. */
int cli_db_open(cli_t *c, const char *dir, int create, bfh_db **db);

/* Seconds, monotonic: for the times the commands print. */
static inline double cli_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
