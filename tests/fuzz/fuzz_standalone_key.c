/* Fuzz target: the stand-alone index's term encoding (format 2, index/standalone.h), on which
 * its range scans rely.
 *
 * Input: a flags byte (bit 0: an :int attribute), then two length bytes and the bytes of two
 * terms a and b and two keys k1 and k2 (each length taken mod what is left; an :int term is 8
 * bytes, zero-padded). Invariants checked:
 * - the entry bytes enc(a) k1 split back into a's bytes as a scan compares them and k1;
 * - enc(a) k1 < enc(b) k2 exactly when a < b (bytewise, a proper prefix first), or a = b and
 *   k1 < k2: the index's key order is the terms' order, whatever the keys after them;
 * - when a starts with b, enc(a) starts with b's unclosed encoding (a prefix is one seek);
 * - the whole input, read as entry bytes, splits without reading past its end, and when it
 *   does the parts add up to it.
 */
#include "fuzz_util.h"

#include "index/standalone.h"

static int bytes_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn) {
  size_t m = an < bn ? an : bn;
  int c = m ? memcmp(a, b, m) : 0;
  return c ? c : (an > bn) - (an < bn);
}

static int sign(int c) {
  return (c > 0) - (c < 0);
}

/* enc(t) || k into a malloc'd buffer, *n its length. */
static uint8_t *entry(int is_int, const uint8_t *t, size_t tn, const uint8_t *k, size_t kn,
                      size_t *n) {
  uint8_t *e = malloc(standalone_term_bytes(tn) + kn + 1);
  fuzz_check(e != NULL);
  size_t m = standalone_term_encode(e, is_int, t, tn, 1);
  if (kn) memcpy(e + m, k, kn);
  *n = m + kn;
  return e;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *t, *key;
  size_t tn, kn;
  int cut;
  for (int is_int = 0; is_int < 2; is_int++)
    if (standalone_term_split(data, size, is_int, &t, &tn, &cut, &key, &kn))
      fuzz_check(t >= data && key >= t + tn && key + kn == data + size);
  if (size < 3) return 0;
  int is_int = data[0] & 1;
  const uint8_t *p = data + 3, *end = data + size;
  size_t left = (size_t)(end - p);
  size_t an = data[1] % (left + 1), bn = data[2] % (left - an + 1);
  uint8_t ai[8] = {0}, bi[8] = {0};
  const uint8_t *a = p, *b = p + an;
  if (is_int) {
    memcpy(ai, a, an < 8 ? an : 8);
    memcpy(bi, b, bn < 8 ? bn : 8);
    a = ai, b = bi, an = bn = 8;
  }
  const uint8_t *rest = p + (is_int ? 0 : an + bn);
  size_t rn = (size_t)(end - rest), k1n = rn / 2;
  const uint8_t *k1 = rest, *k2 = rest + k1n;
  size_t k2n = rn - k1n;

  size_t ea_n, eb_n;
  uint8_t *ea = entry(is_int, a, an, k1, k1n, &ea_n), *eb = entry(is_int, b, bn, k2, k2n, &eb_n);
  fuzz_check(standalone_term_split(ea, ea_n, is_int, &t, &tn, &cut, &key, &kn));
  fuzz_check(!cut && kn == k1n && (!kn || memcmp(key, k1, kn) == 0));
  uint8_t *open_a = malloc(standalone_term_bytes(an) + 1);
  fuzz_check(open_a != NULL);
  size_t oa = standalone_term_encode(open_a, is_int, a, an, 0);
  /* A scan compares an :int term's 8 bytes, a text term's escaped bytes. */
  if (is_int)
    fuzz_check(tn == 8 && memcmp(t, a, 8) == 0);
  else
    fuzz_check(tn == oa && memcmp(t, open_a, oa) == 0);

  int want = sign(bytes_cmp(a, an, b, bn));
  if (want == 0) want = sign(bytes_cmp(k1, k1n, k2, k2n));
  fuzz_check(sign(bytes_cmp(ea, ea_n, eb, eb_n)) == want);
  if (!is_int && an >= bn && memcmp(a, b, bn) == 0) {
    uint8_t *open_b = malloc(standalone_term_bytes(bn) + 1);
    fuzz_check(open_b != NULL);
    size_t ob = standalone_term_encode(open_b, 0, b, bn, 0);
    fuzz_check(ea_n >= ob && memcmp(ea, open_b, ob) == 0);
    free(open_b);
  }
  free(open_a);
  free(ea);
  free(eb);
  return 0;
}
