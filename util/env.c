/* The engine's I/O layer: POSIX calls with an optional fault plan (util/env.h). */
#include "util/env.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILE_BUF_BYTES 65536

/* A file written through a faulty io, with the size it had at its last sync. */
typedef struct tracked {
  char *path;
  uint64_t synced;
} tracked_t;

struct env {
  int faulty;
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
};

struct env_file {
  env_t *io;
  int fd;
  char *path;
  uint64_t size; /* bytes appended, including the buffer */
  uint8_t *buf;
  size_t buffered;
};

struct env_rfile {
  env_t *io;
  int fd;
  char *path;
  uint64_t size;
  env_file_id_t id;
};

struct env_lock {
  int fd;
};

static env_t default_io = {.faulty = 0, .mu = PTHREAD_MUTEX_INITIALIZER};

env_t *env_default(void) {
  return &default_io;
}

static const char *op_names[ENV_OP_KINDS] = {"open",   "write", "sync", "rename",
                                                "unlink", "read",  "mkdir"};

static int pattern_matches(const char *pattern, const char *path) {
  if (!pattern) return 1;
  const char *base = strrchr(path, '/');
  return fnmatch(pattern, base ? base + 1 : path, 0) == 0;
}

/* Counts an operation; returns 1 (and the error kind in *kind) if the plan says it
   fails. */
static int should_fail(env_t *io, env_op_t op, const char *path, env_error_t *kind) {
  if (!io || !io->faulty) return 0;
  pthread_mutex_lock(&io->mu);
  io->count[op]++;
  int fail = 0;
  if (io->fail_at[op] && pattern_matches(io->pattern[op], path)) {
    uint64_t c = ++io->matched[op];
    fail = c == io->fail_at[op] || (io->sticky[op] && c > io->fail_at[op]);
  }
  if (fail) {
    *kind = io->error[op];
    io->injected++;
    snprintf(io->last_fault, sizeof io->last_fault, "%s", path);
  }
  pthread_mutex_unlock(&io->mu);
  return fail;
}

/* The message of an injected fault: the call, the path and the errno text. */
static int fault_error(err_t *err, env_error_t kind, const char *call, const char *path) {
  return err_errno(err, kind == ENV_ERR_ENOSPC ? ENOSPC : EIO, "injected fault: %s %s", call,
                   path);
}

/* Counts an operation; returns ST_E_IO (with message) if the plan says it fails. */
static int inject(env_t *io, env_op_t op, const char *path, err_t *err) {
  env_error_t kind;
  if (!should_fail(io, op, path, &kind)) return ST_OK;
  return fault_error(err, kind, op_names[op], path);
}

static tracked_t *find_tracked(env_t *io, const char *path) {
  for (size_t i = 0; i < io->ntracked; i++)
    if (strcmp(io->tracked[i].path, path) == 0) return &io->tracked[i];
  return NULL;
}

/* Records that path was written (synced = -1: keep the old record if any, else 0). */
static void track(env_t *io, const char *path, int64_t synced) {
  if (!io->faulty) return;
  pthread_mutex_lock(&io->mu);
  tracked_t *t = find_tracked(io, path);
  if (!t) {
    if (io->ntracked == io->cap) {
      size_t cap = io->cap ? io->cap * 2 : 16;
      tracked_t *n = realloc(io->tracked, cap * sizeof *n);
      if (!n) goto out;
      io->tracked = n;
      io->cap = cap;
    }
    char *p = strdup(path);
    if (!p) goto out;
    t = &io->tracked[io->ntracked++];
    t->path = p;
    t->synced = 0;
  }
  if (synced >= 0) t->synced = (uint64_t)synced;
out:
  pthread_mutex_unlock(&io->mu);
}

/* What a file of mode m is, for "not a regular file (a FIFO)". */
static const char *file_kind(mode_t m) {
  return S_ISFIFO(m)   ? "a FIFO"
         : S_ISDIR(m)  ? "a directory"
         : S_ISSOCK(m) ? "a socket"
         : S_ISCHR(m)  ? "a character device"
         : S_ISBLK(m)  ? "a block device"
                       : "not a file";
}

/* Every file bfh opens could have been replaced by its user: it is opened with O_NONBLOCK,
   so that a FIFO or a device never blocks the open, and then refused with ST_E_CORRUPT unless
   fstat says it is a regular file (a cache file then counts as stale, a database file as
   damage). On ST_OK *st is the file's fstat and O_NONBLOCK is cleared again (it means nothing
   to a regular file); on failure fd is closed. */
