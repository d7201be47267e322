/* fuzz_seeds: writes the seed corpora of the fuzz targets from real files.
 *
 *   fuzz_seeds WORK CORPUS
 *
 * makes three small databases under WORK (the own engine through bfh.h; the LevelDB
 * engine through bfh.h, whose tables are snappy-compressed; and a LevelDB database made
 * through the LevelDB C API with compression off), then copies their files, and the blocks,
 * records and filters inside them (and filter cache files with block filters, built from the
 * LevelDB tables), into CORPUS/<target>/ (one directory per fuzz target,
 * named as the fuzz_<target>.c files). The block_filter target's seeds are built from random
 * hashes. Keys, values and sizes come from a fixed seed.
 * Exits non-zero, with a message, if a database cannot be made or a target gets no seed.
 */
#include <dirent.h>
#include <errno.h>
#include <leveldb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bfh.h"
#include "filters/block_filter.h"
#include "index/value_block_map.h"
#include "lsm/block.h"
#include "util/env.h"
#include "lsm/log.h"
#include "lsm/table.h"
#include "index/leaf_cache.h"
#include "lsm_hooks/engines/leveldb/ldb_engine.h"
#include "util/coding.h"
#include "util/random.h"

static const char *corpus;

static void die(const char *what, const char *detail) {
  fprintf(stderr, "fuzz_seeds: %s: %s\n", what, detail ? detail : "");
  exit(1);
}

static void put_seed(const char *target, const char *name, const void *data, size_t n) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", corpus, target);
  if (mkdir(path, 0755) != 0 && errno != EEXIST) die("mkdir", path);
  snprintf(path, sizeof path, "%s/%s/%s", corpus, target, name);
  FILE *f = fopen(path, "wb");
  if (!f || (n && fwrite(data, 1, n, f) != n) || fclose(f) != 0) die("write", path);
}

static void *read_all(const char *path, size_t *n) {
  void *data = NULL;
  err_t err;
  if (env_read_file(env_default(), path, &data, n, &err) != BFH_OK) die("read", err.msg);
  return data;
}

