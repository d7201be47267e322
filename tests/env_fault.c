/* The fault-injecting env of the tests (tests/env_fault.h): every call counted, checked
 * against the plan, then handed to env_default(). Files opened through it are wrappers around
 * the default env's, so that their appends, syncs and reads come back here too. */
#include "tests/env_fault.h"

#include <errno.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A file written through the env, with the size it had at its last sync. */
typedef struct tracked {
  char *path;
  uint64_t synced;
} tracked_t;

typedef struct fault_env {
  env_t base;
  env_t *target; /* env_default() */
  pthread_mutex_t mu;
  uint64_t count[ENV_OP_KINDS];
  uint64_t matched[ENV_OP_KINDS]; /* ops of the kind that matched its pattern */
  uint64_t fail_at[ENV_OP_KINDS]; /* absolute matched count that fails; 0 = none */
  int sticky[ENV_OP_KINDS];
  env_error_t error[ENV_OP_KINDS];
  char *pattern[ENV_OP_KINDS]; /* NULL: every path */
  uint64_t injected;
  char last_fault[4096];
  tracked_t *tracked;
  size_t ntracked, cap;
} fault_env_t;

typedef struct fault_file {
  env_file_t base; /* path: the inner file's (borrowed) */
  env_file_t *inner;
} fault_file_t;

typedef struct fault_rfile {
  env_rfile_t base;
  env_rfile_t *inner;
} fault_rfile_t;

static const env_ops_t fault_ops;

static fault_env_t *fault_of(const env_t *io) {
  return io && io->ops == &fault_ops ? (fault_env_t *)io : NULL;
}

static const char *op_names[ENV_OP_KINDS] = {"open",   "write", "sync",  "rename",
                                             "unlink", "read",  "mkdir", "read batch"};

static int pattern_matches(const char *pattern, const char *path) {
  if (!pattern) return 1;
  const char *base = strrchr(path, '/');
  return fnmatch(pattern, base ? base + 1 : path, 0) == 0;
}

/* Counts an operation; returns 1 (and the error kind in *kind) if the plan says it fails. */
static int should_fail(fault_env_t *fe, env_op_t op, const char *path, env_error_t *kind) {
  pthread_mutex_lock(&fe->mu);
  fe->count[op]++;
  int fail = 0;
  if (fe->fail_at[op] && pattern_matches(fe->pattern[op], path)) {
    uint64_t c = ++fe->matched[op];
    fail = c == fe->fail_at[op] || (fe->sticky[op] && c > fe->fail_at[op]);
  }
  if (fail) {
    *kind = fe->error[op];
    fe->injected++;
    snprintf(fe->last_fault, sizeof fe->last_fault, "%s", path);
  }
  pthread_mutex_unlock(&fe->mu);
  return fail;
}

/* The message of an injected fault: the call, the path and the errno text. */
static int fault_error(err_t *err, env_error_t kind, const char *call, const char *path) {
  return err_errno(err, kind == ENV_ERR_ENOSPC ? ENOSPC : EIO, "injected fault: %s %s", call,
                   path);
}

/* Counts an operation; returns ST_E_IO (with message) if the plan says it fails. */
static int inject(fault_env_t *fe, env_op_t op, const char *path, err_t *err) {
  env_error_t kind;
  if (!should_fail(fe, op, path, &kind)) return ST_OK;
  return fault_error(err, kind, op_names[op], path);
}

/* REQUIRES: fe->mu held. */
static tracked_t *find_tracked(fault_env_t *fe, const char *path) {
  for (size_t i = 0; i < fe->ntracked; i++)
    if (strcmp(fe->tracked[i].path, path) == 0) return &fe->tracked[i];
  return NULL;
}

