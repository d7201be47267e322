/* The engine's I/O layer: POSIX calls with an optional fault plan (lsm/io.h). */
#include "lsm/io.h"

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

struct lsm_io {
  int faulty;
  pthread_mutex_t mu;
  uint64_t count[LSM_IO_OP_KINDS];
  uint64_t matched[LSM_IO_OP_KINDS]; /* ops of the kind that matched its pattern */
  uint64_t fail_at[LSM_IO_OP_KINDS]; /* absolute matched count that fails; 0 = none */
  int sticky[LSM_IO_OP_KINDS];
  lsm_io_error_t error[LSM_IO_OP_KINDS];
  char *pattern[LSM_IO_OP_KINDS]; /* NULL: every path */
  uint64_t injected;
  char last_fault[4096];
  tracked_t *tracked;
  size_t ntracked, cap;
};

struct lsm_file {
  lsm_io_t *io;
  int fd;
  char *path;
  uint64_t size; /* bytes appended, including the buffer */
  uint8_t *buf;
  size_t buffered;
};

struct lsm_rfile {
  lsm_io_t *io;
  int fd;
  char *path;
  uint64_t size;
  lsm_file_id_t id;
};

struct lsm_lock {
  int fd;
};

static lsm_io_t default_io = {.faulty = 0, .mu = PTHREAD_MUTEX_INITIALIZER};

lsm_io_t *lsm_io_default(void) {
  return &default_io;
}

static const char *op_names[LSM_IO_OP_KINDS] = {"open",   "write", "sync", "rename",
                                                "unlink", "read",  "mkdir"};

static int pattern_matches(const char *pattern, const char *path) {
  if (!pattern) return 1;
  const char *base = strrchr(path, '/');
  return fnmatch(pattern, base ? base + 1 : path, 0) == 0;
}

/* Counts an operation; returns 1 (and the error kind in *kind) if the plan says it
   fails. */
