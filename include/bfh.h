/* bfh: non-key (value) search in LSM key-value stores with a Bloom filter hierarchy.
 *
 * The only public header. A database is a directory written either by bfh's own leveled
 * LSM engine (BFH_ENGINE_LSM, the default), by stock LevelDB (BFH_ENGINE_LEVELDB) or by stock
 * RocksDB (BFH_ENGINE_ROCKSDB). Every
 * table file of the database gets a value Bloom filter; the filters are the leaves of a
 * hierarchy of OR-merged filters, and bfh_search() uses them to read only the tables that
 * may hold a value.
 *
 * Conventions (after LevelDB's c.h):
 * (1) Status. Every function that can fail returns BFH_OK (0), a negative BFH_E_* code, or,
 *     where "absent" is an answer, BFH_NOT_FOUND (1). bfh_last_error(db) gives the message of
 *     the last failure on that handle in this thread; bfh_last_error(NULL) that of a call
 *     without a handle (bfh_open, bfh_repair, ...). An iterator keeps its own (bfh_iter_error).
 *     The library never prints and never exits.
 * (2) NULL. A handle, key or output pointer must not be NULL unless its comment says it may;
 *     a function that returns a status gives BFH_E_INVALID for one that is. bfh_close,
 *     bfh_iter_destroy and bfh_free accept NULL. A value may be NULL when its length is 0.
 * (3) Ownership. What the library allocates for the caller (bfh_get's value) is the caller's,
 *     released with bfh_free. What it returns const (bfh_engine_info, messages, an iterator's
 *     key) stays the library's, for as long as its comment says. What the caller passes is
 *     borrowed for the call: the library keeps no pointer to it after it returns.
 * (4) Bytes. Keys and values are byte strings with a length (not NUL-terminated): keys are
 *     1..BFH_MAX_KEY_BYTES bytes, values 0..BFH_MAX_VALUE_BYTES; longer ones are BFH_E_INVALID.
 *     Lengths are in bytes, as size_t.
 * (5) Structs. bfh_options and the statistics structs carry their size: initialise options
 *     with bfh_options_init, and read statistics through the inline wrappers, so that a
 *     program built against an older header keeps working with a newer library (doc/api.md
 *     "ABI"). A 0 in an option means its default, which for m, k and the seed is the
 *     database's own.
 * (6) Threads. A bfh_db may be used from any number of threads at once (puts, gets, searches,
 *     flushes); bfh_close must not race with other calls on it. An iterator is used by one
 *     thread at a time.
 */
#ifndef BFH_H
#define BFH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the functions libbfh.so exports; everything else in it is hidden. */
#if defined(__GNUC__)
#define BFH_API __attribute__((visibility("default")))
#else
#define BFH_API
#endif

/* The version of this header; bfh_version() gives the library's, as "MAJOR.MINOR.PATCH".
   While MAJOR is 0, a new MINOR may change the binary interface (doc/api.md "Versions"). */
#define BFH_VERSION_MAJOR 0
#define BFH_VERSION_MINOR 3
#define BFH_VERSION_PATCH 0
BFH_API const char *bfh_version(void);

typedef struct bfh_db bfh_db; /* opaque */

/* Status codes: every function that can fail returns one of these. */
enum {
  BFH_OK = 0,
  BFH_NOT_FOUND = 1,     /* bfh_get: no live value for the key */
  BFH_E_INVALID = -1,    /* bad argument or option, with a message in bfh_last_error */
  BFH_E_IO = -2,         /* a system call failed */
  BFH_E_CORRUPT = -3,    /* checksum or format violation in a file */
  BFH_E_NOMEM = -4,      /* out of memory */
  BFH_E_BUSY = -5,       /* the database is open in another process (or handle) */
  BFH_E_UNSUPPORTED = -6 /* not available on this engine or build */
};

#define BFH_MAX_KEY_BYTES (1u << 16)   /* 65,536 */
#define BFH_MAX_VALUE_BYTES (1u << 26) /* 64 MiB */

typedef enum bfh_engine {
  BFH_ENGINE_LSM = 0,     /* the project's own leveled LSM (default, embedded) */
  BFH_ENGINE_LEVELDB = 1, /* stock LevelDB through its C API; directory is a LevelDB db */
  BFH_ENGINE_ROCKSDB = 2  /* stock RocksDB through its C API; directory is a RocksDB db */
} bfh_engine;

/* What an engine can do (bfh_engine_info.caps). */
enum {
  BFH_ENGINE_CAN_WRITE = 1u << 0,          /* bfh_put, bfh_delete, bfh_flush */
  BFH_ENGINE_CAN_READ_ONLY = 1u << 1,      /* bfh_options.read_only */
  BFH_ENGINE_CAN_STANDALONE = 1u << 2,     /* bfh_options.standalone_index */
  BFH_ENGINE_CAN_REPAIR = 1u << 3,         /* bfh_repair */
  BFH_ENGINE_CAN_CHECK = 1u << 4,          /* bfh_check */
  BFH_ENGINE_CAN_ITERATE = 1u << 5,        /* bfh_iter_create */
  BFH_ENGINE_CAN_MEMTABLE_INDEX = 1u << 6, /* bfh_options.memtable_index has an effect */
  BFH_ENGINE_CAN_REPAIR_REPORT = 1u << 7   /* bfh_repair fills bfh_repair_report (else the
                                              engine's own repair reports to its own log) */
};

/* An engine this library has, from its table of engines. The library owns the struct and
   its strings for the life of the process; fields may be added at the end (the caller never
   allocates one). */
