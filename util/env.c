/* The env's calls (util/env.h), and env_default(): POSIX. */
#include "util/env.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <limits.h>
#include <pthread.h>
#include <unistd.h>

#include "util/uring_api.h"

/* ---- The calls: through the env's table ------------------------------------------------ */

int env_open_write(env_t *io, const char *path, env_file_t **f, err_t *err) {
  return io->ops->open_write(io, path, 0, f, err);
}
int env_open_append(env_t *io, const char *path, env_file_t **f, err_t *err) {
  return io->ops->open_write(io, path, 1, f, err);
}
int env_file_append(env_file_t *f, const void *data, size_t n, err_t *err) {
  return f->io->ops->file_append(f, data, n, err);
}
int env_file_flush(env_file_t *f, err_t *err) {
  return f->io->ops->file_flush(f, err);
}
int env_file_sync(env_file_t *f, err_t *err) {
  return f->io->ops->file_sync(f, err);
}
int env_file_close(env_file_t *f, err_t *err) {
  return f ? f->io->ops->file_close(f, err) : ST_OK;
}
uint64_t env_file_size(const env_file_t *f) {
  return f->size;
}
const char *env_file_path(const env_file_t *f) {
  return f->path;
}

int env_open_read(env_t *io, const char *path, env_rfile_t **f, err_t *err) {
  return io->ops->open_read(io, path, f, err);
}
int env_rfile_pread(env_rfile_t *f, uint64_t offset, void *buf, size_t n, size_t *got, err_t *err) {
  return f->io->ops->rfile_pread(f, offset, buf, n, got, err);
}
uint64_t env_rfile_size(const env_rfile_t *f) {
  return f->size;
}
env_file_id_t env_rfile_id(const env_rfile_t *f) {
  return f->id;
}
int env_rfile_stamp(const env_rfile_t *f, env_file_stamp_t *out, err_t *err) {
  return f->io->ops->rfile_stamp(f, out, err);
}
void env_rfile_close(env_rfile_t *f) {
  if (f) f->io->ops->rfile_close(f);
}
int env_rfile_map(env_rfile_t *f, const uint8_t **p, err_t *err) {
  *p = NULL;
  if (!f->io->ops->rfile_map) return ST_E_UNSUPPORTED;
  return f->io->ops->rfile_map(f, p, err);
}

/* The reads one by one, each with env_rfile_pread; the first failure's message goes to err. */
static int reads_one_by_one(env_read_t *r, size_t n, err_t *err) {
  int first = ST_OK;
  for (size_t i = 0; i < n; i++) {
    r[i].got = 0;
    r[i].rc = env_rfile_pread(r[i].f, r[i].offset, r[i].buf, r[i].n, &r[i].got,
                              first == ST_OK ? err : NULL);
    if (first == ST_OK) first = r[i].rc;
  }
  return first;
}

int env_read_batch(env_t *io, env_read_t *r, size_t n, err_t *err) {
  if (n == 0) return ST_OK;
  if (!io->ops->read_batch) return reads_one_by_one(r, n, err);
  return io->ops->read_batch(io, r, n, err);
}