/* Records that path was written (synced = -1: keep the old record if any, else 0). */
static void track(fault_env_t *fe, const char *path, int64_t synced) {
  pthread_mutex_lock(&fe->mu);
  tracked_t *t = find_tracked(fe, path);
  if (!t) {
    if (fe->ntracked == fe->cap) {
      size_t cap = fe->cap ? fe->cap * 2 : 16;
      tracked_t *n = realloc(fe->tracked, cap * sizeof *n);
      if (!n) goto out;
      fe->tracked = n;
      fe->cap = cap;
    }
    char *p = strdup(path);
    if (!p) goto out;
    t = &fe->tracked[fe->ntracked++];
    t->path = p;
    t->synced = 0;
  }
  if (synced >= 0) t->synced = (uint64_t)synced;
out:
  pthread_mutex_unlock(&fe->mu);
}

/* Forgets path's record (it was deleted, or renamed over). REQUIRES: fe->mu held. */
static void untrack(fault_env_t *fe, const char *path) {
  tracked_t *t = find_tracked(fe, path);
  if (t) {
    free(t->path);
    *t = fe->tracked[--fe->ntracked];
  }
}

/* ---- Files written ---------------------------------------------------------------------- */

static int f_open_write(env_t *io, const char *path, int append, env_file_t **out, err_t *err) {
  fault_env_t *fe = (fault_env_t *)io;
  *out = NULL;
  int rc = inject(fe, ENV_OP_OPEN, path, err);
  if (rc) return rc;
  fault_file_t *f = calloc(1, sizeof *f);
  if (!f) return err_set(err, ST_E_NOMEM, "open %s: out of memory", path);
  rc = fe->target->ops->open_write(fe->target, path, append, &f->inner, err);
  if (rc) {
    free(f);
    return rc;
  }
  f->base = (env_file_t){io, f->inner->path, f->inner->size};
  track(fe, path, append ? -1 : 0);
  *out = &f->base;
  return ST_OK;
}

static int f_file_flush(env_file_t *base, err_t *err) {
  env_file_t *in = ((fault_file_t *)base)->inner;
  return in->io->ops->file_flush(in, err);
}

/* A short write: the buffer and half of data reach the file, then "no space". */
static int short_write(fault_file_t *f, const uint8_t *data, size_t n, err_t *err) {
  env_file_t *in = f->inner;
  int rc = in->io->ops->file_flush(in, err);
  size_t part = n / 2;
  if (!rc) rc = in->io->ops->file_append(in, data, part, err);
  if (!rc) rc = in->io->ops->file_flush(in, err);
  f->base.size = in->size;
  if (rc) return rc;
  return err_set(err, ST_E_IO, "injected fault: write %s: short write (%zu of %zu bytes): %s",
                 f->base.path, part, n, strerror(ENOSPC));
}

static int f_file_append(env_file_t *base, const void *data, size_t n, err_t *err) {
  fault_file_t *f = (fault_file_t *)base;
  env_error_t kind;
  if (should_fail((fault_env_t *)base->io, ENV_OP_WRITE, base->path, &kind)) {
    if (kind == ENV_ERR_SHORT) return short_write(f, data, n, err);
    return fault_error(err, kind, "write", base->path);
  }
  int rc = f->inner->io->ops->file_append(f->inner, data, n, err);
  base->size = f->inner->size;
  return rc;
}

static int f_file_sync(env_file_t *base, err_t *err) {
  fault_file_t *f = (fault_file_t *)base;
  fault_env_t *fe = (fault_env_t *)base->io;
  env_file_t *in = f->inner;
  int rc = in->io->ops->file_flush(in, err);
  if (rc) return rc;
  env_error_t kind;
  if (should_fail(fe, ENV_OP_SYNC, base->path, &kind)) {
    if (kind == ENV_ERR_FSYNC) {
      /* The kernel could not write the pages back and dropped them. */
      pthread_mutex_lock(&fe->mu);
      tracked_t *t = find_tracked(fe, base->path);
      uint64_t synced = t ? t->synced : 0;
      pthread_mutex_unlock(&fe->mu);
      if (truncate(base->path, (off_t)synced) != 0)
        return err_errno(err, errno, "truncate %s", base->path);
      return fault_error(err, kind, "fdatasync", base->path);
    }
    return fault_error(err, kind, "sync", base->path);
  }
  rc = in->io->ops->file_sync(in, err);
  if (rc) return rc;
  track(fe, base->path, (int64_t)base->size);
  return ST_OK;
}

