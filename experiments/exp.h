/* The library of the experiment drivers (experiments/exp_*.c), one file per concern: the run
 * context and its names (exp_ctx.c), the clock and progress (exp_time.c), directories
 * (exp_fs.c), CSV output (exp_csv.c), databases built once and shared (exp_db.c), search
 * measurements (exp_measure.c) and the keys they found against the workload's (exp_keys.c),
 * page-cache eviction (exp_cache.c), the method sweep of Fig. 8
 * and 11 (exp_sweep.c), synthetic leaves (exp_synth.c) and plotting (exp_plot.c). The drivers
 * themselves are named in drivers.h.
 *
 * Every driver writes <out>/<experiment>.csv (a header row, one row per measured point, every
 * parameter in its own column, unmeasured cells empty) and renders it with
 * plots/<experiment>.gp into <out>/<experiment>.png and .svg.
 */
#ifndef BFH_EXPERIMENTS_EXP_H
#define BFH_EXPERIMENTS_EXP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "bfh.h"
#include "workloads/workload.h"

/* ---- the run context (exp_ctx.c) ---------------------------------------------------------- */

typedef enum exp_scale { EXP_SMALL = 0, EXP_MEDIUM = 1, EXP_PAPER = 2 } exp_scale_t;
#define EXP_NSCALES 3 /* exp_scale_name(0 .. EXP_NSCALES - 1) */

/* Cost profiles (`bfh run --costs`, doc/costs.md): bfh's own searches, or the paper's searches
   with the authors' implementation costs (experiments/exp_authors.h). */
typedef enum exp_costs { EXP_COSTS_BFH = 0, EXP_COSTS_AUTHORS = 1 } exp_costs_t;
#define EXP_NCOSTS 2                   /* exp_costs_name(0 .. EXP_NCOSTS - 1) */
const char *exp_costs_name(int costs); /* "bfh", "authors" */

/* The largest database size of `bfh run --scale paper` without --max-n: the 500M point of
   Table I and Fig. 8 is run only when asked for. */
#define EXP_PAPER_DEFAULT_MAX_N 100000000ull

/* What `bfh run` was asked to do. Caller-owned; strings borrowed from argv. */
typedef struct exp_ctx {
  exp_scale_t scale;
  bfh_engine engine;
  int engine_given;      /* 1: --engine was given (ycsb: that engine alone, not every one) */
  const char *out_dir;   /* results directory (created if missing) */
  const char *work_dir;  /* where the databases are built (default <out>/db) */
  const char *plots_dir; /* NULL: found next to the executable or in the source tree */
  int queries;           /* present (and absent) queries per point (default 30), >= 5 */
  int queries_given;     /* 1: --queries was given (ycsb: the operations of each method) */
  int keep_db;           /* 1: leave the databases in work_dir */
  int cold;              /* 1: Table I and Fig. 8 also measure every query with a cold cache */
  uint64_t max_n;        /* > 0: the drivers skip their database sizes above it (--max-n) */
  uint64_t min_n;        /* > 0: ... and below it (--min-n: the 500M point alone) */
  int no_plot;           /* 1: CSV only */
  int costs;             /* an exp_costs_t (default EXP_COSTS_BFH) */
  /* The subset of the method sweep of Fig. 8 and Fig. 11 (exp_measure_methods) to measure, so
     that a long point can be run in pieces: series, NULL for all, else a comma-separated list
     of its series names (exp_series_check: exp_sweep_series_at; ycsb: its sources and methods,
     exp_ycsb_series_at); cache, EXP_CACHE_* bits (0: warm, and cold
     with `cold`); cold_queries, the queries of a cold point (1..EXP_COLD_QUERIES, 0: the
     most). */
  const char *series;
  int cache;
  int cold_queries;
  /* --compression: the bfh_compression of the LevelDB and RocksDB engines' tables, or -1 (the
     default): none for the paper's structures, as the authors' LevelDB wrote its tables (10M
     entries in about 119 tables of 2 MiB), the engine's own (snappy) for the drivers beyond
     the paper (exp_db_params_t.beyond). */
  int compression;
  /* --scale N: > 0, every driver at N entries alone in the paper's geometry (scale EXP_PAPER,
     nothing shrunk; min_n = max_n = N; exp_sizes, exp_one_size); 0: the scale's sizes. */
  uint64_t n;
} exp_ctx_t;

