/* env_t: bfh's one file-I/O layer, after LevelDB's Env and SQLite's sqlite3_vfs. Every file
 * access of the library goes through here (the own engine's files, BFH-PARAMS, the value
 * index's leaf reads, the filter cache, the LevelDB and RocksDB readers' table and log reads).
 *
 * An env is a table of functions (env_ops_t); the env_* functions below call through it,
 * and the composite ones (env_read_file, env_write_file) are built on those calls, so an
 * env that wraps another sees every operation. env_default() is the real thing (POSIX
 * calls). Tests wrap it to inject faults (tests/env_fault.h: "fail the Nth operation of kind
 * K", a short write, a failed fsync that loses the unsynced data, a power loss), as LevelDB's
 * FaultInjectionTestEnv wraps its Env; the library itself never builds another env.
 *
 * Every function returns a bfh status code; on failure err (may be NULL) names the path
 * and the failed call ("open /d/000007.log: No such file or directory").
 * Only regular files are opened (any name a user could replace: a FIFO must never make an
 * open wait forever): every open is non-blocking, and a name that is not a regular file
 * (symlinks followed) is refused with ST_E_CORRUPT, "open /d/CURRENT: not a regular file
 * (a FIFO)". A cache file that gives it is stale; a database file, damage.
 * All functions are thread-safe for distinct files; a single env_file_t / env_rfile_t is
 * used by one thread at a time (env_rfile_pread may be shared).
 */
#ifndef BFH_UTIL_ENV_H
#define BFH_UTIL_ENV_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

typedef struct env env_t;       /* also spelled `struct env` in lsm/db.h */
typedef struct env_file env_file_t;   /* a file open for writing (appending) */
typedef struct env_rfile env_rfile_t; /* a file open for positional reads */
typedef struct env_lock env_lock_t;   /* a held LOCK file */

/* The real I/O layer: a static object, never freed. */
env_t *env_default(void);

/* ---- Files written ------------------------------------------------------------------- */

/* Creates path (truncating it if it exists) for writing; ST_E_CORRUPT if path names something
   other than a regular file (a FIFO, a device, a directory). On ST_OK the client closes *f
   with env_file_close(). Writes are buffered in user space (64 KiB): env_file_flush()
   hands them to the kernel (write(2)); env_file_sync() flushes and fdatasyncs. */
int env_open_write(env_t *io, const char *path, env_file_t **f, err_t *err);
/* Opens path for appending (created if missing); env_file_size() starts at its size. */
int env_open_append(env_t *io, const char *path, env_file_t **f, err_t *err);
/* Appends n bytes (buffered). After a failure the file is in an unknown state: callers
   give up on it. */
int env_file_append(env_file_t *f, const void *data, size_t n, err_t *err);
/* Writes the buffered bytes with write(2) (no fsync): other readers see them. */
int env_file_flush(env_file_t *f, err_t *err);
/* Flushes, then fdatasync()s the file. */
int env_file_sync(env_file_t *f, err_t *err);
/* Flushes and closes (no sync); frees f even on error. NULL allowed (returns ST_OK). */
int env_file_close(env_file_t *f, err_t *err);
/* Bytes appended so far (including the starting size for append mode and unflushed bytes). */
uint64_t env_file_size(const env_file_t *f);
/* The path given at open (owned by f). */
const char *env_file_path(const env_file_t *f);

/* ---- Files read ---------------------------------------------------------------------- */

/* Which file a name or an open file is: device and inode. While a file is held open its
   inode is not reused, so a name whose id differs from an open file's names another file. */
typedef struct env_file_id {
  uint64_t dev, ino;
} env_file_id_t;

static inline int env_file_id_equal(env_file_id_t a, env_file_id_t b) {
  return a.dev == b.dev && a.ino == b.ino;
}

/* Opens path read-only; ST_E_CORRUPT if it is not a regular file (a FIFO, a device, a
   directory), without waiting on it. The client closes *f with env_rfile_close(). */
