/* engine_detect: which engine wrote a database directory (engine_detect.h). */
#include "lsm_hooks/engines/engine_detect.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bfh.h"
#include "lsm/filename.h"

/* The first bytes of path/IDENTITY: 1 if it is bfh's own engine's, 0 if another's, -1 if
   there is none (or it cannot be read). */
static int identity_is_own(const char *path) {
  char p[4200];
  snprintf(p, sizeof p, "%s/IDENTITY", path);
  int fd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block */
  if (fd < 0) return -1;
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    close(fd);
    return -1;
  }
  char head[8];
  ssize_t n = read(fd, head, sizeof head);
  close(fd);
  if (n < 0) return -1;
  /* An own IDENTITY damaged in a byte or two is still the own engine's (lsm/filename.c says
     so when it reads it); RocksDB's UUID text shares nothing with the magic. */
  int same = 0;
  for (ssize_t i = 0; i < n; i++) same += head[i] == LSM_IDENTITY_MAGIC[i];
  return n == 0 || same + 2 >= (int)sizeof head;
}

/* The name of an OPTIONS-* file of path into out, or "" if none. */
static void options_file(const char *path, char *out, size_t n) {
  out[0] = 0;
  DIR *d = opendir(path);
  if (!d) return;
  struct dirent *de;
  while ((de = readdir(d)))
    if (!strncmp(de->d_name, "OPTIONS-", 8)) {
      snprintf(out, n, "%s", de->d_name);
      break;
    }
  closedir(d);
}

static engine_dir_kind_t detect(const char *path, char *why, size_t n) {
  int own = identity_is_own(path);
  if (own == 1) {
    snprintf(why, n, "it has bfh's IDENTITY file");
    return ENGINE_DIR_LSM;
  }
  char opts[256];
  options_file(path, opts, sizeof opts);
  if (opts[0]) {
    snprintf(why, n, "it has %s", opts);
    return ENGINE_DIR_ROCKSDB;
  }
  if (own == 0) {
    snprintf(why, n, "its IDENTITY file is not bfh's");
    return ENGINE_DIR_ROCKSDB;
  }
  char p[4200];
  snprintf(p, sizeof p, "%s/CURRENT", path);
  if (access(p, F_OK) == 0) {
    snprintf(why, n, "it has a CURRENT file, but no IDENTITY or OPTIONS file");
    return ENGINE_DIR_LEVELDB;
  }
  why[0] = 0;
  return ENGINE_DIR_NONE;
}

engine_dir_kind_t engine_detect_dir(const char *path) {
  char why[300];
  return detect(path, why, sizeof why);
}

const char *engine_detect_name(engine_dir_kind_t k) {
  switch (k) {
    case ENGINE_DIR_LSM:
      return "lsm";
    case ENGINE_DIR_LEVELDB:
      return "leveldb";
    case ENGINE_DIR_ROCKSDB:
      return "rocksdb";
    default:
      return NULL;
  }
}

static const char *long_name(engine_dir_kind_t k) {
  switch (k) {
    case ENGINE_DIR_LSM:
      return "a bfh (own engine)";
    case ENGINE_DIR_LEVELDB:
      return "a LevelDB";
    case ENGINE_DIR_ROCKSDB:
      return "a RocksDB";
    default:
      return "an unknown";
  }
}

int engine_detect_check(const char *path, engine_dir_kind_t want, err_t *err) {
  char why[300];
  engine_dir_kind_t k = detect(path, why, sizeof why);
  if (k == ENGINE_DIR_NONE || k == want) return BFH_OK;
  /* An IDENTITY that is not bfh's but no OPTIONS file: the own engine's reader says what it
     makes of its damaged IDENTITY (lsm/filename.c). */
  if (want == ENGINE_DIR_LSM && k == ENGINE_DIR_ROCKSDB && strncmp(why, "it has ", 7) != 0)
    return BFH_OK;
  return err_set(err, BFH_E_INVALID,
                 "%s is %s database (%s), not %s one; open it with the %s engine (--engine "
                 "%s); nothing was written",
                 path, long_name(k), why, long_name(want), engine_detect_name(k),
                 engine_detect_name(k));
}

/* What a file of mode m is, for "not a regular file (a FIFO)" (as util/env.c says it). */
static const char *file_kind(mode_t m) {
  return S_ISFIFO(m)   ? "a FIFO"
         : S_ISSOCK(m) ? "a socket"
         : S_ISCHR(m)  ? "a character device"
         : S_ISBLK(m)  ? "a block device"
                       : "not a file";
}

int engine_detect_special_files(const char *path, err_t *err) {
  DIR *d = opendir(path);
  if (!d) return BFH_OK; /* the engine's own open says what is wrong with it */
  int rc = BFH_OK;
  struct dirent *de;
  while (rc == BFH_OK && (de = readdir(d))) {
    if (de->d_type == DT_REG || de->d_type == DT_DIR) continue; /* no stat needed */
    char p[4400];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", path, de->d_name);
    if (stat(p, &sb) != 0 || S_ISREG(sb.st_mode) || S_ISDIR(sb.st_mode)) continue;
    rc = err_set(err, BFH_E_CORRUPT,
                 "%s: not a regular file (%s): LevelDB and RocksDB would wait on it forever; "
                 "nothing was opened",
                 p, file_kind(sb.st_mode));
  }
  closedir(d);
  return rc;
}