#define EXP_CACHE_WARM 1
#define EXP_CACHE_COLD 2
/* The EXP_CACHE_* bits a run measures: x->cache, or warm (and cold with x->cold). */
int exp_cache_wanted(const exp_ctx_t *x);

const char *exp_scale_name(exp_scale_t s);
/* 1 if a driver runs its database size n: within --min-n and --max-n. */
int exp_size_wanted(const exp_ctx_t *x, uint64_t n);
/* The database sizes (0-terminated) of a driver that has a list per scale: paper, medium or
   small; with --scale N, {N, 0} (in memory of its own, valid until the next call). */
const uint64_t *exp_sizes(const exp_ctx_t *x, const uint64_t *paper, const uint64_t *medium,
                          const uint64_t *small);
/* The one database size of a driver that has one per scale (paper_n at the paper's scale, ...),
   and into *shrink the factor its geometry is shrunk by so that its tables and bits per value
   are the paper's at paper_n (paper_n / n); with --scale N, N and 1. */
uint64_t exp_one_size(const exp_ctx_t *x, uint64_t paper_n, uint64_t medium_n, uint64_t small_n,
                      double *shrink);
/* bfh_engine_name, or "unknown". */
const char *exp_engine_name(bfh_engine e);
/* 1 if engine e has every BFH_ENGINE_CAN_* of caps (the library's table says). */
int exp_engine_can(bfh_engine e, unsigned caps);
/* Is e bfh's own LSM engine (ENGINE_CAP_OWN, engine.h), whose internals the authors' cost
   profile measures? */
int exp_engine_is_own(bfh_engine e);
/* bfh_method_name, or "?" for a value that names no method (a result's method_used). */
const char *exp_method_name(bfh_method m);
const char *exp_placement_name(int placement); /* a bfh_placement: "similarity", ... */
/* The "series" of a method in a placement sweep: "hierarchy-paper", ..., or the method's
   name ("scan", ...) for the methods that do not depend on the placement. */
const char *exp_series_name(bfh_method m, int placement);

/* The placements every placement sweep runs, the paper's first. */
extern const int EXP_PLACEMENTS[3];

/* ---- time (exp_time.c) ------------------------------------------------------------------- */
double exp_now(void); /* seconds, monotonic */

/* A progress line on stderr, rewritten in place; only when stderr is a terminal. */
void exp_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void exp_progress_done(void); /* clears the line */

/* ---- files and directories (exp_fs.c) ------------------------------------------------------ */
/* mkdir -p path: 0, or -1 (errno set). */
int exp_mkdir_p(const char *path);
/* rm -r path (best effort). */
void exp_rmtree(const char *path);
/* fopen(path, mode) ("r", "w" or "a", with or without "b") of a regular file only: the open
   never waits on a FIFO put in its place, and anything but a regular file gives NULL with
   errno EINVAL (util/env.h's rule for the library's files). The caller fcloses it. */
FILE *exp_fopen(const char *path, const char *mode);

/* ---- measuring in a child process (exp_child.c) ------------------------------------------ */

/* The process's anonymous resident memory (RssAnon), in bytes; 0 if /proc cannot be read. */
uint64_t exp_rss_anon(void);
/* Restarts the process's peak resident memory (VmHWM) from its resident memory of now (Linux
   4.0 and later: /proc/self/clear_refs) and returns that (VmRSS, bytes); 0 if it cannot. */
uint64_t exp_rss_peak_reset(void);
/* The process's peak resident memory (VmHWM) since it started or the last
   exp_rss_peak_reset, in bytes; 0 if /proc cannot be read. */
uint64_t exp_rss_peak(void);
/* The bytes the process's malloc has handed out and not taken back, over every arena and its
   own mappings (glibc's malloc_info totals: the arenas' memory less their free chunks, plus the
   chunks it mapped alone); 0 if malloc_info fails. Unlike RssAnon it counts an allocation
   whether or not its pages were touched, and not the freed memory malloc keeps. */
uint64_t exp_heap_in_use(void);
/* Runs fn(arg, out) in a forked child and copies the out_len bytes it left in out back into
   the caller's out: a measurement whose RssAnon holds only what fn made. 0, or -1 if the
   child could not run or did not finish (said on stderr). */