static int has_suffix(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int on_match(void *arg, const void *key, size_t len) {
  (void)arg, (void)key, (void)len;
  return 0;
}

/* Fills the database through bfh.h: keys of varied lengths, values from a small
   set (so that searches and filters repeat), some deletions and an empty value. */
static void fill(bfh_db *db, int n, uint64_t seed) {
  rng_t r;
  rng_init(&r, seed);
  char key[64], val[64];
  for (int i = 0; i < n; i++) {
    int kl = snprintf(key, sizeof key, "k%0*d", 1 + (int)rng_below(&r, 20), i);
    int vl = snprintf(val, sizeof val, "value-%u", (unsigned)rng_below(&r, 50));
    if (bfh_put(db, key, (size_t)kl, val, (size_t)vl) != BFH_OK) die("put", bfh_last_error(db));
    if (i % 37 == 0 && bfh_delete(db, key, (size_t)kl) != BFH_OK) die("delete", bfh_last_error(db));
  }
  if (bfh_put(db, "empty-value", 11, "", 0) != BFH_OK) die("put", bfh_last_error(db));
  /* A search makes the LevelDB engine index its new tables (and write their cache files). */
  if (bfh_search(db, "value-7", 7, BFH_SEARCH_HIERARCHY, on_match, NULL, NULL) != BFH_OK)
    die("search", bfh_last_error(db));
}

/* The blocks of an own-engine table file: the index, the meta index, every data block the
   index lists and every meta block (the key filter and the value filter also go to their
   own targets). */
static void seed_own_table(const char *path, const char *base) {
  size_t n;
  uint8_t *file = read_all(path, &n);
  put_seed("table", base, file, n);
  char name[256];
  if (n >= TABLE_FOOTER_BYTES) {
    const uint8_t *f = file + n - TABLE_FOOTER_BYTES;
    block_handle_t hs[2];
    const uint8_t *q = block_handle_decode(f, f + 40, &hs[0]);
    if (q) q = block_handle_decode(q, f + 40, &hs[1]);
    for (int i = 0; q && i < 2; i++) {
      if (hs[i].offset + hs[i].size > n) continue;
      snprintf(name, sizeof name, "%s-%s", base, i ? "index" : "metaindex");
      put_seed("block", name, file + hs[i].offset, (size_t)hs[i].size);
      block_t b;
      if (block_parse(&b, file + hs[i].offset, (size_t)hs[i].size)) continue;
      block_cursor_t c;
      block_cursor_init(&c, &b, bytewise_compare);
      int j = 0;
      for (block_cursor_seek_first(&c); block_cursor_valid(&c); block_cursor_next(&c), j++) {
        block_handle_t h;
        if (!block_handle_decode(c.val, c.val + c.val_len, &h) || h.offset + h.size > n) continue;
        const char *target = "block";
        if (i == 0 && c.key_len == 14 && memcmp(c.key, TABLE_KEY_FILTER_NAME, 14) == 0)
          target = "blocked_filter";
        else if (i == 0)
          target = "value_filter";
        if (i == 1 && j % 4 != 0) continue; /* every 4th data block is enough */
        snprintf(name, sizeof name, "%s-%s%d", base, i ? "data" : "meta", j);
        put_seed(target, name, file + h.offset, (size_t)h.size);
      }
      block_cursor_release(&c);
    }
  }
  free(file);
}

/* The manifest: the whole file, and every record (a version edit). */
static void seed_own_manifest(const char *path, const char *base) {
  size_t n;
  uint8_t *file = read_all(path, &n);
  put_seed("manifest", base, file, n);
  put_seed("log", base, file, n);
  free(file);
  log_reader_t *r;
  err_t err;
  if (log_reader_open(env_default(), path, &r, &err) != BFH_OK) die("manifest", err.msg);
  const void *rec;
  size_t len;
  char name[256];
  for (int i = 0; log_reader_next(r, &rec, &len, &err) == BFH_OK; i++) {
    snprintf(name, sizeof name, "%s-edit%d", base, i);
    put_seed("version_edit", name, rec, len);
  }
  log_reader_close(r);
}

/* Block filters are not in the engines' files yet: the block_filter target gets filters built
   here from random hashes, of a few shapes (no block, one block, a partial last word with
   empty blocks left out, many blocks at 1 and 32 bits per value). */
static void seed_block_filters(void) {
  static const struct {
    uint32_t nblocks, max_values, bits;
  } shapes[] = {{0, 1, 10}, {1, 3, 10}, {65, 20, 10}, {300, 40, 1}, {130, 8, 32}};
  rng_t r;
  rng_init(&r, 5);
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
    block_filter_builder_t *b = block_filter_builder_create(shapes[s].bits);
    if (!b) die("block filter", "builder");
    for (uint32_t j = 0; j < shapes[s].nblocks; j++) {
      uint64_t n = j % 7 == 3 ? 0 : 1 + rng_below(&r, shapes[s].max_values);
      for (uint64_t i = 0; i < n; i++)
        if (block_filter_builder_add(b, rng_next(&r)) != BFH_OK) die("block filter", "add");
      if (block_filter_builder_end_block(b, (uint64_t)j * 4096, 4000) != BFH_OK)
        die("block filter", "end_block");
    }
    block_filter_t *f;
    err_t err;
    if (block_filter_builder_finish(b, &f, &err) != BFH_OK) die("block filter", err.msg);
    block_filter_builder_destroy(b);
    size_t n = block_filter_serialized_size(f);
    uint8_t *buf = malloc(n);
    if (!buf) die("block filter", "out of memory");
    block_filter_serialize(f, buf);
    char name[64];
    snprintf(name, sizeof name, "blocks%u-bits%u", shapes[s].nblocks, shapes[s].bits);
    put_seed("block_filter", name, buf, n);
    free(buf);
    block_filter_destroy(f);
  }
}

