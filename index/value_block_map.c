/* The value-to-block map; see value_block_map.h. */
#include "index/value_block_map.h"

#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "filters/range_filter.h"
#include "util/coding.h"
#include "util/crc32c.h"
#include "util/sort.h"
#include "util/status.h"
#include "util/vec.h"

#define MAGIC 0x4d484642u /* "BFHM" little-endian */
/* 5: no range filters; 4: nor zones; 3: nor sequence bounds; 2: nor sketch_bits (all read) */
#define VERSION 6u
#define HEAD_FIXED_V2 32
#define HEAD_FIXED_V3 36
#define ZONES_AT 52      /* nzones, in a head of version 5 or 6 */
#define ENTRY_BYTES_V3 6 /* and version 2's */
#define KEY_BITS 48      /* of a pair: fingerprint << 16 | block (the sequence above them) */
#define KEY_MASK ((1ull << KEY_BITS) - 1)
#define SEQ_STEPS 65535u /* the largest quantized bound: 16 bits */
/* A zone's range filter is seeded with its attr_id XOR this ("zonerang"), so that the
   attributes' filters hash their blocks of codes apart, and apart from an id used as a seed
   elsewhere. The seed is kept in the filter's head: a reader never derives it. */
#define RANGE_SEED 0x7a6f6e6572616e67ull

static size_t head_fixed(uint32_t version) {
  return version == 2   ? HEAD_FIXED_V2
         : version == 3 ? HEAD_FIXED_V3
         : version == 4 ? VALUE_BLOCK_MAP_HEAD_FIXED_V4
                        : VALUE_BLOCK_MAP_HEAD_FIXED;
}

static size_t entry_bytes(uint32_t version) {
  return version >= 4 ? VALUE_BLOCK_MAP_ENTRY_BYTES : ENTRY_BYTES_V3;
}

/* A sequence number s of [lo, hi] as 16 bits: (s - lo) / 2^shift rounded up, shift the
   least that brings hi there within 16 bits, so that only shifts are done per entry (a flush
   or compaction quantizes every item it writes); and back: seq_bound(lo, hi, shift,
   seq_step(lo, shift, s)) >= s, <= hi, and less than 2^shift above s. */
static unsigned seq_shift(uint64_t lo, uint64_t hi) {
  unsigned shift = 0;
  while (shift < 63 &&
         ((hi - lo) >> shift) + (((hi - lo) & ((1ull << shift) - 1)) != 0) > SEQ_STEPS)
    shift++;
  return shift;
}

static uint32_t seq_step(uint64_t lo, unsigned shift, uint64_t s) {
  uint64_t d = s - lo;
  return (uint32_t)((d >> shift) + ((d & ((1ull << shift) - 1)) != 0));
}

static uint64_t seq_bound(uint64_t lo, uint64_t hi, unsigned shift, uint32_t q) {
  uint64_t up = (uint64_t)q << shift;
  return up > hi - lo ? hi : lo + up;
}

uint32_t value_block_map_fingerprint(uint64_t h) {
  h ^= 0x76626d6170ull; /* "vbmap": not the block filter's remix */
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return (uint32_t)(h >> 32);
}

/* Chunk c's sketch bit for fingerprint fp: the part of the chunk's fingerprint range [lo, hi]
   (its fence to the next chunk's, or to the last fingerprint) that fp falls in, of `bits`
   equal parts. REQUIRES lo <= fp <= hi. */
static uint32_t sketch_bit(uint32_t lo, uint32_t hi, uint32_t fp, uint32_t bits) {
  return (uint32_t)((uint64_t)(fp - lo) * bits / ((uint64_t)(hi - lo) + 1));
}

/* Version 3's sketch bit for fingerprint fp: the part of the map's whole fingerprint range
   [first, last] that fp falls in, of `total` (S x nchunks) equal parts. REQUIRES first <= fp
   <= last, total <= 2^31. */
static uint64_t sketch_bit_v3(uint32_t first, uint32_t last, uint32_t fp, uint64_t total) {
  return (uint64_t)(fp - first) * total / ((uint64_t)(last - first) + 1);
}

static int sketch_bits_valid(uint32_t bits) {
  return bits >= 8 && bits <= VALUE_BLOCK_MAP_MAX_SKETCH_BITS && bits % 8 == 0;
}

/* An attribute's zone: its codes lie in [lo, hi]; empty (none) when lo = UINT64_MAX, hi = 0. */
typedef struct zone {
  uint64_t id, lo, hi;
} zone_t;

/* The first of the n zones (ascending by id) whose id is at least id, or n. */
static uint32_t zone_index(const zone_t *z, uint32_t n, uint64_t id) {
  uint32_t l = 0, h = n;
  while (l < h) {
    uint32_t mid = l + (h - l) / 2;
    if (z[mid].id < id)
      l = mid + 1;
    else
      h = mid;
  }
  return l;
}

/* ---- Building --------------------------------------------------------------------------- */

/* Pairs by fingerprint and block (their low 48 bits), not by the bound above them. */
static int by_pair(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a & KEY_MASK, y = *(const uint64_t *)b & KEY_MASK;
  return x < y ? -1 : x > y;
}

struct value_block_map_builder {
  uint64_t *pairs; /* fingerprint << 16 | block; at finish, the quantized bound above them */
  uint64_t *seqs;  /* each pair's entry's sequence number (finish: the sort's scratch) */
  uint64_t seq_lo, seq_hi; /* the least and largest of them */
  size_t n, cap;
  block_ref_t *refs;
  size_t nrefs, refs_cap;
  size_t open_values;            /* values added to the block being built */
  int unmappable;                /* too many blocks, or one past 4 GiB */
  uint32_t version, sketch_bits; /* the head's format (value_block_map_builder_set_format) */
  zone_t zones[VALUE_BLOCK_MAP_MAX_ZONES];   /* ascending by id */
  u64vec_t codes[VALUE_BLOCK_MAP_MAX_ZONES]; /* zones[i]'s codes, for its range filter */
  uint32_t nzones;
};

value_block_map_builder_t *value_block_map_builder_create(void) {
  value_block_map_builder_t *b = calloc(1, sizeof *b);
  if (b) {
    b->version = VERSION;
    b->sketch_bits = VALUE_BLOCK_MAP_SKETCH_BITS;
    b->seq_lo = UINT64_MAX;
  }
  return b;
}

