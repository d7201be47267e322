/* bfh_options: the defaults, a caller's struct read as far as its struct_size reaches, and
 * the checks of a set against the engine kind that would open it (engines.c's table). */
#include <stdio.h>
#include <string.h>

#include "filters/hash.h"
#include "api/handle.h"

/* ---- Options ------------------------------------------------------------------------- */

static void options_defaults(bfh_options *opt) {
  memset(opt, 0, sizeof *opt);
  opt->struct_size = sizeof *opt;
  opt->engine = engine_kind_at(0)->id; /* the first row of engines.c */
  opt->create_if_missing = 1;
  /* m, k and the seed: 0, the database's own, or a new database's (api_params_want) */
  opt->value_filter_bits = 0;
  opt->value_filter_hashes = 0;
  opt->order = 5;
  opt->key_bits_per_key = 10;
  opt->memtable_bytes = 4u << 20;
  opt->table_bytes = 2u << 20;
  opt->sync = 0;
  opt->leaves_on_disk = BFH_LEAVES_IN_MEMORY;
  opt->value_filters = 1;
  opt->placement = BFH_PLACEMENT_SIMILARITY;
  opt->compression = BFH_COMPRESSION_DEFAULT;
  opt->hash_seed = 0;
  opt->block_filter_bits_per_value = BLOCK_FILTER_DEFAULT_BITS;
  opt->read_only = 0;
  opt->index_dir = NULL;
  opt->memtable_index = 1;
  /* The lean layout with value-to-block maps (doc/search.md "The lean index"); 0 is the
     paper's layout, which the paper's methods and every `bfh run` driver ask for. */
  opt->index_bits_per_value = BFH_LEAN_MAP_BITS;
  opt->cuckoo_index = 0;
  opt->block_maps = 1;
  opt->block_cache_bytes = BFH_DEFAULT_BLOCK_CACHE_BYTES;
}

void bfh_options_init_sized(bfh_options *opt, size_t size) {
  if (!opt || size < sizeof opt->struct_size) return;
  bfh_options d;
  options_defaults(&d);
  api_copy_out(opt, size, &d, sizeof d);
  opt->struct_size = size;
}

/* *out = the defaults overlaid with the caller's struct, as far as its struct_size reaches. */
int api_options_copy_in(const char *fn, const bfh_options *in, bfh_options *out) {
  options_defaults(out);
  if (!in) return BFH_OK;
  if (in->struct_size == 0)
    return invalid(NULL, "%s: bfh_options.struct_size is 0: start from bfh_options_init", fn);
  if (in->struct_size > sizeof *out)
    return invalid(NULL,
                   "%s: bfh_options of %zu bytes, but this library (%s) knows %zu: the program "
                   "was built against a newer bfh.h",
                   fn, in->struct_size, bfh_version(), sizeof *out);
  memcpy(out, in, in->struct_size);
  out->struct_size = sizeof *out;
  return BFH_OK;
}

/* Largest m accepted: 2^28 bits, a 32 MiB filter per table. The bit-sliced index keeps one
   row per bit, 8 bytes per 64 tables, so it already takes 2 GiB at this m (m = 2^32 would
   ask for 32 GiB before the first table). The paper's filters are 20k..2M bits. */
#define MAX_FILTER_BITS (1ull << 28)

/* The smallest memtable of every engine: 64 KiB. Below it the own engine writes a table every
   few dozen puts (bfh load --synthetic 100k --insert random at 97829bf, own engine, puts per
   second: 2,500 at 4 KiB, 8,800 at 16 KiB, 32,500 at 64 KiB, 98,000 at 256 KiB, 112,000 at the
   default 4 MiB), and LevelDB and RocksDB clip write_buffer_size to at least 64 KiB themselves
   (LevelDB ran 33,000 to 46,000 at 4, 16 and 64 KiB: the same memtable), so a smaller value
   only ever meant something on the own engine, where it made ingest up to 45 times slower. */
#define MIN_MEMTABLE_BYTES ((size_t)64 << 10)
/* The largest: 4 GiB, the own engine's bound (lsm_options_check), for every engine. LevelDB
   clips write_buffer_size to 1 GiB and RocksDB to 64 GiB, so 2^62 was taken without a word. */
#define MAX_MEMTABLE_BYTES ((size_t)4 << 30)

/* The names of the engines with a row that has caps, ", "-separated, into buf. */
static const char *rows_with(unsigned caps, char *buf, size_t cap) {
  buf[0] = 0;
  const engine_kind_t *k;
  for (size_t i = 0; (k = engine_kind_at(i)); i++)
    if ((k->caps & caps) == caps && !strstr(buf, k->name))
      snprintf(buf + strlen(buf), cap - strlen(buf), "%s%s", buf[0] ? ", " : "", k->name);
  return buf;
}