int env_rename(env_t *io, const char *from, const char *to, err_t *err) {
  return io->ops->rename(io, from, to, err);
}
int env_unlink(env_t *io, const char *path, err_t *err) {
  return io->ops->unlink(io, path, err);
}
int env_mkdir(env_t *io, const char *path, err_t *err) {
  return io->ops->mkdir(io, path, err);
}
int env_sync_dir(env_t *io, const char *dir, err_t *err) {
  return io->ops->sync_dir(io, dir, err);
}
int env_path_stat(env_t *io, const char *path, uint64_t *size, env_file_id_t *id, err_t *err) {
  return io->ops->path_stat(io, path, size, id, err);
}
int env_path_size(env_t *io, const char *path, uint64_t *size, err_t *err) {
  env_file_id_t id;
  return io->ops->path_stat(io, path, size, &id, err);
}
int env_exists(env_t *io, const char *path) {
  uint64_t size;
  env_file_id_t id;
  return io->ops->path_stat(io, path, &size, &id, NULL) == ST_OK;
}
int env_path_type(env_t *io, const char *path, env_path_type_t *type, err_t *err) {
  return io->ops->path_type(io, path, 0, type, err);
}
int env_path_kind(env_t *io, const char *path, env_path_type_t *type, err_t *err) {
  return io->ops->path_type(io, path, 1, type, err);
}
const char *env_path_type_name(env_path_type_t type) {
  switch (type) {
    case ENV_PATH_FILE:
      return "a regular file";
    case ENV_PATH_DIR:
      return "a directory";
    case ENV_PATH_LINK:
      return "a symbolic link";
    case ENV_PATH_FIFO:
      return "a FIFO";
    case ENV_PATH_SOCKET:
      return "a socket";
    default:
      return "a device";
  }
}
int env_list_dir(env_t *io, const char *dir, char ***names, size_t *n, err_t *err) {
  return io->ops->list_dir(io, dir, names, NULL, n, err);
}
int env_list_dir_types(env_t *io, const char *dir, char ***names, env_path_type_t **types,
                       size_t *n, err_t *err) {
  return io->ops->list_dir(io, dir, names, types, n, err);
}
void env_names_free(char **names, size_t n) {
  if (!names) return;
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
}
int env_lock(env_t *io, const char *path, env_lock_t **lock, err_t *err) {
  return io->ops->lock(io, path, ENV_LOCK_EXCLUSIVE, lock, err);
}
int env_lock_shared(env_t *io, const char *path, env_lock_t **lock, err_t *err) {
  return io->ops->lock(io, path, ENV_LOCK_SHARED, lock, err);
}
int env_lock_dir(env_t *io, const char *path, env_lock_t **lock, err_t *err) {
  return io->ops->lock(io, path, ENV_LOCK_DIR, lock, err);
}
int env_lock_record(env_t *io, const char *path, env_lock_t **lock, err_t *err) {
  return io->ops->lock(io, path, ENV_LOCK_RECORD, lock, err);
}
void env_unlock(env_lock_t *lock) {
  if (lock) lock->io->ops->unlock(lock);
}
int env_link(env_t *io, const char *from, const char *to, err_t *err) {
  return io->ops->link(io, from, to, err);
}
int env_rename_exchange(env_t *io, const char *a, const char *b, err_t *err) {
  return io->ops->rename_exchange(io, a, b, err);
}
int env_rmdir(env_t *io, const char *path, err_t *err) {
  return io->ops->rmdir(io, path, err);
}

/* ---- Composite calls: built on the env's own, so a wrapping env sees each step ---------- */

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

/* ---- POSIX ------------------------------------------------------------------------------ */

#define FILE_BUF_BYTES 65536

typedef struct posix_file {
  env_file_t base;
  int fd;
  uint8_t *buf;
  size_t buffered;
} posix_file_t;

typedef struct posix_rfile {
  env_rfile_t base;
  int fd;
  int64_t mtime_ns, ctime_ns; /* the open's fstat, for env_rfile_stamp */
  void *map;                  /* env_rfile_map's, of base.size bytes; NULL: none yet */
} posix_rfile_t;

typedef struct posix_lock {
  env_lock_t base;
  int fd;
} posix_lock_t;

static const env_ops_t posix_ops;
static env_t posix_env = {&posix_ops};

env_t *env_default(void) {
  return &posix_env;
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
   damage). On ST_OK *st is the file's fstat; on failure fd is closed. */
static int check_regular(int fd, const char *path, struct stat *st, err_t *err) {
  int rc = ST_OK;
  if (fstat(fd, st) != 0)
    rc = err_errno(err, errno, "fstat %s", path);
  else if (!S_ISREG(st->st_mode))
    rc = err_set(err, ST_E_CORRUPT, "open %s: not a regular file (%s)", path,
                 file_kind(st->st_mode));
  if (rc != ST_OK) close(fd);
  return rc;
}

/* Clears O_NONBLOCK on fd. A file written has it cleared after check_regular. A file read
   keeps it (it means nothing to a regular file on Linux, open(2)), and a read that a file
   system fails with EAGAIN for it clears it then and is tried again (posix_rfile_pread): two
   system calls fewer per open, and an open of every live table is the bulk of a new process's
   search (doc/lsm.md "Performance goals"). A lock file's descriptor keeps it too: it is only
   locked (flock takes LOCK_NB, F_SETLK never waits). */