typedef struct bfh_engine_info {
  bfh_engine engine;       /* bfh_options.engine */
  const char *name;        /* short name: "lsm", "leveldb" */
  const char *description; /* one line */
  unsigned caps;           /* BFH_ENGINE_CAN_* */
} bfh_engine_info;

typedef enum bfh_method {
  BFH_SEARCH_SCAN = 0,       /* read every live table and the memtable ("SSTable scan") */
  BFH_SEARCH_LEAVES = 1,     /* probe every per-table value filter ("classical Bloom scan") */
  BFH_SEARCH_HIERARCHY = 2,  /* descend the filter hierarchy from the root (the paper) */
  BFH_SEARCH_SLICED = 3,     /* bit-sliced index over the leaf filters (Flat-Bloofi) */
  BFH_SEARCH_AUTO = 4,       /* the library chooses */
  BFH_SEARCH_STANDALONE = 5, /* a prefix seek on the stand-alone index
                               (bfh_options.standalone_index): the baseline bfh is measured
                               against; BFH_E_UNSUPPORTED on a handle without one */
  BFH_SEARCH_CUCKOO = 6      /* the Cuckoo Index (Kipf et al., VLDB 2020), a rival method
                               (bfh_options.cuckoo_index; doc/search.md "The Cuckoo Index"):
                               BFH_E_UNSUPPORTED on a handle without it */
} bfh_method;

/* The name of a search method ("scan", "leaves", "hierarchy", "sliced", "auto",
   "standalone"): the one table of names, which the bfh command and the experiment drivers
   use too. NULL for a value that names no method; the methods are numbered from 0 without
   gaps, so `for (m = 0; bfh_method_name(m); m++)` visits them all. */
BFH_API const char *bfh_method_name(bfh_method method);

/* Where the leaf (per-table) filters live (bfh_options.leaves_on_disk). Internal hierarchy
   nodes and the bit-sliced index are always in memory. */
typedef enum bfh_leaves {
  BFH_LEAVES_IN_MEMORY = 0,    /* kept in memory */
  BFH_LEAVES_ON_DISK = 1,      /* read from the table files on demand: k words per probe */
  BFH_LEAVES_ON_DISK_WHOLE = 2 /* read whole (m/8 bytes) for every probe, as the paper's
                                  code loads each leaf filter file: its classical Bloom scan */
} bfh_leaves;

/* Where the hierarchy puts a table's leaf (bfh_options.placement). Not stored: the index is
   built again at every open, so a database can be reopened with another placement. */
typedef enum bfh_placement {
  BFH_PLACEMENT_SIMILARITY = 0, /* B+-tree of order d (d..2d children); a new leaf goes under
                                   the most similar filter (Hamming distance) */
  BFH_PLACEMENT_POSITIONAL = 1, /* B+-tree of order d; leaves in table order, appended */
  BFH_PLACEMENT_PAPER = 2       /* the paper's static tree: leaves in table order, exactly d
                                   children per node (the last of a level fewer), rebuilt
                                   whole when the tables change */
} bfh_placement;

/* How the LevelDB and RocksDB engines compress the tables they write (bfh_options.compression).
   A table is read whatever it was written with. The own engine writes no compressed table. */
typedef enum bfh_compression {
  BFH_COMPRESSION_DEFAULT = 0, /* the engine's own default: snappy for LevelDB and RocksDB,
                                  none for the own engine */
  BFH_COMPRESSION_NONE = 1,
  BFH_COMPRESSION_SNAPPY = 2 /* LevelDB and RocksDB only */
} bfh_compression;

/* A declared attribute (doc/query.md): a name and an extractor applied to each value, its
   terms indexed in place of the whole value (which stays indexed only if an attribute with
   the extractor "value" is declared too). name: [A-Za-z_][A-Za-z0-9_]*, at most 64 bytes;
   extractor: "json:PATH", "csv:N", "tsv:N", "bytes:OFF:LEN" or "value", with an optional
   ":int" suffix, or "pair:A,B", a composite of two attributes declared beside it (doc/query.md
   "Composites"). Both NUL-terminated, borrowed for the call (bfh_open copies them). */
typedef struct bfh_attribute {
  const char *name;
  const char *extractor;
} bfh_attribute;

/* Options of bfh_open and bfh_repair. Versioned by its size (doc/api.md "ABI"): start from
   bfh_options_init, which sets struct_size and the defaults, then change fields. A caller
   compiled against an older, shorter bfh_options gets the defaults for the fields it does
   not have; a struct_size of 0 (options zeroed by hand) or larger than the library's own
   layout is refused with BFH_E_INVALID. */
