/* Validation of many keys at once; see validate.h. */
#include "lsm_hooks/engines/validate.h"

#include "util/clock.h"

int engine_validate_keys(engine_t *e, const key_ref_t *keys, size_t n,
                         const engine_value_test_t *test, bfh_match_fn fn, void *arg,
                         engine_validated_t *v, err_t *err) {
  int rc = BFH_OK, stop = 0;
  for (size_t at = 0; at < n && rc == BFH_OK && !stop; at += ENGINE_GET_AHEAD_KEYS) {
    const key_ref_t *k = keys + at;
    size_t m = n - at < ENGINE_GET_AHEAD_KEYS ? n - at : ENGINE_GET_AHEAD_KEYS;
    uint64_t t0 = clock_now_ns();
    engine_get_ahead(e, k, m);
    v->ns += clock_now_ns() - t0;
    for (size_t i = 0; i < m && rc == BFH_OK && !stop; i++) {
      v->candidates++;
      t0 = clock_now_ns();
      int holds = engine_key_passes(e, NULL, k[i].bytes, k[i].len, test, err);
      v->ns += clock_now_ns() - t0;
      if (holds < 0) rc = holds;
      if (holds <= 0) continue;
      v->results++;
      stop = fn && fn(arg, k[i].bytes, k[i].len) != 0;
    }
  }
  return rc;
}