int value_block_map_builder_set_format(value_block_map_builder_t *b, uint32_t version,
                                       uint32_t sketch_bits) {
  if (version == 2 && sketch_bits == VALUE_BLOCK_MAP_SKETCH_BITS_V2) {
    b->version = 2;
  } else if (version >= 3 && version <= VERSION && sketch_bits_valid(sketch_bits)) {
    b->version = version;
  } else {
    return BFH_E_INVALID;
  }
  b->sketch_bits = sketch_bits;
  return BFH_OK;
}

void value_block_map_builder_destroy(value_block_map_builder_t *b) {
  if (!b) return;
  free(b->pairs);
  free(b->seqs);
  free(b->refs);
  for (uint32_t i = 0; i < b->nzones; i++) u64vec_release(&b->codes[i]);
  free(b);
}

void value_block_map_builder_reset(value_block_map_builder_t *b) {
  b->n = 0;
  b->nrefs = 0;
  b->open_values = 0;
  b->unmappable = 0;
  b->seq_lo = UINT64_MAX;
  b->seq_hi = 0;
  for (uint32_t i = 0; i < b->nzones; i++) {
    b->zones[i].lo = UINT64_MAX;
    b->zones[i].hi = 0;
    b->codes[i].n = 0;
  }
}

int value_block_map_builder_add(value_block_map_builder_t *b, uint64_t value_hash, uint64_t seq) {
  if (b->n == b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 4096;
    uint64_t *p = realloc(b->pairs, cap * sizeof *p);
    if (!p) return BFH_E_NOMEM;
    b->pairs = p;
    if (!(p = realloc(b->seqs, cap * sizeof *p))) return BFH_E_NOMEM;
    b->seqs = p;
    b->cap = cap;
  }
  uint64_t block = b->nrefs & 0xffffu; /* checked at end_block (unmappable past 65536) */
  b->seqs[b->n] = seq;
  b->pairs[b->n++] = (uint64_t)value_block_map_fingerprint(value_hash) << 16 | block;
  if (seq < b->seq_lo) b->seq_lo = seq;
  if (seq > b->seq_hi) b->seq_hi = seq;
  b->open_values++;
  return BFH_OK;
}

/* b's zone of id, added empty if b has none; NULL when it would be one too many. */
static zone_t *builder_zone_of(value_block_map_builder_t *b, uint64_t id) {
  uint32_t i = zone_index(b->zones, b->nzones, id);
  if (i < b->nzones && b->zones[i].id == id) return &b->zones[i];
  if (b->nzones == VALUE_BLOCK_MAP_MAX_ZONES) return NULL;
  memmove(&b->zones[i + 1], &b->zones[i], (b->nzones - i) * sizeof *b->zones);
  memmove(&b->codes[i + 1], &b->codes[i], (b->nzones - i) * sizeof *b->codes);
  b->zones[i] = (zone_t){id, UINT64_MAX, 0};
  u64vec_init(&b->codes[i]);
  b->nzones++;
  return &b->zones[i];
}

int value_block_map_builder_zone(value_block_map_builder_t *b, uint64_t attr_id, uint64_t code) {
  zone_t *z = builder_zone_of(b, attr_id);
  if (!z) return BFH_E_INVALID;
  if (u64vec_push(&b->codes[z - b->zones], code) != ST_OK) return BFH_E_NOMEM;
  if (code < z->lo) z->lo = code;
  if (code > z->hi) z->hi = code;
  return BFH_OK;
}

int value_block_map_builder_declare_zone(value_block_map_builder_t *b, uint64_t attr_id) {
  return builder_zone_of(b, attr_id) ? BFH_OK : BFH_E_INVALID;
}

int value_block_map_builder_end_block(value_block_map_builder_t *b, uint64_t offset,
                                      uint64_t size) {
  if (!b->open_values) return BFH_OK;
  b->open_values = 0;
  if (b->nrefs >= VALUE_BLOCK_MAP_MAX_BLOCKS || offset > UINT32_MAX || size > UINT32_MAX - offset)
    b->unmappable = 1;
  if (b->nrefs == b->refs_cap) {
    size_t cap = b->refs_cap ? 2 * b->refs_cap : 256;
    block_ref_t *r = realloc(b->refs, cap * sizeof *r);
    if (!r) return BFH_E_NOMEM;
    b->refs = r;
    b->refs_cap = cap;
  }
  b->refs[b->nrefs++] = (block_ref_t){offset, size};
  return BFH_OK;
}

static void free_ranges(range_filter_t **ranges, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) range_filter_destroy(ranges[i]);
}

/* Version 6's range filters: ranges[i] over zone i's codes (NULL when it has none), and the
   bytes the ranges add to the head (their refs and the filters' heads) and to the chunks
   block (the filters' bodies). BFH_OK or BFH_E_NOMEM, with none kept (the build's only
   failure at these parameters short of 2^44 codes). */
static int build_ranges(const value_block_map_builder_t *b, range_filter_t **ranges,
                        size_t *head_bytes, size_t *body_bytes) {
  *head_bytes = *body_bytes = 0;
  for (uint32_t i = 0; i < b->nzones; i++) {
    ranges[i] = NULL;
    *head_bytes += VALUE_BLOCK_MAP_RANGE_REF_BYTES;
    if (b->codes[i].n == 0) continue;
    if (range_filter_build(b->codes[i].v, b->codes[i].n, VALUE_BLOCK_MAP_RANGE_BITS,
                           VALUE_BLOCK_MAP_RANGE_LOG2, b->zones[i].id ^ RANGE_SEED, &ranges[i],
                           NULL) != ST_OK) {
      free_ranges(ranges, i);
      return BFH_E_NOMEM;
    }
    *head_bytes += range_filter_head_size(ranges[i]);
    *body_bytes += range_filter_body_size(ranges[i]);
  }
  return BFH_OK;
}

/* Writes the n ranges (each one's ref, then its filter's head) at p, in the head after the
   zones, and their bodies one after another into the chunks block c from offset off, past
   the last chunk; returns p past the ranges. */
