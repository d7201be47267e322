/* Internal keys: what the memtable, the log replay, the tables and the iterators order.
 *
 *   internal key = user_key bytes | fixed64(seq << 8 | type)      (8 trailing bytes, LE)
 *
 * type is LSM_TYPE_VALUE (1) or LSM_TYPE_DELETION (0) (lsm/table_hook.h); seq < 2^56.
 * Order: user key bytewise ascending, then the packed (seq << 8 | type) descending, so the
 * newest version of a key comes first. A lookup for user key k as of sequence s seeks to
 * internal_key(k, s, LSM_TYPE_VALUE): the first entry at or after it with user key k is
 * the newest version with seq <= s.
 */
#ifndef BFH_LSM_INTERNAL_KEY_H
#define BFH_LSM_INTERNAL_KEY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lsm/table_hook.h"
#include "util/coding.h"

#define LSM_MAX_SEQ ((((uint64_t)1) << 56) - 1)
/* A table's largest sequence number when it was not recorded (lsm_file_meta_t.max_seq). */
#define LSM_SEQ_UNKNOWN UINT64_MAX
#define INTERNAL_KEY_TAG_BYTES 8

/* The result of a point lookup in a memtable or a table. */
enum { LSM_LOOKUP_ABSENT = 0, LSM_LOOKUP_VALUE = 1, LSM_LOOKUP_DELETED = 2 };
typedef struct lsm_lookup {
  int state;       /* LSM_LOOKUP_* */
  const void *val; /* LSM_LOOKUP_VALUE: borrowed from the memtable/table (see there) */
  size_t val_len;
  uint64_t seq; /* seq of the entry found (VALUE or DELETED) */
} lsm_lookup_t;

static inline uint64_t internal_key_tag(uint64_t seq, int type) {
  return (seq << 8) | (uint64_t)(type & 0xff);
}

/* Writes key | tag into dst (klen + 8 bytes); returns klen + 8. */
static inline size_t internal_key_encode(uint8_t *dst, const void *key, size_t klen, uint64_t seq,
                                         int type) {
  if (klen) memcpy(dst, key, klen);
  encode_fixed64(dst + klen, internal_key_tag(seq, type));
  return klen + INTERNAL_KEY_TAG_BYTES;
}

typedef struct internal_key_parts {
  const uint8_t *user_key; /* borrowed from the encoded key */
  size_t user_len;
  uint64_t seq;
  int type;
} internal_key_parts_t;

/* Splits an encoded internal key. Returns 0, or -1 if it is shorter than 8 bytes or its
   type is neither LSM_TYPE_VALUE nor LSM_TYPE_DELETION. */
static inline int internal_key_parse(const void *ikey, size_t len, internal_key_parts_t *out) {
  if (len < INTERNAL_KEY_TAG_BYTES) return -1;
  const uint8_t *p = (const uint8_t *)ikey;
  uint64_t tag = decode_fixed64(p + len - INTERNAL_KEY_TAG_BYTES);
  int type = (int)(tag & 0xff);
  if (type != LSM_TYPE_VALUE && type != LSM_TYPE_DELETION) return -1;
  out->user_key = p;
  out->user_len = len - INTERNAL_KEY_TAG_BYTES;
  out->seq = tag >> 8;
  out->type = type;
  return 0;
}

/* Bytewise comparison of two byte strings (memcmp, then shorter first). */
static inline int bytewise_compare(const void *a, size_t alen, const void *b, size_t blen) {
  size_t n = alen < blen ? alen : blen;
  int c = n ? memcmp(a, b, n) : 0;
  if (c) return c;
  return alen < blen ? -1 : alen > blen ? 1 : 0;
}

/* <0, 0, >0 as a orders before, equal to, after b. REQUIRES: both at least 8 bytes. */
static inline int internal_key_compare(const void *a, size_t alen, const void *b, size_t blen) {
  int c = bytewise_compare(a, alen - INTERNAL_KEY_TAG_BYTES, b, blen - INTERNAL_KEY_TAG_BYTES);
  if (c) return c;
  uint64_t ta = decode_fixed64((const uint8_t *)a + alen - INTERNAL_KEY_TAG_BYTES);
  uint64_t tb = decode_fixed64((const uint8_t *)b + blen - INTERNAL_KEY_TAG_BYTES);
  return ta > tb ? -1 : ta < tb ? 1 : 0;
}

/* A comparator over encoded keys (internal_key_compare or bytewise_compare). */
typedef int (*key_compare_fn)(const void *a, size_t alen, const void *b, size_t blen);

#endif