typedef void (*exp_child_fn)(void *arg, void *out);
int exp_in_child(exp_child_fn fn, void *arg, void *out, size_t out_len);
/* In a forked child: takes its own copy of every resident private writable page it shares
   with its parent (MADV_POPULATE_WRITE over each run of resident pages, else a write to each
   page; pages the parent never touched stay untouched) and maps its private read-only pages
   (code, constants: MADV_POPULATE_READ), in mappings of up to 512 MB and except those of files
   under except_dir (NULL: none), so that what runs next pays the page faults the parent
   would, no more, no fewer: measured at 1M, a cold search in a child took 15-130
   copy-on-write and mapping faults without it, 0.04-0.3 ms; with it, 0 at 1M and 10M. */
void exp_child_own_memory(const char *except_dir);

/* ---- CSV (exp_csv.c) ---------------------------------------------------------------------- */
typedef struct exp_csv exp_csv_t;

/* Opens <out>/<name>.csv and writes the header row: the columns of cols (NULL-terminated),
   and a "costs" column after them if cols has none (every row's costs cell is x->costs's name
   unless set). The rows of the other cost profile in an existing file with the same header
   are kept (a run replaces only its own profile's rows). The header and the kept rows are on
   disk, whole, when it returns, and exp_csv_row flushes every row: a run killed mid-way loses
   only the rows it had yet to write. Returns NULL (and prints why on stderr) on failure.
   Client calls exp_csv_close(). */
exp_csv_t *exp_csv_open(const exp_ctx_t *x, const char *name, const char *const *cols);
/* exp_csv_open for a driver that measures a subset of its rows when asked: of the run's cost
   profile and scale, an existing row is replaced only if the run measures it, i.e. for every
   EXP_CSV_KEY_* of keys: its series is wanted (exp_sweep_series_wanted), its cache is
   (exp_cache_wanted: "warm", or "cold..."), its n is (exp_size_wanted). Rows of another scale
   with the run's costs are replaced. The kept rows and the run's are written in the order of
   n (stably) when the file is closed. EXP_CSV_KEY_DB_N is EXP_CSV_KEY_N for the rows whose
   source is "db" only: Table II's synthetic rows (the 500M and 1B points as structures) are
   measured by every run whatever its sizes, so every run replaces them. */
#define EXP_CSV_KEY_SERIES 1u
#define EXP_CSV_KEY_CACHE 2u
#define EXP_CSV_KEY_N 4u
#define EXP_CSV_KEY_DB_N 8u
exp_csv_t *exp_csv_open_subset(const exp_ctx_t *x, const char *name, const char *const *cols,
                               unsigned keys);
/* Set a cell of the current row by column name (an unknown name is a programming error: it
   is reported on stderr once and ignored). Cells not set are written empty. */
void exp_csv_str(exp_csv_t *c, const char *col, const char *v);
void exp_csv_u64(exp_csv_t *c, const char *col, uint64_t v);
void exp_csv_dbl(exp_csv_t *c, const char *col, double v);
/* Writes the current row (its commit cell set to exp_commit()) and clears it. */
void exp_csv_row(exp_csv_t *c);
/* The columns every CSV has (exp_csv_open appends those its cols lack): commit (exp_commit),
   entries_per_table and bits_per_value (exp_csv_shape; empty where a driver has no tables). */
extern const char *const EXP_COMMON_COLS[];
/* `git describe --always --dirty` of the source this binary was built from, "unknown" if it
   was not built from a git checkout (baked in at build time). */
const char *exp_commit(void);
/* Sets entries_per_table and bits_per_value (= m / entries_per_table; left empty if m is 0:
   no value filters) of the current row; nothing if entries_per_table <= 0. */
void exp_csv_shape(exp_csv_t *c, double entries_per_table, uint64_t m);
/* Flushes and closes; 0 or -1 on a write error. NULL allowed. */
int exp_csv_close(exp_csv_t *c);

/* ---- databases (exp_db.c) ----------------------------------------------------------------- */

/* The paper's geometry shrunk by a factor f: tables of 2 MiB/f, memtable 4 MiB/f and value
   filters of m/f bits, at N/f entries. That aims at the paper's table count and filter bits
   per entry; the engines' table sizes do not scale exactly, so the CSVs' entries_per_table and
   bits_per_value say what a run got (doc/paper-notes/scales.md). */