static int check_options(const bfh_options *o) {
  char buf[256];
  const engine_kind_t *kind = engine_kind(o->engine);
  if (!kind) {
    char known[256] = "";
    const engine_kind_t *k;
    for (size_t i = 0; (k = engine_kind_at(i)); i++)
      if (!strstr(known, k->name))
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%d %s", i ? ", " : "",
                 (int)k->id, k->name);
    return invalid(NULL, "bfh_open: unknown engine %d (%s)", (int)o->engine, known);
  }
  if (o->value_filter_bits && o->value_filter_bits < 64)
    return invalid(NULL,
                   "bfh_open: value_filter_bits (m) = %llu; 0 (the database's, or the default "
                   "for a new one) or at least 64",
                   (unsigned long long)o->value_filter_bits);
  if (o->value_filter_bits > MAX_FILTER_BITS)
    return invalid(NULL, "bfh_open: value_filter_bits (m) = %llu; at most %llu",
                   (unsigned long long)o->value_filter_bits, MAX_FILTER_BITS);
  if (o->value_filter_hashes > 32)
    return invalid(NULL,
                   "bfh_open: value_filter_hashes (k) = %u; 0 (the database's, or the "
                   "layout's for a new one) or 1..32",
                   o->value_filter_hashes);
  if (o->order < 2)
    return invalid(NULL, "bfh_open: order (d) = %u; it must be at least 2", o->order);
  if (o->order > (1u << 20))
    return invalid(NULL, "bfh_open: order (d) = %u; at most %u", o->order, 1u << 20);
  if (!(o->key_bits_per_key >= 0 && o->key_bits_per_key <= 64))
    return invalid(NULL, "bfh_open: key_bits_per_key = %g; it must be in 0..64",
                   o->key_bits_per_key);
  if (o->memtable_bytes < MIN_MEMTABLE_BYTES || o->memtable_bytes > MAX_MEMTABLE_BYTES)
    return invalid(NULL,
                   "bfh_open: memtable_bytes = %zu; it must be 64 KiB (%zu) .. 4 GiB (%zu) on "
                   "every engine (below 64 KiB ingest slows down many times over)",
                   o->memtable_bytes, MIN_MEMTABLE_BYTES, MAX_MEMTABLE_BYTES);
  if (o->table_bytes < 1024)
    return invalid(NULL, "bfh_open: table_bytes = %zu; it must be at least 1024", o->table_bytes);
  if (o->compression != BFH_COMPRESSION_DEFAULT && o->compression != BFH_COMPRESSION_NONE &&
      o->compression != BFH_COMPRESSION_SNAPPY)
    return invalid(NULL, "bfh_open: compression = %d; 0 (default), 1 (none) or 2 (snappy)",
                   o->compression);
  if (o->compression == BFH_COMPRESSION_SNAPPY && o->engine == BFH_ENGINE_LSM)
    return invalid(NULL,
                   "bfh_open: compression snappy: the own engine writes no compressed "
                   "table (LevelDB and RocksDB engines only)");
  if (o->mmap_reads != 0 && o->mmap_reads != 1)
    return invalid(NULL, "bfh_open: mmap_reads = %d; 0 or 1", o->mmap_reads);
  if (o->mmap_reads && o->engine != BFH_ENGINE_LSM)
    return invalid(NULL,
                   "bfh_open: mmap_reads: the own engine's option (LevelDB reads its tables "
                   "through a memory map already; RocksDB as it was built)");
  if (o->placement != BFH_PLACEMENT_SIMILARITY && o->placement != BFH_PLACEMENT_POSITIONAL &&
      o->placement != BFH_PLACEMENT_PAPER)
    return invalid(NULL, "bfh_open: placement = %d; 0 (similarity), 1 (positional) or 2 (paper)",
                   o->placement);
  if (o->block_filter_bits_per_value > BLOCK_FILTER_MAX_BITS)
    return invalid(NULL, "bfh_open: block_filter_bits_per_value = %u; 0 (none) to %d", o->block_filter_bits_per_value,
                   BLOCK_FILTER_MAX_BITS);
  if (o->index_bits_per_value > 64)
    return invalid(NULL, "bfh_open: index_bits_per_value = %u; 0 (the paper's layout) to 64",
                   o->index_bits_per_value);
  if (o->cuckoo_index != 0 && o->cuckoo_index != 1)
    return invalid(NULL, "bfh_open: cuckoo_index = %d; 0 or 1", o->cuckoo_index);
  if (o->block_maps != 0 && o->block_maps != 1)
    return invalid(NULL, "bfh_open: block_maps = %d; 0 or 1", o->block_maps);
  if (o->standalone_index != 0 && o->standalone_index != 1)
    return invalid(NULL, "bfh_open: standalone_index = %d; 0 or 1", o->standalone_index);
  if (o->read_only != 0 && o->read_only != 1)
    return invalid(NULL, "bfh_open: read_only = %d; 0 or 1", o->read_only);
  if (o->standalone_index && o->read_only)
    return api_failf(
        NULL, BFH_E_UNSUPPORTED,
        "bfh_open: standalone_index and read_only: a read-only handle writes no index");
  if (o->standalone_index && !(kind->caps & ENGINE_CAP_STANDALONE))
    return api_failf(NULL, BFH_E_UNSUPPORTED,
                     "bfh_open: standalone_index needs an engine that can keep it (%s); "
                     "the %s engine cannot",
                     rows_with(ENGINE_CAP_STANDALONE, buf, sizeof buf), kind->name);
  if (o->read_only && !engine_kind_for(o->engine, 1))
    return api_failf(
        NULL, BFH_E_UNSUPPORTED,
        "bfh_open: read_only needs an engine with a read-only mode (%s); the %s engine "
        "has none",
        rows_with(ENGINE_CAP_READ_ONLY, buf, sizeof buf), kind->name);
  if (o->index_dir && !o->index_dir[0])
    return invalid(NULL,
                   "bfh_open: index_dir is empty: name a directory outside the database, or "
                   "leave it NULL to keep a read-only handle's index in memory only");
  if (o->read_only && o->leaves_on_disk && !o->index_dir)
    return invalid(NULL,
                   "bfh_open: read_only with leaves on disk needs an index_dir to keep "
                   "them in (nothing is written into the database)");
  const engine_kind_t *row = engine_kind_for(o->engine, o->read_only);
  if (o->column_family && !(row && (row->caps & ENGINE_CAP_COLUMN_FAMILY)))
    return invalid(NULL,
                   "bfh_open: column_family '%s': only an engine with column families reads one "
                   "(%s); the %s engine%s has none",
                   o->column_family, rows_with(ENGINE_CAP_COLUMN_FAMILY, buf, sizeof buf),
                   kind->name, o->read_only ? " (read-only)" : "");
  if (o->column_family && !o->column_family[0])
    return invalid(NULL, "bfh_open: column_family is empty: NULL names the default one");
  if (o->leaves_on_disk != BFH_LEAVES_IN_MEMORY && o->leaves_on_disk != BFH_LEAVES_ON_DISK &&
      o->leaves_on_disk != BFH_LEAVES_ON_DISK_WHOLE)
    return invalid(NULL,
                   "bfh_open: leaves_on_disk = %d; 0 (in memory), 1 (on disk) or 2 (on disk, "
                   "read whole)",
                   o->leaves_on_disk);
  return BFH_OK;
}