typedef struct bfh_options {
  size_t struct_size;    /* sizeof(bfh_options) where the caller was compiled; set by
                            bfh_options_init: leave it alone */
  bfh_engine engine;     /* default BFH_ENGINE_LSM */
  int create_if_missing; /* default 1 */
  /* The value filters. m, k and the seed are stored at a database's creation (BFH-PARAMS);
     0 takes the database's own, and another than the stored one is BFH_E_INVALID. */
  uint64_t value_filter_bits;   /* m, bits in every value filter: 64..2^28; a new database's
                                   default BFH_DEFAULT_VALUE_FILTER_BITS */
  uint32_t value_filter_hashes; /* k: 1..32; a new database's default depends on the layout
                                   (doc/api.md "Options") */
  uint32_t order;               /* d, the hierarchy's order; default 5; >= 2 */
  double key_bits_per_key;      /* the own engine's key filters; default 10 */
  size_t memtable_bytes;        /* default 4 MiB; 64 KiB .. 4 GiB */
  size_t table_bytes;           /* target table file size; default 2 MiB */
  int sync;                     /* 1: every write is durable when its call returns; default 0 */
  /* Additions to the base contract: */
  bfh_leaves leaves_on_disk;            /* default BFH_LEAVES_IN_MEMORY */
  int value_filters;                    /* 1 (default); 0: no value filters, every search scans */
  bfh_placement placement;              /* default BFH_PLACEMENT_SIMILARITY */
  uint64_t hash_seed;                   /* seed of the value hash; a new database's default
                                           BFH_DEFAULT_HASH_SEED */
  uint32_t block_filter_bits_per_value; /* each table's block filter (AUTO's block path);
                                           default 10; 0: none; at most 32 */
  int memtable_index;            /* 1 (default): the own engine's memtables keep a value index */
  int standalone_index;          /* 1: also keep the stand-alone secondary index that
                                    BFH_SEARCH_STANDALONE searches (read-write engines;
                                    doc/standalone.md); default 0. A database that has one
                                    refuses an open without it */
  int read_only;                 /* 1: open a database another program may be writing: no LOCK,
                                    nothing written into its directory; puts, deletes and flushes are
                                    BFH_E_UNSUPPORTED; default 0 */
  const char *index_dir;         /* read_only: where the handle keeps its index files, outside the
                                    database; NULL (default): in memory only */
  uint32_t index_bits_per_value; /* the lean index: each leaf kept folded to about this many
                                    bits per value; default BFH_LEAN_MAP_BITS; 0: the paper's
                                    layout (doc/api.md "Options"); at most 64 */
  int cuckoo_index;              /* 1: keep the Cuckoo Index that BFH_SEARCH_CUCKOO searches;
                                    default 0 */
  const char *column_family;     /* RocksDB engine: the column family used; NULL (default):
                                    "default" */
  int block_maps;                /* 1 (default): with index_bits_per_value > 0, tables carry
                                    value-to-block maps that replace their block filters */
  size_t block_cache_bytes;      /* own engine: the cache of verified data blocks of gets and
                                    searches; LevelDB and RocksDB, read-write: of the blocks
                                    searches read (doc/api.md); default
                                    BFH_DEFAULT_BLOCK_CACHE_BYTES; 0: none */
  bfh_compression compression;   /* LevelDB and RocksDB engines: the tables written from this
                                    open on; default BFH_COMPRESSION_DEFAULT */
  int mmap_reads; /* own engine (read-write and read-only): 1 reads tables by copying out of
                     mappings of their files, not with pread, so a block the block cache misses
                     costs no system call; a table truncated underneath is still an error, not a
                     SIGBUS (doc/api.md "Options"); default 0 */
  /* The declared attributes (doc/query.md), stored with the database at its creation
     (BFH-ATTRS): attribute_count of them at attributes. 0 (default): the database's own (none
     for a new one: the whole value is indexed, as always). Others than the stored ones are
     BFH_E_INVALID naming the difference; a bad declaration is BFH_E_INVALID naming it. */
  const bfh_attribute *attributes;
  size_t attribute_count;
} bfh_options;
#define BFH_DEFAULT_VALUE_FILTER_BITS 2000000u   /* the paper's m */
#define BFH_DEFAULT_HASH_SEED 0x62666801u        /* "bfh" 1 */
#define BFH_LEAN_MAP_BITS 11                     /* index_bits_per_value's default */
#define BFH_DEFAULT_BLOCK_CACHE_BYTES (8u << 20) /* LevelDB's */

typedef struct bfh_search_stats {
  uint64_t internal_probes; /* internal hierarchy nodes whose filter was tested */
  uint64_t leaf_probes;     /* leaf (per-table) filters tested */
  uint64_t leaf_positives;  /* leaf filters that said maybe */
  uint64_t tables_scanned;  /* table files read */
  uint64_t tables_matched;  /* scanned tables that held the value (before validation) */
  uint64_t entries_scanned; /* entries decoded from tables and memtables */
  uint64_t bytes_read;      /* table bytes read (from the file or the block cache) */
  uint64_t candidates;      /* keys found before validation */
  uint64_t results;         /* keys reported to the callback */
  uint64_t elapsed_ns;      /* wall time of the whole search */
  /* Additions: */
  uint32_t method_used; /* the method that ran (what BFH_SEARCH_AUTO chose) */
  uint32_t tables_live; /* live tables in the version searched */
  /* AUTO's block path (bfh_options.block_filter_bits_per_value): */
  uint64_t block_filters_probed; /* selected tables whose block filter was probed */
  uint64_t blocks_read;          /* data blocks read through block filters (tables_scanned
                                    counts a table read this way too; bytes_read their bytes) */
  /* The hierarchy (BFH_SEARCH_HIERARCHY): */
  uint64_t internal_maybe; /* internal nodes tested whose filter said maybe (the root
                              included): the non-leaf count the paper's authors' code
                              reports; internal_probes counts those tested */
  /* The lean index's value-to-block maps (doc/search.md "The lean index"): */
  uint64_t map_chunks_read; /* chunks of the selected tables' maps read (2 KiB each; their
                               bytes are in bytes_read); block_filters_probed counts a table
                               probed through its map too */
  /* Zones (doc/query.md "Zones"): */
  uint64_t tables_zoned; /* tables the filters selected that the zones of their maps ruled
                            out (a range or term of a :range attribute outside a table's
                            least and largest code of it) */
  /* Range filters (doc/query.md "Range filters"): */
  uint64_t tables_ranged;     /* tables left after the zones that their maps' range filters
                                 ruled out for a range or prefix */
  uint64_t range_pieces_read; /* pieces of those filters read from the tables (their bytes
                                 are in bytes_read) */
  /* The stand-alone index (doc/standalone.md "Exact answers"): */
  uint64_t trusted; /* results reported on the index's word, without a get: its entries
                       were live (no write of the key in flight, no stale entry left) */
} bfh_search_stats;