typedef struct exp_db_params {
  workload_config_t wl;
  bfh_engine engine;
  uint64_t m;
  uint32_t k, d;
  size_t table_bytes, memtable_bytes;
  int value_filters, leaves_on_disk, placement;
  /* 1: also the structures beyond the paper (block filters, the memtable value index) that
     BFH_SEARCH_AUTO uses; 0 (default): the paper's structures only, so that the paper's
     artifacts measure the paper's costs. */
  int beyond;
  /* 1: also the stand-alone index (bfh_options.standalone_index). */
  int standalone;
  /* exp_ctx_t.compression (from exp_db_params_init): -1, none unless `beyond`; else the
     bfh_compression asked for, part of the database's identity. */
  int compression;
  /* bfh_options.index_bits_per_value (0 from exp_db_params_init: the paper's layout, set
     into the options whatever bfh_options_init's default, so that the paper's figures keep
     the paper's configuration) and cuckoo_index (0, default: none); in memory only, not part
     of the database's identity. */
  uint32_t index_bits_per_value;
  int cuckoo;
  /* bfh_options.block_maps for a lean layout (0, default: block filters only). With it, the
     tables a build writes carry value-to-block maps; the memory driver's databases are its
     own (not shared by identity), so it is left out of the identity too. */
  int block_maps;
  /* Not NULL: the database is searched with the authors' costs (exp_authors_search, at most
     EXP_AUTHORS_QUERIES queries; cold: the database directory, their leaf files in it,
     evicted before each query; the target's db may be NULL). Borrowed. */
  struct exp_authors *authors;
} exp_db_params_t;

/* Defaults: the paper's (m = 2M, k = 3, d = 5, 2 MiB tables, 4 MiB memtable), value filters
   on, leaves in memory, sequential Key<i>/Value<i>, domain 100%, engine from x. */
void exp_db_params_init(exp_db_params_t *p, const exp_ctx_t *x, uint64_t n);
/* Scales table, memtable and m down by f (>= 1). */
void exp_db_params_shrink(exp_db_params_t *p, double f);
void exp_db_options(const exp_db_params_t *p, bfh_options *opt);
/* The k a new database of p's layout gets by default (bfh.h value_filter_hashes 0): 8 under
   the lean layout with value-to-block maps, the paper's 3 otherwise. p's own k is ignored. */
uint32_t exp_db_layout_hashes(const exp_db_params_t *p);

/* <work_dir>/<name> into buf (cap bytes). */
void exp_db_path(const exp_ctx_t *x, const char *name, char *buf, size_t cap);
typedef struct exp_build_result {
  double put_s;       /* all bfh_put calls */
  double flush_s;     /* the final bfh_flush */
  double total_s;     /* put_s + flush_s */
  uint64_t bytes_put; /* sum of the key and value lengths put */
  int have_stats;     /* 1: stats holds bfh_stats taken after the flush, before the close */
  bfh_db_stats stats;
} exp_build_result_t;

/* Removes dir, creates the database, puts the whole workload, flushes and closes it.
   Returns BFH_OK or a status (message printed on stderr). Only exp_db_build fills bytes_put
   and stats; the times exp_db_get returns for a reused database come without them. */
int exp_db_build(const exp_ctx_t *x, const exp_db_params_t *p, const char *dir,
                 exp_build_result_t *res);
/* exp_db_build in a child process (exp_in_child), its result copied back, for a driver that
   measures in children afterwards: the parent then never runs a stock library's background
   thread, which a forked child inherits as started but does not have (LevelDB's Env queues
   the child's compactions for it, and its close waits for them forever). BFH_E_IO when the
   child failed (printed). */
int exp_db_build_in_child(const exp_ctx_t *x, const exp_db_params_t *p, const char *dir,
                          exp_build_result_t *res);
/* The database of p, built once per run and shared by every artifact that asks for the same
   content (engine, N, domain, order, m, k, table and memtable size, value filters): in
   <work>/db-<identity> (written to dir, cap bytes). A directory holding a complete build of
   the same identity (marker file BFH-EXP-BUILT, left by an earlier run with --keep) is
   reused. *res (may be NULL) gets the build's times, measured when it was built. BFH_OK or
   the build's status. */
int exp_db_get(const exp_ctx_t *x, const exp_db_params_t *p, char *dir, size_t cap,
               exp_build_result_t *res);
/* Hands dir, a complete build of p made with exp_db_build (times *b), to exp_db_get: it
   becomes the shared database of p's identity, unless one exists already (dir is then
   dropped). Fig. 6 times fresh builds and leaves its last one to the other artifacts.
   BFH_OK or BFH_E_IO. */
