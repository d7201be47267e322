/* A bfh program that owns an own-engine database while the CLI test reads it: opens DIR
 * read-write, writes N keys "k<i>" with the value "v<i mod 10>", flushes all but the last TAIL
 * keys into a table (one table: no compaction is due) and leaves the tail in the log, prints
 * "ready", and keeps the database open (its LOCK held) until its standard input closes.
 * usage: lsm_hold DIR N
 */
#include <stdio.h>
#include <stdlib.h>

#include "bfh.h"

#define TAIL 500 /* keys left in the log */

static int fail(const char *what, bfh_db *db, int rc) {
  fprintf(stderr, "lsm_hold: %s: %s: %s\n", what, bfh_strerror(rc), bfh_last_error(db));
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: lsm_hold DIR N\n");
    return 2;
  }
  long n = atol(argv[2]);
  long tail = n / 10 < TAIL ? n / 10 : TAIL;
  bfh_db *db = NULL;
  int rc = bfh_open(argv[1], NULL, &db);
  if (rc != BFH_OK) return fail("open", NULL, rc);
  for (long i = 0; i < n && rc == BFH_OK; i++) {
    if (i == n - tail && (rc = bfh_flush(db)) != BFH_OK) return fail("flush", db, rc);
    char k[32], v[32];
    int kl = snprintf(k, sizeof k, "k%ld", i), vl = snprintf(v, sizeof v, "v%ld", i % 10);
    rc = bfh_put(db, k, (size_t)kl, v, (size_t)vl);
  }
  if (rc != BFH_OK) return fail("put", db, rc);
  printf("ready\n");
  fflush(stdout);
  while (getchar() != EOF) {
  }
  rc = bfh_close(db);
  return rc == BFH_OK ? 0 : fail("close", NULL, rc);
}