static int should_fail(lsm_io_t *io, lsm_io_op_t op, const char *path, lsm_io_error_t *kind) {
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
static int fault_error(err_t *err, lsm_io_error_t kind, const char *call, const char *path) {
  return err_errno(err, kind == LSM_IO_ERR_ENOSPC ? ENOSPC : EIO, "injected fault: %s %s", call,
                   path);
}

/* Counts an operation; returns ST_E_IO (with message) if the plan says it fails. */
static int inject(lsm_io_t *io, lsm_io_op_t op, const char *path, err_t *err) {
  lsm_io_error_t kind;
  if (!should_fail(io, op, path, &kind)) return ST_OK;
  return fault_error(err, kind, op_names[op], path);
}

static tracked_t *find_tracked(lsm_io_t *io, const char *path) {
  for (size_t i = 0; i < io->ntracked; i++)
    if (strcmp(io->tracked[i].path, path) == 0) return &io->tracked[i];
  return NULL;
}

/* Records that path was written (synced = -1: keep the old record if any, else 0). */
static void track(lsm_io_t *io, const char *path, int64_t synced) {
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

static int open_write(lsm_io_t *io, const char *path, int flags, lsm_file_t **out, err_t *err) {
  *out = NULL;
  int rc = inject(io, LSM_IO_OP_OPEN, path, err);
  if (rc) return rc;
  lsm_file_t *f = calloc(1, sizeof *f);
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
  f->fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | flags, 0644);
  if (f->fd < 0) {
    int e = errno;
    free(f->path);
    free(f->buf);
    free(f);
    return err_errno(err, e, "open %s", path);
  }
  if (flags & O_APPEND) {
    struct stat st;
    if (fstat(f->fd, &st) == 0) f->size = (uint64_t)st.st_size;
  }
  track(io, path, (flags & O_TRUNC) ? 0 : -1);
  *out = f;
  return ST_OK;
}

int lsm_io_open_write(lsm_io_t *io, const char *path, lsm_file_t **f, err_t *err) {
  return open_write(io, path, O_TRUNC, f, err);
}

int lsm_io_open_append(lsm_io_t *io, const char *path, lsm_file_t **f, err_t *err) {
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

int lsm_file_flush(lsm_file_t *f, err_t *err) {
  if (f->buffered == 0) return ST_OK;
  int rc = write_all(f->fd, f->buf, f->buffered, f->path, err);
  f->buffered = 0;
  return rc;
}

/* A short write: the buffer and half of data reach the file, then "no space". */
static int short_write(lsm_file_t *f, const uint8_t *data, size_t n, err_t *err) {
  int rc = lsm_file_flush(f, err);
  if (rc) return rc;
  size_t part = n / 2;
  rc = write_all(f->fd, data, part, f->path, err);
  if (rc) return rc;
  f->size += part;
  return err_set(err, ST_E_IO, "injected fault: write %s: short write (%zu of %zu bytes): %s",
                 f->path, part, n, strerror(ENOSPC));
}

int lsm_file_append(lsm_file_t *f, const void *data, size_t n, err_t *err) {
  lsm_io_error_t kind;
  if (should_fail(f->io, LSM_IO_OP_WRITE, f->path, &kind)) {
    if (kind == LSM_IO_ERR_SHORT) return short_write(f, data, n, err);
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
  rc = lsm_file_flush(f, err);
  if (rc) return rc;
  if (n >= FILE_BUF_BYTES / 2) return write_all(f->fd, p, n, f->path, err);
  memcpy(f->buf, p, n);
  f->buffered = n;
  return ST_OK;
}

int lsm_file_sync(lsm_file_t *f, err_t *err) {
  int rc = lsm_file_flush(f, err);
  if (rc) return rc;
  lsm_io_error_t kind;
  if (should_fail(f->io, LSM_IO_OP_SYNC, f->path, &kind)) {
    if (kind == LSM_IO_ERR_FSYNC) {
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

int lsm_file_close(lsm_file_t *f, err_t *err) {
  if (!f) return ST_OK;
  int rc = lsm_file_flush(f, err);
  if (close(f->fd) != 0 && rc == ST_OK) rc = err_errno(err, errno, "close %s", f->path);
  free(f->buf);
  free(f->path);
  free(f);
  return rc;
}

uint64_t lsm_file_size(const lsm_file_t *f) {
  return f->size;
}
const char *lsm_file_path(const lsm_file_t *f) {
  return f->path;
}

/* Opens path read-only (through io's fault injection) and reports its size; on error
   nothing is left open. */
static int open_for_reading(lsm_io_t *io, const char *path, int *fd, uint64_t *size,
                            lsm_file_id_t *id, err_t *err) {
  int rc = inject(io, LSM_IO_OP_OPEN, path, err);
  if (rc) return rc;
  *fd = open(path, O_RDONLY | O_CLOEXEC);
  if (*fd < 0) return err_errno(err, errno, "open %s", path);
  struct stat st;
  if (fstat(*fd, &st) != 0) {
    int e = errno;
    close(*fd);
    return err_errno(err, e, "fstat %s", path);
  }
  *size = (uint64_t)st.st_size;
  if (id) *id = (lsm_file_id_t){(uint64_t)st.st_dev, (uint64_t)st.st_ino};
  return ST_OK;
}

int lsm_io_open_read(lsm_io_t *io, const char *path, lsm_rfile_t **out, err_t *err) {
  *out = NULL;
  int fd = -1;
  uint64_t size = 0;
  lsm_file_id_t id;
  int rc = open_for_reading(io, path, &fd, &size, &id, err);
  if (rc) return rc;
  lsm_rfile_t *f = calloc(1, sizeof *f);
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

int lsm_rfile_pread(lsm_rfile_t *f, uint64_t offset, void *buf, size_t n, size_t *got, err_t *err) {
  *got = 0;
  int rc = inject(f->io, LSM_IO_OP_READ, f->path, err);
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

uint64_t lsm_rfile_size(const lsm_rfile_t *f) {
  return f->size;
}

lsm_file_id_t lsm_rfile_id(const lsm_rfile_t *f) {
  return f->id;
}

void lsm_rfile_close(lsm_rfile_t *f) {
  if (!f) return;
  close(f->fd);
  free(f->path);
  free(f);
}

int lsm_io_read_file(lsm_io_t *io, const char *path, void **data, size_t *size, err_t *err) {
  *data = NULL;
  *size = 0;
  lsm_rfile_t *f;
  int rc = lsm_io_open_read(io, path, &f, err);
  if (rc) return rc;
  size_t n = (size_t)f->size;
  uint8_t *buf = malloc(n + 1);
  if (!buf) {
    lsm_rfile_close(f);
    return err_set(err, ST_E_NOMEM, "read %s: out of memory (%zu bytes)", path, n);
  }
  size_t got = 0;
  rc = n ? lsm_rfile_pread(f, 0, buf, n, &got, err) : ST_OK;
  lsm_rfile_close(f);
  if (rc) {
    free(buf);
    return rc;
  }
  buf[got] = 0;
  *data = buf;
  *size = got;
  return ST_OK;
}

int lsm_io_write_file(lsm_io_t *io, const char *path, const void *data, size_t n, err_t *err) {
  lsm_file_t *f;
  int rc = lsm_io_open_write(io, path, &f, err);
  if (rc) return rc;
  rc = lsm_file_append(f, data, n, err);
  if (!rc) rc = lsm_file_sync(f, err);
  int rc2 = lsm_file_close(f, rc ? NULL : err);
  return rc ? rc : rc2;
}

int lsm_io_rename(lsm_io_t *io, const char *from, const char *to, err_t *err) {
  int rc = inject(io, LSM_IO_OP_RENAME, from, err);
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

int lsm_io_unlink(lsm_io_t *io, const char *path, err_t *err) {
  int rc = inject(io, LSM_IO_OP_UNLINK, path, err);
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

int lsm_io_mkdir(lsm_io_t *io, const char *path, err_t *err) {
  int rc = inject(io, LSM_IO_OP_MKDIR, path, err);
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

int lsm_io_sync_dir(lsm_io_t *io, const char *dir, err_t *err) {
  int rc = inject(io, LSM_IO_OP_SYNC, dir, err);
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

int lsm_io_exists(lsm_io_t *io, const char *path) {
  (void)io;
  return access(path, F_OK) == 0;
}

int lsm_io_file_size(lsm_io_t *io, const char *path, uint64_t *size, err_t *err) {
  (void)io;
  struct stat st;
  if (stat(path, &st) != 0) {
    if (errno == ENOENT) return ST_NOT_FOUND;
    return err_errno(err, errno, "stat %s", path);
  }
  *size = (uint64_t)st.st_size;
  return ST_OK;
}

int lsm_io_file_stat(lsm_io_t *io, const char *path, uint64_t *size, lsm_file_id_t *id,
                     err_t *err) {
  (void)io;
  struct stat st;
  if (stat(path, &st) != 0) {
    if (errno == ENOENT) return ST_NOT_FOUND;
    return err_errno(err, errno, "stat %s", path);
  }
  *size = (uint64_t)st.st_size;
  *id = (lsm_file_id_t){(uint64_t)st.st_dev, (uint64_t)st.st_ino};
  return ST_OK;
}

int lsm_io_list_dir(lsm_io_t *io, const char *dir, char ***names, size_t *n, err_t *err) {
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
  lsm_io_names_free(v, cnt);
  return err_set(err, ST_E_NOMEM, "list %s: out of memory", dir);
}

void lsm_io_names_free(char **names, size_t n) {
  if (!names) return;
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
}

/* flock(how | LOCK_NB) on fd, which the lock then owns; fd is closed on failure. */
static int lock_fd(int fd, int how, const char *path, lsm_lock_t **lock, err_t *err) {
  if (flock(fd, how | LOCK_NB) != 0) {
    int e = errno;
    close(fd);
    if (e == EWOULDBLOCK)
      return err_set(err, ST_E_BUSY, "lock %s: held by another open database", path);
    return err_errno(err, e, "flock %s", path);
  }
  lsm_lock_t *l = malloc(sizeof *l);
  if (!l) {
    close(fd);
    return err_set(err, ST_E_NOMEM, "lock %s: out of memory", path);
  }
  l->fd = fd;
  *lock = l;
  return ST_OK;
}

int lsm_io_lock(lsm_io_t *io, const char *path, lsm_lock_t **lock, err_t *err) {
  (void)io;
  *lock = NULL;
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return err_errno(err, errno, "open %s", path);
  return lock_fd(fd, LOCK_EX, path, lock, err);
}

int lsm_io_lock_shared(lsm_io_t *io, const char *path, lsm_lock_t **lock, err_t *err) {
  (void)io;
  *lock = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? ST_NOT_FOUND : err_errno(err, errno, "open %s", path);
  return lock_fd(fd, LOCK_SH, path, lock, err);
}

void lsm_io_unlock(lsm_lock_t *lock) {
  if (!lock) return;
  flock(lock->fd, LOCK_UN);
  close(lock->fd);
  free(lock);
}

lsm_io_t *lsm_io_create_faulty(void) {
  lsm_io_t *io = calloc(1, sizeof *io);
  if (!io) return NULL;
  io->faulty = 1;
  pthread_mutex_init(&io->mu, NULL);
  return io;
}

void lsm_io_destroy(lsm_io_t *io) {
  if (!io || io == &default_io) return;
  for (size_t i = 0; i < io->ntracked; i++) free(io->tracked[i].path);
  free(io->tracked);
  for (int i = 0; i < LSM_IO_OP_KINDS; i++) free(io->pattern[i]);
  pthread_mutex_destroy(&io->mu);
  free(io);
}

void lsm_io_fail(lsm_io_t *io, lsm_io_op_t op, uint64_t n, int sticky) {
  lsm_io_fault_t f = {.op = op, .n = n, .sticky = sticky, .error = LSM_IO_ERR_EIO};
  (void)lsm_io_fail_with(io, &f);
}

int lsm_io_fail_with(lsm_io_t *io, const lsm_io_fault_t *f) {
  if (!io || !io->faulty) return ST_OK;
  if ((unsigned)f->op >= LSM_IO_OP_KINDS || (unsigned)f->error >= LSM_IO_ERRORS ||
      (f->error == LSM_IO_ERR_SHORT && f->op != LSM_IO_OP_WRITE) ||
      (f->error == LSM_IO_ERR_FSYNC && f->op != LSM_IO_OP_SYNC))
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

uint64_t lsm_io_faults_injected(const lsm_io_t *io) {
  if (!io || !io->faulty) return 0;
  pthread_mutex_lock((pthread_mutex_t *)&io->mu);
  uint64_t n = io->injected;
  pthread_mutex_unlock((pthread_mutex_t *)&io->mu);
  return n;
}

size_t lsm_io_last_fault_path(const lsm_io_t *io, char *buf, size_t cap) {
  if (cap) buf[0] = '\0';
  if (!io || !io->faulty) return 0;
  pthread_mutex_lock((pthread_mutex_t *)&io->mu);
  int n = snprintf(buf, cap, "%s", io->last_fault);
  pthread_mutex_unlock((pthread_mutex_t *)&io->mu);
  return n > 0 ? (size_t)n : 0;
}

void lsm_io_fail_none(lsm_io_t *io) {
  if (!io || !io->faulty) return;
  pthread_mutex_lock(&io->mu);
  for (int i = 0; i < LSM_IO_OP_KINDS; i++) io->fail_at[i] = 0;
  pthread_mutex_unlock(&io->mu);
}

uint64_t lsm_io_op_count(const lsm_io_t *io, lsm_io_op_t op) {
  if (!io || !io->faulty || op >= LSM_IO_OP_KINDS) return 0;
  pthread_mutex_lock((pthread_mutex_t *)&io->mu);
  uint64_t c = io->count[op];
  pthread_mutex_unlock((pthread_mutex_t *)&io->mu);
  return c;
}

int lsm_io_drop_unsynced(lsm_io_t *io, err_t *err) {
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