int exp_db_adopt(const exp_ctx_t *x, const exp_db_params_t *p, const char *dir,
                 const exp_build_result_t *b);
/* 1 if an earlier run kept a complete build of p (--keep): its directory into dir (cap
   bytes), its recorded times and the counts of a fresh open (stats) into *res, and it is
   registered as exp_db_get's would be. 0 if there is none, or it does not open. Fig. 6 uses it
   to resume a size whose two builds do not fit in one sitting. */
int exp_db_kept(const exp_ctx_t *x, const exp_db_params_t *p, char *dir, size_t cap,
                exp_build_result_t *res);
/* Removes the databases exp_db_get made or found, unless x->keep_db. */
void exp_db_cleanup(const exp_ctx_t *x);
/* Opens an existing database built with p (p's order, leaves_on_disk and placement apply).
   On BFH_OK *db is a new handle (close with bfh_close). Prints the error otherwise. */
int exp_db_open(const exp_db_params_t *p, const char *dir, bfh_db **db);
/* Applies what the value index has queued (the leaves an open read, tables a flush added), so
   that the next search is timed over the whole index alone (exp_db_open does it). */
int exp_db_settle(bfh_db *db);
/* A handle of the own engine: waits until its background thread has no flush or compaction
   left, then settles the index (exp_db_settle). The state a fork may copy: no background work
   goes on in the parent alone (deleting files a child reads) and no lock is held across the
   fork. BFH_OK or the status (printed). */
int exp_db_quiesce(bfh_db *db);

/* The database of Fig. 10-12: the paper's 10M entries in ~119 tables with m filter bits
   (medium and paper scale), or 1M entries with the geometry and m shrunk by 10 (small). */
void exp_fig10_db(const exp_ctx_t *x, uint64_t m, exp_db_params_t *p);
/* Removes a database directory unless x->keep_db. */
void exp_db_drop(const exp_ctx_t *x, const char *dir);

/* bfh_stats: 1 if it worked and *st is filled, 0 otherwise. */
int exp_db_stats(bfh_db *db, bfh_db_stats *st);

/* ---- searches (exp_measure.c) ------------------------------------------------------------- */
/* Per-query means of the counters of bfh_search_stats, over the measured queries. */
typedef struct exp_counters {
  double internal_probes, leaf_probes, leaf_positives, tables_scanned, tables_matched,
      entries_scanned, bytes_read, candidates, results, tables_live, block_filters_probed,
      blocks_read, internal_maybe;
} exp_counters_t;

typedef struct exp_search_result {
  int queries;   /* measured queries */
  int wrong;     /* queries whose keys are not the set of entries holding the value in the
                    workload (exp_keys_wrong): a key missed, one too many, or another instead */
  double time_s; /* median wall time */
  double time_min_s, time_max_s;
  double time_q1_s, time_q3_s; /* first and third quartiles (interpolated) */
  exp_counters_t mean;         /* per-query means: every counter is the count of real searches */
  int cold;                    /* measured with a cold cache */
  int drop_caches;             /* ... and the kernel's drop_caches worked for every query */
  double resident_pct;         /* cold: mean % of the database's pages cached at query start */
  double fpr_leaves; /* (leaf_positives - tables_matched) / (leaf_probes - tables_matched),
                        summed over the queries; < 0 if not applicable */
} exp_search_result_t;

/* The database being measured: a cold measurement closes and reopens it (db changes). */
typedef struct exp_target {
  bfh_db *db;
  const exp_db_params_t *p;
  const char *dir;
} exp_target_t;

/* Queries per point with the authors' costs: a scan at 10M entries takes seconds. */
#define EXP_AUTHORS_QUERIES 10
/* Opens the authors' cost profile on p's database in dir (closed; own engine only: another
   engine prints why and gives BFH_E_UNSUPPORTED), with p's order and placement. */
int exp_authors_target(const exp_db_params_t *p, const char *dir, struct exp_authors **out);
/* Opens t (t->p and t->dir set, t->db NULL) for measuring: the authors' cost profile in
   t->p->authors when `authors`, else a bfh handle in t->db (exp_db_open). BFH_OK or the
   status (printed). exp_target_close() closes whichever was opened. */
int exp_target_open(exp_target_t *t, exp_db_params_t *p, int authors);
void exp_target_close(exp_target_t *t, exp_db_params_t *p);