static int f_file_close(env_file_t *base, err_t *err) {
  fault_file_t *f = (fault_file_t *)base;
  int rc = f->inner->io->ops->file_close(f->inner, err);
  free(f);
  return rc;
}

/* ---- Files read ------------------------------------------------------------------------- */

static int f_open_read(env_t *io, const char *path, env_rfile_t **out, err_t *err) {
  fault_env_t *fe = (fault_env_t *)io;
  *out = NULL;
  int rc = inject(fe, ENV_OP_OPEN, path, err);
  if (rc) return rc;
  fault_rfile_t *f = calloc(1, sizeof *f);
  if (!f) return err_set(err, ST_E_NOMEM, "open %s: out of memory", path);
  rc = fe->target->ops->open_read(fe->target, path, &f->inner, err);
  if (rc) {
    free(f);
    return rc;
  }
  f->base = (env_rfile_t){io, f->inner->path, f->inner->size, f->inner->id};
  *out = &f->base;
  return ST_OK;
}

static int f_rfile_pread(env_rfile_t *base, uint64_t offset, void *buf, size_t n, size_t *got,
                         err_t *err) {
  *got = 0;
  int rc = inject((fault_env_t *)base->io, ENV_OP_READ, base->path, err);
  if (rc) return rc;
  env_rfile_t *in = ((fault_rfile_t *)base)->inner;
  return in->io->ops->rfile_pread(in, offset, buf, n, got, err);
}

/* A batch counts once as ENV_OP_BATCH (failing it fails every read) and each read as
   ENV_OP_READ; the reads that do not fail go to the wrapped env's batch together. */
static int f_read_batch(env_t *io, env_read_t *r, size_t n, err_t *err) {
  fault_env_t *fe = (fault_env_t *)io;
  int whole = inject(fe, ENV_OP_BATCH, r[0].f->path, err), first = whole;
  env_read_t *in = malloc(n * sizeof *in);
  size_t *at = malloc(n * sizeof *at);
  if (!in || !at) {
    free(in);
    free(at);
    return err_set(err, ST_E_NOMEM, "read batch: out of memory");
  }
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    r[i].got = 0;
    r[i].rc = whole ? whole : inject(fe, ENV_OP_READ, r[i].f->path, first ? NULL : err);
    if (r[i].rc) {
      if (!first) first = r[i].rc;
      continue;
    }
    in[k] = r[i];
    in[k].f = ((fault_rfile_t *)r[i].f)->inner;
    at[k++] = i;
  }
  if (k) {
    int rc = env_read_batch(fe->target, in, k, first ? NULL : err);
    if (!first) first = rc;
  }
  for (size_t j = 0; j < k; j++) {
    r[at[j]].got = in[j].got;
    r[at[j]].rc = in[j].rc;
  }
  free(in);
  free(at);
  return first;
}

static int f_rfile_stamp(const env_rfile_t *base, env_file_stamp_t *out, err_t *err) {
  const env_rfile_t *in = ((const fault_rfile_t *)base)->inner;
  return in->io->ops->rfile_stamp(in, out, err);
}

static void f_rfile_close(env_rfile_t *base) {
  env_rfile_t *in = ((fault_rfile_t *)base)->inner;
  in->io->ops->rfile_close(in);
  free(base);
}

/* ---- Names and directories -------------------------------------------------------------- */

static int f_rename(env_t *io, const char *from, const char *to, err_t *err) {
  fault_env_t *fe = (fault_env_t *)io;
  int rc = inject(fe, ENV_OP_RENAME, from, err);
  if (rc) return rc;
  if ((rc = fe->target->ops->rename(fe->target, from, to, err))) return rc;
  pthread_mutex_lock(&fe->mu);
  untrack(fe, to); /* the old target is gone */
  tracked_t *src = find_tracked(fe, from);
  char *p = src ? strdup(to) : NULL;
  if (p) {
    free(src->path);
    src->path = p;
  }
  pthread_mutex_unlock(&fe->mu);
  return ST_OK;
}