static int clear_nonblock(int fd, const char *path, err_t *err) {
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0)
    return err_errno(err, errno, "fcntl %s", path);
  return ST_OK;
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

static int posix_open_write(env_t *io, const char *path, int append, env_file_t **out,
                            err_t *err) {
  *out = NULL;
  posix_file_t *f = calloc(1, sizeof *f);
  if (!f) return err_set(err, ST_E_NOMEM, "open %s: out of memory", path);
  f->base.io = io;
  f->base.path = strdup(path);
  f->buf = malloc(FILE_BUF_BYTES);
  if (!f->base.path || !f->buf) {
    free(f->base.path);
    free(f->buf);
    free(f);
    return err_set(err, ST_E_NOMEM, "open %s: out of memory", path);
  }
  struct stat st;
  int flags = append ? O_APPEND : O_TRUNC;
  f->fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NONBLOCK | flags, 0644);
  int rc = f->fd < 0 ? open_error(errno, path, err) : check_regular(f->fd, path, &st, err);
  if (rc == ST_OK && (rc = clear_nonblock(f->fd, path, err)) != ST_OK) close(f->fd);
  if (rc != ST_OK) {
    free(f->base.path);
    free(f->buf);
    free(f);
    return rc;
  }
  if (append) f->base.size = (uint64_t)st.st_size;
  *out = &f->base;
  return ST_OK;
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

static int posix_file_flush(env_file_t *base, err_t *err) {
  posix_file_t *f = (posix_file_t *)base;
  if (f->buffered == 0) return ST_OK;
  int rc = write_all(f->fd, f->buf, f->buffered, base->path, err);
  f->buffered = 0;
  return rc;
}

static int posix_file_append(env_file_t *base, const void *data, size_t n, err_t *err) {
  posix_file_t *f = (posix_file_t *)base;
  const uint8_t *p = data;
  base->size += n;
  if (f->buffered + n <= FILE_BUF_BYTES) {
    if (n) memcpy(f->buf + f->buffered, p, n);
    f->buffered += n;
    return ST_OK;
  }
  int rc = posix_file_flush(base, err);
  if (rc) return rc;
  if (n >= FILE_BUF_BYTES / 2) return write_all(f->fd, p, n, base->path, err);
  memcpy(f->buf, p, n);
  f->buffered = n;
  return ST_OK;
}

static int posix_file_sync(env_file_t *base, err_t *err) {
  int rc = posix_file_flush(base, err);
  if (rc) return rc;
  if (fdatasync(((posix_file_t *)base)->fd) != 0)
    return err_errno(err, errno, "fdatasync %s", base->path);
  return ST_OK;
}

static int posix_file_close(env_file_t *base, err_t *err) {
  posix_file_t *f = (posix_file_t *)base;
  int rc = posix_file_flush(base, err);
  if (close(f->fd) != 0 && rc == ST_OK) rc = err_errno(err, errno, "close %s", base->path);
  free(f->buf);
  free(base->path);
  free(f);
  return rc;
}

