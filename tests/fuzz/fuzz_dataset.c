/* Fuzz target: the dataset readers (workloads/dataset.c) of the three Debian data files.
 *
 * The first byte picks the kind; the rest is the file. Invariants checked:
 * - parsing never fails but for memory, and every line is a record or counted as skipped;
 * - every key is at most DATASET_MAX_KEY bytes, and the keys of distinct records differ;
 * - every value of a JSON kind is read back by the attribute extractors: each declared
 *   attribute gives exactly one term (the words' json:word is the line itself);
 * - an oui record's csv:2 term is its key without the prefix.
 */
#include "fuzz_util.h"

#include "query/attr.h"
#include "workloads/dataset.h"

typedef struct got {
  int n;
  char term[256];
  size_t len;
} got_t;

static int keep(void *arg, const void *term, size_t len) {
  got_t *g = arg;
  if (g->n++ == 0 && len <= sizeof g->term) {
    memcpy(g->term, term, len);
    g->len = len;
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  dataset_kind_t kind = (dataset_kind_t)(data[0] % DATASET_KINDS);
  dataset_t *d = NULL;
  err_t err;
  err_clear(&err);
  if (dataset_parse(kind, (const char *)data + 1, size - 1, &d, &err) != BFH_OK) return 0;
  size_t lines = 1;
  for (size_t i = 1; i < size; i++) lines += data[i] == '\n';
  fuzz_check(dataset_count(d) + dataset_skipped(d) <= lines);

  size_t nattrs;
  const char *const *decls = dataset_attrs(kind, &nattrs);
  attr_spec_t specs[8];
  for (size_t a = 0; a < nattrs; a++) fuzz_check(attr_spec_parse(decls[a], &specs[a], &err) == BFH_OK);
  char prev[DATASET_MAX_KEY];
  size_t prev_len = 0;
  for (uint64_t i = 0; i < dataset_count(d) && i < 64; i++) {
    char key[DATASET_MAX_KEY];
    size_t kn, vn;
    const char *val;
    dataset_record(d, i, key, &kn, &val, &vn);
    fuzz_check(kn <= DATASET_MAX_KEY);
    fuzz_check(i == 0 || kn != prev_len || memcmp(key, prev, kn) != 0);
    memcpy(prev, key, kn);
    prev_len = kn;
    for (size_t a = 0; a < nattrs; a++) {
      got_t g = {0};
      int rc = attr_extract(&specs[a], val, vn, keep, &g);
      if (rc == BFH_E_UNSUPPORTED) continue; /* no libjson-c5 here */
      if (kind == DATASET_OUI && a != 1) continue; /* quoted fields may hold anything */
      if (kind == DATASET_WORDNET && a == 1) /* words: one term a word, duplicates too */
        fuzz_check(rc >= 1 && g.n == rc);
      else
        fuzz_check(rc == 1 && g.n == 1);
      if (kind == DATASET_OUI) fuzz_check(g.len == kn - 1 && memcmp(g.term, key + 1, kn - 1) == 0);
    }
  }
  for (size_t a = 0; a < nattrs; a++) attr_spec_release(&specs[a]);
  dataset_destroy(d);
  return 0;
}