/* Called by bfh_search once per key found. Return nonzero to stop the search early
   (bfh_search then returns BFH_OK).
   key is borrowed: it is valid only during the call and is not NUL-terminated; copy it to
   keep it.
   fn may call back into the same handle (bfh_get, bfh_put, bfh_delete, bfh_search,
   bfh_flush): a search holds no lock while it calls fn, only its view of the tables (which
   delays the deletion of the files it lists), so such calls neither deadlock nor change the
   keys this search reports (each key whose value equalled val at the search's start and still
   equals it when the search reaches it, once). Never bfh_close the handle from fn. */
typedef int (*bfh_match_fn)(void *arg, const void *key, size_t key_len);

/* Fills the first `size` bytes of *opt with the defaults above and sets opt->struct_size
   to size. Call it through bfh_options_init, which passes the size this program knows. */
BFH_API void bfh_options_init_sized(bfh_options *opt, size_t size);
/* Fills *opt with the defaults above. */
static inline void bfh_options_init(bfh_options *opt) {
  bfh_options_init_sized(opt, sizeof(bfh_options));
}

/* Opens (or, with create_if_missing, creates) the database in directory `path`.
   On BFH_OK, *db is a new handle; release it with bfh_close(). opt may be NULL (defaults).
   Errors: BFH_E_INVALID for bad options or a directory that is not a database of the
   chosen engine; BFH_E_BUSY if it is open elsewhere; BFH_E_CORRUPT for damaged files.
   Without a handle, the message of a failed open is in bfh_last_error(NULL) (this thread). */
BFH_API int bfh_open(const char *path, const bfh_options *opt, bfh_db **db);
/* Closes the handle and frees it. NULL is allowed. The memtable is not written out as
   tables: its entries stay in the write-ahead log, replayed by the next open.
   Own engine: the close syncs the log and records its length in the manifest, so that
   nothing acknowledged is lost after bfh_close returns BFH_OK, even with sync = 0 and a
   power loss right after it. LevelDB engine: LevelDB does not sync its log at the close,
   so with sync = 0 a power loss (not a process crash) may still lose the last writes;
   with value filters on, the close first gives every live table its value filter and
   writes their sidecar cache files (bfh-filters/), so that the next open reads no table. */
BFH_API int bfh_close(bfh_db *db);

BFH_API int bfh_put(bfh_db *db, const void *key, size_t key_len, const void *val, size_t val_len);
BFH_API int bfh_delete(bfh_db *db, const void *key, size_t key_len);
/* On BFH_OK, *val is allocated by the library; release it with bfh_free. An empty value
   gives *val_len == 0 and a non-NULL *val. BFH_NOT_FOUND when the key has no live value. */
BFH_API int bfh_get(bfh_db *db, const void *key, size_t key_len, void **val, size_t *val_len);

/* Non-key search: report every live key whose current value equals val, exactly once,
   in any order, to fn (see bfh_match_fn). fn may be NULL: the keys are then only counted,
   in stats->results. stats may be NULL; on any return it is filled (zero on a failure
   before the search began). Safe to call while other threads write. */
BFH_API int bfh_search_sized(bfh_db *db, const void *val, size_t val_len, bfh_method method,
                             bfh_match_fn fn, void *arg, bfh_search_stats *stats,
                             size_t stats_size);
static inline int bfh_search(bfh_db *db, const void *val, size_t val_len, bfh_method method,
                             bfh_match_fn fn, void *arg, bfh_search_stats *stats) {
  return bfh_search_sized(db, val, val_len, method, fn, arg, stats, sizeof(bfh_search_stats));
}

/* Search by a predicate over the declared attributes (doc/query.md): report every live key
   whose current value satisfies `where`, exactly once, to fn (as bfh_search). where is a
   NUL-terminated expression of the predicate language (NAME = 'text', NAME = 123,
   NAME IN ('a', 'b'), <, <=, >, >=, NAME BETWEEN 1 AND 9, NAME LIKE 'pre%', AND, OR,
   parentheses); NAME is a declared attribute, or `value` (the
   whole value) in a database without declarations. method: BFH_SEARCH_SCAN evaluates the
   predicate on every value; LEAVES, HIERARCHY, SLICED and AUTO select the tables (and
   blocks) where it may hold from the filters, each (attribute, term) being an item of them;
   STANDALONE answers from the stand-alone index's per-attribute entries (equalities by their
   terms, ranges and prefixes by scans of them), each key validated unless the index can
   answer for it (stats->trusted; doc/standalone.md "Exact answers"); AUTO takes the
   stand-alone index instead of the tables its filters selected when its candidates cost less
   to validate (stats->method_used says so); CUCKOO answers whole values only
   (BFH_E_UNSUPPORTED). newest: 0 reports every key, in any order; K > 0 reports
   the K keys whose latest write is newest (largest sequence number), newest first (one sequence
   number's keys bytewise by key), or all in that order when fewer match: exact by every method,
   reading tables newest first and stopping once the K are known (doc/query.md "The newest K";
   STANDALONE runs it as AUTO, and stats->method_used says so). Errors: BFH_E_INVALID for a bad
   expression or an unknown attribute (the message names the column where it is), or a bad
   method. stats as bfh_search's. bfh_query is
   bfh_query_prepare, bfh_query_run and bfh_query_free in one. */