static int posix_open_read(env_t *io, const char *path, env_rfile_t **out, err_t *err) {
  *out = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return err_errno(err, errno, "open %s", path);
  struct stat st;
  int rc = check_regular(fd, path, &st, err);
  if (rc != ST_OK) return rc;
  posix_rfile_t *f = calloc(1, sizeof *f);
  char *p = strdup(path);
  if (!f || !p) {
    free(f);
    free(p);
    close(fd);
    return err_set(err, ST_E_NOMEM, "open %s: out of memory", path);
  }
  f->base = (env_rfile_t){io, p, (uint64_t)st.st_size,
                          (env_file_id_t){(uint64_t)st.st_dev, (uint64_t)st.st_ino}};
  f->fd = fd;
  f->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
  f->ctime_ns = (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
  *out = &f->base;
  return ST_OK;
}

static int posix_rfile_pread(env_rfile_t *base, uint64_t offset, void *buf, size_t n,
                             size_t *got, err_t *err) {
  int fd = ((posix_rfile_t *)base)->fd;
  *got = 0;
  uint8_t *p = buf;
  while (*got < n) {
    ssize_t r = pread(fd, p + *got, n - *got, (off_t)(offset + *got));
    if (r < 0) {
      if (errno == EINTR) continue;
      /* O_NONBLOCK, left on from the open (clear_nonblock), honoured by this file system */
      if ((errno == EAGAIN || errno == EWOULDBLOCK) && (fcntl(fd, F_GETFL) & O_NONBLOCK)) {
        int rc = clear_nonblock(fd, base->path, err);
        if (rc != ST_OK) return rc;
        continue;
      }
      return err_errno(err, errno, "pread %s at %llu", base->path,
                       (unsigned long long)(offset + *got));
    }
    if (r == 0) break;
    *got += (size_t)r;
  }
  return ST_OK;
}

static int posix_rfile_stamp(const env_rfile_t *base, env_file_stamp_t *out, err_t *err) {
  (void)err;
  const posix_rfile_t *f = (const posix_rfile_t *)base;
  *out = (env_file_stamp_t){base->id.dev, base->id.ino, base->size, f->mtime_ns, f->ctime_ns};
  return ST_OK;
}

static int posix_rfile_map(env_rfile_t *base, const uint8_t **p, err_t *err) {
  posix_rfile_t *f = (posix_rfile_t *)base;
  if (!f->map) {
    if (base->size == 0 || base->size > SIZE_MAX) return ST_E_UNSUPPORTED;
    void *m = mmap(NULL, (size_t)base->size, PROT_READ, MAP_SHARED, f->fd, 0);
    if (m == MAP_FAILED) return err_errno(err, errno, "mmap %s", base->path);
    f->map = m;
  }
  *p = f->map;
  return ST_OK;
}

static void posix_rfile_close(env_rfile_t *base) {
  posix_rfile_t *f = (posix_rfile_t *)base;
  if (f->map) munmap(f->map, (size_t)base->size);
  close(((posix_rfile_t *)base)->fd);
  free(base->path);
  free(base);
}

static int posix_rename(env_t *io, const char *from, const char *to, err_t *err) {
  (void)io;
  if (rename(from, to) != 0) return err_errno(err, errno, "rename %s to %s", from, to);
  return ST_OK;
}

static int posix_unlink(env_t *io, const char *path, err_t *err) {
  (void)io;
  if (unlink(path) != 0) {
    if (errno == ENOENT) return ST_NOT_FOUND;
    return err_errno(err, errno, "unlink %s", path);
  }
  return ST_OK;
}

static int posix_mkdir(env_t *io, const char *path, err_t *err) {
  (void)io;
  if (mkdir(path, 0755) != 0) {
    if (errno == EEXIST) {
      struct stat st;
      if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return ST_OK;
    }
    return err_errno(err, errno, "mkdir %s", path);
  }
  return ST_OK;
}

static int posix_sync_dir(env_t *io, const char *dir, err_t *err) {
  (void)io;
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

static int posix_path_stat(env_t *io, const char *path, uint64_t *size, env_file_id_t *id,
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

static int posix_path_type(env_t *io, const char *path, int follow, env_path_type_t *type,
                           err_t *err) {
  (void)io;
  struct stat st;
  if ((follow ? stat(path, &st) : lstat(path, &st)) != 0) {
    if (errno == ENOENT) return ST_NOT_FOUND;
    return err_errno(err, errno, "%s %s", follow ? "stat" : "lstat", path);
  }
  *type = S_ISREG(st.st_mode)    ? ENV_PATH_FILE
          : S_ISDIR(st.st_mode)  ? ENV_PATH_DIR
          : S_ISLNK(st.st_mode)  ? ENV_PATH_LINK
          : S_ISFIFO(st.st_mode) ? ENV_PATH_FIFO
          : S_ISSOCK(st.st_mode) ? ENV_PATH_SOCKET
                                 : ENV_PATH_DEVICE;
  return ST_OK;
}

/* The d_type of a directory entry as an env_path_type_t; 0 where the file system does not
   say (DT_UNKNOWN). */
static env_path_type_t dirent_type(unsigned char t) {
  switch (t) {
    case DT_REG:
      return ENV_PATH_FILE;
    case DT_DIR:
      return ENV_PATH_DIR;
    case DT_LNK:
      return ENV_PATH_LINK;
    case DT_FIFO:
      return ENV_PATH_FIFO;
    case DT_SOCK:
      return ENV_PATH_SOCKET;
    case DT_CHR:
    case DT_BLK:
      return ENV_PATH_DEVICE;
    default:
      return (env_path_type_t)0;
  }
}

static int posix_list_dir(env_t *io, const char *dir, char ***names, env_path_type_t **types,
                          size_t *n, err_t *err) {
  (void)io;
  *names = NULL;
  if (types) *types = NULL;
  *n = 0;
  DIR *d = opendir(dir);
  if (!d) return err_errno(err, errno, "opendir %s", dir);
  char **v = NULL;
  env_path_type_t *tv = NULL;
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
      if (types) {
        env_path_type_t *nt = realloc(tv, c * sizeof *nt);
        if (!nt) goto nomem;
        tv = nt;
      }
      cap = c;
    }
    if (!(v[cnt] = strdup(e->d_name))) goto nomem;
    if (types) tv[cnt] = dirent_type(e->d_type);
    cnt++;
  }
  closedir(d);
  *names = v;
  if (types) *types = tv;
  *n = cnt;
  return ST_OK;
nomem:
  closedir(d);
  env_names_free(v, cnt);
  free(tv);
  return err_set(err, ST_E_NOMEM, "list %s: out of memory", dir);
}

/* flock(how | LOCK_NB) on fd (how 0: none, fd holds a record lock already), which the lock
   then owns; fd is closed on failure. */
static int lock_fd(env_t *io, int fd, int how, const char *path, env_lock_t **lock, err_t *err) {
  if (how && flock(fd, how | LOCK_NB) != 0) {
    int e = errno;
    close(fd);
    if (e == EWOULDBLOCK)
      return err_set(err, ST_E_BUSY, "lock %s: held by another open database", path);
    return err_errno(err, e, "flock %s", path);
  }
  posix_lock_t *l = malloc(sizeof *l);
  if (!l) {
    close(fd);
    return err_set(err, ST_E_NOMEM, "lock %s: out of memory", path);
  }
  l->base.io = io;
  l->fd = fd;
  *lock = &l->base;
  return ST_OK;
}

static int posix_lock(env_t *io, const char *path, env_lock_mode_t mode, env_lock_t **lock,
                      err_t *err) {
  *lock = NULL;
  struct stat st;
  if (mode == ENV_LOCK_DIR) {
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return err_errno(err, errno, "open directory %s", path);
    return lock_fd(io, fd, LOCK_EX, path, lock, err);
  }
  if (mode == ENV_LOCK_RECORD) {
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0644);
    if (fd < 0) return err_errno(err, errno, "open %s", path);
    int rc = check_regular(fd, path, &st, err);
    if (rc != ST_OK) return rc;
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    if (fcntl(fd, F_SETLK, &fl) != 0) {
      int e = errno;
      close(fd);
      return e == EAGAIN || e == EACCES
                 ? err_set(err, ST_E_BUSY, "lock %s: held by another process", path)
                 : err_errno(err, e, "lock %s", path);
    }
    return lock_fd(io, fd, 0, path, lock, err);
  }
  if (mode == ENV_LOCK_EXCLUSIVE) {
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0644);
    if (fd < 0) return err_errno(err, errno, "open %s", path);
    int rc = check_regular(fd, path, &st, err);
    if (rc != ST_OK) return rc;
    return lock_fd(io, fd, LOCK_EX, path, lock, err);
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return errno == ENOENT ? ST_NOT_FOUND : err_errno(err, errno, "open %s", path);
  /* a directory, or a regular file as check_regular says */
  if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) return lock_fd(io, fd, LOCK_SH, path, lock, err);
  int rc = check_regular(fd, path, &st, err);
  if (rc != ST_OK) return rc;
  return lock_fd(io, fd, LOCK_SH, path, lock, err);
}

