/* Validation of many keys at once, as the stand-alone index's searches make it: each key's
 * latest version is read and tested (engine_key_passes, on the newest state), the gets of
 * ENGINE_GET_AHEAD_KEYS keys at a time read ahead together first (engine_get_ahead), so an
 * engine that can batch them makes one batch of reads instead of one read a key.
 */
#ifndef BFH_LSM_HOOKS_ENGINES_VALIDATE_H
#define BFH_LSM_HOOKS_ENGINES_VALIDATE_H

#include <stddef.h>
#include <stdint.h>

#include "bfh.h"
#include "lsm_hooks/engines/engine.h"

/* What a validation counted. */
typedef struct engine_validated {
  uint64_t candidates; /* keys validated */
  uint64_t results;    /* keys that passed, each reported */
  uint64_t ns;         /* the validation's time, without the caller's (fn) */
} engine_validated_t;

/* Validates keys[0, n), in that order, by test against their latest versions, reporting each
   that passes to fn (may be NULL) until it returns nonzero; adds to *v. BFH_OK, or the first
   failing validation's status (engine_key_passes). */
int engine_validate_keys(engine_t *e, const key_ref_t *keys, size_t n,
                         const engine_value_test_t *test, bfh_match_fn fn, void *arg,
                         engine_validated_t *v, err_t *err);

#endif