static uint8_t *encode_ranges(range_filter_t *const *ranges, uint32_t n, uint8_t *p, uint8_t *c,
                              uint64_t off) {
  for (uint32_t i = 0; i < n; i++, p += VALUE_BLOCK_MAP_RANGE_REF_BYTES) {
    const range_filter_t *f = ranges[i];
    if (!f) { /* a zone without a code: no filter */
      memset(p, 0, VALUE_BLOCK_MAP_RANGE_REF_BYTES);
      continue;
    }
    const size_t hl = range_filter_head_size(f), bl = range_filter_body_size(f);
    encode_fixed32(p, (uint32_t)hl);
    encode_fixed64(p + 4, off);
    encode_fixed64(p + 12, bl);
    range_filter_encode_head(f, p + VALUE_BLOCK_MAP_RANGE_REF_BYTES);
    range_filter_encode_body(f, c + off);
    p += hl;
    off += bl;
  }
  return p;
}

int value_block_map_builder_finish(value_block_map_builder_t *b, uint8_t **head, size_t *head_len,
                                   uint8_t **chunks, size_t *chunks_len) {
  if (b->open_values) return BFH_E_INVALID;
  if (b->unmappable) return BFH_NOT_FOUND;
  if ((uint64_t)b->sketch_bits *
          ((b->n + VALUE_BLOCK_MAP_CHUNK_ENTRIES - 1) / VALUE_BLOCK_MAP_CHUNK_ENTRIES) >
      VALUE_BLOCK_MAP_MAX_SKETCH_TOTAL)
    return BFH_NOT_FOUND; /* (about 700 million entries at 1024 bits a chunk) */
  if (b->n == 0) b->seq_lo = b->seq_hi = 0;
  if (b->version >= 4) {
    const unsigned shift = seq_shift(b->seq_lo, b->seq_hi);
    for (size_t i = 0; i < b->n; i++)
      b->pairs[i] |= (uint64_t)seq_step(b->seq_lo, shift, b->seqs[i]) << KEY_BITS;
  }
  /* The pairs are sorted by their 48 bits (fingerprint << 16 | block), the bound riding
     above: 6 radix passes where qsort compared n log n times through a pointer, in every
     flush and compaction (a 10M load with maps took 23.2-23.6 s with qsort, 16.0-16.8 s so;
     doc/search.md "Value-to-block maps"). pairs is NULL when empty. From version 4 the
     sequence numbers are in the pairs now, and their array is the sort's scratch; before,
     without the memory for one, qsort, by the same 48 bits. */
  if (b->n && b->version >= 4)
    u64_radix_sort_into(b->pairs, b->n, KEY_BITS, b->seqs);
  else if (b->n && u64_radix_sort(b->pairs, b->n, KEY_BITS) != ST_OK)
    qsort(b->pairs, b->n, sizeof *b->pairs, by_pair);
  /* One entry per distinct pair, with the largest bound of its entries. */
  size_t w = 0;
  for (size_t i = 0; i < b->n; i++) {
    if (w > 0 && (b->pairs[i] & KEY_MASK) == (b->pairs[w - 1] & KEY_MASK)) {
      if (b->pairs[i] > b->pairs[w - 1]) b->pairs[w - 1] = b->pairs[i];
    } else {
      b->pairs[w++] = b->pairs[i];
    }
  }
  b->n = w;
  const size_t ce = VALUE_BLOCK_MAP_CHUNK_ENTRIES;
  size_t nchunks = (b->n + ce - 1) / ce;
  const size_t sb = b->sketch_bits / 8, fixed = head_fixed(b->version);
  const size_t eb = entry_bytes(b->version);
  const uint32_t nzones = b->version >= 5 ? b->nzones : 0;
  const uint32_t nranges = b->version >= 6 ? nzones : 0;
  range_filter_t *ranges[VALUE_BLOCK_MAP_MAX_ZONES];
  size_t range_head = 0, range_body = 0;
  if (nranges && build_ranges(b, ranges, &range_head, &range_body) != BFH_OK) return BFH_E_NOMEM;
  size_t hl = fixed + 16 * b->nrefs + (4 + sb) * nchunks + VALUE_BLOCK_MAP_ZONE_BYTES * nzones +
              range_head + 4;
  size_t cl = eb * b->n + 4 * nchunks + range_body;
  uint8_t *h = malloc(hl), *c = malloc(cl ? cl : 1);
  if (!h || !c) {
    free(h);
    free(c);
    free_ranges(ranges, nranges);
    return BFH_E_NOMEM;
  }
  encode_fixed32(h, MAGIC);
  encode_fixed32(h + 4, b->version);
  encode_fixed32(h + 8, (uint32_t)b->nrefs);
  encode_fixed32(h + 12, (uint32_t)ce);
  encode_fixed64(h + 16, b->n);
  encode_fixed32(h + 24, (uint32_t)nchunks);
  uint32_t last = b->n ? (uint32_t)(b->pairs[b->n - 1] >> 16) : 0;
  encode_fixed32(h + 28, last);
  if (b->version != 2) encode_fixed32(h + 32, b->sketch_bits);
  if (b->version >= 4) {
    encode_fixed64(h + 36, b->seq_lo);
    encode_fixed64(h + 44, b->seq_hi);
  }
  if (b->version >= 5) encode_fixed32(h + ZONES_AT, nzones);
  uint8_t *p = h + fixed;
  for (size_t i = 0; i < b->nrefs; i++, p += 16) {
    encode_fixed64(p, b->refs[i].offset);
    encode_fixed64(p + 8, b->refs[i].size);
  }
  uint8_t *q = c, *sk = p + 4 * nchunks, *sk0 = sk;
  memset(sk, 0, sb * nchunks);
  const uint32_t fp0 = b->n ? (uint32_t)(b->pairs[0] >> 16) : 0;
  const uint64_t total = (uint64_t)b->sketch_bits * nchunks;
  for (size_t k = 0; k < nchunks; k++, sk += sb) {
    size_t first = k * ce, cnt = b->n - first < ce ? b->n - first : ce;
    uint32_t lo = (uint32_t)(b->pairs[first] >> 16);
    uint32_t hi = k + 1 < nchunks ? (uint32_t)(b->pairs[first + ce] >> 16) : last;
    encode_fixed32(p, lo);
    p += 4;
    uint8_t *start = q;
    for (size_t i = first; i < first + cnt; i++, q += eb) {
      uint32_t fp = (uint32_t)(b->pairs[i] >> 16);
      if (b->version == 2) {
        uint32_t bit = sketch_bit(lo, hi, fp, b->sketch_bits);
        sk[bit >> 3] |= (uint8_t)(1u << (bit & 7));
      } else {
        uint64_t bit = sketch_bit_v3(fp0, last, fp, total);
        sk0[bit >> 3] |= (uint8_t)(1u << (bit & 7));
      }
      encode_fixed32(q, fp);
      q[4] = (uint8_t)(b->pairs[i] & 0xff);
      q[5] = (uint8_t)((b->pairs[i] >> 8) & 0xff);
      if (eb > ENTRY_BYTES_V3) {
        q[6] = (uint8_t)(b->pairs[i] >> KEY_BITS & 0xff);
        q[7] = (uint8_t)(b->pairs[i] >> (KEY_BITS + 8) & 0xff);
      }
    }
    uint8_t cb[4];
    encode_fixed32(cb, (uint32_t)k);
    uint32_t crc = crc32c_extend(crc32c_value(cb, 4), start, (size_t)(q - start));
    encode_fixed32(q, crc32c_mask(crc));
    q += 4;
  }
  p += sb * nchunks;
  for (uint32_t i = 0; i < nzones; i++, p += VALUE_BLOCK_MAP_ZONE_BYTES) {
    encode_fixed64(p, b->zones[i].id);
    encode_fixed64(p + 8, b->zones[i].lo);
    encode_fixed64(p + 16, b->zones[i].hi);
  }
  p = encode_ranges(ranges, nranges, p, c, (uint64_t)(q - c));
  free_ranges(ranges, nranges);
  encode_fixed32(p, crc32c_mask(crc32c_value(h, (size_t)(p - h))));
  *head = h;
  *head_len = hl;
  *chunks = c;
  *chunks_len = cl;
  return BFH_OK;
}