static int check_regular(int fd, const char *path, struct stat *st, err_t *err) {
  int rc = ST_OK;
  int fl = fcntl(fd, F_GETFL);
  if (fstat(fd, st) != 0)
    rc = err_errno(err, errno, "fstat %s", path);
  else if (!S_ISREG(st->st_mode))
    rc = err_set(err, ST_E_CORRUPT, "open %s: not a regular file (%s)", path,
                 file_kind(st->st_mode));
  else if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0)
    rc = err_errno(err, errno, "fcntl %s", path);
  if (rc != ST_OK) close(fd);
  return rc;
}

/* The error of an open(O_NONBLOCK) that failed with errno e: a FIFO that no process reads
   fails a write-only open with ENXIO, said as what it is. */
static int open_error(int e, const char *path, err_t *err) {
  struct stat st;
  if (e == ENXIO && stat(path, &st) == 0 && !S_ISREG(st.st_mode))
    return err_set(err, ST_E_CORRUPT, "open %s: not a regular file (%s)", path,
                   file_kind(st.st_mode));
  return err_errno(err, e, "open %s", path);
}

static int open_write(env_t *io, const char *path, int flags, env_file_t **out, err_t *err) {
  *out = NULL;
  int rc = inject(io, ENV_OP_OPEN, path, err);
  if (rc) return rc;
  env_file_t *f = calloc(1, sizeof *f);
  if (!f) return err_set(err, ST_E_NOMEM, "open %s: out of memory", path);
  f->io = io;
  f->path = strdup(path);
  f->buf = malloc(FILE_BUF_BYTES);
  if (!f->path || !f->buf) {
    free(f->path);
    free(f->buf);
    free(f);
    return err_set(err, ST_E_NOMEM, "open %s: out of memory", path);
  }
  struct stat st;
  f->fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NONBLOCK | flags, 0644);
  rc = f->fd < 0 ? open_error(errno, path, err) : check_regular(f->fd, path, &st, err);
  if (rc != ST_OK) {
    free(f->path);
    free(f->buf);
    free(f);
    return rc;
  }
  if (flags & O_APPEND) f->size = (uint64_t)st.st_size;
  track(io, path, (flags & O_TRUNC) ? 0 : -1);
  *out = f;
  return ST_OK;
}

int env_open_write(env_t *io, const char *path, env_file_t **f, err_t *err) {
  return open_write(io, path, O_TRUNC, f, err);
}

int env_open_append(env_t *io, const char *path, env_file_t **f, err_t *err) {
  return open_write(io, path, O_APPEND, f, err);
}

static int write_all(int fd, const uint8_t *p, size_t n, const char *path, err_t *err) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return err_errno(err, errno, "write %s", path);
    }
    p += w;
    n -= (size_t)w;
  }
  return ST_OK;
}

int env_file_flush(env_file_t *f, err_t *err) {
  if (f->buffered == 0) return ST_OK;
  int rc = write_all(f->fd, f->buf, f->buffered, f->path, err);
  f->buffered = 0;
  return rc;
}

/* A short write: the buffer and half of data reach the file, then "no space". */
static int short_write(env_file_t *f, const uint8_t *data, size_t n, err_t *err) {
  int rc = env_file_flush(f, err);
  if (rc) return rc;
  size_t part = n / 2;
  rc = write_all(f->fd, data, part, f->path, err);
  if (rc) return rc;
  f->size += part;
  return err_set(err, ST_E_IO, "injected fault: write %s: short write (%zu of %zu bytes): %s",
                 f->path, part, n, strerror(ENOSPC));
}

int env_file_append(env_file_t *f, const void *data, size_t n, err_t *err) {
  env_error_t kind;
  if (should_fail(f->io, ENV_OP_WRITE, f->path, &kind)) {
    if (kind == ENV_ERR_SHORT) return short_write(f, data, n, err);
    return fault_error(err, kind, "write", f->path);
  }
  int rc;
  const uint8_t *p = data;
  f->size += n;
  if (f->buffered + n <= FILE_BUF_BYTES) {
    if (n) memcpy(f->buf + f->buffered, p, n);
    f->buffered += n;
    return ST_OK;
  }
  rc = env_file_flush(f, err);
  if (rc) return rc;
  if (n >= FILE_BUF_BYTES / 2) return write_all(f->fd, p, n, f->path, err);
  memcpy(f->buf, p, n);
  f->buffered = n;
  return ST_OK;
}