/* Runs one warm-up query, then nq queries (present values if present, else absent values;
   the same values for every method given the same seed), each with `method`; fills r.
   cold: at most EXP_COLD_QUERIES queries, each finding the database as an open leaves it with
   its files evicted from the page cache (exp_cache_evict), so the query reads from storage:
   the own engine is reopened once and each query runs in a forked child that evicts, other
   engines are reopened before each query, the authors' costs (t->p->authors) only evict
   (r->resident_pct: mean share of the files' pages still cached when the query started).
   Returns
   BFH_OK or the first failing status (message printed); t->db is then closed or still valid. */
int exp_search_measure(exp_target_t *t, const workload_t *w, bfh_method method, int present, int nq,
                       uint64_t seed, int cold, exp_search_result_t *r);

#define EXP_COLD_QUERIES 10 /* a cold query costs an eviction and a fork or a reopen */
/* `present` of exp_search_measure: absent values, present ones (values of the domain, drawn
   uniformly: with drawn workload values some occur on no entry), or one fixed value, the value
   id given as `seed`, searched nq times (the authors' one query, e.g. Value1879). */
#define EXP_QUERY_ABSENT 0
#define EXP_QUERY_PRESENT 1
#define EXP_QUERY_FIXED 2

/* Runs fn(arg, out) as a cold measurement of t: the database as an open leaves it, its files
   evicted from the page cache. On the own engine t is reopened when `first` (the first of a
   series of measurements) and fn runs in a child forked from it that evicts first, out_len
   (at most EXP_COLD_OUT_MAX) bytes of out copied back; other engines are closed, evicted and
   reopened before every call; with t->p->authors the files are evicted and fn runs in the
   process (the authors' costs open every file per query). Adds the share of pages still cached to
   *resident, sets *dropped as exp_cache_evict does. BFH_OK or the failing status (printed). */
#define EXP_COLD_OUT_MAX 512
int exp_cold_call(exp_target_t *t, int first, exp_child_fn fn, void *arg, void *out, size_t out_len,
                  double *resident, int *dropped);

/* Sorts the n times of t in place, ascending. */
void exp_times_sort(double *t, size_t n);
/* The q-quantile (0..1) of the n (> 0) sorted times of t, interpolated between the two nearest
   ranks: the median, and the quartiles every driver writes next to it (`*_q1_s`, `*_q3_s`). */
double exp_times_quantile(const double *t, size_t n, double q);

/* The fixed seed of every query set. */
#define EXP_QUERY_SEED 1234
/* Measures `method` (present or absent values, x->queries of them; cold as in
   exp_search_measure) on t and sets the database and search columns of the current row of c (the
   caller adds its own columns, then exp_csv_row), entries_per_table (n / live tables) and
   bits_per_value included. Returns BFH_OK or the failing status. */
int exp_measure_into(exp_csv_t *c, const exp_ctx_t *x, exp_target_t *t, const workload_t *w,
                     bfh_method method, int present, int cold, exp_search_result_t *r);
/* exp_measure_into for the one value id value_id, searched x->queries times (EXP_QUERY_FIXED):
   the query cell is "fixed". */
int exp_measure_fixed_into(exp_csv_t *c, const exp_ctx_t *x, exp_target_t *t, const workload_t *w,
                           bfh_method method, uint64_t value_id, int cold, exp_search_result_t *r);

/* ---- the keys a search found (exp_keys.c) -------------------------------------------------- */
/* The keys of one search (exp_keys_add, a bfh_match_fn that never stops the search), copied
   into one buffer during the search and compared with the workload's truth after it, so that
   the timed search pays one copy per key. Caller-owned: zero it, exp_keys_reset before each
   search, exp_keys_release at the end (frees buf; NULL allowed). */
typedef struct exp_keys {
  unsigned char *buf; /* the keys, each after its length byte (exp_keys.c) */
  size_t len, cap;
  uint64_t n;   /* keys found */
  uint64_t bad; /* ... of which longer than any workload key (not stored) */
  int nomem;    /* a key could not be stored */
} exp_keys_t;

void exp_keys_reset(exp_keys_t *k);
void exp_keys_release(exp_keys_t *k);
int exp_keys_add(void *arg, const void *key, size_t len);
/* Are the keys k found for value id value_id of w other than the set of w's entries whose
   value id is value_id, of which there are expect (workload_value_counts)? 0 if equal, 1 if
   not (a key missed or not of the value, a key twice, a count that differs: the first
   difference described in why, why_cap bytes, NULL allowed), -1 if out of memory (said in
   why). Exact, whatever the count: a key found in place of another of the set is wrong. */