/* ---- The map in memory ------------------------------------------------------------------ */

/* A zone's range filter (version 6): its head decoded, NULL when the zone has none, and where
   its body begins in the chunks block. */
typedef struct zone_range {
  range_filter_t *f;
  uint64_t body_off;
} zone_range_t;

struct value_block_map {
  uint32_t nblocks, chunk_entries, nchunks, last;
  uint32_t sketch_bits;    /* per chunk */
  uint32_t version;        /* 2: a sketch per chunk; 3: one over the whole range; 4: bounds;
                              5: zones; 6: their range filters */
  uint32_t entry_bytes;    /* of a chunk's entry: 8 (versions 4 to 6), else 6 */
  uint32_t first;          /* fences[0] */
  uint64_t seq_lo, seq_hi; /* the range the entries' bounds are quantized over (4 to 6) */
  unsigned seq_shift;      /* and its step, 2^seq_shift (seq_shift) */
  uint64_t sketch_total;   /* sketch_bits x nchunks */
  uint64_t entries;
  uint32_t *refs;       /* nblocks x (offset, size): every block lies below 4 GiB */
  uint32_t *fences;     /* nchunks */
  uint8_t *sketch;      /* nchunks x sketch_bits / 8 */
  zone_t *zones;        /* nzones, ascending by id (NULL if none) */
  zone_range_t *ranges; /* nzones, the zones' range filters (NULL if none: before version 6) */
  uint32_t nzones;
  /* Its own chunk reader (value_block_map_set_reader), or NULL. */
  value_block_map_read_fn own_read;
  value_block_map_place_fn own_place; /* where own_read reads (value_block_map_set_place) */
  void *own_arg;
  void (*own_release)(void *arg);
  size_t own_bytes;
};

/* May chunk c hold fingerprint fp? Its sketch says no for most fingerprints it lacks. */
static int sketch_has(const value_block_map_t *m, uint32_t c, uint32_t fp) {
  uint32_t lo = m->fences[c], hi = c + 1 < m->nchunks ? m->fences[c + 1] : m->last;
  if (fp < lo || fp > hi) return 1; /* outside its range: not this test's to say */
  uint32_t bit = sketch_bit(lo, hi, fp, m->sketch_bits);
  return m->sketch[(size_t)c * (m->sketch_bits / 8) + (bit >> 3)] >> (bit & 7) & 1;
}

/* Where the n ranges of a head of version 6 that begin at d[at] end, by their head_len fields,
   or, when one runs past d[end) (the CRC), where it would: past end. */
static uint64_t ranges_end(const uint8_t *d, uint64_t at, size_t end, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    if (at + VALUE_BLOCK_MAP_RANGE_REF_BYTES > end) return at + VALUE_BLOCK_MAP_RANGE_REF_BYTES;
    at += VALUE_BLOCK_MAP_RANGE_REF_BYTES + decode_fixed32(d + at);
  }
  return at;
}

/* Decodes m's ranges from p (their bytes lie inside the head: ranges_end) into m->ranges:
   each filter's head, on a zone that holds a code, with its body as long as the head says,
   past the chunks (chunks_bytes) and past the body before it, within 2^64. BFH_OK, or
   BFH_E_CORRUPT or BFH_E_NOMEM with a message; m->ranges holds what was decoded. */
static int open_ranges(value_block_map_t *m, const uint8_t *p, uint64_t chunks_bytes, err_t *err) {
  uint64_t end = chunks_bytes; /* where the bodies so far end */
  for (uint32_t i = 0; i < m->nzones; i++) {
    const uint32_t hl = decode_fixed32(p);
    const uint64_t off = decode_fixed64(p + 4), bl = decode_fixed64(p + 12);
    p += VALUE_BLOCK_MAP_RANGE_REF_BYTES;
    if (hl == 0) {
      if (off != 0 || bl != 0)
        return err_set(err, BFH_E_CORRUPT,
                       "value-to-block map: zone %u's range filter: a body without a head", i);
      continue;
    }
    if (m->zones[i].lo > m->zones[i].hi)
      return err_set(err, BFH_E_CORRUPT,
                     "value-to-block map: zone %u's range filter: the zone holds no code", i);
    range_filter_t *f = NULL;
    err_t ferr;
    err_clear(&ferr);
    int rc = range_filter_decode_head(p, hl, &f, &ferr);
    if (rc != ST_OK)
      return err_set(err, rc, "value-to-block map: zone %u's range filter: %s", i, ferr.msg);
    m->ranges[i] = (zone_range_t){f, off};
    p += hl;
    if (range_filter_count(f) == 0)
      return err_set(err, BFH_E_CORRUPT,
                     "value-to-block map: zone %u's range filter: holds no code", i);
    if (bl != range_filter_body_size(f))
      return err_set(err, BFH_E_CORRUPT,
                     "value-to-block map: zone %u's range filter: a body of %llu bytes, its head "
                     "says %zu",
                     i, (unsigned long long)bl, range_filter_body_size(f));
    if (off < end)
      return err_set(err, BFH_E_CORRUPT,
                     "value-to-block map: zone %u's range filter: its body at %llu is not past "
                     "%llu (the chunks and the bodies before it)",
                     i, (unsigned long long)off, (unsigned long long)end);
    if (bl > UINT64_MAX - off)
      return err_set(err, BFH_E_CORRUPT,
                     "value-to-block map: zone %u's range filter: its body at %llu runs past 2^64",
                     i, (unsigned long long)off);
    end = off + bl;
  }
  return BFH_OK;
}