int env_file_sync(env_file_t *f, err_t *err) {
  int rc = env_file_flush(f, err);
  if (rc) return rc;
  env_error_t kind;
  if (should_fail(f->io, ENV_OP_SYNC, f->path, &kind)) {
    if (kind == ENV_ERR_FSYNC) {
      /* The kernel could not write the pages back and dropped them. */
      pthread_mutex_lock(&f->io->mu);
      tracked_t *t = find_tracked(f->io, f->path);
      uint64_t synced = t ? t->synced : 0;
      pthread_mutex_unlock(&f->io->mu);
      if (ftruncate(f->fd, (off_t)synced) != 0)
        return err_errno(err, errno, "ftruncate %s", f->path);
      return fault_error(err, kind, "fdatasync", f->path);
    }
    return fault_error(err, kind, "sync", f->path);
  }
  if (fdatasync(f->fd) != 0) return err_errno(err, errno, "fdatasync %s", f->path);
  track(f->io, f->path, (int64_t)f->size);
  return ST_OK;
}

int env_file_close(env_file_t *f, err_t *err) {
  if (!f) return ST_OK;
  int rc = env_file_flush(f, err);
  if (close(f->fd) != 0 && rc == ST_OK) rc = err_errno(err, errno, "close %s", f->path);
  free(f->buf);
  free(f->path);
  free(f);
  return rc;
}

uint64_t env_file_size(const env_file_t *f) {
  return f->size;
}
const char *env_file_path(const env_file_t *f) {
  return f->path;
}

/* Opens path read-only (through io's fault injection) and reports its size; on error
   nothing is left open. */
static int open_for_reading(env_t *io, const char *path, int *fd, uint64_t *size,
                            env_file_id_t *id, err_t *err) {
  int rc = inject(io, ENV_OP_OPEN, path, err);
  if (rc) return rc;
  *fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (*fd < 0) return err_errno(err, errno, "open %s", path);
  struct stat st;
  if ((rc = check_regular(*fd, path, &st, err)) != ST_OK) return rc;
  *size = (uint64_t)st.st_size;
  if (id) *id = (env_file_id_t){(uint64_t)st.st_dev, (uint64_t)st.st_ino};
  return ST_OK;
}

int env_open_read(env_t *io, const char *path, env_rfile_t **out, err_t *err) {
  *out = NULL;
  int fd = -1;
  uint64_t size = 0;
  env_file_id_t id;
  int rc = open_for_reading(io, path, &fd, &size, &id, err);
  if (rc) return rc;
  env_rfile_t *f = calloc(1, sizeof *f);
  char *p = strdup(path);
  if (!f || !p) {
    free(f);
    free(p);
    close(fd);
    return err_set(err, ST_E_NOMEM, "open %s: out of memory", path);
  }
  f->io = io;
  f->fd = fd;
  f->path = p;
  f->size = size;
  f->id = id;
  *out = f;
  return ST_OK;
}

int env_rfile_pread(env_rfile_t *f, uint64_t offset, void *buf, size_t n, size_t *got, err_t *err) {
  *got = 0;
  int rc = inject(f->io, ENV_OP_READ, f->path, err);
  if (rc) return rc;
  uint8_t *p = buf;
  while (*got < n) {
    ssize_t r = pread(f->fd, p + *got, n - *got, (off_t)(offset + *got));
    if (r < 0) {
      if (errno == EINTR) continue;
      return err_errno(err, errno, "pread %s at %llu", f->path,
                       (unsigned long long)(offset + *got));
    }
    if (r == 0) break;
    *got += (size_t)r;
  }
  return ST_OK;
}

uint64_t env_rfile_size(const env_rfile_t *f) {
  return f->size;
}

env_file_id_t env_rfile_id(const env_rfile_t *f) {
  return f->id;
}