int env_open_read(env_t *io, const char *path, env_rfile_t **f, err_t *err);
/* Reads up to n bytes at offset into buf; *got = bytes read (< n only at end of file).
   Thread-safe (pread). */
int env_rfile_pread(env_rfile_t *f, uint64_t offset, void *buf, size_t n, size_t *got, err_t *err);
/* One read of a batch (env_read_batch): n bytes at offset of f into buf. The batch sets
   got (bytes read: fewer than n only at end of file) and rc (ST_OK, or the read's error, with
   its message in err). */
typedef struct env_read {
  env_rfile_t *f;
  uint64_t offset;
  void *buf;
  size_t n;
  size_t got;
  int rc;
} env_read_t;
/* Makes the reads r[0, n), all of files of io, as env_rfile_pread would, each with its own
   result; a failed read does not stop the others. The real env hands them to the kernel
   together (io_uring: one system call for the batch, where a pread is one each), so that a
   search that knows all of its reads before it makes them pays for one; where io_uring is
   not to be had (no liburing, a kernel or sandbox that refuses it), and in an env that
   wraps another, they are made one by one. Returns the first failed read's rc, with its
   message, or ST_OK. */
int env_read_batch(env_t *io, env_read_t *r, size_t n, err_t *err);
uint64_t env_rfile_size(const env_rfile_t *f); /* size at open */
env_file_id_t env_rfile_id(const env_rfile_t *f); /* the file opened */
/* What the file system said of an open file when it was opened (the open's fstat: no system
   call here): which file it is, its size, and when its contents (mtime) and its inode (ctime)
   had last changed, in nanoseconds. A file replaced, rewritten or made again under its name
   differs in at least one of them, unless the change fell in the tick of the file system's
   clock in which they were taken. Every caller stamps a file it has just opened; one that
   wants the file's state later opens it again. */
typedef struct env_file_stamp {
  uint64_t dev, ino, size;
  int64_t mtime_ns, ctime_ns;
} env_file_stamp_t;
int env_rfile_stamp(const env_rfile_t *f, env_file_stamp_t *out, err_t *err);
void env_rfile_close(env_rfile_t *f); /* NULL allowed */
/* Maps the file's first env_rfile_size(f) bytes read-only: *p stays valid until
   env_rfile_close. A second call gives the same mapping; call it from one thread at a time.
   ST_E_UNSUPPORTED (no message) for an empty file or an env that reads only with pread (one
   that wraps another to inject faults). A page of the mapping past a later end of the file
   raises SIGBUS when touched: copy out of it with mapped_copy (util/mapped_copy.h). */
int env_rfile_map(env_rfile_t *f, const uint8_t **p, err_t *err);

/* Reads the whole file into *data (malloc'd, NUL-terminated one past *size; caller frees). */
int env_read_file(env_t *io, const char *path, void **data, size_t *size, err_t *err);
/* Reads the file from byte offset to its end (nothing if it is shorter) into *data, as
   env_read_file. */
int env_read_file_at(env_t *io, const char *path, uint64_t offset, void **data, size_t *size,
                     err_t *err);
/* Writes data to path (create/truncate), fdatasyncs it and closes it (e.g. CURRENT.tmp). */
int env_write_file(env_t *io, const char *path, const void *data, size_t n, err_t *err);

/* ---- Names and directories ----------------------------------------------------------- */

int env_rename(env_t *io, const char *from, const char *to, err_t *err);
/* ST_NOT_FOUND (no message) if path does not exist. */
int env_unlink(env_t *io, const char *path, err_t *err);
/* mkdir(path, 0755); an existing directory is ST_OK. */
int env_mkdir(env_t *io, const char *path, err_t *err);
/* fsync()s the directory itself (after create/rename/unlink of its entries). */
int env_sync_dir(env_t *io, const char *dir, err_t *err);
/* 1 if path exists, 0 if not (or on any error). */
int env_exists(env_t *io, const char *path);
/* How many descriptors one of bfh's pools of files held open may keep (a read-write stock
   engine's table files, the filter cache's maps): an eighth of the process's soft limit of
   open files, at most 256, so that the engine (LevelDB keeps up to max_open_files = 1000
   tables open) and the rest of the process keep theirs. */