/* Value-to-block maps built here from random hashes and sequence numbers (no value, one
   block, a few chunks, a run of one fingerprint over a chunk boundary) and 0 to 64 zones of
   random codes (the first declared without a code: empty), of version 6 (a range filter per
   zone with a code; 600 codes: a body of 3 pieces), 5 (zones without them) and 4 (no zones
   written), each as fixed32 head length | head | chunks, the value_block_map target's input. */
static void seed_value_block_maps(void) {
  static const struct {
    uint32_t nblocks, per_block, repeat, zones, codes, version;
  } shapes[] = {{0, 0, 0, 3, 3, 6},    {1, 3, 0, 0, 3, 6},     {40, 30, 0, 5, 3, 6},
                {3, 400, 1, 64, 3, 6}, {40, 30, 0, 3, 600, 6}, {0, 0, 0, 3, 3, 5},
                {40, 30, 0, 5, 3, 5},  {3, 400, 1, 64, 3, 5},  {40, 30, 0, 5, 3, 4}};
  rng_t r;
  rng_init(&r, 6);
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
    value_block_map_builder_t *b = value_block_map_builder_create();
    if (!b) die("value block map", "builder");
    if (value_block_map_builder_set_format(b, shapes[s].version, VALUE_BLOCK_MAP_SKETCH_BITS) !=
        BFH_OK)
      die("value block map", "set_format");
    for (uint32_t z = 0; z < shapes[s].zones; z++) {
      uint64_t id = rng_next(&r);
      int rc = z == 0 ? value_block_map_builder_declare_zone(b, id) : BFH_OK;
      for (uint32_t i = 0; z > 0 && i < shapes[s].codes && rc == BFH_OK; i++)
        rc = value_block_map_builder_zone(b, id, z == 1 && i == 0 ? 0 : rng_next(&r));
      if (rc != BFH_OK) die("value block map", "zone");
    }
    for (uint32_t j = 0; j < shapes[s].nblocks; j++) {
      for (uint32_t i = 0; i < shapes[s].per_block; i++)
        if (value_block_map_builder_add(b, shapes[s].repeat ? 42 : rng_next(&r),
                                        rng_next(&r) >> 8) != BFH_OK)
          die("value block map", "add");
      if (value_block_map_builder_end_block(b, (uint64_t)j * 4096, 4000) != BFH_OK)
        die("value block map", "end_block");
    }
    uint8_t *head, *chunks;
    size_t hl, cl;
    if (value_block_map_builder_finish(b, &head, &hl, &chunks, &cl) != BFH_OK)
      die("value block map", "finish");
    value_block_map_builder_destroy(b);
    uint8_t *buf = malloc(4 + hl + cl);
    if (!buf) die("value block map", "out of memory");
    encode_fixed32(buf, (uint32_t)hl);
    memcpy(buf + 4, head, hl);
    memcpy(buf + 4 + hl, chunks, cl);
    char name[64];
    snprintf(name, sizeof name, "v%u-blocks%u-x%u-zones%u-codes%u", shapes[s].version,
             shapes[s].nblocks, shapes[s].per_block, shapes[s].zones, shapes[s].codes);
    put_seed("value_block_map", name, buf, 4 + hl + cl);
    free(buf);
    free(head);
    free(chunks);
  }
}

/* Copies every file of dir whose name ends in one of the suffixes given to target. */
static void seed_files(const char *dir, const char *prefix, const char *suffix, const char *target,
                       void (*each)(const char *path, const char *base)) {
  DIR *d = opendir(dir);
  if (!d) die("opendir", dir);
  struct dirent *e;
  char path[4096], base[512];
  while ((e = readdir(d)) != NULL) {
    if (strncmp(e->d_name, prefix, strlen(prefix)) != 0 || !has_suffix(e->d_name, suffix)) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    snprintf(base, sizeof base, "%s-%s", strrchr(dir, '/') + 1, e->d_name);
    if (each) {
      each(path, base);
    } else {
      size_t n;
      void *data = read_all(path, &n);
      put_seed(target, base, data, n);
      free(data);
    }
  }
  closedir(d);
}

