/* A stock LevelDB program that owns a database while the CLI test reads it: opens DIR with
 * LevelDB's C API (a small write buffer, so that the entries end up in tables and in the log),
 * writes N keys "k<i>" with the value "v<i mod 10>" (synced), prints "ready", and keeps the
 * database open (its LOCK held) until its standard input closes. Before the last TAIL keys it
 * compacts the whole range (CompactRange waits for it): the tables then sit in one level with
 * nothing left for a background compaction to do, and the tail stays in the log (it is far
 * below the write buffer), so that the directory does not change while the test reads it.
 * usage: ldb_hold DIR N
 */
#include <leveldb/c.h>
#include <stdio.h>
#include <stdlib.h>

#define TAIL 500 /* keys left in the log: about 10 KB, far below the 64 KiB write buffer */

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: ldb_hold DIR N\n");
    return 2;
  }
  long n = atol(argv[2]);
  leveldb_options_t *o = leveldb_options_create();
  leveldb_options_set_create_if_missing(o, 1);
  leveldb_options_set_write_buffer_size(o, 64 << 10);
  char *err = NULL;
  leveldb_t *db = leveldb_open(o, argv[1], &err);
  if (err) {
    fprintf(stderr, "ldb_hold: open %s: %s\n", argv[1], err);
    return 1;
  }
  leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
  long tail = n / 10 < TAIL ? n / 10 : TAIL;
  for (long i = 0; i < n && !err; i++) {
    if (i == n - tail) leveldb_compact_range(db, NULL, 0, NULL, 0);
    char k[32], v[32];
    int kl = snprintf(k, sizeof k, "k%ld", i), vl = snprintf(v, sizeof v, "v%ld", i % 10);
    leveldb_writeoptions_set_sync(wo, i + 1 == n);
    leveldb_put(db, wo, k, (size_t)kl, v, (size_t)vl, &err);
  }
  if (err) {
    fprintf(stderr, "ldb_hold: put: %s\n", err);
    return 1;
  }
  printf("ready\n");
  fflush(stdout);
  while (getchar() != EOF) {
  }
  leveldb_writeoptions_destroy(wo);
  leveldb_close(db);
  leveldb_options_destroy(o);
  return 0;
}