size_t env_fd_share(void);
/* *size = size in bytes of path. ST_NOT_FOUND (no message) if it does not exist. */
int env_path_size(env_t *io, const char *path, uint64_t *size, err_t *err);
/* env_path_size, and *id = the file path names now (one stat). */
int env_path_stat(env_t *io, const char *path, uint64_t *size, env_file_id_t *id, err_t *err);
/* The names in dir (not "." or ".."), in no particular order. On ST_OK the client frees
   them with env_names_free(*names, *n). */
int env_list_dir(env_t *io, const char *dir, char ***names, size_t *n, err_t *err);
void env_names_free(char **names, size_t n); /* NULL allowed */

/* Creates path if needed and takes flock(LOCK_EX | LOCK_NB) on it (ST_E_CORRUPT if path is not
   a regular file). ST_E_BUSY if another open file description (this or another process)
   holds it. The client releases it with env_unlock() (the file itself is left in place). */
int env_lock(env_t *io, const char *path, env_lock_t **lock, err_t *err);
void env_unlock(env_lock_t *lock); /* NULL allowed */
/* Takes flock(LOCK_EX | LOCK_NB) on the directory path itself: one open handle per
   database directory, in this process or another. ST_E_BUSY if it is held; released by
   env_unlock. */
int env_lock_dir(env_t *io, const char *path, env_lock_t **lock, err_t *err);
/* Takes a POSIX record lock (fcntl F_SETLK, whole file, write) on path, created if missing:
   the lock stock LevelDB and RocksDB take on their LOCK file, which conflicts with theirs.
   ST_E_BUSY if another process holds it (a process never conflicts with its own record
   locks: see env_lock_dir). Released by env_unlock. */
int env_lock_record(env_t *io, const char *path, env_lock_t **lock, err_t *err);
/* A reader's lock: opens path read-only (a regular file or a directory, else ST_E_CORRUPT;
   nothing is created) and takes flock(LOCK_SH | LOCK_NB), so that no holder of env_lock's
   exclusive lock is open now and none can open until env_unlock. ST_NOT_FOUND (no message)
   if path does not exist; ST_E_BUSY if an exclusive lock is held. */
int env_lock_shared(env_t *io, const char *path, env_lock_t **lock, err_t *err);

/* ---- Directory trees (a staged repair: lsm_hooks/engines/repair_stage.h) ----------------- */

/* What a name is. */
typedef enum env_path_type {
  ENV_PATH_FILE = 1, /* a regular file */
  ENV_PATH_DIR,
  ENV_PATH_LINK, /* a symbolic link (env_path_type only: env_path_kind follows it) */
  ENV_PATH_FIFO,
  ENV_PATH_SOCKET,
  ENV_PATH_DEVICE /* a character or block device */
} env_path_type_t;
/* *type = what path is, without following a symbolic link (lstat). ST_NOT_FOUND (no message)
   if it does not exist. */
int env_path_type(env_t *io, const char *path, env_path_type_t *type, err_t *err);
/* The same, following symbolic links (stat): what opening path would reach. ST_NOT_FOUND
   also for a dangling link. */
int env_path_kind(env_t *io, const char *path, env_path_type_t *type, err_t *err);
/* "a regular file", "a directory", "a symbolic link", "a FIFO", "a socket", "a device". */
const char *env_path_type_name(env_path_type_t type);
/* env_list_dir, and (*types)[i] = what names[i] is as the directory says it (its d_type,
   not following a link), or 0 where the file system does not say; the client frees *types. */
int env_list_dir_types(env_t *io, const char *dir, char ***names, env_path_type_t **types,
                       size_t *n, err_t *err);