static void posix_unlock(env_lock_t *base) {
  posix_lock_t *l = (posix_lock_t *)base;
  flock(l->fd, LOCK_UN);
  close(l->fd); /* also drops a record lock */
  free(l);
}

static int posix_link(env_t *io, const char *from, const char *to, err_t *err) {
  (void)io;
  if (link(from, to) != 0) return err_errno(err, errno, "link %s to %s", from, to);
  return ST_OK;
}

static int posix_rename_exchange(env_t *io, const char *a, const char *b, err_t *err) {
  (void)io;
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

static int posix_rmdir(env_t *io, const char *path, err_t *err) {
  (void)io;
  if (rmdir(path) != 0) {
    if (errno == ENOENT) return ST_NOT_FOUND;
    return err_errno(err, errno, "rmdir %s", path);
  }
  return ST_OK;
}

/* ---- Batched reads: one io_uring per thread --------------------------------------------
   A thread's first batch sets up its ring (URING_DEPTH entries, a few pages and one
   descriptor), kept until the thread exits (pthread key destructor). A thread whose setup
   fails (no liburing, a kernel or sandbox that refuses io_uring, out of memory) reads one by
   one from then on. A child process of fork has a copy of its parent's ring, which it must
   not use (the rings' pages are shared with the parent): fork_generation tells it to make its
   own. */
#define URING_DEPTH 64u
#define READ_PENDING 2 /* env_read_t.rc of a read the ring did not complete (no status is 2) */

/* Under ThreadSanitizer every batch is read one by one. TSan sees neither liburing's mmap and
   munmap of the rings (raw system calls) nor the kernel's side of them: it keeps the shadow of
   whatever was mapped at a ring's addresses before (in the stock engines' tests, a table
   LevelDB had mapped, read and unmapped) and reports the ring's first writes as races with
   those reads, and the reads of a table mapped later where a ring was as races with its
   writes. */
#if defined(__SANITIZE_THREAD__)
#define ENV_NO_RING 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ENV_NO_RING 1
#endif
#endif

static pthread_once_t uring_once = PTHREAD_ONCE_INIT;
static pthread_key_t uring_key;
static int uring_key_ok;
static _Atomic unsigned fork_generation;

typedef struct thread_ring {
  struct io_uring ring;
  unsigned generation; /* fork_generation when it was set up */
} thread_ring_t;

static __thread thread_ring_t *my_ring;
static __thread int my_ring_state; /* 0 not tried yet, 1 my_ring, -1 none for this thread */

static void ring_free(void *p) {
  thread_ring_t *t = p;
  io_uring_queue_exit(&t->ring);
  free(t);
}
static void forked(void) {
  fork_generation++;
}
static void uring_key_make(void) {
  uring_key_ok =
      pthread_key_create(&uring_key, ring_free) == 0 && pthread_atfork(NULL, NULL, forked) == 0;
}

/* The calling thread's ring, set up at its first call; NULL: read one by one. */
static struct io_uring *thread_ring(void) {
  if (my_ring_state > 0 && my_ring->generation != fork_generation) {
    /* forked: the parent's ring is left alone, its pages unmapped here */
    ring_free(my_ring);
    pthread_setspecific(uring_key, NULL);
    my_ring = NULL;
    my_ring_state = 0;
  }
  if (my_ring_state) return my_ring_state > 0 ? &my_ring->ring : NULL;
  my_ring_state = -1;
#ifdef ENV_NO_RING
  return NULL;
#endif
  pthread_once(&uring_once, uring_key_make);
  if (!uring_key_ok || uring_api_bind(NULL) != ST_OK) return NULL;
  thread_ring_t *t = malloc(sizeof *t);
  if (!t) return NULL;
  if (io_uring_queue_init(URING_DEPTH, &t->ring, 0) != 0) {
    free(t);
    return NULL;
  }
  t->generation = fork_generation;
  if (pthread_setspecific(uring_key, t) != 0) {
    ring_free(t);
    return NULL;
  }
  my_ring = t;
  my_ring_state = 1;
  return &t->ring;
}

/* Gives the ring up for this thread after a failure it cannot wait out. */
static void ring_drop(void) {
  pthread_setspecific(uring_key, NULL);
  ring_free(my_ring);
  my_ring = NULL;
  my_ring_state = -1;
}

/* Submits r[0, m) (m <= URING_DEPTH, each rc READ_PENDING and got 0) and waits for their
   completions. A read the ring completed in full gets rc ST_OK; any other keeps
   READ_PENDING, with got the bytes it read. */
static void ring_reads(struct io_uring *ring, env_read_t *r, size_t m) {
  for (size_t j = 0; j < m; j++) {
    struct io_uring_sqe *sqe = io_uring_get_sqe(ring); /* the queue is empty: never NULL */
    io_uring_prep_read(sqe, ((posix_rfile_t *)r[j].f)->fd, r[j].buf, (unsigned)r[j].n, r[j].offset);
    io_uring_sqe_set_data64(sqe, j);
  }
  for (size_t done = 0; done < m;) {
    int s = io_uring_submit_and_wait(ring, (unsigned)(m - done));
    if (s < 0 && s != -EINTR && s != -EAGAIN && s != -EBUSY) {
      ring_drop(); /* what it had not completed is read one by one */
      return;
    }
    unsigned head, seen = 0;
    struct io_uring_cqe *cqe;
    io_uring_for_each_cqe(ring, head, cqe) {
      env_read_t *x = &r[cqe->user_data];
      if (cqe->res >= 0) x->got = (size_t)cqe->res;
      if (x->got == x->n) x->rc = ST_OK;
      seen++;
    }
    io_uring_cq_advance(ring, seen);
    done += seen;
  }
}

/* env_read_batch: through the thread's ring, URING_DEPTH reads a submission; then each read
   the ring did not complete in full (a short read, one it failed) is made or finished with
   pread, which reports its error as env_rfile_pread does. */
static int posix_read_batch(env_t *io, env_read_t *r, size_t n, err_t *err) {
  struct io_uring *ring = n > 1 ? thread_ring() : NULL;
  for (size_t i = 0; i < n && ring; i++)
    if (r[i].f->io != io || r[i].n > UINT_MAX) ring = NULL;
  if (!ring) return reads_one_by_one(r, n, err);
  for (size_t i = 0; i < n; i++) {
    r[i].got = 0;
    r[i].rc = READ_PENDING;
  }
  for (size_t i = 0; i < n && my_ring_state > 0; i += URING_DEPTH)
    ring_reads(ring, r + i, n - i < URING_DEPTH ? n - i : URING_DEPTH);
  int first = ST_OK;
  for (size_t i = 0; i < n; i++) {
    if (r[i].rc != READ_PENDING) continue;
    size_t more = 0;
    r[i].rc = env_rfile_pread(r[i].f, r[i].offset + r[i].got, (uint8_t *)r[i].buf + r[i].got,
                              r[i].n - r[i].got, &more, first == ST_OK ? err : NULL);
    r[i].got += more;
    if (first == ST_OK) first = r[i].rc;
  }
  return first;
}

static const env_ops_t posix_ops = {
    .open_write = posix_open_write,
    .file_append = posix_file_append,
    .file_flush = posix_file_flush,
    .file_sync = posix_file_sync,
    .file_close = posix_file_close,
    .open_read = posix_open_read,
    .rfile_pread = posix_rfile_pread,
    .rfile_stamp = posix_rfile_stamp,
    .rfile_close = posix_rfile_close,
    .rfile_map = posix_rfile_map,
    .read_batch = posix_read_batch,
    .rename = posix_rename,
    .unlink = posix_unlink,
    .mkdir = posix_mkdir,
    .sync_dir = posix_sync_dir,
    .path_stat = posix_path_stat,
    .path_type = posix_path_type,
    .list_dir = posix_list_dir,
    .lock = posix_lock,
    .unlock = posix_unlock,
    .link = posix_link,
    .rename_exchange = posix_rename_exchange,
    .rmdir = posix_rmdir,
};

size_t env_fd_share(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return 256;
  return rl.rlim_cur / 8 < 256 ? (size_t)(rl.rlim_cur / 8) : 256;
}
