/* lsm_io_t: every file access of the LSM engine goes through here, so tests can inject
 * faults (a failing write, sync or rename; a power loss that drops unsynced data).
 *
 * lsm_io_default() is the real thing (POSIX calls). lsm_io_create_faulty() is the same
 * real file system plus a fault plan: "fail the Nth operation of kind K (on a path whose
 * name matches a pattern) from now on with ST_E_IO", with an error kind (EIO, ENOSPC, a
 * short write, a failed fsync that loses the unsynced data), optionally "and every later
 * one" (a dead disk), and a power-loss simulation that truncates every file written
 * through this io to the length it had at its last sync.
 *
 * Every function returns a bfh status code; on failure err (may be NULL) names the path
 * and the failed call ("open /d/000007.log: No such file or directory").
 * All functions are thread-safe for distinct files; a single lsm_file_t / lsm_rfile_t is
 * used by one thread at a time (lsm_rfile_pread may be shared).
 */
#ifndef BFH_LSM_IO_H
#define BFH_LSM_IO_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

typedef struct lsm_io lsm_io_t;       /* also spelled `struct lsm_io` in lsm/db.h */
typedef struct lsm_file lsm_file_t;   /* a file open for writing (appending) */
typedef struct lsm_rfile lsm_rfile_t; /* a file open for positional reads */
typedef struct lsm_lock lsm_lock_t;   /* a held LOCK file */

/* The real I/O layer: a static object, never freed (lsm_io_destroy ignores it). */
lsm_io_t *lsm_io_default(void);

/* ---- Files written ------------------------------------------------------------------- */

/* Creates path (truncating it if it exists) for writing. On ST_OK the client closes *f
   with lsm_file_close(). Writes are buffered in user space (64 KiB): lsm_file_flush()
   hands them to the kernel (write(2)); lsm_file_sync() flushes and fdatasyncs. */
int lsm_io_open_write(lsm_io_t *io, const char *path, lsm_file_t **f, err_t *err);
/* Opens path for appending (created if missing); lsm_file_size() starts at its size. */
int lsm_io_open_append(lsm_io_t *io, const char *path, lsm_file_t **f, err_t *err);
/* Appends n bytes (buffered). After a failure the file is in an unknown state: callers
   give up on it. */
int lsm_file_append(lsm_file_t *f, const void *data, size_t n, err_t *err);
/* Writes the buffered bytes with write(2) (no fsync): other readers see them. */
int lsm_file_flush(lsm_file_t *f, err_t *err);
/* Flushes, then fdatasync()s the file. */
int lsm_file_sync(lsm_file_t *f, err_t *err);
/* Flushes and closes (no sync); frees f even on error. NULL allowed (returns ST_OK). */
int lsm_file_close(lsm_file_t *f, err_t *err);
/* Bytes appended so far (including the starting size for append mode and unflushed bytes). */
uint64_t lsm_file_size(const lsm_file_t *f);
/* The path given at open (owned by f). */
const char *lsm_file_path(const lsm_file_t *f);

/* ---- Files read ---------------------------------------------------------------------- */

/* Which file a name or an open file is: device and inode. While a file is held open its
   inode is not reused, so a name whose id differs from an open file's names another file. */
typedef struct lsm_file_id {
  uint64_t dev, ino;
} lsm_file_id_t;

static inline int lsm_file_id_equal(lsm_file_id_t a, lsm_file_id_t b) {
  return a.dev == b.dev && a.ino == b.ino;
}

/* Opens path read-only. The client closes *f with lsm_rfile_close(). */
int lsm_io_open_read(lsm_io_t *io, const char *path, lsm_rfile_t **f, err_t *err);
/* Reads up to n bytes at offset into buf; *got = bytes read (< n only at end of file).
   Thread-safe (pread). */
int lsm_rfile_pread(lsm_rfile_t *f, uint64_t offset, void *buf, size_t n, size_t *got, err_t *err);
uint64_t lsm_rfile_size(const lsm_rfile_t *f); /* size at open */
lsm_file_id_t lsm_rfile_id(const lsm_rfile_t *f); /* the file opened */
void lsm_rfile_close(lsm_rfile_t *f);          /* NULL allowed */

/* Reads the whole file into *data (malloc'd, NUL-terminated one past *size; caller frees). */
int lsm_io_read_file(lsm_io_t *io, const char *path, void **data, size_t *size, err_t *err);
/* Writes data to path (create/truncate), fdatasyncs it and closes it (e.g. CURRENT.tmp). */
int lsm_io_write_file(lsm_io_t *io, const char *path, const void *data, size_t n, err_t *err);

/* ---- Names and directories ----------------------------------------------------------- */

int lsm_io_rename(lsm_io_t *io, const char *from, const char *to, err_t *err);
/* ST_NOT_FOUND (no message) if path does not exist. */
int lsm_io_unlink(lsm_io_t *io, const char *path, err_t *err);
/* mkdir(path, 0755); an existing directory is ST_OK. */
int lsm_io_mkdir(lsm_io_t *io, const char *path, err_t *err);
/* fsync()s the directory itself (after create/rename/unlink of its entries). */
int lsm_io_sync_dir(lsm_io_t *io, const char *dir, err_t *err);
/* 1 if path exists, 0 if not (or on any error). */
int lsm_io_exists(lsm_io_t *io, const char *path);
/* *size = size in bytes of path. ST_NOT_FOUND (no message) if it does not exist. */
int lsm_io_file_size(lsm_io_t *io, const char *path, uint64_t *size, err_t *err);
/* lsm_io_file_size, and *id = the file path names now (one stat). */
int lsm_io_file_stat(lsm_io_t *io, const char *path, uint64_t *size, lsm_file_id_t *id, err_t *err);
/* The names in dir (not "." or ".."), in no particular order. On ST_OK the client frees
   them with lsm_io_names_free(*names, *n). */