BFH_API int bfh_query_sized(bfh_db *db, const char *where, bfh_method method, uint64_t newest,
                            bfh_match_fn fn, void *arg, bfh_search_stats *stats, size_t stats_size);
static inline int bfh_query(bfh_db *db, const char *where, bfh_method method, uint64_t newest,
                            bfh_match_fn fn, void *arg, bfh_search_stats *stats) {
  return bfh_query_sized(db, where, method, newest, fn, arg, stats, sizeof(bfh_search_stats));
}

/* A prepared query: an expression parsed and bound to db's attributes once, run any number
   of times (bfh_query_run), by any number of threads at once. On BFH_OK *q is new; free it
   with bfh_query_free before db is closed. Errors as bfh_query's. */
typedef struct bfh_prepared bfh_prepared; /* opaque */
BFH_API int bfh_query_prepare(bfh_db *db, const char *where, bfh_prepared **q);
/* Runs q as bfh_query runs its expression. */
BFH_API int bfh_query_run_sized(bfh_prepared *q, bfh_method method, uint64_t newest,
                                bfh_match_fn fn, void *arg, bfh_search_stats *stats,
                                size_t stats_size);
static inline int bfh_query_run(bfh_prepared *q, bfh_method method, uint64_t newest,
                                bfh_match_fn fn, void *arg, bfh_search_stats *stats) {
  return bfh_query_run_sized(q, method, newest, fn, arg, stats, sizeof(bfh_search_stats));
}
/* NULL is allowed. */
BFH_API void bfh_query_free(bfh_prepared *q);

/* Write the memtable out as table files (with their value filters). */
BFH_API int bfh_flush(bfh_db *db);

/* Sizes of the database and of its value index (an addition to the base contract). */
typedef struct bfh_db_stats {
  uint64_t tables;            /* live table files */
  uint64_t table_bytes;       /* their total size */
  uint64_t leaf_filters;      /* tables with a value filter in the index */
  uint64_t leaf_filter_bytes; /* size of all leaf filters (in memory or on disk) */
  uint64_t internal_bytes;    /* hierarchy internal nodes (non-leaf filters) */
  uint64_t sliced_bytes;      /* bit-sliced index */
  uint32_t hierarchy_height;  /* internal levels */
  double mean_leaf_fill;      /* mean fraction of set bits in the leaf filters */
  /* Additions: the value filters of the handle. m, k and the seed are the database's own,
     stored at its creation (BFH-PARAMS; an open asking for others fails with BFH_E_INVALID);
     d and the placement are this open's (not stored). With value filters off the handle
     reads no stored parameters and keeps no index: value_filters is 0 and so is every other
     field of this group. */
  int value_filters;              /* 1: value filters on; 0: engine only (bfh_options) */
  uint64_t value_filter_bits;     /* m, bits in every value filter */
  uint32_t value_filter_hashes;   /* k, hash functions */
  uint32_t order;                 /* d, the hierarchy's order */
  bfh_placement placement;        /* this open's */
  uint64_t hash_seed;             /* seed of the value hash */
  uint64_t leaf_memory_bytes;     /* memory the leaf filters hold: m/8 bytes per leaf with
                                     leaves in memory; with leaves on disk only the leaves not
                                     located on disk yet, plus 4 bytes of checksum per 512 bytes
                                     of every leaf */
  uint64_t block_filter_tables;   /* live tables with a block filter (always in memory) */
  uint64_t block_filter_bytes;    /* memory they hold */
  uint64_t block_filters_damaged; /* block filters that failed their checksum or did not
                                     match their table since the open: those tables are
                                     read whole, never skipped */
  uint64_t bytes_written;         /* own engine: bytes written to its logs and tables since the open
                                     (write amplification = this / bytes put); 0 on LevelDB */
  /* The stand-alone index (bfh_options.standalone_index); all 0 without one: */
  int standalone_index;              /* 1: the handle keeps one */
  uint64_t standalone_entries;       /* entries written to it since the open (puts of new index
                                        entries, including those of a build or a replay) */
  uint64_t standalone_tables;        /* its live table files */
  uint64_t standalone_bytes;         /* their total size */
  uint64_t standalone_bytes_written; /* bytes it wrote (logs and tables) since the open */
  uint64_t old_value_reads;          /* reads of the old value before a write, since the open */
  uint64_t old_value_read_ns;        /* the time they took */
  /* Memory (doc/search.md "The lean index"): */
  uint64_t index_bytes; /* every byte the value index holds in memory: leaves in memory (or
                           their CRCs when on disk), leaf records, hierarchy, bit-sliced
                           indexes, block filters, id maps; and the Cuckoo Index's
                           cuckoo_bytes */
  /* The Cuckoo Index (bfh_options.cuckoo_index; 0 without): */
  uint64_t cuckoo_bytes;  /* all it holds in memory (slots, table sets, each table's keys) */
  uint64_t cuckoo_tables; /* live tables it holds (the others are read whole by CUCKOO);
                             the pieces of tables no longer live are dropped first */
  /* The value index of the entries no table holds yet, which AUTO searches besides the
     tables' (not in index_bytes): the own engine's memtables' value buckets (memtable_bytes /
     8 to / 4 each, fixed at their creation) and their links (16 bytes per item of each value
     they hold, beside memtable_bytes of entries), the LevelDB and RocksDB engines' index slots of
     the log entries they read (16-32 bytes per entry); 0 without such an index. */
  uint64_t memtable_index_bytes;
  /* The handle's block cache (bfh_options.block_cache_bytes): lookups that found their data
     block there, and that did not; the bytes it holds (blocks and their entries). Own engine:
     its gets' and searches' blocks. LevelDB and RocksDB, read-write: the blocks searches read
     by maps or block filters (the library's own cache is not counted). 0 read-only. */
  uint64_t block_cache_hits, block_cache_misses, block_cache_bytes;
  /* The value index's loading (doc/search.md "Folding while reading"; 0 without value
     filters): the most bytes of leaf words it held at once outside its structures since the
     open (leaves read or built and not entered yet, a leaf's read buffer and its folded copy:
     the open's transient memory, beside index_bytes), and the chunks of leaves found damaged
     when they were read back to be folded (their positions say maybe: those tables are read,
     never skipped). */
  uint64_t index_load_peak_bytes;
  uint64_t leaf_chunks_damaged;
  /* The declared attributes (bfh_options.attributes; 0 without): how many, and, since the open,
     the (value, attribute) pairs of the values put whose value gave no term of the attribute
     (a missing field, not JSON or CSV: indexed under none of its terms, never refused).
     Counted by the own engine's memtable value index (bfh_options.memtable_index), at each
     put and each write its open replays; 0 on the other engines. bfh_attribute_stats gives
     them per attribute. */
  uint32_t attributes;
  uint64_t attribute_values_without_term;
} bfh_db_stats;
/* Writes the first st_size bytes of the stats (bfh_stats passes this program's size). */
BFH_API int bfh_stats_sized(bfh_db *db, bfh_db_stats *st, size_t st_size);
static inline int bfh_stats(bfh_db *db, bfh_db_stats *st) {
  return bfh_stats_sized(db, st, sizeof(bfh_db_stats));
}

