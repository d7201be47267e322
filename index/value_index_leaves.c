/* The value index's leaf store: one leaf per indexed table, in an array sorted by table
 * number (binary search; adds and removes are rare next to searches, so the O(B) memmove does
 * not matter), which is also the order in which BFH_SEARCH_LEAVES tests them.
 *
 * Leaves on disk: a leaf keeps the path of the file holding its serialized filter
 * (filters/value_filter.h layout) and the offset of that serialized form. A probe reads the k
 * words it needs through the index's env (value_index_params_t.io: the database's, so that
 * fault injection reaches these reads too) and a small cache of open files; any failure to
 * open or read counts as "maybe" (never a false negative: the table is scanned). While
 * value_index_add runs, the new leaf's words are still in memory, so the hierarchy's load() of that
 * leaf reads no file.
 *
 * A filter read back from disk is verified before it may say "no": when a leaf is added its
 * words are in memory (checked by the CRC of the block or file they came from), and the leaf
 * keeps a CRC32C of every CHUNK_BYTES of them. A probe reads the whole chunk around each word
 * it needs and checks it; a chunk that does not match (the file changed or went bad under an
 * open database) counts as "maybe", and so does a whole-filter read that does not match.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filters/bits.h"
#include "index/value_index_private.h"
#include "util/coding.h"
#include "util/crc32c.h"

#define FILE_SLOTS VALUE_INDEX_FILE_SLOTS
#define CHUNK_WORDS 64 /* a leaf on disk is verified in chunks of 512 bytes */
#define CHUNK_BYTES (8 * CHUNK_WORDS)

/* ---- The sorted leaf array ---------------------------------------------------------- */