static int f_unlink(env_t *io, const char *path, err_t *err) {
  fault_env_t *fe = (fault_env_t *)io;
  int rc = inject(fe, ENV_OP_UNLINK, path, err);
  if (rc) return rc;
  if ((rc = fe->target->ops->unlink(fe->target, path, err))) return rc;
  pthread_mutex_lock(&fe->mu);
  untrack(fe, path);
  pthread_mutex_unlock(&fe->mu);
  return ST_OK;
}

static int f_mkdir(env_t *io, const char *path, err_t *err) {
  fault_env_t *fe = (fault_env_t *)io;
  int rc = inject(fe, ENV_OP_MKDIR, path, err);
  return rc ? rc : fe->target->ops->mkdir(fe->target, path, err);
}

static int f_sync_dir(env_t *io, const char *dir, err_t *err) {
  fault_env_t *fe = (fault_env_t *)io;
  int rc = inject(fe, ENV_OP_SYNC, dir, err);
  return rc ? rc : fe->target->ops->sync_dir(fe->target, dir, err);
}

static int f_path_stat(env_t *io, const char *path, uint64_t *size, env_file_id_t *id,
                       err_t *err) {
  env_t *t = ((fault_env_t *)io)->target;
  return t->ops->path_stat(t, path, size, id, err);
}

static int f_path_type(env_t *io, const char *path, int follow, env_path_type_t *type,
                       err_t *err) {
  env_t *t = ((fault_env_t *)io)->target;
  return t->ops->path_type(t, path, follow, type, err);
}

static int f_list_dir(env_t *io, const char *dir, char ***names, env_path_type_t **types,
                      size_t *n, err_t *err) {
  env_t *t = ((fault_env_t *)io)->target;
  return t->ops->list_dir(t, dir, names, types, n, err);
}

/* Locks are the target's: env_unlock goes to it directly. */
static int f_lock(env_t *io, const char *path, env_lock_mode_t mode, env_lock_t **lock,
                  err_t *err) {
  env_t *t = ((fault_env_t *)io)->target;
  return t->ops->lock(t, path, mode, lock, err);
}

static void f_unlock(env_lock_t *lock) {
  lock->io->ops->unlock(lock);
}

static int f_link(env_t *io, const char *from, const char *to, err_t *err) {
  fault_env_t *fe = (fault_env_t *)io;
  int rc = inject(fe, ENV_OP_RENAME, from, err);
  return rc ? rc : fe->target->ops->link(fe->target, from, to, err);
}

static int f_rename_exchange(env_t *io, const char *a, const char *b, err_t *err) {
  fault_env_t *fe = (fault_env_t *)io;
  int rc = inject(fe, ENV_OP_RENAME, a, err);
  return rc ? rc : fe->target->ops->rename_exchange(fe->target, a, b, err);
}

static int f_rmdir(env_t *io, const char *path, err_t *err) {
  fault_env_t *fe = (fault_env_t *)io;
  int rc = inject(fe, ENV_OP_UNLINK, path, err);
  return rc ? rc : fe->target->ops->rmdir(fe->target, path, err);
}

static const env_ops_t fault_ops = {
    .open_write = f_open_write,
    .file_append = f_file_append,
    .file_flush = f_file_flush,
    .file_sync = f_file_sync,
    .file_close = f_file_close,
    .open_read = f_open_read,
    .rfile_pread = f_rfile_pread,
    .read_batch = f_read_batch,
    .rfile_stamp = f_rfile_stamp,
    .rfile_close = f_rfile_close,
    .rename = f_rename,
    .unlink = f_unlink,
    .mkdir = f_mkdir,
    .sync_dir = f_sync_dir,
    .path_stat = f_path_stat,
    .path_type = f_path_type,
    .list_dir = f_list_dir,
    .lock = f_lock,
    .unlock = f_unlock,
    .link = f_link,
    .rename_exchange = f_rename_exchange,
    .rmdir = f_rmdir,
};

/* ---- The plan --------------------------------------------------------------------------- */