int env_rfile_stamp(const env_rfile_t *f, env_file_stamp_t *out, err_t *err) {
  struct stat st;
  if (fstat(f->fd, &st) != 0) return err_errno(err, errno, "fstat %s", f->path);
  *out = (env_file_stamp_t){(uint64_t)st.st_dev, (uint64_t)st.st_ino, (uint64_t)st.st_size,
                            (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec,
                            (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec};
  return ST_OK;
}

void env_rfile_close(env_rfile_t *f) {
  if (!f) return;
  close(f->fd);
  free(f->path);
  free(f);
}

int env_read_file(env_t *io, const char *path, void **data, size_t *size, err_t *err) {
  return env_read_file_at(io, path, 0, data, size, err);
}

int env_read_file_at(env_t *io, const char *path, uint64_t offset, void **data, size_t *size,
                     err_t *err) {
  *data = NULL;
  *size = 0;
  env_rfile_t *f;
  int rc = env_open_read(io, path, &f, err);
  if (rc) return rc;
  size_t n = f->size > offset ? (size_t)(f->size - offset) : 0;
  uint8_t *buf = malloc(n + 1);
  if (!buf) {
    env_rfile_close(f);
    return err_set(err, ST_E_NOMEM, "read %s: out of memory (%zu bytes)", path, n);
  }
  size_t got = 0;
  rc = n ? env_rfile_pread(f, offset, buf, n, &got, err) : ST_OK;
  env_rfile_close(f);
  if (rc) {
    free(buf);
    return rc;
  }
  buf[got] = 0;
  *data = buf;
  *size = got;
  return ST_OK;
}

int env_write_file(env_t *io, const char *path, const void *data, size_t n, err_t *err) {
  env_file_t *f;
  int rc = env_open_write(io, path, &f, err);
  if (rc) return rc;
  rc = env_file_append(f, data, n, err);
  if (!rc) rc = env_file_sync(f, err);
  int rc2 = env_file_close(f, rc ? NULL : err);
  return rc ? rc : rc2;
}

int env_rename(env_t *io, const char *from, const char *to, err_t *err) {
  int rc = inject(io, ENV_OP_RENAME, from, err);
  if (rc) return rc;
  if (rename(from, to) != 0) return err_errno(err, errno, "rename %s to %s", from, to);
  if (io->faulty) {
    pthread_mutex_lock(&io->mu);
    tracked_t *dst = find_tracked(io, to);
    tracked_t *src = find_tracked(io, from);
    if (dst) { /* the old target is gone */
      free(dst->path);
      *dst = io->tracked[--io->ntracked];
      src = find_tracked(io, from);
    }
    if (src) {
      char *p = strdup(to);
      if (p) {
        free(src->path);
        src->path = p;
      }
    }
    pthread_mutex_unlock(&io->mu);
  }
  return ST_OK;
}

int env_unlink(env_t *io, const char *path, err_t *err) {
  int rc = inject(io, ENV_OP_UNLINK, path, err);
  if (rc) return rc;
  if (unlink(path) != 0) {
    if (errno == ENOENT) return ST_NOT_FOUND;
    return err_errno(err, errno, "unlink %s", path);
  }
  if (io->faulty) {
    pthread_mutex_lock(&io->mu);
    tracked_t *t = find_tracked(io, path);
    if (t) {
      free(t->path);
      *t = io->tracked[--io->ntracked];
    }
    pthread_mutex_unlock(&io->mu);
  }
  return ST_OK;
}

int env_mkdir(env_t *io, const char *path, err_t *err) {
  int rc = inject(io, ENV_OP_MKDIR, path, err);
  if (rc) return rc;
  if (mkdir(path, 0755) != 0) {
    if (errno == EEXIST) {
      struct stat st;
      if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return ST_OK;
    }
    return err_errno(err, errno, "mkdir %s", path);
  }
  return ST_OK;
}

int env_sync_dir(env_t *io, const char *dir, err_t *err) {
  int rc = inject(io, ENV_OP_SYNC, dir, err);
  if (rc) return rc;
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return err_errno(err, errno, "open %s", dir);
  if (fsync(fd) != 0) {
    int e = errno;
    close(fd);
    return err_errno(err, e, "fsync %s", dir);
  }
  close(fd);
  return ST_OK;
}

int env_exists(env_t *io, const char *path) {
  (void)io;
  return access(path, F_OK) == 0;
}

int env_path_size(env_t *io, const char *path, uint64_t *size, err_t *err) {
  (void)io;
  struct stat st;
  if (stat(path, &st) != 0) {
    if (errno == ENOENT) return ST_NOT_FOUND;
    return err_errno(err, errno, "stat %s", path);
  }
  *size = (uint64_t)st.st_size;
  return ST_OK;
}

int env_path_stat(env_t *io, const char *path, uint64_t *size, env_file_id_t *id,
                     err_t *err) {
  (void)io;
  struct stat st;
  if (stat(path, &st) != 0) {
    if (errno == ENOENT) return ST_NOT_FOUND;
    return err_errno(err, errno, "stat %s", path);
  }
  *size = (uint64_t)st.st_size;
  *id = (env_file_id_t){(uint64_t)st.st_dev, (uint64_t)st.st_ino};
  return ST_OK;
}

int env_list_dir(env_t *io, const char *dir, char ***names, size_t *n, err_t *err) {
  (void)io;
  *names = NULL;
  *n = 0;
  DIR *d = opendir(dir);
  if (!d) return err_errno(err, errno, "opendir %s", dir);
  char **v = NULL;
  size_t cnt = 0, cap = 0;
  struct dirent *e;
  errno = 0;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    if (cnt == cap) {
      size_t c = cap ? cap * 2 : 32;
      char **nv = realloc(v, c * sizeof *nv);
      if (!nv) goto nomem;
      v = nv;
      cap = c;
    }
    if (!(v[cnt] = strdup(e->d_name))) goto nomem;
    cnt++;
  }
  closedir(d);
  *names = v;
  *n = cnt;
  return ST_OK;
nomem:
  closedir(d);
  env_names_free(v, cnt);
  return err_set(err, ST_E_NOMEM, "list %s: out of memory", dir);
}

void env_names_free(char **names, size_t n) {
  if (!names) return;
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
}

/* flock(how | LOCK_NB) on fd, which the lock then owns; fd is closed on failure. */
static int lock_fd(int fd, int how, const char *path, env_lock_t **lock, err_t *err) {
  if (flock(fd, how | LOCK_NB) != 0) {
    int e = errno;
    close(fd);
    if (e == EWOULDBLOCK)
      return err_set(err, ST_E_BUSY, "lock %s: held by another open database", path);
    return err_errno(err, e, "flock %s", path);
  }
  env_lock_t *l = malloc(sizeof *l);
  if (!l) {
    close(fd);
    return err_set(err, ST_E_NOMEM, "lock %s: out of memory", path);
  }
  l->fd = fd;
  *lock = l;
  return ST_OK;
}

int env_lock(env_t *io, const char *path, env_lock_t **lock, err_t *err) {
  (void)io;
  *lock = NULL;
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0644);
  if (fd < 0) return err_errno(err, errno, "open %s", path);
  struct stat st;
  int rc = check_regular(fd, path, &st, err);
  if (rc != ST_OK) return rc;
  return lock_fd(fd, LOCK_EX, path, lock, err);
}

