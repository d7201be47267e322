/* standalone_t: the stand-alone secondary index, the baseline bfh's embedded index is
 * measured against (bfh_options.standalone_index, doc/standalone.md).
 *
 * A second own-engine store in <db>/bfh-standalone/ holds one entry per live (attribute,
 * term, key) of the database, LevelDB++'s "composite" index, one per attribute: the terms are
 * those terms_extract gives (query/terms.h). A database without declared attributes, or one
 * that declares the whole value (`value`, not :int), has the whole value's entry, whose key is
 *     varint32(len v) || v || k          when len v <= STANDALONE_INLINE_MAX
 *     varint32(len v) || hash64(v) || k  otherwise (a store key is at most 1 MiB)
 * and each term t of every other attribute, named n, has the entry (format 2)
 *     0x80 0x00 || varint32(len n) || n || 0x08 || t || k       an :int attribute (8 bytes)
 *     0x80 0x00 || varint32(len n) || n || esc(t') || 0x00 0x01 || k     any other
 * where t' is t cut to its first STANDALONE_TERM_MAX bytes and esc doubles each 0x00 byte as
 * 0x00 0xff. Every value is empty. 0x80 0x00 is an overlong varint, which no whole-value key
 * starts with, and an attribute's entries are named by its name, not its position. The
 * prefix up to k names the term alone (a lookup seeks it and reads the keys while they start
 * with it), and the keys of one attribute are in its terms' order: an :int term is its
 * integer with the sign bit flipped, big-endian, and esc(a) 0x00 0x01 sorts as a does among
 * texts (a proper prefix first), so a range of terms is one seek and a bounded scan
 * (standalone_scan_range). Terms longer than STANDALONE_TERM_MAX share the entries of their
 * first bytes, and validation tells them apart. A database whose only attribute is the whole
 * value keeps the first format alone, byte for byte as before attributes existed; its
 * entries are in order within each length, and a range over them takes two seeks per length
 * held.
 *
 * The attributes the index holds are recorded in bfh-standalone/ATTRIBUTES (text: the line
 * "format 2" when it holds other attributes than the whole value, "value" if it holds whole
 * values, then each other attribute's canonical declaration, one a line, sorted), absent
 * when it holds the whole value alone. An open whose record differs (an attribute declared
 * or dropped since the index was built, or an index of format 1, whose text terms were
 * length-first and so out of order) builds the index again: no index is read in a format
 * it was not written in.
 *
 * Writes (standalone_put, standalone_delete) hold one of STANDALONE_STRIPES locks, chosen by
 * the key, so that two writes of one key never interleave. A put of (k, v):
 *     1. read k's old value o from the database (the read before the write)
 *     2. index: put  len(v) v k           (STANDALONE_STEP_INDEXED after it)
 *     3. database: put k -> v             (STANDALONE_STEP_STORED after it)
 *     4. index: delete  len(o) o k        (when o exists and o != v)
 * A delete is 1, then the database's delete, then 4. The index gains an entry before the
 * database does and loses one only after the database no longer holds it, so a crash
 * between any two steps leaves at most a stale entry, which validation drops (the open after
 * it ends the index's exactness, below); no write the database kept lacks its entry. With sync = 1 both stores sync each write, so this
 * holds across a machine crash too. With sync = 0 a machine crash may keep a database
 * write whose index entry the OS had not written yet: the open re-indexes every record it
 * replays from the database's logs (the writes in no table yet), which closes that window
 * for all but a write both flushed into a table and lost from the index (doc/standalone.md
 * "Crashes").
 *
 * Opening: standalone_open opens the database (any engine kind with ENGINE_CAP_STANDALONE,
 * engine.h) and then its index. A kind with at_rest (stock LevelDB and RocksDB, which replay
 * their logs unseen and which other programs may write) keeps the index only when its clean
 * marker holds the database's identity at rest as this open found it; else the index is built
 * again. A
 * database without an index gets one built from all its live entries, written into
 * bfh-standalone.tmp/ and renamed into place once complete (a crash during the build
 * leaves the tmp directory, which the next open removes and builds again).
 */
#ifndef BFH_LSM_HOOKS_STANDALONE_H
#define BFH_LSM_HOOKS_STANDALONE_H

#include <stddef.h>
#include <stdint.h>

#include "bfh.h"
#include "lsm_hooks/engines/engine.h"
#include "util/err.h"

#define STANDALONE_DIR "bfh-standalone"
#define STANDALONE_INLINE_MAX (1u << 19) /* longer values are indexed by their hash */
#define STANDALONE_TERM_MAX (1u << 18)   /* longer text terms are indexed by their start */
#define STANDALONE_FORMAT 2              /* the tagged entries' format, in ATTRIBUTES */
#define STANDALONE_STRIPES 64
#define STANDALONE_TAG_0 0x80 /* the first two bytes of an attribute's term entry */
#define STANDALONE_TAG_1 0x00