/* The i-th declared attribute of the handle (i < bfh_db_stats.attributes, in the stored
   order): its name and extractor (the library's, valid until bfh_close; either output may be
   NULL), and the values put since the open that gave no term of it (may be NULL; counted as
   bfh_db_stats.attribute_values_without_term). BFH_OK; BFH_NOT_FOUND for i past the last. */
BFH_API int bfh_attribute_stats(bfh_db *db, size_t i, const char **name, const char **extractor,
                                uint64_t *values_without_term);

/* Sets opt's value_filter_bits (m), value_filter_hashes (k) and hash_seed to the ones the
   database in path was created with (its BFH-PARAMS file), without opening it (bfh_open
   takes them itself when they are 0, as bfh_options_init leaves them). Returns
   BFH_OK; BFH_NOT_FOUND if the directory records none (a new database, or one never opened
   with value filters): opt is unchanged then; BFH_E_CORRUPT, BFH_E_IO or BFH_E_UNSUPPORTED
   with a message in bfh_last_error(NULL). */
BFH_API int bfh_stored_params(const char *path, bfh_options *opt);

/* What bfh_repair kept and dropped (own engine; LevelDB and RocksDB report to their LOG, and
   fill only before_repair and, RocksDB, tables_lost and files_moved). */
typedef struct bfh_repair_report {
  uint64_t logs;              /* write-ahead logs read */
  uint64_t log_records;       /* their records replayed */
  uint64_t log_bytes_dropped; /* bytes of damaged or torn log records skipped */
  uint64_t tables;            /* table files found */
  uint64_t tables_damaged;    /* tables with damaged blocks; their other blocks were kept */
  uint64_t tables_lost;       /* tables that could not be read at all */
  uint64_t blocks_dropped;    /* damaged data blocks skipped */
  uint64_t keys_out;          /* live keys in the repaired database */
  uint64_t tables_out;        /* table files it now has */
  uint64_t files_moved;       /* damaged and replaced files moved into <path>/lost/ */
  int params_rewritten;       /* BFH-PARAMS was damaged or missing and was written from opt */
  int standalone_rebuilt;     /* the stand-alone index was built again from the repaired
                                 database (bfh_options.standalone_index) */
  uint64_t before_repair;     /* N: the directory as it was before the repair is kept in
                                 <path>/lost/before-repair-N (every engine; 0 if it is not) */
} bfh_repair_report;
/* Makes a database that refuses to open (damaged manifest, log or table) open again,
   keeping every log record and table block whose checksum holds: the newest version of
   each key among them is rewritten into new tables (with new value filters) and a new
   manifest. Damaged files are moved into <path>/lost/, never deleted. The database must
   not be open. opt (may be NULL) gives the engine and, for BFH-PARAMS that is missing or
   damaged, the value-filter parameters; report may be NULL. A stand-alone index is built
   again from the repaired database, whatever opt->standalone_index says. The message of a failure
   is in bfh_last_error(NULL); after a failure the database is as it was. BFH_E_INVALID (and
   nothing written) for a directory that is not of opt->engine (with BFH_ENGINE_LEVELDB: the own
   engine's, or one without any LevelDB file); BFH_E_BUSY when the database is open, in a bfh
   handle or (LevelDB) in any process holding LevelDB's LOCK. */
BFH_API int bfh_repair_sized(const char *path, const bfh_options *opt, bfh_repair_report *report,
                             size_t report_size);
static inline int bfh_repair(const char *path, const bfh_options *opt, bfh_repair_report *report) {
  return bfh_repair_sized(path, opt, report, sizeof(bfh_repair_report));
}

/* Progress of a long call: done of total steps so far (total > 0; done == total at the end).
   Called on the caller's thread. */
typedef void (*bfh_progress_fn)(void *arg, uint64_t done, uint64_t total);