_Static_assert(BFH_DEFAULT_HASH_SEED == BFH_DEFAULT_SEED, "one default seed (filters/hash.h)");

/* handle.h */
db_params_t api_params_want(const bfh_options *o, const db_params_t *stored) {
  db_params_t p;
  p.m = o->value_filter_bits    ? o->value_filter_bits
        : stored                ? stored->m
                                : BFH_DEFAULT_VALUE_FILTER_BITS;
  p.k = o->value_filter_hashes ? o->value_filter_hashes : stored ? stored->k : api_filter_hashes(o);
  p.seed = o->hash_seed ? o->hash_seed : stored ? stored->seed : BFH_DEFAULT_HASH_SEED;
  return p;
}

/* handle.h; doc/search.md "The leaves' k". */
uint32_t api_filter_hashes(const bfh_options *o) {
  if (o->value_filter_hashes) return o->value_filter_hashes;
  const engine_kind_t *kind = engine_kind_for(o->engine, o->read_only);
  int maps = o->index_bits_per_value > 0 && o->block_maps && o->block_filter_bits_per_value > 0 &&
             o->leaves_on_disk == BFH_LEAVES_IN_MEMORY && kind &&
             (kind->caps & ENGINE_CAP_BLOCK_MAPS);
  if (!maps) return DB_PARAMS_PAPER_HASHES;
  uint32_t k = (uint32_t)(0.6931 * o->index_bits_per_value + 0.5); /* ln 2 x bits */
  return k < 1 ? 1 : k > 32 ? 32 : k;
}

/* *out = *in (the defaults for what in lacks, or for everything when in is NULL); then
   check_options. */
int api_options_or_defaults(const char *fn, const bfh_options *in, bfh_options *out) {
  int rc = api_options_copy_in(fn, in, out);
  return rc == BFH_OK ? check_options(out) : rc;
}