size_t value_index_leaf_lower_bound(const value_index_t *vi, uint64_t x) {
  size_t lo = 0, hi = vi->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (vi->numbers[mid] < x)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

void value_index_bits_set(value_index_t *vi, uint64_t number, int on) {
  if (vi->bits_broken || number >= VALUE_INDEX_BITS_LIMIT) return;
  size_t w = (size_t)(number >> 6);
  if (w >= vi->nbits_words) {
    if (!on) return;
    size_t n = vi->nbits_words ? vi->nbits_words : 16;
    while (n <= w) n *= 2;
    uint64_t *b = realloc(vi->leaf_bits, n * sizeof *b);
    if (!b) {
      vi->bits_broken = 1; /* searches look numbers up from now on */
      return;
    }
    memset(b + vi->nbits_words, 0, (n - vi->nbits_words) * sizeof *b);
    vi->leaf_bits = b;
    vi->nbits_words = n;
  }
  if (on)
    vi->leaf_bits[w] |= 1ull << (number & 63);
  else
    vi->leaf_bits[w] &= ~(1ull << (number & 63));
}

leaf_t *value_index_leaf_find(const value_index_t *vi, uint64_t number) {
  size_t i = value_index_leaf_lower_bound(vi, number);
  return (i < vi->n && vi->numbers[i] == number) ? vi->leaves[i] : NULL;
}

void value_index_leaf_free(leaf_t *l) {
  if (!l) return;
  value_filter_destroy(l->filter);
  free(l->path);
  free(l->crcs);
  free(l);
}

static size_t chunk_count(size_t nwords) {
  return (nwords + CHUNK_WORDS - 1) / CHUNK_WORDS;
}

/* CRC32C of chunk c of a filter's words as they are stored (little-endian). */
static uint32_t chunk_crc(const uint64_t *words, size_t nwords, size_t c) {
  uint8_t buf[CHUNK_BYTES];
  size_t first = c * CHUNK_WORDS, n = nwords - first < CHUNK_WORDS ? nwords - first : CHUNK_WORDS;
  for (size_t i = 0; i < n; i++) encode_fixed64(buf + 8 * i, words[first + i]);
  return crc32c_value(buf, 8 * n);
}

/* ---- New leaves ------------------------------------------------------------------------- */

leaf_t *value_index_leaf_new(uint64_t number, value_filter_t *filter, const char *path,
                             uint64_t offset, int on_disk) {
  leaf_t *l = calloc(1, sizeof *l);
  if (!l) return NULL;
  size_t nchunks = chunk_count(filter->nwords);
  if ((path && !(l->path = strdup(path))) ||
      (on_disk && !(l->crcs = malloc(nchunks * sizeof *l->crcs)))) {
    free(l->path);
    free(l);
    return NULL;
  }
  for (size_t c = 0; on_disk && c < nchunks; c++)
    l->crcs[c] = chunk_crc(filter->words, filter->nwords, c);
  l->number = number;
  l->filter = filter;
  l->offset = offset;
  l->popcount = value_filter_popcount(filter);
  return l;
}

/* ---- Reading leaves from disk ------------------------------------------------------- */

/* Returns the open file of leaf l (slot index in *slot, or -1 if the file is not cached and
   the caller must close it), or NULL on failure. Called with no lock but the index's read or
   write lock held. */
static env_rfile_t *file_get(leaf_files_t *fs, const leaf_t *l, int *slot) {
  *slot = -1;
  pthread_mutex_lock(&fs->mu);
  int victim = -1;
  for (int i = 0; i < FILE_SLOTS; i++) {
    leaf_file_slot_t *s = &fs->slots[i];
    if (s->f && s->number == l->number) {
      s->refs++;
      s->last_use = ++fs->clock;
      *slot = i;
      pthread_mutex_unlock(&fs->mu);
      return s->f;
    }
    if (s->refs != 0) continue;
    if (victim < 0 || !s->f) {
      if (victim < 0 || fs->slots[victim].f) victim = i;
    } else if (fs->slots[victim].f && s->last_use < fs->slots[victim].last_use) {
      victim = i;
    }
  }
  pthread_mutex_unlock(&fs->mu);
  if (!l->path) return NULL;
  env_rfile_t *f = NULL;
  if (env_open_read(fs->io, l->path, &f, NULL) != BFH_OK) return NULL;
  if (victim < 0) return f;
  pthread_mutex_lock(&fs->mu);
  leaf_file_slot_t *s = &fs->slots[victim];
  if (s->refs == 0) {
    env_rfile_close(s->f);
    s->f = f;
    s->number = l->number;
    s->refs = 1;
    s->last_use = ++fs->clock;
    *slot = victim;
  }
  pthread_mutex_unlock(&fs->mu);
  return f;
}

static void file_put(leaf_files_t *fs, env_rfile_t *f, int slot) {
  if (slot < 0) {
    env_rfile_close(f);
    return;
  }
  pthread_mutex_lock(&fs->mu);
  fs->slots[slot].refs--;
  pthread_mutex_unlock(&fs->mu);
}

void value_index_files_init(leaf_files_t *fs, env_t *io) {
  fs->io = io ? io : env_default();
  pthread_mutex_init(&fs->mu, NULL);
}

void value_index_files_release(leaf_files_t *fs) {
  for (int i = 0; i < FILE_SLOTS; i++) env_rfile_close(fs->slots[i].f);
  pthread_mutex_destroy(&fs->mu);
}

void value_index_files_forget(leaf_files_t *fs, uint64_t number) {
  pthread_mutex_lock(&fs->mu);
  for (int i = 0; i < FILE_SLOTS; i++) {
    leaf_file_slot_t *s = &fs->slots[i];
    if (s->f && s->number == number && s->refs == 0) {
      env_rfile_close(s->f);
      s->f = NULL;
    }
  }
  pthread_mutex_unlock(&fs->mu);
}

/* Reads exactly n bytes at off; BFH_OK, or an error (the env's, or BFH_E_IO at end of file). */
static int read_full(env_rfile_t *f, void *buf, size_t n, uint64_t off) {
  size_t got = 0;
  int rc = env_rfile_pread(f, off, buf, n, &got, NULL);
  return rc != BFH_OK ? rc : got == n ? BFH_OK : BFH_E_IO;
}

static int leaf_load(value_index_t *vi, leaf_t *l, uint64_t *out);

int value_index_leaf_probe(value_index_t *vi, leaf_t *l, const probe_t *p) {
  if (l->filter) return bits_test_probe(l->filter->words, p);
  if (vi->adding_words && vi->adding_number == l->number)
    return bits_test_probe(vi->adding_words, p);
  if (vi->params.leaves_on_disk == BFH_LEAVES_ON_DISK_WHOLE) { /* the paper's cost */
    uint64_t *words = malloc(vi->nwords * 8);
    if (!words) return 1;
    (void)leaf_load(vi, l, words); /* a failed read leaves all ones: maybe */
    int maybe = bits_test_probe(words, p);
    free(words);
    return maybe;
  }
  uint64_t off = l->offset;
  if (!l->crcs) return 1;
  int slot;
  env_rfile_t *f = file_get(&vi->files, l, &slot);
  if (!f) return 1;
  int maybe = 1;
  uint8_t chunk[CHUNK_BYTES];
  size_t have = SIZE_MAX; /* the chunk in `chunk`, verified */
  for (uint32_t i = 0; i < p->k; i++) {
    uint64_t pos = p->pos[i], w = pos >> 6;
    size_t c = (size_t)(w / CHUNK_WORDS);
    if (c != have) {
      size_t first = c * CHUNK_WORDS;
      size_t n = vi->nwords - first < CHUNK_WORDS ? vi->nwords - first : CHUNK_WORDS;
      if (read_full(f, chunk, 8 * n, off + value_filter_word_offset(first)) != BFH_OK ||
          crc32c_value(chunk, 8 * n) != l->crcs[c])
        break; /* unreadable or damaged: maybe */
      have = c;
    }
    if (!((decode_fixed64(chunk + 8 * (w % CHUNK_WORDS)) >> (pos & 63)) & 1)) {
      maybe = 0;
      break;
    }
  }
  file_put(&vi->files, f, slot);
  return maybe;
}

/* 1 if the stored words in buf (nwords of them, little-endian) match l's chunk CRCs. */
static int chunks_match(const leaf_t *l, const uint8_t *buf, size_t nwords) {
  if (!l->crcs) return 0;
  for (size_t c = 0; c < chunk_count(nwords); c++) {
    size_t first = c * CHUNK_WORDS;
    size_t n = nwords - first < CHUNK_WORDS ? nwords - first : CHUNK_WORDS;
    if (crc32c_value(buf + 8 * first, 8 * n) != l->crcs[c]) return 0;
  }
  return 1;
}

/* Copies leaf l's words into out. On a read failure, out is all ones over m bits (an
   ancestor then says maybe everywhere: slower, never wrong) and the error is returned. */
static int leaf_load(value_index_t *vi, leaf_t *l, uint64_t *out) {
  if (l->filter) {
    memcpy(out, l->filter->words, vi->nwords * 8);
    return BFH_OK;
  }
  if (vi->adding_words && vi->adding_number == l->number) {
    memcpy(out, vi->adding_words, vi->nwords * 8);
    return BFH_OK;
  }
  int rc = BFH_E_IO;
  int slot;
  env_rfile_t *f = file_get(&vi->files, l, &slot);
  if (f) {
    uint8_t *buf = malloc(vi->nwords * 8);
    if (buf &&
        read_full(f, buf, vi->nwords * 8, l->offset + value_filter_word_offset(0)) == BFH_OK &&
        chunks_match(l, buf, vi->nwords)) {
      for (size_t i = 0; i < vi->nwords; i++) out[i] = decode_fixed64(buf + 8 * i);
      rc = BFH_OK;
    }
    free(buf);
    file_put(&vi->files, f, slot);
  }
  if (rc != BFH_OK) {
    memset(out, 0xff, vi->nwords * 8);
    if (vi->params.m % 64) out[vi->nwords - 1] = (1ull << (vi->params.m % 64)) - 1;
  }
  return rc;
}

static int source_probe(void *ctx, uint64_t id, const probe_t *p) {
  value_index_t *vi = ctx;
  leaf_t *l = value_index_leaf_find(vi, id);
  return l ? value_index_leaf_probe(vi, l, p) : 1;
}

static int source_load(void *ctx, uint64_t id, uint64_t *out) {
  value_index_t *vi = ctx;
  leaf_t *l = value_index_leaf_find(vi, id);
  if (!l) {
    if (vi->adding_words && vi->adding_number == id) {
      memcpy(out, vi->adding_words, vi->nwords * 8);
      return BFH_OK;
    }
    return BFH_E_INVALID;
  }
  /* A failed read leaves all ones in out: the ancestors over-approximate, which keeps the
     no-false-negative guarantee, so the hierarchy may go on. */
  (void)leaf_load(vi, l, out);
  return BFH_OK;
}

hierarchy_leaf_source_t value_index_leaf_source(value_index_t *vi) {
  return (hierarchy_leaf_source_t){source_probe, source_load, vi};
}

uint64_t value_index_leaf_mem_bytes(const value_index_t *vi, const leaf_t *l) {
  uint64_t b = 0;
  if (l->filter) b += vi->nwords * 8;
  if (l->crcs) b += chunk_count(vi->nwords) * 4;
  return b;
}

/* ---- Folding a leaf as it streams in ---------------------------------------------------- */

void value_index_fold_words(const fold_map_t *map, const uint64_t *words, size_t first, size_t n,
                            uint64_t *fw) {
  for (size_t i = 0; i < n; i++)
    for (uint64_t x = words[i]; x; x &= x - 1) {
      uint64_t j = fold_map_pos(map, (uint64_t)(first + i) * 64 + (uint64_t)__builtin_ctzll(x));
      fw[j >> 6] |= 1ull << (j & 63);
    }
}

/* Sets in fw every folded position of the leaf positions [lo, hi) (lo < hi <= m): a run, since
   fold_map_pos never decreases. */
static void fold_ones(const fold_map_t *map, uint64_t lo, uint64_t hi, uint64_t *fw) {
  for (uint64_t j = fold_map_pos(map, lo), last = fold_map_pos(map, hi - 1); j <= last; j++)
    fw[j >> 6] |= 1ull << (j & 63);
}

/* Notes damage to the chunks [c, c + n) of streamed leaf l (what: why) for the stats. Write
   lock held. */
static void note_fold_damage(value_index_t *vi, const leaf_t *l, size_t c, size_t n,
                             const char *what) {
  vi->fold_damaged += n;
  snprintf(vi->fold_damage_msg, sizeof vi->fold_damage_msg,
           "table %llu: leaf in %s at offset %llu: %s", (unsigned long long)l->number, l->path,
           (unsigned long long)(l->offset + value_filter_word_offset((uint64_t)c * CHUNK_WORDS)),
           what);
}

/* Folds chunk c of l, whose stored bytes are at buf (n words, read), into fw; one that does
   not match its CRC as ones. */
static void fold_chunk(value_index_t *vi, const leaf_t *l, size_t c, const uint8_t *buf, size_t n,
                       const fold_map_t *map, uint64_t *fw) {
  size_t first = c * CHUNK_WORDS;
  if (crc32c_value(buf, 8 * n) != l->crcs[c]) {
    note_fold_damage(vi, l, c, 1, "chunk checksum mismatch");
    uint64_t hi = (uint64_t)(first + n) * 64;
    fold_ones(map, (uint64_t)first * 64, hi < vi->params.m ? hi : vi->params.m, fw);
    return;
  }
  uint64_t w[CHUNK_WORDS];
  for (size_t i = 0; i < n; i++) w[i] = decode_fixed64(buf + 8 * i);
  value_index_fold_words(map, w, first, n, fw);
}

void value_index_leaf_fold_stream(value_index_t *vi, const leaf_t *l, const fold_map_t *map,
                                  uint64_t *fw) {
  const size_t per_read = VALUE_INDEX_FOLD_READ_BYTES / CHUNK_BYTES; /* chunks */
  size_t nchunks = chunk_count(vi->nwords);
  env_rfile_t *f = NULL;
  uint8_t *buf = malloc(VALUE_INDEX_FOLD_READ_BYTES);
  const char *why = !buf ? "out of memory" : "cannot open the file";
  if (buf) value_index_held_add(vi, VALUE_INDEX_FOLD_READ_BYTES);
  if (buf && l->path && env_open_read(vi->files.io, l->path, &f, NULL) == BFH_OK)
    why = "cannot read";
  for (size_t c0 = 0; c0 < nchunks; c0 += per_read) {
    size_t c1 = c0 + per_read < nchunks ? c0 + per_read : nchunks;
    size_t first = c0 * CHUNK_WORDS;
    size_t last = c1 * CHUNK_WORDS < vi->nwords ? c1 * CHUNK_WORDS : vi->nwords;
    uint64_t at = l->offset + value_filter_word_offset(first);
    if (!f || read_full(f, buf, 8 * (last - first), at) != BFH_OK) {
      note_fold_damage(vi, l, c0, c1 - c0, why);
      uint64_t hi = (uint64_t)last * 64;
      fold_ones(map, (uint64_t)first * 64, hi < vi->params.m ? hi : vi->params.m, fw);
      continue;
    }
    for (size_t c = c0; c < c1; c++) {
      size_t w0 = c * CHUNK_WORDS;
      size_t n = vi->nwords - w0 < CHUNK_WORDS ? vi->nwords - w0 : CHUNK_WORDS;
      fold_chunk(vi, l, c, buf + 8 * (w0 - first), n, map, fw);
    }
  }
  env_rfile_close(f);
  if (buf) value_index_held_add(vi, -(int64_t)VALUE_INDEX_FOLD_READ_BYTES);
  free(buf);
}