typedef struct standalone standalone_t;

struct terms;

/* Opens the database in path with engine kind `kind` (which must have ENGINE_CAP_STANDALONE:
   its open_replaying tells the writes its recovery replays, or its at_rest tells whether
   anything wrote the database since the index's last clean close; *e is new, as from
   kind->open) and its stand-alone index, building the index from the engine's ordered
   iterator if the database has none, has one built for other attributes, or (at_rest) was
   written since. terms: the database's declared
   attributes (borrowed; must outlive the index; NULL: the whole value alone). io: the file
   layer of both stores (NULL: the real one). sync: the value index's feeder (NULL without
   value filters). On failure nothing stays open. */
int standalone_open(const engine_kind_t *kind, const char *path, const bfh_options *opt,
                    const struct terms *terms, struct env *io, index_sync_t *sync, engine_t **e,
                    standalone_t **out, err_t *err);
/* Closes the index (not the engine, which the caller closes first). NULL allowed. */
int standalone_close(standalone_t *s);

/* Does the database in path have a stand-alone index (a bfh-standalone directory)? */
int standalone_exists(const char *path);

/* Removes the (closed) database's stand-alone index: the next open with standalone_index
   builds it again. bfh_repair does this, for a repair may keep writes the index lost or drop
   ones it has. */
int standalone_drop(const char *path, err_t *err);

/* Waits until the index's store has no flush or compaction pending (benchmarks that measure
   a settled shape). BFH_OK or the store's background error. */
int standalone_wait_idle(standalone_t *s, err_t *err);

/* The write protocol above. */
int standalone_put(standalone_t *s, const void *key, size_t key_len, const void *val,
                   size_t val_len, err_t *err);
int standalone_delete(standalone_t *s, const void *key, size_t key_len, err_t *err);

/* Does the index hold whole values (a database without declared attributes, or one that
   declares `value`)? */
int standalone_holds_whole(const standalone_t *s);
/* The keys the index holds under the whole value val[0, val_len), in key order: fn(arg, key,
   key_len) for each until fn returns nonzero, the key borrowed for the call. They are
   candidates, as standalone_lookup_term's are (a value longer than STANDALONE_INLINE_MAX is
   held by its hash, which hash gives when not NULL). *entries (may be NULL) gets the index
   entries read. BFH_E_INVALID if the index holds no whole values. */
int standalone_value_keys(standalone_t *s, const void *val, size_t val_len, const uint64_t *hash,
                          bfh_match_fn fn, void *arg, uint64_t *entries, err_t *err);
/* The lookup of one (attribute, term): fn(arg, key, key_len) for each key whose entry for
   term[0, term_len) of attribute attr (an index into the terms given at open; 0 is the whole
   value when none were given) the index holds, in key order, until fn returns nonzero; the
   key is borrowed for the call. The keys are candidates, not validated: the keys whose live
   value holds the term (or, past STANDALONE_TERM_MAX bytes, a term that starts alike), plus,
   after a crash, stale ones a write left (the caller validates them unless the index
   answers for them: standalone_trusts). standalone_term_whole tells whether a term of
   term_len bytes is held whole. term is as terms_extract gives it (an :int attribute's 8-byte
   attr_int_term). *entries (may be NULL) gets the index entries read. BFH_E_INVALID for an
   attr out of range. */
int standalone_lookup_term(standalone_t *s, size_t attr, const void *term, size_t term_len,
                           bfh_match_fn fn, void *arg, uint64_t *entries, err_t *err);
/* 1 when the entries of attribute attr's terms of term_len bytes (the whole value's when the
   attribute is the whole value) hold the term whole, not cut or hashed: the keys a lookup of
   such a term gives are those whose value holds exactly that term. */
int standalone_term_whole(const standalone_t *s, size_t attr, size_t term_len);
/* A range of one attribute's terms, in their order (memcmp, a proper prefix first; an :int
   attribute's 8-byte terms thus in the integers' order). Without prefix: the terms from lo
   to hi, lo NULL for no lower end and hi NULL for no upper one, each end included unless its
   _open flag is set. With prefix: the terms that start with lo[0, lo_len) (hi unused). Ends
   are terms as terms_extract gives them (an :int attribute's 8-byte attr_int_term). */
typedef struct standalone_range {
  const void *lo;
  size_t lo_len;
  int lo_open;
  const void *hi;
  size_t hi_len;
  int hi_open;
  int prefix;
} standalone_range_t;