/* What bfh_index_add did. */
typedef struct bfh_index_report {
  uint64_t tables_out;    /* table files the database now has, every one with the new items */
  uint64_t keys_out;      /* live keys in them */
  uint64_t before_change; /* N: the directory as it was is kept in <path>/lost/before-repair-N
                             (0 if it is not) */
} bfh_index_report;
/* Declares the attribute attr in the closed database in path and builds its items into the
   filters of every table (doc/query.md "Adding and dropping attributes"): the tables are
   rewritten, as bfh_repair rewrites them, with the items of the stored attributes and attr's,
   beside the database, and put in place in one step together with the new declarations
   (BFH-ATTRS), so that no moment exists, crash included, where the declarations name an
   attribute a table's filters lack; after a failure or a crash the database is as it was. A
   database without declarations gets `value=value` declared too, so that its whole values
   stay indexed. A stand-alone index is built again at its next open. progress (may be NULL)
   is called with the steps done. The own engine only (BFH_E_UNSUPPORTED for the others);
   BFH_E_INVALID for a bad declaration or a name declared already; BFH_E_BUSY when the
   database is open; the message in bfh_last_error(NULL). */
BFH_API int bfh_index_add_sized(const char *path, const bfh_options *opt, const bfh_attribute *attr,
                                bfh_progress_fn progress, void *arg, bfh_index_report *report,
                                size_t report_size);
static inline int bfh_index_add(const char *path, const bfh_options *opt, const bfh_attribute *attr,
                                bfh_progress_fn progress, void *arg, bfh_index_report *report) {
  return bfh_index_add_sized(path, opt, attr, progress, arg, report, sizeof(bfh_index_report));
}
/* Removes the attribute called name from the declarations of the closed database in path
   (BFH-ATTRS, replaced atomically). Its items stay in the tables' filters until they are
   rewritten (by compaction or bfh_repair): they only raise the false-positive rate. Every
   engine that keeps BFH-ATTRS in the database's directory. BFH_E_INVALID for a name not
   declared, for the last attribute (declare another first) or for a member of a declared
   composite (drop the composite first); BFH_E_BUSY when the database
   is open; nothing changed after a failure. */
BFH_API int bfh_index_drop(const char *path, const bfh_options *opt, const char *name);

BFH_API void bfh_free(void *p);
BFH_API const char *bfh_strerror(int status);
/* Message for the last failed call on this handle (NULL: bfh_open, bfh_repair and other
   calls without a handle) in this thread; "" if none. The string is owned by the library
   and stays valid and unchanged until the next call that fails on the same handle in the
   same thread; successful calls, other handles and other threads leave it alone (a thread
   keeps the messages of eight handles, NULL counting as one: a ninth evicts the one whose
   last failure is the oldest). The
   message of a handle ends with bfh_close: query bfh_last_error(NULL) for a failed close. */
BFH_API const char *bfh_last_error(const bfh_db *db);

/* ---- Engines: names and capabilities ------------------------------------------------------- */

/* The engines of this library, i = 0, 1, ... (NULL past the last): a front end lists them
   for its --help and decides by caps, never by engine number. */
BFH_API const bfh_engine_info *bfh_engine_at(size_t i);
/* The engine of that number, or NULL for one this library does not have. */
BFH_API const bfh_engine_info *bfh_engine_get(bfh_engine engine);
/* The engine of that name ("lsm", "leveldb"), or NULL. */
BFH_API const bfh_engine_info *bfh_engine_find(const char *name);
/* Its name, or NULL for an unknown engine. */
BFH_API const char *bfh_engine_name(bfh_engine engine);
/* The engine whose database is at path, told by its files (the magic number that ends its
   newest tables, then the files only that engine writes): BFH_OK with *engine set, or
   BFH_E_INVALID when path holds no database of these engines (missing, empty, or unknown),
   with a message in bfh_last_error(NULL). Reads only; opens nothing for writing. */
BFH_API int bfh_engine_detect(const char *path, bfh_engine *engine);

/* ---- Ordered iteration --------------------------------------------------------------------- */

typedef struct bfh_iter bfh_iter; /* opaque */

/* A new iterator over the live keys of db in ascending bytewise order, each with its value:
   one consistent version, the newest at the call (later writes are not seen). It starts not
   valid: call bfh_iter_seek_first or bfh_iter_seek. On BFH_OK release *it with
   bfh_iter_destroy before bfh_close. One thread at a time per iterator; other threads may use
   the handle meanwhile.
   The own engine and LevelDB hold their version's files while the iterator lives, and so
   does the own engine's read-only handle (its state's files stay open). A LevelDB or RocksDB
   read-only handle (bfh_options.read_only) works on a live database that its owner keeps
   writing: it reads the whole version at the call (every table and log, into memory as big as its
   live entries), starting over when the owner deletes a file under it (BFH_E_BUSY after 16 tries),
   so that the files may go afterwards. BFH_E_UNSUPPORTED for an engine without
   BFH_ENGINE_CAN_ITERATE; BFH_E_NOMEM, BFH_E_IO, BFH_E_CORRUPT, BFH_E_BUSY with a message in
   bfh_last_error(db). */
BFH_API int bfh_iter_create(bfh_db *db, bfh_iter **it);
/* Frees it. NULL is allowed. */
BFH_API void bfh_iter_destroy(bfh_iter *it);
BFH_API void bfh_iter_seek_first(bfh_iter *it);
/* Positions it at the first key >= key. */
BFH_API void bfh_iter_seek(bfh_iter *it, const void *key, size_t key_len);
/* 1 while it is at an entry; 0 past the last one, before a seek, or after an error. */
BFH_API int bfh_iter_valid(const bfh_iter *it);
/* REQUIRES: bfh_iter_valid. */
BFH_API void bfh_iter_next(bfh_iter *it);
/* The entry's key and value (REQUIRES: bfh_iter_valid), borrowed: valid until the next call
   that moves it or bfh_iter_destroy. */