int env_lock_shared(env_t *io, const char *path, env_lock_t **lock, err_t *err) {
  (void)io;
  *lock = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return errno == ENOENT ? ST_NOT_FOUND : err_errno(err, errno, "open %s", path);
  struct stat st; /* a directory, or a regular file as check_regular says */
  if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) return lock_fd(fd, LOCK_SH, path, lock, err);
  int rc = check_regular(fd, path, &st, err);
  if (rc != ST_OK) return rc;
  return lock_fd(fd, LOCK_SH, path, lock, err);
}

void env_unlock(env_lock_t *lock) {
  if (!lock) return;
  flock(lock->fd, LOCK_UN);
  close(lock->fd);
  free(lock);
}

env_t *env_create_faulty(void) {
  env_t *io = calloc(1, sizeof *io);
  if (!io) return NULL;
  io->faulty = 1;
  pthread_mutex_init(&io->mu, NULL);
  return io;
}

void env_destroy(env_t *io) {
  if (!io || io == &default_io) return;
  for (size_t i = 0; i < io->ntracked; i++) free(io->tracked[i].path);
  free(io->tracked);
  for (int i = 0; i < ENV_OP_KINDS; i++) free(io->pattern[i]);
  pthread_mutex_destroy(&io->mu);
  free(io);
}

void env_fail(env_t *io, env_op_t op, uint64_t n, int sticky) {
  env_fault_t f = {.op = op, .n = n, .sticky = sticky, .error = ENV_ERR_EIO};
  (void)env_fail_with(io, &f);
}

