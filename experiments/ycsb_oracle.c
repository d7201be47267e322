/* ycsb_oracle_t: what every query of bfh run ycsb should report (ycsb_oracle.h). */
#include "experiments/ycsb_oracle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "filters/hash.h"

static uint64_t key_hash(const void *k, size_t n) {
  return bfh_hash64(k, n, 7) | 1;
}

/* Room for cap records. */
static int oracle_reserve(ycsb_oracle_t *o, uint64_t cap) {
  if (cap <= o->cap) return BFH_OK;
  uint64_t *value = realloc(o->value, cap * sizeof *value);
  if (value) o->value = value;
  uint64_t *written = realloc(o->written, cap * sizeof *written);
  if (written) o->written = written;
  uint64_t *pos = realloc(o->pos, cap * sizeof *pos);
  if (pos) o->pos = pos;
  uint32_t *seen = realloc(o->seen, cap * sizeof *seen);
  if (seen) o->seen = seen;
  if (!value || !written || !pos || !seen) return BFH_E_NOMEM;
  memset(o->seen + o->cap, 0, (cap - o->cap) * sizeof *seen);
  o->cap = cap;
  return BFH_OK;
}

/* Record r's key joins the keys the oracle knows. */
static int oracle_key(ycsb_oracle_t *o, uint64_t r) {
  char key[YCSB_MAX_KEY];
  size_t kn = ycsb_source_key(o->src, r, key);
  uint64_t h = key_hash(key, kn), other;
  if (u64_map_get(&o->by_key, h, &other)) {
    fprintf(stderr, "bfh: ycsb: %s: two keys share a hash\n", o->src->name);
    return BFH_E_INVALID;
  }
  return u64_map_put(&o->by_key, h, r) == ST_OK ? BFH_OK : BFH_E_NOMEM;
}

int ycsb_oracle_init(ycsb_oracle_t *o, const ycsb_source_t *s) {
  memset(o, 0, sizeof *o);
  o->src = s;
  o->n = s->n; /* their values set by the load */
  o->holders = calloc(s->nvids, sizeof *o->holders);
  o->fen = calloc(s->range.nterms + 1, sizeof *o->fen);
  u64_map_init(&o->by_key);
  if (!o->holders || !o->fen || oracle_reserve(o, s->n) != BFH_OK ||
      u64_map_reserve(&o->by_key, s->n) != ST_OK)
    return BFH_E_NOMEM;
  int rc = BFH_OK;
  for (uint64_t r = 0; r < s->n && rc == BFH_OK; r++) rc = oracle_key(o, r);
  return rc;
}

void ycsb_oracle_release(ycsb_oracle_t *o) {
  if (o->holders)
    for (uint64_t v = 0; v < o->src->nvids; v++) u64vec_release(&o->holders[v]);
  free(o->holders);
  free(o->value);
  free(o->written);
  free(o->pos);
  free(o->seen);
  free(o->fen);
  u64_map_release(&o->by_key);
}

int ycsb_oracle_insert(ycsb_oracle_t *o, uint64_t r) {
  if (r != o->n) return BFH_E_INVALID;
  int rc = oracle_reserve(o, r < o->cap ? o->cap : 2 * o->cap + 1);
  if (rc == BFH_OK) rc = oracle_key(o, r);
  o->n += rc == BFH_OK;
  return rc;
}

/* ---- the range attribute's Fenwick tree ------------------------------------------------------ */

/* The records holding the range terms of ranks [0, rank). */
static int64_t fen_below(const ycsb_oracle_t *o, uint64_t rank) {
  int64_t sum = 0;
  for (uint64_t i = rank; i > 0; i &= i - 1) sum += o->fen[i];
  return sum;
}

/* The vid's range terms gain (delta 1) or lose (-1) a record. */
static void fen_update(ycsb_oracle_t *o, uint32_t vid, int64_t delta) {
  const ycsb_terms_t *t = &o->src->range;
  for (size_t k = 0; k < t->vid_tids[vid].n; k++)
    for (uint64_t i = t->rank[t->vid_tids[vid].v[k]] + 1; i <= t->nterms; i += i & (0 - i))
      o->fen[i] += delta;
}

/* The first rank where the records of ranks [0, rank] reach `target`; nterms if they never do. */
static uint64_t fen_reach(const ycsb_oracle_t *o, int64_t target) {
  const uint64_t n = o->src->range.nterms;
  uint64_t at = 0, step = 1;
  while (step * 2 <= n) step *= 2;
  for (; step; step /= 2)
    if (at + step <= n && o->fen[at + step] < target) {
      at += step;
      target -= o->fen[at];
    }
  return at;
}

int ycsb_oracle_set(ycsb_oracle_t *o, uint64_t r, uint64_t v, int first) {
  if (!first) {
    const uint32_t old_vid = o->src->vid[o->value[r]];
    u64vec_t *old = &o->holders[old_vid];
    uint64_t last = old->v[--old->n];
    old->v[o->pos[r]] = last;
    o->pos[last] = o->pos[r];
    fen_update(o, old_vid, -1);
  }
  const uint32_t vid = o->src->vid[v];
  u64vec_t *h = &o->holders[vid];
  o->pos[r] = h->n;
  o->value[r] = v;
  o->written[r] = ++o->writes;
  fen_update(o, vid, 1);
  return u64vec_push(h, r) == ST_OK ? BFH_OK : BFH_E_NOMEM;
}