int value_block_map_open(const uint8_t *d, size_t len, value_block_map_t **out, err_t *err) {
  *out = NULL;
  if (len < HEAD_FIXED_V2 + 4)
    return err_set(err, BFH_E_CORRUPT, "value-to-block map: %zu bytes, too short", len);
  if (decode_fixed32(d) != MAGIC)
    return err_set(err, BFH_E_CORRUPT, "value-to-block map: bad magic");
  uint32_t version = decode_fixed32(d + 4);
  if (version < 2 || version > VERSION)
    return err_set(err, BFH_E_CORRUPT, "value-to-block map: version %u, not 2 to %u", version,
                   VERSION);
  size_t fixed = head_fixed(version);
  if (len < fixed + 4)
    return err_set(err, BFH_E_CORRUPT, "value-to-block map: %zu bytes, too short", len);
  uint32_t sbits = version == 2 ? VALUE_BLOCK_MAP_SKETCH_BITS_V2 : decode_fixed32(d + 32);
  if (!sketch_bits_valid(sbits) ||
      (uint64_t)sbits * decode_fixed32(d + 24) > VALUE_BLOCK_MAP_MAX_SKETCH_TOTAL)
    return err_set(err, BFH_E_CORRUPT, "value-to-block map: sketches of %u bits", sbits);
  const uint64_t sb = sbits / 8;
  uint32_t nzones = version >= 5 ? decode_fixed32(d + ZONES_AT) : 0;
  if (nzones > VALUE_BLOCK_MAP_MAX_ZONES)
    return err_set(err, BFH_E_CORRUPT, "value-to-block map: %u zones, more than %u", nzones,
                   VALUE_BLOCK_MAP_MAX_ZONES);
  uint32_t nblocks = decode_fixed32(d + 8), ce = decode_fixed32(d + 12);
  uint64_t entries = decode_fixed64(d + 16);
  uint32_t nchunks = decode_fixed32(d + 24), last = decode_fixed32(d + 28);
  if (nblocks > VALUE_BLOCK_MAP_MAX_BLOCKS || ce == 0 || ce > 65536 || entries > (1ull << 40) ||
      nchunks != (entries + ce - 1) / ce || entries < nblocks || (entries > 0) != (nblocks > 0))
    return err_set(err, BFH_E_CORRUPT,
                   "value-to-block map: sizes do not agree (blocks %u, entries %llu, chunk "
                   "entries %u, chunks %u)",
                   nblocks, (unsigned long long)entries, ce, nchunks);
  uint64_t want = fixed + 16ull * nblocks + (4ull + sb) * nchunks +
                  (uint64_t)VALUE_BLOCK_MAP_ZONE_BYTES * nzones + 4;
  if (version >= 6 && want <= len) want = ranges_end(d, want - 4, len - 4, nzones) + 4;
  if (want != len)
    return err_set(err, BFH_E_CORRUPT, "value-to-block map: %zu bytes, its sizes say %llu", len,
                   (unsigned long long)want);
  if (crc32c_unmask(decode_fixed32(d + len - 4)) != crc32c_value(d, len - 4))
    return err_set(err, BFH_E_CORRUPT, "value-to-block map: checksum mismatch");
  uint64_t seq_lo = version >= 4 ? decode_fixed64(d + 36) : 0;
  uint64_t seq_hi = version >= 4 ? decode_fixed64(d + 44) : UINT64_MAX;
  if (seq_lo > seq_hi)
    return err_set(err, BFH_E_CORRUPT, "value-to-block map: sequence bounds out of order");
  value_block_map_t *m = calloc(1, sizeof *m);
  if (m) {
    m->refs = malloc((nblocks ? nblocks : 1) * 2 * sizeof *m->refs);
    m->fences = malloc((nchunks ? nchunks : 1) * sizeof *m->fences);
    m->sketch = malloc((nchunks ? nchunks : 1) * (size_t)sb);
    if (nzones) m->zones = malloc(nzones * sizeof *m->zones);
    if (nzones && version >= 6) m->ranges = calloc(nzones, sizeof *m->ranges);
  }
  if (!m || !m->refs || !m->fences || !m->sketch || (nzones && !m->zones) ||
      (nzones && version >= 6 && !m->ranges)) {
    value_block_map_destroy(m);
    return err_set(err, BFH_E_NOMEM, "value-to-block map: out of memory");
  }
  m->nblocks = nblocks;
  m->chunk_entries = ce;
  m->nchunks = nchunks;
  m->last = last;
  m->sketch_bits = sbits;
  m->version = version;
  m->entry_bytes = (uint32_t)entry_bytes(version);
  m->seq_lo = seq_lo;
  m->seq_hi = seq_hi;
  m->seq_shift = seq_shift(seq_lo, seq_hi);
  m->sketch_total = (uint64_t)sbits * nchunks;
  m->entries = entries;
  const uint8_t *p = d + fixed;
  uint64_t end = 0;
  for (uint32_t i = 0; i < nblocks; i++, p += 16) {
    uint64_t off = decode_fixed64(p), size = decode_fixed64(p + 8);
    if (off < end || off > UINT32_MAX || size > UINT32_MAX - off) {
      value_block_map_destroy(m);
      return err_set(err, BFH_E_CORRUPT, "value-to-block map: block %u at %llu out of order", i,
                     (unsigned long long)off);
    }
    end = off + size;
    m->refs[2 * i] = (uint32_t)off;
    m->refs[2 * i + 1] = (uint32_t)size;
  }
  for (uint32_t c = 0; c < nchunks; c++, p += 4) {
    m->fences[c] = decode_fixed32(p);
    if ((c && m->fences[c] < m->fences[c - 1]) || m->fences[c] > last) {
      value_block_map_destroy(m);
      return err_set(err, BFH_E_CORRUPT, "value-to-block map: fence %u out of order", c);
    }
  }
  memcpy(m->sketch, p, (size_t)nchunks * (size_t)sb);
  p += (size_t)nchunks * (size_t)sb;
  m->first = nchunks ? m->fences[0] : 0;
  for (uint32_t i = 0; i < nzones; i++, p += VALUE_BLOCK_MAP_ZONE_BYTES) {
    zone_t z = {decode_fixed64(p), decode_fixed64(p + 8), decode_fixed64(p + 16)};
    const char *bad = NULL;
    if (i && z.id <= m->zones[i - 1].id)
      bad = "ids not ascending";
    else if (z.lo > z.hi && (z.lo != UINT64_MAX || z.hi != 0)) /* only the empty zone */
      bad = "lo above hi";
    if (bad) {
      value_block_map_destroy(m);
      return err_set(err, BFH_E_CORRUPT, "value-to-block map: zone %u: %s", i, bad);
    }
    m->zones[i] = z;
  }
  m->nzones = nzones;
  if (m->ranges) {
    const uint64_t chunks_bytes = (uint64_t)m->entry_bytes * entries + 4ull * nchunks;
    int rc = open_ranges(m, p, chunks_bytes, err);
    if (rc != BFH_OK) {
      value_block_map_destroy(m);
      return rc;
    }
  }
  *out = m;
  return BFH_OK;
}