BFH_API const void *bfh_iter_key(const bfh_iter *it, size_t *key_len);
BFH_API const void *bfh_iter_value(const bfh_iter *it, size_t *val_len);
/* BFH_OK, or the error that ended the iteration early (a damaged block, an I/O error), with
   its message in bfh_last_error of the handle (this thread). Check it once bfh_iter_valid
   turns 0. */
BFH_API int bfh_iter_status(const bfh_iter *it);
/* NULL while the iteration is sound; else the message of the error that ended it, the
   iterator's own (another call on the handle does not change it), owned by it: valid until
   its next call or bfh_iter_destroy. */
BFH_API const char *bfh_iter_error(bfh_iter *it);

/* ---- Inspection: the live tables, and a check of every checksum ---------------------------- */

/* One live table file, as bfh_tables reports it. The library owns the struct and everything
   it points to: the callback may read it only during the call (copy what it keeps). Because
   the caller never allocates one, fields may be added at the end without breaking programs
   built against an older header. */
typedef struct bfh_table_info {
  uint64_t number;              /* file number (NNNNNN.sst, or .ldb on LevelDB) */
  int level;                    /* LSM level, 0..6 */
  uint64_t entries;             /* entries in the file: values and deletions, all versions */
  uint64_t bytes;               /* file size */
  const void *smallest;         /* smallest user key in the file */
  size_t smallest_len;          /* (0 with smallest NULL for a table without entries) */
  const void *largest;          /* largest user key in the file */
  size_t largest_len;           /* (same) */
  int has_value_filter;         /* 1: the table has a value filter (a leaf of the index) */
  double value_filter_fill;     /* its fraction of set bits; 0 without one */
  double value_filter_fpr;      /* its false-positive rate estimated as fill^k; 0 without */
  int has_block_filter;         /* 1: the table has a block filter (bfh_options) */
  uint64_t value_filter_bits;   /* m of its value filter; 0 without one */
  uint32_t value_filter_hashes; /* k of its value filter; 0 without one */
} bfh_table_info;

/* Return nonzero to stop bfh_tables early (it then returns BFH_OK). */
typedef int (*bfh_table_fn)(void *arg, const bfh_table_info *t);

/* Calls fn for every live table of the database, level by level and by file number within a
   level (the tables a search sees at the time of the call; they stay readable until
   bfh_tables returns). Reads each table: on the own engine its footer, index, first data
   block and value filter (the entry count is in the footer); on the LevelDB engine the whole
   file (LevelDB records no entry count, and no key range the C API shows), and the whole
   file once more to build its value filter as the index did (the filter cache gets its copy
   only later). A table the index has no leaf for yet (LevelDB indexes new tables in the
   background) reports has_value_filter 0. BFH_E_CORRUPT if a table cannot be read (the
   message names it). Safe to call while other threads write. */
BFH_API int bfh_tables(bfh_db *db, bfh_table_fn fn, void *arg);

/* A damaged file found by bfh_check: its name relative to the database directory (a table
   of the stand-alone index is "bfh-standalone/000012.sst"), the byte offset of the damaged
   record or block in it (0 when the file is missing or damaged as a whole), and what is
   wrong. The strings are the library's, valid during the call. */
typedef void (*bfh_damage_fn)(void *arg, const char *file, uint64_t offset, const char *what);

typedef struct bfh_check_report {
  uint64_t files;           /* files read */
  uint64_t bytes;           /* their bytes */
  uint64_t blocks;          /* table blocks checked */
  uint64_t records;         /* log and manifest records checked */
  uint64_t damaged;         /* damaged records, blocks and files (each reported to fn) */
  uint64_t torn_tails;      /* logs (and manifests) ending in a record cut short: a write in
                               flight at a crash, which the next open drops. Not damage, and
                               not reported to fn */
  uint64_t torn_tail_bytes; /* the bytes of those records */
  uint64_t cache_damaged;   /* LevelDB, RocksDB: damaged files of the filter cache
                               (bfh-filters/), reported to fn but harmless: the next open
                               rebuilds them from their tables. Not counted in damaged */
} bfh_check_report;

/* Verifies every checksum of the database in path without changing anything, and reports
   every damaged record or block to fn (may be NULL). opt (may be NULL: defaults) gives the
   engine; rep (may be NULL) is filled. What is read, by engine, is in doc/api.md
   ("Inspection"); the cost is one read of every live file.
   The database must not be open: BFH_E_BUSY if a handle (in this or another process) has
   it open, since a live database changes under the reader (a table deleted by a compaction
   would read as missing). The check holds a shared lock meanwhile, so no open starts during
   it. A LevelDB database that another program holds open is BFH_E_BUSY too: its POSIX lock
   on LOCK is looked up in /proc/locks (on Linux; elsewhere it is not detected).
   Returns BFH_OK when nothing is damaged; BFH_E_CORRUPT when damage was found (all of it
   reported through fn); BFH_E_INVALID (not a database of the engine), BFH_E_BUSY, BFH_E_IO,
   BFH_E_NOMEM with a message in bfh_last_error(NULL). */
BFH_API int bfh_check_sized(const char *path, const bfh_options *opt, bfh_damage_fn fn, void *arg,
                            bfh_check_report *rep, size_t rep_size);
static inline int bfh_check(const char *path, const bfh_options *opt, bfh_damage_fn fn, void *arg,
                            bfh_check_report *rep) {
  return bfh_check_sized(path, opt, fn, arg, rep, sizeof(bfh_check_report));
}

#ifdef __cplusplus
}
#endif
#endif /* BFH_H */
