/* An outside program built only from what bfh installs (see .ci/run): the header with bfh.pc,
   or with the CMake package (tests/install/cmake/), against libbfh.so and against libbfh.a:
   it writes, searches by value with every method, and checks the answers. */
#include <bfh.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int count(void *arg, const void *key, size_t len) {
  (void)key;
  (void)len;
  ++*(int *)arg;
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  /* The installed header and library are one release. */
  char header[32];
  snprintf(header, sizeof header, "%d.%d.%d", BFH_VERSION_MAJOR, BFH_VERSION_MINOR,
           BFH_VERSION_PATCH);
  if (strcmp(header, bfh_version()) != 0) {
    fprintf(stderr, "bfh.h is %s, libbfh %s\n", header, bfh_version());
    return 1;
  }
  bfh_options opt;
  bfh_options_init(&opt);
  bfh_db *db;
  if (bfh_open(argv[1], &opt, &db) != BFH_OK) {
    fprintf(stderr, "open: %s\n", bfh_last_error(NULL));
    return 1;
  }
  char key[32];
  for (int i = 0; i < 1000; i++) {
    int n = snprintf(key, sizeof key, "Key%d", i);
    if (bfh_put(db, key, (size_t)n, i % 10 ? "other" : "Value", 5) != BFH_OK) return 1;
  }
  if (bfh_flush(db) != BFH_OK) return 1;
  int failed = 0;
  for (int m = BFH_SEARCH_SCAN; m <= BFH_SEARCH_AUTO; m++) {
    int found = 0;
    int rc = bfh_search(db, "Value", 5, (bfh_method)m, count, &found, NULL);
    printf("method %d: rc %d, %d keys\n", m, rc, found);
    failed |= rc != BFH_OK || found != 100;
  }
  bfh_close(db);
  printf("install check: %s\n", failed ? "FAILED" : "ok");
  return failed;
}