int lsm_io_list_dir(lsm_io_t *io, const char *dir, char ***names, size_t *n, err_t *err);
void lsm_io_names_free(char **names, size_t n); /* NULL allowed */

/* Creates path if needed and takes flock(LOCK_EX | LOCK_NB) on it. ST_E_BUSY if another
   open file description (this or another process) holds it. The client releases it with
   lsm_io_unlock() (the file itself is left in place). */
int lsm_io_lock(lsm_io_t *io, const char *path, lsm_lock_t **lock, err_t *err);
void lsm_io_unlock(lsm_lock_t *lock); /* NULL allowed */
/* A reader's lock: opens path read-only (a file or a directory; nothing is created) and takes
   flock(LOCK_SH | LOCK_NB), so that no holder of lsm_io_lock's exclusive lock is open now and
   none can open until lsm_io_unlock. ST_NOT_FOUND (no message) if path does not exist;
   ST_E_BUSY if an exclusive lock is held. */
int lsm_io_lock_shared(lsm_io_t *io, const char *path, lsm_lock_t **lock, err_t *err);

/* ---- Fault injection (tests) --------------------------------------------------------- */

typedef enum lsm_io_op {
  LSM_IO_OP_OPEN = 0, /* lsm_io_open_write / _append / _read, lsm_io_read_file */
  LSM_IO_OP_WRITE,    /* lsm_file_append (counted per call, before any byte is written) */
  LSM_IO_OP_SYNC,     /* lsm_file_sync, lsm_io_sync_dir, the sync of lsm_io_write_file */
  LSM_IO_OP_RENAME,   /* lsm_io_rename */
  LSM_IO_OP_UNLINK,   /* lsm_io_unlink */
  LSM_IO_OP_READ,     /* lsm_rfile_pread */
  LSM_IO_OP_MKDIR,    /* lsm_io_mkdir */
  LSM_IO_OP_KINDS
} lsm_io_op_t;

/* How an injected fault fails. Every one returns ST_E_IO with the message
   "injected fault: <call> <path>: <errno text>". */
typedef enum lsm_io_error {
  LSM_IO_ERR_EIO = 0, /* the call does nothing and fails with EIO */
  LSM_IO_ERR_ENOSPC,  /* the call does nothing and fails with ENOSPC (a full disk) */
  LSM_IO_ERR_SHORT,   /* LSM_IO_OP_WRITE only: the buffered bytes and half of the new ones
                         reach the file, then the call fails with ENOSPC */
  LSM_IO_ERR_FSYNC,   /* LSM_IO_OP_SYNC only: the data reaches the kernel, fdatasync fails
                         with EIO and the kernel drops the pages it could not write back
                         (the file is truncated to its size at its last successful sync) */
  LSM_IO_ERRORS
} lsm_io_error_t;

/* A fault to arm (lsm_io_fail_with). */
typedef struct lsm_io_fault {
  lsm_io_op_t op;       /* the kind of operation that fails */
  uint64_t n;           /* the nth matching operation of kind op from now fails (>= 1) */
  int sticky;           /* != 0: every later matching operation of kind op fails too */
  lsm_io_error_t error; /* how it fails */
  const char *pattern;  /* fnmatch(3) pattern on the path's last component ("*.log",
                           "MANIFEST-*", "CURRENT.tmp"); NULL: every path. Copied. */
} lsm_io_fault_t;

/* A real I/O layer with a fault plan (initially: no faults). Client calls
   lsm_io_destroy() after every file opened through it is closed. NULL on no memory. */
lsm_io_t *lsm_io_create_faulty(void);
/* NULL and lsm_io_default() allowed (no-op). */
void lsm_io_destroy(lsm_io_t *io);
/* Makes the nth operation of kind op from now (n >= 1; 1 = the next one) fail with
   ST_E_IO and the message "injected fault: <call> <path>"; sticky != 0: every later one
   fails too. n == 0 disarms op. No effect on lsm_io_default(). */
void lsm_io_fail(lsm_io_t *io, lsm_io_op_t op, uint64_t n, int sticky);
/* Arms f for its kind of operation (replacing what was armed for that kind); returns
   ST_OK, ST_E_INVALID for an error that does not fit the kind (a short sync) or
   ST_E_NOMEM. No effect on lsm_io_default(). */
int lsm_io_fail_with(lsm_io_t *io, const lsm_io_fault_t *f);
/* Disarms every fault. */
void lsm_io_fail_none(lsm_io_t *io);
/* Faults injected through io since its creation. 0 for lsm_io_default(). */
uint64_t lsm_io_faults_injected(const lsm_io_t *io);
/* Writes the path of the last injected fault into buf (cap bytes, "" if none); returns its
   length. */
size_t lsm_io_last_fault_path(const lsm_io_t *io, char *buf, size_t cap);
/* Operations of kind op attempted through io since its creation (failed ones included);
   a test runs once to count, then once per crash point. 0 for lsm_io_default(). */
uint64_t lsm_io_op_count(const lsm_io_t *io, lsm_io_op_t op);
/* Simulated power loss: every file written through io (opened with open_write/append or
   write_file) is truncated to the size it had at its last successful sync (0 if it never
   was synced); renames carry that record to the new name. Call it with every file of io
   closed (e.g. after the database handle is closed or dropped). Returns ST_OK or the
   truncate error. Directory entries are not rolled back (files created and never synced
   survive, empty). */
int lsm_io_drop_unsynced(lsm_io_t *io, err_t *err);

#endif