/* ---- what a query should report -------------------------------------------------------------- */

uint64_t ycsb_oracle_term_count(const ycsb_oracle_t *o, uint64_t tid) {
  const ycsb_terms_t *t = &o->src->query;
  uint64_t count = 0;
  for (uint64_t i = 0; i < t->tid_n[tid]; i++)
    count += o->holders[t->tid_vids.v[t->tid_at[tid] + i]].n;
  return count;
}

uint64_t ycsb_oracle_range_count(ycsb_oracle_t *o, uint64_t lo, uint64_t hi) {
  const ycsb_terms_t *t = &o->src->range;
  uint64_t count = 0;
  o->check++;
  for (uint64_t rank = lo; rank <= hi; rank++) {
    const uint64_t tid = t->by_rank[rank];
    for (uint64_t i = 0; i < t->tid_n[tid]; i++) {
      const u64vec_t *h = &o->holders[t->tid_vids.v[t->tid_at[tid] + i]];
      for (size_t j = 0; j < h->n; j++)
        if (o->seen[h->v[j]] != o->check) {
          o->seen[h->v[j]] = o->check;
          count++;
        }
    }
  }
  return count;
}

uint64_t ycsb_oracle_range_end(const ycsb_oracle_t *o, uint64_t lo, uint32_t span) {
  const uint64_t hi = fen_reach(o, fen_below(o, lo) + span);
  return hi < o->src->range.nterms ? hi : o->src->range.nterms - 1;
}

/* The ranks of the range terms starting with the first plen bytes of term tid: [*lo, *hi]. */
static void prefix_ranks(const ycsb_terms_t *t, uint64_t tid, size_t plen, uint64_t *lo,
                         uint64_t *hi) {
  size_t len;
  const char *p = ycsb_terms_text(t, tid, &len);
  uint64_t bound[2]; /* the first rank at or past the prefix, the first past its terms */
  for (int past = 0; past < 2; past++) {
    uint64_t a = 0, b = t->nterms;
    while (a < b) {
      const uint64_t mid = a + (b - a) / 2;
      size_t mlen;
      const char *m = ycsb_terms_text(t, t->by_rank[mid], &mlen);
      const int c = ycsb_term_cmp(m, mlen < plen ? mlen : plen, p, plen); /* 0: the prefix */
      if (c < 0 || (past && c == 0))
        a = mid + 1;
      else
        b = mid;
    }
    bound[past] = a;
  }
  *lo = bound[0];
  *hi = bound[1] - 1;
}

size_t ycsb_oracle_prefix(const ycsb_oracle_t *o, uint64_t tid, uint32_t span, uint64_t *lo,
                          uint64_t *hi) {
  const ycsb_terms_t *t = &o->src->range;
  size_t len, best = 0;
  const char *w = ycsb_terms_text(t, tid, &len);
  for (size_t plen = 1; plen <= len && w[plen - 1] != '%' && w[plen - 1] != '_'; plen++) {
    if (plen < len && ((unsigned char)w[plen] & 0xc0) == 0x80) continue; /* mid-character */
    best = plen;
    prefix_ranks(t, tid, plen, lo, hi);
    if (fen_below(o, *hi + 1) - fen_below(o, *lo) <= (int64_t)span) return plen;
  }
  if (best) prefix_ranks(t, tid, best, lo, hi);
  return best;
}

/* ---- checking a query's keys ----------------------------------------------------------------- */

/* Does vid's value hold term tid of t? */
static int vid_has_term(const ycsb_terms_t *t, uint32_t vid, uint64_t tid) {
  for (size_t i = 0; i < t->vid_tids[vid].n; i++)
    if (t->vid_tids[vid].v[i] == tid) return 1;
  return 0;
}

/* Does vid's value hold a range term of rank in [lo, hi]? */
static int vid_in_range(const ycsb_terms_t *t, uint32_t vid, uint64_t lo, uint64_t hi) {
  for (size_t i = 0; i < t->vid_tids[vid].n; i++) {
    const uint64_t rank = t->rank[t->vid_tids[vid].v[i]];
    if (rank >= lo && rank <= hi) return 1;
  }
  return 0;
}

int ycsb_check_key(void *arg, const void *key, size_t len) {
  ycsb_check_t *c = arg;
  const ycsb_source_t *s = c->o->src;
  uint64_t r;
  if (!u64_map_get(&c->o->by_key, key_hash(key, len), &r) || c->o->seen[r] == c->o->check) {
    c->bad = 1;
    return 0;
  }
  const uint32_t vid = s->vid[c->o->value[r]];
  if (c->kind == YCSB_CHECK_VALUE  ? vid != c->vid
      : c->kind == YCSB_CHECK_TERM ? !vid_has_term(&s->query, vid, c->tid)
                                   : !vid_in_range(&s->range, vid, c->lo, c->hi)) {
    c->bad = 1;
    return 0;
  }
  if (c->order) {
    if (c->found == c->k) {
      c->bad = 1;
      return 0;
    }
    c->order[c->found] = r;
  }
  c->o->seen[r] = c->o->check;
  c->found++;
  return 0;
}