/* Filter cache files: the filters of the LevelDB table at path, bound to its tag: with a block
   filter, and (version 5) with its block filter and value-to-block map. */
static void seed_cache_with_blocks(const char *path, const char *base) {
  for (int maps = 0; maps < 2; maps++) {
    value_index_params_t p = {
        .m = 4096, .k = 3, .seed = BFH_DEFAULT_SEED, .block_bits = BLOCK_FILTER_DEFAULT_BITS};
    index_leaf_read_t out = {.want_map = maps};
    err_t err;
    leaf_cache_table_t t = {.number = 1, .size = 2, .stamp = 3};
    if (ldb_filter_read(env_default(), path, &p, &out, NULL, &err) != BFH_OK)
      die("ldb_filter_read", err.msg);
    t.tag = out.tag;
    uint8_t *buf;
    size_t n;
    leaf_cache_map_bytes_t mb = {out.map_head, out.map_chunks, out.map_head_len,
                                 out.map_chunks_len};
    if (leaf_cache_encode_map(&t, out.filter, out.blocks, &mb, &buf, &n, &err) != BFH_OK)
      die("leaf_cache_encode_map", err.msg);
    char name[600];
    snprintf(name, sizeof name, "%s-%s.vf", base, maps ? "map" : "blocks");
    if (!maps || mb.head) put_seed("leaf_cache", name, buf, n);
    free(buf);
    free(out.map_head);
    free(out.map_chunks);
    value_filter_destroy(out.filter);
    block_filter_destroy(out.blocks);
  }
}

static bfh_db *open_db(const char *dir, bfh_engine engine) {
  bfh_options opt;
  bfh_options_init(&opt);
  opt.engine = engine;
  opt.value_filter_bits = 4096;
  opt.memtable_bytes = 64 << 10;
  opt.table_bytes = 32 << 10;
  /* Leaves on disk: the LevelDB engine writes its filter cache files at once. */
  opt.leaves_on_disk = BFH_LEAVES_ON_DISK;
  bfh_db *db;
  if (bfh_open(dir, &opt, &db) != BFH_OK) die("open", bfh_last_error(NULL));
  return db;
}

/* The leveldb.sstables text of the LevelDB database in dir (opened with the C API). */
static void seed_sstables(const char *dir, const char *base) {
  leveldb_options_t *o = leveldb_options_create();
  char *error = NULL;
  leveldb_t *db = leveldb_open(o, dir, &error);
  if (!db) die("leveldb_open", error);
  char *text = leveldb_property_value(db, "leveldb.sstables");
  if (!text) die("leveldb.sstables", dir);
  put_seed("ldb_sstables", base, text, strlen(text));
  leveldb_free(text);
  leveldb_close(db);
  leveldb_options_destroy(o);
}

/* A LevelDB database made through the C API, uncompressed tables (bfh's LevelDB engine
   always uses snappy); the last writes stay in its log. */
