/* A search by predicate (doc/api.md "Search by a predicate"): declares two attributes of
   JSON values, writes, and runs one prepared predicate by every method that answers
   predicates; they must agree. Exit status 0 when they do.
     cc examples/query.c $(pkg-config --cflags --libs bfh) -o query && ./query /tmp/query-db */
#include <bfh.h>
#include <stdio.h>
#include <string.h>

static int print_key(void *arg, const void *key, size_t len) {
  if (*(int *)arg) printf("  %.*s\n", (int)len, (const char *)key);
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s DIR (a new database is created there)\n", argv[0]);
    return 2;
  }
  static const bfh_attribute attrs[2] = {{"city", "json:city"}, {"age", "json:age:int"}};
  bfh_options opt;
  bfh_options_init(&opt);
  opt.create_if_missing = 1;
  opt.attributes = attrs;
  opt.attribute_count = 2;
  bfh_db *db;
  if (bfh_open(argv[1], &opt, &db) != BFH_OK) {
    fprintf(stderr, "open: %s\n", bfh_last_error(NULL));
    return 1;
  }
  static const char *cities[3] = {"Lyon", "Warsaw", "Porto"};
  for (int i = 0; i < 300; i++) {
    char key[16], val[64];
    snprintf(key, sizeof key, "user%03d", i);
    snprintf(val, sizeof val, "{\"city\":\"%s\",\"age\":%d}", cities[i % 3], 20 + i % 40);
    if (bfh_put(db, key, strlen(key), val, strlen(val)) != BFH_OK) return 1;
    if (i == 150 && bfh_flush(db) != BFH_OK) return 1; /* some in a table, some in memory */
  }
  bfh_prepared *q;
  const char *where = "city = 'Lyon' AND age IN (30, 31)";
  if (bfh_query_prepare(db, where, &q) != BFH_OK) {
    fprintf(stderr, "prepare: %s\n", bfh_last_error(db));
    return 1;
  }
  static const bfh_method methods[5] = {BFH_SEARCH_SCAN, BFH_SEARCH_LEAVES, BFH_SEARCH_HIERARCHY,
                                        BFH_SEARCH_SLICED, BFH_SEARCH_AUTO};
  unsigned long long first = 0;
  int status = 0;
  for (int m = 0; m < 5; m++) {
    int print = m == 0;
    bfh_search_stats st;
    if (bfh_query_run(q, methods[m], 0, print_key, &print, &st) != BFH_OK) {
      fprintf(stderr, "%s: %s\n", bfh_method_name(methods[m]), bfh_last_error(db));
      status = 1;
      continue;
    }
    printf("%s: %llu keys, %llu of %u tables read\n", bfh_method_name(methods[m]),
           (unsigned long long)st.results, (unsigned long long)st.tables_scanned, st.tables_live);
    if (m == 0) first = st.results;
    if (st.results != first || first == 0) status = 1;
  }
  bfh_query_free(q);
  if (bfh_close(db) != BFH_OK) status = 1;
  return status;
}