int ycsb_collect_key(void *arg, const void *key, size_t len) {
  ycsb_keys_t *k = arg;
  const size_t need = k->len + sizeof len + len;
  if (need > k->cap) {
    size_t cap = k->cap ? k->cap : 4096;
    while (cap < need) cap *= 2;
    uint8_t *p = realloc(k->p, cap);
    if (!p) {
      k->nomem = 1;
      return 1; /* stop: the run fails with BFH_E_NOMEM */
    }
    k->p = p;
    k->cap = cap;
  }
  memcpy(k->p + k->len, &len, sizeof len);
  if (len) memcpy(k->p + k->len + sizeof len, key, len);
  k->len = need;
  return 0;
}

int ycsb_check_collected(ycsb_check_t *c, ycsb_keys_t *keys) {
  const int nomem = keys->nomem;
  for (size_t at = 0; !nomem && at < keys->len;) {
    size_t len;
    memcpy(&len, keys->p + at, sizeof len);
    ycsb_check_key(c, keys->p + at + sizeof len, len);
    at += sizeof len + len;
  }
  keys->len = 0;
  keys->nomem = 0;
  return nomem ? BFH_E_NOMEM : BFH_OK;
}

void ycsb_keys_release(ycsb_keys_t *keys) {
  free(keys->p);
  *keys = (ycsb_keys_t){0};
}

/* ---- the newest K ---------------------------------------------------------------------------- */

/* Calls fn(arg, r) for every holder of c's value or term. */
static void each_holder(const ycsb_oracle_t *o, const ycsb_check_t *c,
                        void (*fn)(void *arg, uint64_t r), void *arg) {
  if (c->kind == YCSB_CHECK_VALUE) {
    const u64vec_t *h = &o->holders[c->vid];
    for (size_t j = 0; j < h->n; j++) fn(arg, h->v[j]);
    return;
  }
  const ycsb_terms_t *t = &o->src->query;
  for (uint64_t i = 0; i < t->tid_n[c->tid]; i++) {
    const u64vec_t *h = &o->holders[t->tid_vids.v[t->tid_at[c->tid] + i]];
    for (size_t j = 0; j < h->n; j++) fn(arg, h->v[j]);
  }
}

/* The k holders with the largest write numbers so far, newest first. */
typedef struct top {
  const ycsb_oracle_t *o;
  uint64_t *r;
  size_t n, k;
} top_t;

static void top_add(void *arg, uint64_t r) {
  top_t *t = arg;
  const uint64_t w = t->o->written[r];
  size_t i = t->n < t->k ? t->n++ : t->k;
  for (; i > 0 && t->o->written[t->r[i - 1]] < w; i--)
    if (i < t->k) t->r[i] = t->r[i - 1];
  if (i < t->k) t->r[i] = r;
}

/* Is a's key (record a) bytewise below b's? */
static int key_below(const ycsb_source_t *s, uint64_t a, uint64_t b) {
  char ka[YCSB_MAX_KEY], kb[YCSB_MAX_KEY];
  const size_t na = ycsb_source_key(s, a, ka), nb = ycsb_source_key(s, b, kb);
  return ycsb_term_cmp(ka, na, kb, nb) < 0;
}

/* Is every holder the answer does not hold keyed above record `last`? */
typedef struct above {
  const ycsb_oracle_t *o;
  uint64_t last;
  int ok;
} above_t;

static void above_add(void *arg, uint64_t r) {
  above_t *a = arg;
  if (a->o->seen[r] != a->o->check && !key_below(a->o->src, a->last, r)) a->ok = 0;
}

int ycsb_oracle_newest_ok(ycsb_oracle_t *o, const ycsb_check_t *c, int zeroed) {
  uint64_t *want = malloc((c->k ? c->k : 1) * sizeof *want);
  if (!want) return 0;
  top_t top = {.o = o, .r = want, .k = c->k};
  each_holder(o, c, top_add, &top);
  const size_t n = top.n;
  int exact = !c->bad && c->found == n;
  for (size_t i = 0; i < n && exact; i++) exact = c->order[i] == want[i];
  free(want);
  if (exact || !zeroed || c->bad || c->found != n) return exact;
  /* Some holders newest first (a[0, newest)), then keys ascending (a[asc, n)), meeting. */
  const uint64_t *a = c->order;
  size_t newest = 1, asc = n - 1;
  while (newest < n && o->written[a[newest]] < o->written[a[newest - 1]]) newest++;
  while (asc > 0 && key_below(o->src, a[asc - 1], a[asc])) asc--;
  if (newest == n) return 1; /* the holders newer than the last were compacted (zeroed) */
  if (asc > newest) return 0;
  above_t above = {.o = o, .last = a[n - 1], .ok = 1}; /* the zeroed keys' smallest */
  each_holder(o, c, above_add, &above);
  return above.ok;
}
