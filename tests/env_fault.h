/* A fault-injecting env for tests, after LevelDB's FaultInjectionTestEnv: it wraps
 * env_default() (util/env.h: an env is a table of functions) and counts every operation by
 * kind, so a test can fail "the Nth operation of kind K (on a path whose name matches a
 * pattern) from now on" with an error kind (EIO, ENOSPC, a short write, a failed fsync that
 * loses the unsynced data), optionally "and every later one" (a dead disk), and simulate a
 * power loss that truncates every file written through it to its length at its last sync.
 * Built into the tests only: the library knows nothing of it.
 */
#ifndef BFH_TESTS_ENV_FAULT_H
#define BFH_TESTS_ENV_FAULT_H

#include <stdint.h>

#include "util/env.h"

typedef enum env_op {
  ENV_OP_OPEN = 0, /* env_open_write / _append / _read, env_read_file */
  ENV_OP_WRITE,    /* env_file_append (counted per call, before any byte is written) */
  ENV_OP_SYNC,     /* env_file_sync, env_sync_dir, the sync of env_write_file */
  ENV_OP_RENAME,   /* env_rename */
  ENV_OP_UNLINK,   /* env_unlink */
  ENV_OP_READ,     /* env_rfile_pread */
  ENV_OP_MKDIR,    /* env_mkdir */
  ENV_OP_BATCH,    /* env_read_batch (per batch; each of its reads also counts as ENV_OP_READ,
                      and may fail alone as one) */
  ENV_OP_KINDS
} env_op_t;

/* How an injected fault fails. Every one returns ST_E_IO with the message
   "injected fault: <call> <path>: <errno text>". */
typedef enum env_error {
  ENV_ERR_EIO = 0, /* the call does nothing and fails with EIO */
  ENV_ERR_ENOSPC,  /* the call does nothing and fails with ENOSPC (a full disk) */
  ENV_ERR_SHORT,   /* ENV_OP_WRITE only: the buffered bytes and half of the new ones
                         reach the file, then the call fails with ENOSPC */
  ENV_ERR_FSYNC,   /* ENV_OP_SYNC only: the data reaches the kernel, fdatasync fails
                         with EIO and the kernel drops the pages it could not write back
                         (the file is truncated to its size at its last successful sync) */
  ENV_ERRORS
} env_error_t;

/* A fault to arm (env_fail_with). */
typedef struct env_fault {
  env_op_t op;       /* the kind of operation that fails */
  uint64_t n;           /* the nth matching operation of kind op from now fails (>= 1) */
  int sticky;           /* != 0: every later matching operation of kind op fails too */
  env_error_t error; /* how it fails */
  const char *pattern;  /* fnmatch(3) pattern on the path's last component ("*.log",
                           "MANIFEST-*", "CURRENT.tmp"); NULL: every path. Copied. */
} env_fault_t;

/* env_default() wrapped with a fault plan (initially: no faults). Client calls
   env_destroy() after every file opened through it is closed. NULL on no memory. */
env_t *env_create_faulty(void);
/* Frees an env made by env_create_faulty. NULL and env_default() allowed (no-op). */
void env_destroy(env_t *io);
/* Makes the nth operation of kind op from now (n >= 1; 1 = the next one) fail with
   ST_E_IO and the message "injected fault: <call> <path>"; sticky != 0: every later one
   fails too. n == 0 disarms op. No effect on env_default(). */
void env_fail(env_t *io, env_op_t op, uint64_t n, int sticky);
/* Arms f for its kind of operation (replacing what was armed for that kind); returns
   ST_OK, ST_E_INVALID for an error that does not fit the kind (a short sync) or
   ST_E_NOMEM. No effect on env_default(). */
int env_fail_with(env_t *io, const env_fault_t *f);
/* Disarms every fault. */
void env_fail_none(env_t *io);
/* Faults injected through io since its creation. 0 for env_default(). */
uint64_t env_faults_injected(const env_t *io);
/* Writes the path of the last injected fault into buf (cap bytes, "" if none); returns its
   length. */
size_t env_last_fault_path(const env_t *io, char *buf, size_t cap);
/* Operations of kind op attempted through io since its creation (failed ones included);
   a test runs once to count, then once per crash point. 0 for env_default(). */
uint64_t env_op_count(const env_t *io, env_op_t op);
/* Simulated power loss: every file written through io (opened with open_write/append or
   write_file) is truncated to the size it had at its last successful sync (0 if it never
   was synced); renames carry that record to the new name. Call it with every file of io
   closed (e.g. after the database handle is closed or dropped). Returns ST_OK or the
   truncate error. Directory entries are not rolled back (files created and never synced
   survive, empty). */
int env_drop_unsynced(env_t *io, err_t *err);

#endif