int exp_keys_wrong(const exp_keys_t *k, const workload_t *w, uint64_t value_id, uint64_t expect,
                   char *why, size_t why_cap);

/* ---- the columns of the database and search experiments (exp_csv.c) ----------------------- */
/* Writes the columns shared by every database experiment: engine, scale, n, domain_pct,
   insert_order, m, k, d, table_bytes, leaves_on_disk, placement, domain_mode (the workload's
   values: "exact" or "authors", workload_values_name), costs. */
void exp_csv_db_params(exp_csv_t *c, const exp_ctx_t *x, const exp_db_params_t *p);
/* Writes method, query, queries, wrong, time_s, time_min_s, time_max_s, time_q1_s,
   time_q3_s and the counters (per-query means; internal_maybe: the internal nodes that said
   maybe). */
void exp_csv_search(exp_csv_t *c, const char *method, const char *query,
                    const exp_search_result_t *r);
/* The column names written by the two functions above (NULL-terminated lists). */
extern const char *const EXP_DB_COLS[];
extern const char *const EXP_SEARCH_COLS[];
/* Concatenates NULL-terminated column lists into out (cap entries, NULL-terminated). */
void exp_cols_cat(const char **out, size_t cap, ...);

/* ---- page cache (exp_cache.c) ------------------------------------------------------------- */
/* Evicts every file under dir from the page cache (posix_fadvise DONTNEED; pages mapped by
   a live process stay); with dropped != NULL it first syncs and asks the kernel to drop
   clean caches (/proc/sys/vm/drop_caches, where permitted: *dropped set to 1 if it was).
   Returns the share (0..1) of the files' pages still resident afterwards (mincore), or -1
   if it cannot tell. */
double exp_cache_evict(const char *dir, int *dropped);

/* ---- the sweep of Fig. 8 and Fig. 11 (exp_sweep.c) ---------------------------------------- */
/* The sweep shared by Fig. 8 and Fig. 11: gets the database of *p (exp_db_get), then measures
   SCAN (once, leaves in memory), LEAVES and SLICED, and HIERARCHY in the paper's tree and the
   similarity placement, with leaves in memory and, after reopens, on disk (k words read per
   probe) and on disk read whole (the paper's cost); for present values and, with absent_too,
   absent ones. Each measurement is one CSV row whose "series" cell names method, placement
   and leaves ("scan", "leaves-mem", "hierarchy-paper-disk", "sliced-whole", ...); with
   cold_too every point is measured again with a cold cache (the "cache" cell tells which),
   after all the warm ones. With x->costs == EXP_COSTS_AUTHORS: SCAN, LEAVES and HIERARCHY
   (both placements) with the authors' costs, leaves loaded from files ("leaves-file",
   "hierarchy-paper-file", ...), warm, and cold with cold_too as bfh's. cells(csv, arg), if not
   NULL, fills the caller's extra cells of every row. 0 or -1. */
int exp_measure_methods(exp_csv_t *c, const exp_ctx_t *x, exp_db_params_t *p, int absent_too,
                        const uint64_t *fixed, int cold_too,
                        void (*cells)(exp_csv_t *c, const void *arg), const void *arg);
/* fixed (NULL: none): a value id searched by every series besides the drawn values, in rows
   whose "query" cell is "fixed" and "fixed_value" cell the id (the caller's CSV has that
   column), x->queries times: the paper's one query (Fig. 8: Value187719). Skipped at a size
   that does not hold it (an id >= n). */
/* With x->series, x->cache and x->cold_queries the sweep measures a subset: only the series
   named, only the warm or cold points (cold ones only with cold_too), cold points with
   x->cold_queries queries each; a reopen serving none of the wanted series is skipped. The
   drivers open their CSV with exp_csv_open_subset, so a run replaces the rows it measured and
   keeps the others. */
/* The i-th series name of the sweep under cost profile costs (exp_costs_t), NULL past the
   last. */