void value_block_map_destroy(value_block_map_t *m) {
  if (!m) return;
  if (m->own_release) m->own_release(m->own_arg);
  free(m->refs);
  free(m->fences);
  free(m->sketch);
  for (uint32_t i = 0; m->ranges && i < m->nzones; i++) range_filter_destroy(m->ranges[i].f);
  free(m->ranges);
  free(m->zones);
  free(m);
}

uint32_t value_block_map_blocks(const value_block_map_t *m) {
  return m->nblocks;
}

block_ref_t value_block_map_ref(const value_block_map_t *m, uint32_t i) {
  return (block_ref_t){m->refs[2 * i], m->refs[2 * i + 1]};
}

uint64_t value_block_map_entries(const value_block_map_t *m) {
  return m->entries;
}

uint32_t value_block_map_sketch_bits(const value_block_map_t *m) {
  return m->sketch_bits;
}

uint32_t value_block_map_chunks(const value_block_map_t *m) {
  return m->nchunks;
}

void value_block_map_set_reader(value_block_map_t *m, value_block_map_read_fn read, void *arg,
                                void (*release)(void *arg), size_t bytes) {
  m->own_read = read;
  m->own_arg = arg;
  m->own_release = release;
  m->own_bytes = bytes;
}

int value_block_map_has_reader(const value_block_map_t *m) {
  return m->own_read != NULL;
}

int value_block_map_read_own(const value_block_map_t *m, uint64_t off, size_t len, void *buf,
                             err_t *err) {
  return m->own_read(m->own_arg, off, len, buf, err);
}

void value_block_map_set_place(value_block_map_t *m, value_block_map_place_fn place) {
  m->own_place = place;
}

int value_block_map_own_place(const value_block_map_t *m, uint64_t off, size_t len, env_t **io,
                              env_rfile_t **f, uint64_t *at) {
  return m->own_read && m->own_place && m->own_place(m->own_arg, off, len, io, f, at);
}

size_t value_block_map_memory(const value_block_map_t *m) {
  size_t ranges = 0;
  for (uint32_t i = 0; m->ranges && i < m->nzones; i++)
    ranges += sizeof *m->ranges + (m->ranges[i].f ? range_filter_memory(m->ranges[i].f) : 0);
  return sizeof *m + m->own_bytes + (m->nblocks ? m->nblocks : 1) * 2 * sizeof *m->refs +
         (m->nchunks ? m->nchunks : 1) * (sizeof *m->fences + m->sketch_bits / 8) +
         m->nzones * sizeof *m->zones + ranges;
}

int value_block_map_zone(const value_block_map_t *m, uint64_t attr_id, uint64_t *lo, uint64_t *hi) {
  uint32_t i = zone_index(m->zones, m->nzones, attr_id);
  if (i >= m->nzones || m->zones[i].id != attr_id) {
    *lo = 0;
    *hi = UINT64_MAX;
    return 0;
  }
  *lo = m->zones[i].lo;
  *hi = m->zones[i].hi;
  return 1;
}

int value_block_map_zone_rules_out(const value_block_map_t *m, uint64_t attr_id, uint64_t lo,
                                   uint64_t hi) {
  uint64_t zlo, zhi;
  if (lo > hi || !value_block_map_zone(m, attr_id, &zlo, &zhi)) return 0;
  return zlo > zhi || zhi < lo || zlo > hi; /* empty, or wholly below or above [lo, hi] */
}

/* m's range filter of attr_id, or NULL when it keeps none. */
static const zone_range_t *range_of(const value_block_map_t *m, uint64_t attr_id) {
  uint32_t i = zone_index(m->zones, m->nzones, attr_id);
  if (!m->ranges || i >= m->nzones || m->zones[i].id != attr_id || !m->ranges[i].f) return NULL;
  return &m->ranges[i];
}

int value_block_map_has_range(const value_block_map_t *m, uint64_t attr_id) {
  return range_of(m, attr_id) != NULL;
}

/* A range filter's reader of its body (range_filter_read_fn): the map's reader of the chunks
   block, from where the body begins. */
typedef struct body_reader {
  value_block_map_read_fn read;
  void *arg;
  uint64_t body_off;
  uint64_t *bytes_read; /* may be NULL */
  uint64_t last;        /* the offset in the body of the last piece asked for */
} body_reader_t;

static int read_body(void *arg, uint64_t off, size_t len, void *buf, err_t *err) {
  body_reader_t *r = arg;
  r->last = off;
  int rc = r->read(r->arg, r->body_off + off, len, buf, err);
  if (rc == BFH_OK && r->bytes_read) *r->bytes_read += len;
  return rc;
}