int env_fail_with(env_t *io, const env_fault_t *f) {
  if (!io || !io->faulty) return ST_OK;
  if ((unsigned)f->op >= ENV_OP_KINDS || (unsigned)f->error >= ENV_ERRORS ||
      (f->error == ENV_ERR_SHORT && f->op != ENV_OP_WRITE) ||
      (f->error == ENV_ERR_FSYNC && f->op != ENV_OP_SYNC))
    return ST_E_INVALID;
  char *pattern = NULL;
  if (f->pattern && !(pattern = strdup(f->pattern))) return ST_E_NOMEM;
  pthread_mutex_lock(&io->mu);
  free(io->pattern[f->op]);
  io->pattern[f->op] = pattern;
  io->matched[f->op] = 0;
  io->fail_at[f->op] = f->n;
  io->sticky[f->op] = f->sticky;
  io->error[f->op] = f->error;
  pthread_mutex_unlock(&io->mu);
  return ST_OK;
}

uint64_t env_faults_injected(const env_t *io) {
  if (!io || !io->faulty) return 0;
  pthread_mutex_lock((pthread_mutex_t *)&io->mu);
  uint64_t n = io->injected;
  pthread_mutex_unlock((pthread_mutex_t *)&io->mu);
  return n;
}

size_t env_last_fault_path(const env_t *io, char *buf, size_t cap) {
  if (cap) buf[0] = '\0';
  if (!io || !io->faulty) return 0;
  pthread_mutex_lock((pthread_mutex_t *)&io->mu);
  int n = snprintf(buf, cap, "%s", io->last_fault);
  pthread_mutex_unlock((pthread_mutex_t *)&io->mu);
  return n > 0 ? (size_t)n : 0;
}

void env_fail_none(env_t *io) {
  if (!io || !io->faulty) return;
  pthread_mutex_lock(&io->mu);
  for (int i = 0; i < ENV_OP_KINDS; i++) io->fail_at[i] = 0;
  pthread_mutex_unlock(&io->mu);
}

uint64_t env_op_count(const env_t *io, env_op_t op) {
  if (!io || !io->faulty || op >= ENV_OP_KINDS) return 0;
  pthread_mutex_lock((pthread_mutex_t *)&io->mu);
  uint64_t c = io->count[op];
  pthread_mutex_unlock((pthread_mutex_t *)&io->mu);
  return c;
}

int env_drop_unsynced(env_t *io, err_t *err) {
  if (!io || !io->faulty) return ST_OK;
  int rc = ST_OK;
  pthread_mutex_lock(&io->mu);
  for (size_t i = 0; i < io->ntracked; i++) {
    tracked_t *t = &io->tracked[i];
    struct stat st;
    if (stat(t->path, &st) != 0) continue; /* deleted behind our back */
    if ((uint64_t)st.st_size <= t->synced) continue;
    if (truncate(t->path, (off_t)t->synced) != 0 && rc == ST_OK)
      rc = err_errno(err, errno, "truncate %s", t->path);
  }
  pthread_mutex_unlock(&io->mu);
  return rc;
}

/* ---- Directory trees ----------------------------------------------------------------- */

int env_path_type(env_t *io, const char *path, env_path_type_t *type, err_t *err) {
  (void)io;
  struct stat st;
  if (lstat(path, &st) != 0) {
    if (errno == ENOENT) return ST_NOT_FOUND;
    return err_errno(err, errno, "lstat %s", path);
  }
  *type = S_ISREG(st.st_mode) ? ENV_PATH_FILE : S_ISDIR(st.st_mode) ? ENV_PATH_DIR : ENV_PATH_OTHER;
  return ST_OK;
}

int env_link(env_t *io, const char *from, const char *to, err_t *err) {
  int rc = inject(io, ENV_OP_RENAME, from, err);
  if (rc) return rc;
  if (link(from, to) != 0) return err_errno(err, errno, "link %s to %s", from, to);
  return ST_OK;
}

int env_rename_exchange(env_t *io, const char *a, const char *b, err_t *err) {
  int rc = inject(io, ENV_OP_RENAME, a, err);
  if (rc) return rc;
  if (renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) != 0) {
    int e = errno;
    if (e == EINVAL || e == ENOSYS || e == EOPNOTSUPP)
      return err_set(err, ST_E_UNSUPPORTED,
                     "exchange %s and %s: %s (the file system cannot "
                     "swap two names in one step)",
                     a, b, strerror(e));
    return err_errno(err, e, "exchange %s and %s", a, b);
  }
  return ST_OK;
}

int env_rmdir(env_t *io, const char *path, err_t *err) {
  int rc = inject(io, ENV_OP_UNLINK, path, err);
  if (rc) return rc;
  if (rmdir(path) != 0) {
    if (errno == ENOENT) return ST_NOT_FOUND;
    return err_errno(err, errno, "rmdir %s", path);
  }
  return ST_OK;
}