static void make_raw_leveldb(const char *dir) {
  leveldb_options_t *o = leveldb_options_create();
  leveldb_options_set_create_if_missing(o, 1);
  leveldb_options_set_compression(o, leveldb_no_compression);
  leveldb_options_set_write_buffer_size(o, 64 << 10);
  char *error = NULL;
  leveldb_t *db = leveldb_open(o, dir, &error);
  if (!db) die("leveldb_open", error);
  leveldb_writeoptions_t *w = leveldb_writeoptions_create();
  rng_t r;
  rng_init(&r, 42);
  char key[64], val[64];
  for (int i = 0; i < 3000 && !error; i++) {
    int kl = snprintf(key, sizeof key, "r%0*d", 1 + (int)rng_below(&r, 20), i);
    int vl = snprintf(val, sizeof val, "raw-%u", (unsigned)rng_below(&r, 50));
    leveldb_put(db, w, key, (size_t)kl, val, (size_t)vl, &error);
    if (i % 41 == 0 && !error) leveldb_delete(db, w, key, (size_t)kl, &error);
    if (i == 2500 && !error) leveldb_compact_range(db, NULL, 0, NULL, 0);
  }
  if (!error) leveldb_put(db, w, "", 0, "empty-key", 9, &error);
  if (error) die("leveldb_put", error);
  leveldb_writeoptions_destroy(w);
  leveldb_close(db);
  leveldb_options_destroy(o);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: fuzz_seeds WORK CORPUS\n");
    return 2;
  }
  const char *work = argv[1];
  corpus = argv[2];
  char dir[4096], sub[4096];
  if (mkdir(work, 0755) != 0 && errno != EEXIST) die("mkdir", work);
  if (mkdir(corpus, 0755) != 0 && errno != EEXIST) die("mkdir", corpus);

  /* Own engine: tables, manifest, BFH-PARAMS; the writes after the reopen stay in its log. */
  snprintf(dir, sizeof dir, "%s/lsm", work);
  bfh_db *db = open_db(dir, BFH_ENGINE_LSM);
  fill(db, 4000, 1);
  bfh_close(db);
  db = open_db(dir, BFH_ENGINE_LSM);
  fill(db, 200, 2);
  bfh_close(db);
  seed_files(dir, "", ".sst", NULL, seed_own_table);
  seed_files(dir, "MANIFEST-", "", NULL, seed_own_manifest);
  seed_files(dir, "", ".log", "log", NULL);
  seed_files(dir, "BFH-PARAMS", "", "db_params", NULL);

  /* LevelDB engine (snappy tables) and its filter cache. */
  snprintf(dir, sizeof dir, "%s/ldb_snappy", work);
  db = open_db(dir, BFH_ENGINE_LEVELDB);
  fill(db, 4000, 3);
  bfh_close(db);
  seed_files(dir, "", ".ldb", "ldb_table", NULL);
  seed_files(dir, "", ".log", "ldb_log", NULL);
  seed_files(dir, "MANIFEST-", "", "ldb_log", NULL);
  seed_files(dir, "MANIFEST-", "", "ldb_precheck", NULL);
  snprintf(sub, sizeof sub, "%s/%s", dir, "bfh-filters");
  seed_files(sub, "", ".vf", "leaf_cache", NULL);
  seed_files(dir, "", ".ldb", NULL, seed_cache_with_blocks);
  seed_sstables(dir, "ldb_snappy-sstables");

  /* LevelDB through its C API, uncompressed. */
  snprintf(dir, sizeof dir, "%s/ldb_raw", work);
  make_raw_leveldb(dir);
  seed_files(dir, "", ".ldb", "ldb_table", NULL);
  seed_files(dir, "", ".log", "ldb_log", NULL);
  seed_sstables(dir, "ldb_raw-sstables");

  seed_block_filters();
  seed_value_block_maps();

  static const char *const targets[] = {
      "block",     "table",        "log",          "version_edit",   "manifest",
      "db_params", "value_filter", "block_filter", "blocked_filter", "ldb_table",
      "ldb_log",   "ldb_sstables", "leaf_cache",   "ldb_precheck"};
  for (size_t i = 0; i < sizeof targets / sizeof *targets; i++) {
    snprintf(sub, sizeof sub, "%s/%s", corpus, targets[i]);
    DIR *d = opendir(sub);
    int files = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) files += e->d_name[0] != '.';
    if (d) closedir(d);
    if (files == 0) die("no seed for target", targets[i]);
    printf("%-15s %d seeds\n", targets[i], files);
  }
  return 0;
}