int value_block_map_range(const value_block_map_t *m, uint64_t attr_id, uint64_t lo, uint64_t hi,
                          value_block_map_read_fn read, void *arg, uint64_t *pieces_read,
                          uint64_t *bytes_read, err_t *err) {
  const zone_range_t *r = range_of(m, attr_id);
  if (!r || lo > hi) return 1;
  if (m->own_read) {
    read = m->own_read;
    arg = m->own_arg;
  }
  body_reader_t br = {read, arg, r->body_off, bytes_read, 0};
  int rc = range_filter_ask(r->f, lo, hi, read ? read_body : NULL, &br, pieces_read, err);
  if (rc == BFH_E_CORRUPT)
    err_prefix(err, "value-to-block map: range filter of zone %llu, piece at %llu: ",
               (unsigned long long)attr_id, (unsigned long long)(r->body_off + br.last));
  return rc;
}

static uint32_t chunk_count(const value_block_map_t *m, uint32_t c) {
  uint64_t first = (uint64_t)c * m->chunk_entries, rest = m->entries - first;
  return rest < m->chunk_entries ? (uint32_t)rest : m->chunk_entries;
}

void value_block_map_chunk_span(const value_block_map_t *m, uint32_t c, uint64_t *off,
                                size_t *len) {
  *off = (uint64_t)c * ((uint64_t)m->entry_bytes * m->chunk_entries + 4);
  *len = (size_t)m->entry_bytes * chunk_count(m, c) + 4;
}

int value_block_map_check_chunk(const value_block_map_t *m, uint32_t c, const uint8_t *d,
                                size_t len, err_t *err) {
  if (c >= m->nchunks) return err_set(err, BFH_E_CORRUPT, "value-to-block map: no chunk %u", c);
  uint32_t cnt = chunk_count(m, c);
  if (len != (size_t)m->entry_bytes * cnt + 4)
    return err_set(err, BFH_E_CORRUPT, "value-to-block map: chunk %u: %zu bytes", c, len);
  uint8_t cb[4];
  encode_fixed32(cb, c);
  uint32_t crc = crc32c_extend(crc32c_value(cb, 4), d, len - 4);
  if (crc32c_unmask(decode_fixed32(d + len - 4)) != crc)
    return err_set(err, BFH_E_CORRUPT, "value-to-block map: chunk %u: checksum mismatch", c);
  uint32_t prev = m->fences[c];
  for (uint32_t i = 0; i < cnt; i++) {
    const uint8_t *e = d + (size_t)i * m->entry_bytes;
    uint32_t fp = decode_fixed32(e), block = (uint32_t)e[4] | (uint32_t)e[5] << 8;
    if ((i == 0 && fp != m->fences[c]) || fp < prev || fp > m->last || block >= m->nblocks)
      return err_set(err, BFH_E_CORRUPT, "value-to-block map: chunk %u: entry %u malformed", c, i);
    prev = fp;
  }
  if (c + 1 == m->nchunks && prev != m->last)
    return err_set(err, BFH_E_CORRUPT,
                   "value-to-block map: chunk %u: does not end at the last fingerprint", c);
  return BFH_OK;
}

void value_block_map_prefetch(const value_block_map_t *m, uint64_t value_hash) {
  uint32_t fp = value_block_map_fingerprint(value_hash);
  if (m->version == 2 || m->nchunks == 0 || fp < m->first || fp > m->last) return;
  uint64_t bit = sketch_bit_v3(m->first, m->last, fp, m->sketch_total);
  __builtin_prefetch(m->sketch + (bit >> 3));
}

int value_block_map_rules_out(const value_block_map_t *m, uint64_t value_hash) {
  uint32_t fp = value_block_map_fingerprint(value_hash);
  if (m->nchunks == 0 || fp < m->first || fp > m->last) return 1;
  if (m->version == 2) return 0;
  uint64_t bit = sketch_bit_v3(m->first, m->last, fp, m->sketch_total);
  return !(m->sketch[bit >> 3] >> (bit & 7) & 1);
}

/* The first chunk a probe of fingerprint fp looks at, or nchunks when it looks at none (fp
   outside the map's range, or the version 3 sketch says no: no fence is touched then). */
static uint32_t first_chunk(const value_block_map_t *m, uint32_t fp) {
  if (m->nchunks == 0 || fp < m->first || fp > m->last) return m->nchunks;
  if (m->version != 2) { /* one sketch over the range */
    uint64_t bit = sketch_bit_v3(m->first, m->last, fp, m->sketch_total);
    if (!(m->sketch[bit >> 3] >> (bit & 7) & 1)) return m->nchunks;
  }
  /* The last chunk whose fence is below fp (entries equal to fp may begin in it), or chunk 0.
     Fingerprints are uniform over [fences[0], last]: start where fp's share of that range
     puts it and step to the chunk (one or two cache lines of fences, where a binary search
     over them touches about five). */
  uint32_t c = (uint32_t)((uint64_t)(fp - m->fences[0]) * m->nchunks /
                          ((uint64_t)(m->last - m->fences[0]) + 1));
  if (c >= m->nchunks) c = m->nchunks - 1;
  while (c > 0 && m->fences[c] >= fp) c--;
  while (c + 1 < m->nchunks && m->fences[c + 1] < fp) c++;
  return c;
}

int value_block_map_sure_span(const value_block_map_t *m, uint64_t value_hash, uint64_t *off,
                              size_t *len) {
  uint32_t fp = value_block_map_fingerprint(value_hash);
  uint32_t c = first_chunk(m, fp);
  /* Version 2 keeps a sketch per chunk, which may skip every chunk. */
  if (m->version == 2 || c >= m->nchunks || m->fences[c] > fp) return 0;
  value_block_map_chunk_span(m, c, off, len);
  return 1;
}

size_t value_block_map_sure_read(const value_block_map_t *m, uint64_t value_hash) {
  uint64_t off;
  size_t len;
  return value_block_map_sure_span(m, value_hash, &off, &len) ? len : 0;
}

typedef struct named {
  uint32_t block;
  uint64_t bound;
} named_t;