/* Gives the file from a second name, to (link(2)); to must not exist. A fault plan counts it
   as a rename. */
int env_link(env_t *io, const char *from, const char *to, err_t *err);
/* Swaps the names a and b in one step (renameat2 RENAME_EXCHANGE): both must exist.
   ST_E_UNSUPPORTED (with message) when the file system cannot. A fault plan counts it as a
   rename (of a). */
int env_rename_exchange(env_t *io, const char *a, const char *b, err_t *err);
/* Removes the empty directory path. ST_NOT_FOUND (no message) if it does not exist. A fault
   plan counts it as an unlink. */
int env_rmdir(env_t *io, const char *path, err_t *err);

/* ---- An env's functions (for an env that wraps another: tests/env_fault.c) ------------ */

/* What every file object starts with: the env whose functions serve it, and the fields
   env_file_size / env_file_path / env_rfile_size / env_rfile_id read. An env's own file
   structs embed these first. */
struct env_file {
  env_t *io;
  char *path;    /* owned by the file */
  uint64_t size; /* bytes appended so far, the starting size of an append included */
};
struct env_rfile {
  env_t *io;
  char *path;
  uint64_t size; /* at open */
  env_file_id_t id;
};
struct env_lock {
  env_t *io;
};

typedef enum env_lock_mode {
  ENV_LOCK_EXCLUSIVE = 0, /* env_lock */
  ENV_LOCK_SHARED,        /* env_lock_shared */
  ENV_LOCK_DIR,           /* env_lock_dir */
  ENV_LOCK_RECORD         /* env_lock_record */
} env_lock_mode_t;

/* One function per primitive; each has the contract of the env_ function of the same name
   (open_write with append != 0 is env_open_append). */
typedef struct env_ops {
  int (*open_write)(env_t *io, const char *path, int append, env_file_t **f, err_t *err);
  int (*file_append)(env_file_t *f, const void *data, size_t n, err_t *err);
  int (*file_flush)(env_file_t *f, err_t *err);
  int (*file_sync)(env_file_t *f, err_t *err);
  int (*file_close)(env_file_t *f, err_t *err);
  int (*open_read)(env_t *io, const char *path, env_rfile_t **f, err_t *err);
  int (*rfile_pread)(env_rfile_t *f, uint64_t offset, void *buf, size_t n, size_t *got,
                     err_t *err);
  int (*rfile_stamp)(const env_rfile_t *f, env_file_stamp_t *out, err_t *err);
  void (*rfile_close)(env_rfile_t *f);
  int (*rfile_map)(env_rfile_t *f, const uint8_t **p, err_t *err); /* NULL: unsupported */
  /* NULL: env_read_batch makes the reads one by one with rfile_pread */
  int (*read_batch)(env_t *io, env_read_t *r, size_t n, err_t *err);
  int (*rename)(env_t *io, const char *from, const char *to, err_t *err);
  int (*unlink)(env_t *io, const char *path, err_t *err);
  int (*mkdir)(env_t *io, const char *path, err_t *err);
  int (*sync_dir)(env_t *io, const char *dir, err_t *err);
  int (*path_stat)(env_t *io, const char *path, uint64_t *size, env_file_id_t *id,
                   err_t *err);
  int (*path_type)(env_t *io, const char *path, int follow, env_path_type_t *type, err_t *err);
  int (*list_dir)(env_t *io, const char *dir, char ***names, env_path_type_t **types, size_t *n,
                  err_t *err);
  int (*lock)(env_t *io, const char *path, env_lock_mode_t mode, env_lock_t **lock, err_t *err);
  void (*unlock)(env_lock_t *lock);
  int (*link)(env_t *io, const char *from, const char *to, err_t *err);
  int (*rename_exchange)(env_t *io, const char *a, const char *b, err_t *err);
  int (*rmdir)(env_t *io, const char *path, err_t *err);
} env_ops_t;

struct env {
  const env_ops_t *ops;
};

#endif