/* The lookup of a range of terms of attribute attr: one seek and a bounded scan of the keys
   in term order (for the whole value, length-first, two seeks and a scan per value length
   the index holds), calling fn(arg, key, key_len) for each key whose entry's term is in r,
   in the index's order, until fn returns nonzero; a key held under several terms of r comes
   once per term.
   The keys are candidates, as standalone_lookup_term's: exact for terms that are stored
   whole; a text term longer than STANDALONE_TERM_MAX is reported when its first bytes may
   be in r, and a whole value longer than STANDALONE_INLINE_MAX (held by its hash) always;
   *inexact (may be NULL) gets the count of keys reported under such terms. *entries (may be
   NULL) gets the index entries read. BFH_E_INVALID for an attr out of
   range or an :int end that is not 8 bytes; BFH_E_CORRUPT naming the index for an entry of
   the attribute that does not decode. */
int standalone_scan_range(standalone_t *s, size_t attr, const standalone_range_t *r,
                          bfh_match_fn fn, void *arg, uint64_t *entries, uint64_t *inexact,
                          err_t *err);

/* The term part of a format-2 entry, the bytes after its attribute's start (tests and
   fuzz_standalone_key check the order and the decoding). standalone_term_encode writes term
   t[0, len) as the entries hold it (an :int term as 0x08 and its bytes; a text one escaped
   and cut to STANDALONE_TERM_MAX, then with close the end mark 0x00 0x01) into buf, which
   holds standalone_term_bytes(len) bytes, and returns its length. standalone_term_split
   reads r[0, n), an entry's bytes after its attribute's start: *t, *tn the term's bytes as
   compared in a range scan (an :int term's 8 bytes; a text term's escaped bytes, without the
   end mark), *cut when the term may be a longer one's first STANDALONE_TERM_MAX bytes, and
   the database key *key, *kn after it (all pointing into r). 1, or 0 when r does not decode
   (no end mark, 0x00 followed by neither 0xff nor 0x01, an :int term that is not 0x08 and 8
   bytes). */
size_t standalone_term_encode(uint8_t *buf, int is_int, const void *t, size_t len, int close);
size_t standalone_term_bytes(size_t len);
int standalone_term_split(const uint8_t *r, size_t n, int is_int, const uint8_t **t, size_t *tn,
                          int *cut, const uint8_t **key, size_t *kn);

/* Exact answers (doc/standalone.md "Exact answers"). The index is exact when it holds no
   stale entry: it was built, every open since followed a clean close, and no write failed
   between its first step and its last. bfh-standalone/EXACT records it: a build writes it;
   an open after an unclean close and a write that fails past its read remove it (synced)
   before anything else, and only a build brings it back. In an exact index, an entry whose
   key had no write in flight while the search read the index names the key's live value, so
   the search may report the key without reading it. Each stripe counts the starts and ends
   of its writes (odd while one is in flight): standalone_trust_begin notes the counts before
   a search's first read of the index, and standalone_trusts, after its last, is 1 when the
   index was exact throughout and key's stripe had no write in flight at either moment nor
   began one in between. Any thread; a search's trust is its own. */
typedef struct standalone_trust {
  int exact;
  uint64_t writes[STANDALONE_STRIPES];
} standalone_trust_t;
void standalone_trust_begin(standalone_t *s, standalone_trust_t *t);
int standalone_trusts(standalone_t *s, const standalone_trust_t *t, const void *key,
                      size_t key_len);
/* Is the index exact now (tests)? */
int standalone_is_exact(standalone_t *s);

/* The seed of the index's value hashes: part of its stored keys. */
uint64_t standalone_value_seed(void);

/* AUTO's estimate of a search on the index, in the ns of the planner's cost model
   (search_plan.c): a seek in every sorted run of the index. */
double standalone_cost_ns(standalone_t *s);

/* What validating one candidate costs on this database, as its own searches measured it:
   each search that validated at least STANDALONE_COST_MIN_SAMPLE candidates notes its
   validation's time and count, and the planner reads an exponentially weighted mean of
   their per-candidate times (each new one weighs 1/8), 0 before any. Any thread. */
#define STANDALONE_COST_MIN_SAMPLE 8
void standalone_note_validation(standalone_t *s, uint64_t candidates, uint64_t ns);
double standalone_candidate_ns(standalone_t *s);

typedef struct standalone_stats {
  uint64_t entries_put;      /* index entries written since the open */
  uint64_t tables, bytes;    /* the index's live tables and their size */
  uint64_t bytes_written;    /* its logs and tables, since the open */
  uint64_t old_reads;        /* reads of the old value */
  uint64_t old_read_ns;      /* their time */
  uint64_t replayed_indexed; /* entries re-indexed from the database's replayed logs */
  uint64_t built_entries;    /* entries of a build at this open (0: the index existed) */
} standalone_stats_t;
void standalone_get_stats(standalone_t *s, standalone_stats_t *st);

/* Tests: fn(arg, step) is called at each STANDALONE_STEP of every write (a crash test kills
   the process there). NULL: none. */
enum { STANDALONE_STEP_INDEXED = 1, STANDALONE_STEP_STORED = 2 };
void standalone_set_step_hook(standalone_t *s, void (*fn)(void *arg, int step), void *arg);

#endif