env_t *env_create_faulty(void) {
  fault_env_t *fe = calloc(1, sizeof *fe);
  if (!fe) return NULL;
  fe->base.ops = &fault_ops;
  fe->target = env_default();
  pthread_mutex_init(&fe->mu, NULL);
  return &fe->base;
}

void env_destroy(env_t *io) {
  fault_env_t *fe = fault_of(io);
  if (!fe) return;
  for (size_t i = 0; i < fe->ntracked; i++) free(fe->tracked[i].path);
  free(fe->tracked);
  for (int i = 0; i < ENV_OP_KINDS; i++) free(fe->pattern[i]);
  pthread_mutex_destroy(&fe->mu);
  free(fe);
}

void env_fail(env_t *io, env_op_t op, uint64_t n, int sticky) {
  env_fault_t f = {.op = op, .n = n, .sticky = sticky, .error = ENV_ERR_EIO};
  (void)env_fail_with(io, &f);
}

int env_fail_with(env_t *io, const env_fault_t *f) {
  fault_env_t *fe = fault_of(io);
  if (!fe) return ST_OK;
  if ((unsigned)f->op >= ENV_OP_KINDS || (unsigned)f->error >= ENV_ERRORS ||
      (f->error == ENV_ERR_SHORT && f->op != ENV_OP_WRITE) ||
      (f->error == ENV_ERR_FSYNC && f->op != ENV_OP_SYNC))
    return ST_E_INVALID;
  char *pattern = NULL;
  if (f->pattern && !(pattern = strdup(f->pattern))) return ST_E_NOMEM;
  pthread_mutex_lock(&fe->mu);
  free(fe->pattern[f->op]);
  fe->pattern[f->op] = pattern;
  fe->matched[f->op] = 0;
  fe->fail_at[f->op] = f->n;
  fe->sticky[f->op] = f->sticky;
  fe->error[f->op] = f->error;
  pthread_mutex_unlock(&fe->mu);
  return ST_OK;
}

uint64_t env_faults_injected(const env_t *io) {
  fault_env_t *fe = fault_of(io);
  if (!fe) return 0;
  pthread_mutex_lock(&fe->mu);
  uint64_t n = fe->injected;
  pthread_mutex_unlock(&fe->mu);
  return n;
}

size_t env_last_fault_path(const env_t *io, char *buf, size_t cap) {
  if (cap) buf[0] = '\0';
  fault_env_t *fe = fault_of(io);
  if (!fe) return 0;
  pthread_mutex_lock(&fe->mu);
  int n = snprintf(buf, cap, "%s", fe->last_fault);
  pthread_mutex_unlock(&fe->mu);
  return n > 0 ? (size_t)n : 0;
}

void env_fail_none(env_t *io) {
  fault_env_t *fe = fault_of(io);
  if (!fe) return;
  pthread_mutex_lock(&fe->mu);
  for (int i = 0; i < ENV_OP_KINDS; i++) fe->fail_at[i] = 0;
  pthread_mutex_unlock(&fe->mu);
}

uint64_t env_op_count(const env_t *io, env_op_t op) {
  fault_env_t *fe = fault_of(io);
  if (!fe || op >= ENV_OP_KINDS) return 0;
  pthread_mutex_lock(&fe->mu);
  uint64_t c = fe->count[op];
  pthread_mutex_unlock(&fe->mu);
  return c;
}

int env_drop_unsynced(env_t *io, err_t *err) {
  fault_env_t *fe = fault_of(io);
  if (!fe) return ST_OK;
  int rc = ST_OK;
  pthread_mutex_lock(&fe->mu);
  for (size_t i = 0; i < fe->ntracked; i++) {
    tracked_t *t = &fe->tracked[i];
    struct stat st;
    if (stat(t->path, &st) != 0) continue; /* deleted behind our back */
    if ((uint64_t)st.st_size <= t->synced) continue;
    if (truncate(t->path, (off_t)t->synced) != 0 && rc == ST_OK)
      rc = err_errno(err, errno, "truncate %s", t->path);
  }
  pthread_mutex_unlock(&fe->mu);
  return rc;
}
