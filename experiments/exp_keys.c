/* The keys a measured search found, compared with the workload's truth as a set (exp.h).
 *
 * Layout of the collected keys: one record per key, back to back in one buffer:
 *   len (1 byte, 0..255) | the key's bytes
 * A key longer than 255 bytes is no workload key: it is counted in `bad`, not stored.
 *
 * The comparison is exact without listing the truth (which for the authors' drawn values is
 * a pass over all n entries): the keys found equal the set of entries holding the value iff
 * every key found is a workload key whose value is the one searched, no key comes twice,
 * and as many came as hold the value (a subset of a finite set with its size is the set).
 */
#include "experiments/exp.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define KEY_MAX 255 /* the longest key a record holds (its length is one byte) */

void exp_keys_reset(exp_keys_t *k) {
  k->len = 0;
  k->n = 0;
  k->bad = 0;
  k->nomem = 0;
}

void exp_keys_release(exp_keys_t *k) {
  if (!k) return;
  free(k->buf);
  memset(k, 0, sizeof *k);
}

int exp_keys_add(void *arg, const void *key, size_t len) {
  exp_keys_t *k = arg;
  k->n++;
  if (len > KEY_MAX) {
    k->bad++;
    return 0;
  }
  if (k->len + 1 + len > k->cap) {
    size_t cap = k->cap ? k->cap : 4096;
    while (cap < k->len + 1 + len) cap *= 2;
    unsigned char *b = realloc(k->buf, cap);
    if (!b) {
      k->nomem = 1;
      return 0;
    }
    k->buf = b;
    k->cap = cap;
  }
  k->buf[k->len] = (unsigned char)len;
  memcpy(k->buf + k->len + 1, key, len);
  k->len += 1 + len;
  return 0;
}

/* The entry id whose workload key is key[0..len): 1 and *id, or 0 if no entry has that key.
   The digits after the format's letters are the id; formatting it again must give the same
   bytes (no leading zero, prefix or suffix the workload does not write). */
static int key_entry_id(const workload_t *w, const unsigned char *key, size_t len, uint64_t *id) {
  size_t i = 0;
  while (i < len && (key[i] < '0' || key[i] > '9')) i++;
  if (i == len || len - i > 19) return 0; /* no digits, or more than a uint64_t holds */
  uint64_t v = 0;
  for (size_t j = i; j < len; j++) {
    if (key[j] < '0' || key[j] > '9') return 0;
    v = v * 10 + (uint64_t)(key[j] - '0');
  }
  if (v >= w->cfg.n) return 0;
  char again[WORKLOAD_MAX_BYTES];
  size_t alen = workload_key(w, v, again);
  if (alen != len || memcmp(again, key, len) != 0) return 0;
  *id = v;
  return 1;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

static void say(char *why, size_t cap, const char *fmt, ...) {
  if (!why || !cap) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, cap, fmt, ap);
  va_end(ap);
}

int exp_keys_wrong(const exp_keys_t *k, const workload_t *w, uint64_t value_id, uint64_t expect,
                   char *why, size_t why_cap) {
  say(why, why_cap, "%s", "");
  if (k->nomem) {
    say(why, why_cap, "no memory for the %llu keys found", (unsigned long long)k->n);
    return -1;
  }
  if (k->bad) {
    say(why, why_cap, "%llu keys found longer than %d bytes", (unsigned long long)k->bad, KEY_MAX);
    return 1;
  }
  if (k->n != expect) { /* the count differs: no need to look at the keys */
    say(why, why_cap, "%llu keys found, %llu hold the value", (unsigned long long)k->n,
        (unsigned long long)expect);
    return 1;
  }
  uint64_t *ids = malloc((k->n ? k->n : 1) * sizeof *ids);
  if (!ids) {
    say(why, why_cap, "no memory to compare %llu keys", (unsigned long long)k->n);
    return -1;
  }
  int wrong = 0;
  size_t at = 0;
  for (uint64_t i = 0; i < k->n && !wrong; i++) {
    const unsigned char *key = k->buf + at + 1;
    size_t len = k->buf[at];
    at += 1 + len;
    uint64_t id = 0;
    if (!key_entry_id(w, key, len, &id)) {
      say(why, why_cap, "found '%.*s', no key of the workload", (int)len, (const char *)key);
      wrong = 1;
    } else if (workload_value_id(w, id) != value_id) {
      say(why, why_cap, "found '%.*s', whose value id is %llu, not %llu", (int)len,
          (const char *)key, (unsigned long long)workload_value_id(w, id),
          (unsigned long long)value_id);
      wrong = 1;
    }
    ids[i] = id;
  }
  if (!wrong) {
    qsort(ids, (size_t)k->n, sizeof *ids, cmp_u64);
    for (uint64_t i = 1; i < k->n && !wrong; i++)
      if (ids[i] == ids[i - 1]) {
        char key[WORKLOAD_MAX_BYTES];
        size_t len = workload_key(w, ids[i], key);
        say(why, why_cap, "found '%.*s' more than once", (int)len, key);
        wrong = 1;
      }
  }
  free(ids);
  return wrong;
}