const char *exp_sweep_series_at(int costs, size_t i);
/* 1 if x->series is NULL or lists name. */
int exp_sweep_series_wanted(const exp_ctx_t *x, const char *name);
/* The names a driver's --series may give: at(arg, 0), at(arg, 1), ... up to the first NULL
   (the sweep's under a cost profile, ycsb's sources and methods). exp_series_check: 0 if
   every name of the comma-separated list is one of them, else -1 with the first unknown one
   in bad (cap bytes). exp_series_names: all of them, comma-separated, into out (cap bytes). */
typedef const char *(*exp_series_at_fn)(const void *arg, size_t i);
int exp_series_check(const char *list, exp_series_at_fn at, const void *arg, char *bad,
                     size_t cap);
void exp_series_names(exp_series_at_fn at, const void *arg, char *out, size_t cap);
/* ---- synthetic leaves, for the pure-structure experiments (exp_synth.c) ------------------- */

/* Fills words (ceil(m/64), zeroed first) with the value filter of a table holding the
   `entries` distinct values Value<leaf*entries> .. Value<leaf*entries + entries - 1>. */
void exp_synth_leaf(uint64_t m, uint32_t k, uint64_t leaf, uint64_t entries, uint64_t *words);

/* A set of synthetic leaves for the pure-structure experiments (Table II at 500M-1B entries,
   Fig. 7): `leaves` tables of `entries` distinct values each, m-bit filters with k hashes.
   The leaves are kept in memory when they fit in a quarter of the physical memory (at least
   1 GiB); otherwise they are regenerated whenever the hierarchy needs them
   (hierarchy_leaf_source_t), which is many times slower. Caller-owned: exp_synth_init() /
   exp_synth_release(). */
typedef struct exp_synth {
  uint64_t m;
  uint32_t k;
  uint64_t leaves, entries;
  uint64_t **words;   /* words[i] = leaf i (id i + 1), or NULL when not resident */
  uint64_t *scratch;  /* one leaf, for probes of non-resident leaves */
  uint64_t generated; /* leaf generations so far */
} exp_synth_t;

/* Returns 0, or -1 if memory is short. */
int exp_synth_init(exp_synth_t *s, uint64_t m, uint32_t k, uint64_t leaves, uint64_t entries);
void exp_synth_release(exp_synth_t *s);
/* Builds a hierarchy of order d over the first `leaves` leaves (ids 1..leaves, in order;
   leaves <= s->leaves) with the given bfh_placement (paper, positional: bottom-up build in
   leaf order; similarity: one insert per leaf). Returns it (caller destroys it with
   hierarchy_destroy) or NULL; *build_s gets the time taken. */
struct hierarchy;
struct hierarchy *exp_synth_hierarchy(exp_synth_t *s, uint64_t leaves, uint32_t d, int placement,
                                      double *build_s);
/* The paper's hierarchy has exactly d children per internal node: its node count over B
   leaves, sum over levels of ceil(B / d^i) until one node. */
uint64_t exp_paper_internal_nodes(uint64_t leaves, uint32_t d);

/* ---- plots (exp_plot.c) ------------------------------------------------------------------- */

/* Runs gnuplot -e "in='<out>/<name>.csv'; out='<out>/<name>'" <plots>/<name>.gp. A missing
   gnuplot or script is reported and skipped (returns 0); -1 if gnuplot failed. */
int exp_plot(const exp_ctx_t *x, const char *name);
/* 1 and the path of the script that draws <out>/<csv>.csv in script (cap bytes): <csv>.gp,
   else, for a name <artifact>-<anything> (a kept CSV of another run, e.g. fig9-medium),
   <artifact>.gp; 0 if neither is found. */
int exp_plot_script_of(const exp_ctx_t *x, const char *csv, char *script, size_t cap);
/* Draws every <out>/<name>.csv that has a script (exp_plot_script_of) into <out>/<name>.png
   and .svg, saying each on stdout; nothing with x->no_plot. Returns how many failed. */
int exp_plot_all(const exp_ctx_t *x);
/* The names (without ".csv") of the regular files <dir>/<name>.csv, sorted, into *names
   (*n of them); 0, or -1 if dir cannot be read or memory runs out. The caller frees them with
   exp_plot_names_free. */
int exp_plot_csv_names(const char *dir, char ***names, size_t *n);
void exp_plot_names_free(char **names, size_t n); /* NULL allowed */
/* Was <dir>/<name>.csv written by the authors' code's driver (scripts/authors-baseline.sh)?
   Its header begins "source,build,run,experiment,": their rows, which bfh's plots do not draw. */
int exp_csv_is_authors(const char *dir, const char *name);

#endif