static int by_block(const void *a, const void *b) {
  const named_t *x = a, *y = b;
  return x->block < y->block ? -1 : x->block > y->block;
}

/* Sorts the probe's blocks out[0, *n) ascending, with their bounds (may be NULL), and keeps
   one of each, with its largest bound. A map as built names them so already (its entries are
   distinct pairs, ascending); this keeps a probe exact over any chunk that checks out.
   BFH_OK or BFH_E_NOMEM. */
static int sort_blocks(uint32_t *out, uint64_t *bounds, uint32_t *n) {
  uint32_t i = 1;
  while (i < *n && out[i - 1] < out[i]) i++;
  if (i >= *n) return BFH_OK;
  named_t *v = malloc(*n * sizeof *v);
  if (!v) return BFH_E_NOMEM;
  for (i = 0; i < *n; i++) v[i] = (named_t){out[i], bounds ? bounds[i] : 0};
  qsort(v, *n, sizeof *v, by_block);
  uint32_t w = 0;
  for (i = 0; i < *n; i++) {
    if (w > 0 && v[i].block == out[w - 1]) {
      if (bounds && v[i].bound > bounds[w - 1]) bounds[w - 1] = v[i].bound;
      continue;
    }
    if (bounds) bounds[w] = v[i].bound;
    out[w++] = v[i].block;
  }
  *n = w;
  free(v);
  return BFH_OK;
}

int value_block_map_probe(const value_block_map_t *m, uint64_t value_hash,
                          value_block_map_read_fn read, void *arg, uint32_t *out, uint64_t *bounds,
                          uint32_t *n, uint64_t *chunks_read, uint64_t *bytes_read, err_t *err) {
  if (m->own_read) { /* the map's own chunks (the file its head was loaded from) */
    read = m->own_read;
    arg = m->own_arg;
  }
  return value_block_map_probe_through(m, value_hash, read, arg, out, bounds, n, chunks_read,
                                       bytes_read, err);
}

int value_block_map_probe_through(const value_block_map_t *m, uint64_t value_hash,
                                  value_block_map_read_fn read, void *arg, uint32_t *out,
                                  uint64_t *bounds, uint32_t *n, uint64_t *chunks_read,
                                  uint64_t *bytes_read, err_t *err) {
  *n = 0;
  uint32_t fp = value_block_map_fingerprint(value_hash);
  uint32_t c = first_chunk(m, fp);
  if (c >= m->nchunks) return BFH_OK;
  const size_t eb = m->entry_bytes, chunk_max = eb * m->chunk_entries + 4;
  uint8_t buf[VALUE_BLOCK_MAP_ENTRY_BYTES * 1024 + 4];
  uint8_t *heap = NULL, *b = buf;
  if (chunk_max > sizeof buf) {
    if (!(heap = malloc(chunk_max)))
      return err_set(err, BFH_E_NOMEM, "value-to-block map: out of memory");
    b = heap;
  }
  int rc = BFH_OK;
  for (; c < m->nchunks && m->fences[c] <= fp && rc == BFH_OK; c++) {
    if (m->version == 2 && !sketch_has(m, c, fp)) continue; /* not in this chunk: no read */
    uint64_t off;
    size_t len;
    value_block_map_chunk_span(m, c, &off, &len);
    rc = read(arg, off, len, b, err);
    if (rc == BFH_OK) rc = value_block_map_check_chunk(m, c, b, len, err);
    if (rc != BFH_OK) break;
    if (chunks_read) (*chunks_read)++;
    if (bytes_read) *bytes_read += len;
    uint32_t cnt = (uint32_t)((len - 4) / eb);
    uint32_t l = 0, h = cnt; /* first entry >= fp */
    while (l < h) {
      uint32_t mid = l + (h - l) / 2;
      if (decode_fixed32(b + (size_t)mid * eb) < fp)
        l = mid + 1;
      else
        h = mid;
    }
    for (; l < cnt; l++) {
      const uint8_t *e = b + (size_t)l * eb;
      if (decode_fixed32(e) != fp) break;
      if (*n >= m->nblocks) continue;
      if (bounds)
        bounds[*n] = m->version >= 4 ? seq_bound(m->seq_lo, m->seq_hi, m->seq_shift,
                                                 (uint32_t)e[6] | (uint32_t)e[7] << 8)
                                     : VALUE_BLOCK_MAP_NO_BOUND;
      out[(*n)++] = (uint32_t)e[4] | (uint32_t)e[5] << 8;
    }
    if (l < cnt) break; /* a larger fingerprint ends the run */
  }
  free(heap);
  if (rc != BFH_OK) {
    *n = 0;
    return rc;
  }
  if (sort_blocks(out, bounds, n) != BFH_OK) {
    *n = 0;
    return err_set(err, BFH_E_NOMEM, "value-to-block map: out of memory");
  }
  return BFH_OK;
}

int value_block_map_verify(const value_block_map_t *m, value_block_map_read_fn read, void *arg,
                           uint64_t base, err_t *err) {
  if (m->own_read) {
    read = m->own_read;
    arg = m->own_arg;
  }
  uint8_t *b = malloc((size_t)m->entry_bytes * m->chunk_entries + 4);
  if (!b) return err_set(err, BFH_E_NOMEM, "value-to-block map: out of memory");
  int rc = BFH_OK;
  for (uint32_t c = 0; c < m->nchunks && rc == BFH_OK; c++) {
    uint64_t off;
    size_t len;
    value_block_map_chunk_span(m, c, &off, &len);
    rc = read(arg, off, len, b, err);
    if (rc == BFH_OK) rc = value_block_map_check_chunk(m, c, b, len, err);
    if (rc == BFH_E_CORRUPT) err_prefix(err, "chunk at %llu: ", (unsigned long long)(base + off));
  }
  free(b);
  for (uint32_t i = 0; m->ranges && i < m->nzones && rc == BFH_OK; i++) {
    const zone_range_t *r = &m->ranges[i];
    if (!r->f) continue;
    body_reader_t br = {read, arg, r->body_off, NULL, 0};
    rc = range_filter_verify_body(r->f, read_body, &br, err);
    if (rc == BFH_E_CORRUPT)
      err_prefix(err,
                 "range filter of zone %llu, piece at %llu: ", (unsigned long long)m->zones[i].id,
                 (unsigned long long)(base + r->body_off + br.last));
  }
  return rc;
}
