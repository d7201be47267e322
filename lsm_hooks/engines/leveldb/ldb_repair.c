/* bfh_repair of a LevelDB database (engine_leveldb_repair, engine.h): LevelDB's own RepairDB
 * (db/repair.cc in 1.23), behind the checks RepairDB lacks.
 *
 * RepairDB takes no lock and takes any directory for a damaged database of its own: on the
 * own engine's directory it moves the tables and the MANIFEST to lost/ (they do not parse as
 * LevelDB's), on a plain directory it writes CURRENT, LOG and a MANIFEST, on a missing one it
 * creates it, and under a live owner it rewrites the MANIFEST and CURRENT the owner is
 * appending to. So, before it runs, and without writing anything into the directory:
 *   1. path is a directory, not the own engine's (no IDENTITY file, no table ending with the
 *      own engine's magic), and it holds at least one of LevelDB's files (CURRENT, MANIFEST-N,
 *      N.log, N.ldb, N.sst): the files RepairDB rebuilds from;
 *   2. nobody has the database open: bfh's flock on the directory (a bfh handle, also of this
 *      process), then the POSIX lock LevelDB holds on LOCK (any LevelDB program), found in
 *      /proc/locks without opening LOCK (closing a descriptor of it would drop a lock this
 *      process may hold).
 * While RepairDB runs this holds both locks itself: the directory's flock (no bfh handle
 * opens) and LevelDB's own lock, a POSIX write lock on the whole of LOCK taken as LevelDB's
 * Env does (fcntl F_SETLK), so that no LevelDB program (another process) opens the database
 * in between. Both go when the repair ends.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bfh.h"
#include "lsm/table.h"
#include "lsm_hooks/engines/foreign_check.h"
#include "lsm_hooks/engines/engine_detect.h"
#include "lsm_hooks/engines/leveldb/ldb_engine.h"
#include "lsm_hooks/engines/leveldb/precheck.h"
#include "util/coding.h"
#include "util/env.h"

#include <leveldb/c.h>

static void (*repair_hook)(void *arg, const char *path);
static void *repair_hook_arg;

void engine_leveldb_repair_set_hook(void (*fn)(void *arg, const char *path), void *arg) {
  repair_hook = fn;
  repair_hook_arg = arg;
}

/* Does the file at path end with the own engine's table magic? (Read through the file-I/O
   layer: a repair is given no env, so the default one.) */
static int own_table(const char *path) {
  env_rfile_t *f;
  err_t e;
  if (env_open_read(env_default(), path, &f, &e) != BFH_OK) return 0;
  uint64_t size = env_rfile_size(f);
  uint8_t tail[8];
  size_t got = 0;
  int own = size >= 8 && env_rfile_pread(f, size - 8, tail, 8, &got, &e) == BFH_OK && got == 8 &&
            decode_fixed64(tail) == TABLE_MAGIC;
  env_rfile_close(f);
  return own;
}

/* Step 1 at the top: BFH_OK if path holds LevelDB's files and nothing of the own engine. */
static int check_contents(const char *path, err_t *err) {
  struct stat sb;
  if (stat(path, &sb) != 0)
    return errno == ENOENT ? err_set(err, BFH_E_INVALID, "%s: does not exist: nothing to repair",
                                     path)
                           : err_errno(err, errno, "%s: stat", path);
  if (!S_ISDIR(sb.st_mode)) return err_set(err, BFH_E_INVALID, "%s: not a directory", path);
  char p[4400];
  if (engine_detect_dir(path) == ENGINE_DIR_ROCKSDB)
    return engine_detect_check(path, ENGINE_DIR_LEVELDB, err);
  snprintf(p, sizeof p, "%s/IDENTITY", path); /* the own engine's marker (lsm/filename.h) */
  if (access(p, F_OK) == 0)
    return err_set(err, BFH_E_INVALID,
                   "%s is a bfh (own engine) database (it has an IDENTITY file), not a LevelDB "
                   "one: repair it with the lsm engine; LevelDB's repair would move its tables "
                   "and MANIFEST to lost/",
                   path);
  DIR *d = opendir(path);
  if (!d) return err_errno(err, errno, "%s: list directory", path);
  int rc = BFH_OK, found = 0;
  struct dirent *de;
  while (rc == BFH_OK && (de = readdir(d))) {
    const char *n = de->d_name;
    uint64_t num;
    int table = ldb_file_number(n, "ldb", &num) || ldb_file_number(n, "sst", &num);
    if (table) {
      snprintf(p, sizeof p, "%s/%s", path, n);
      if (own_table(p))
        rc = err_set(err, BFH_E_INVALID,
                     "%s: table %s is a bfh own-engine table (its footer has the own engine's "
                     "magic), not a LevelDB one: repair the directory with the lsm engine",
                     path, n);
    }
    found |= table || ldb_file_number(n, "log", &num) || !strcmp(n, "CURRENT") ||
             (!strncmp(n, "MANIFEST-", 9) && n[9] >= '0' && n[9] <= '9');
  }
  closedir(d);
  if (rc == BFH_OK && !found)
    rc = err_set(err, BFH_E_INVALID,
                 "%s: not a LevelDB database (no CURRENT, MANIFEST, log or table file): nothing "
                 "to repair",
                 path);
  if (rc == BFH_OK) rc = engine_detect_special_files(path, err); /* RepairDB would wait on one */
  return rc;
}

/* Step 2 and the locks held during the repair: *dir_fd holds the directory's flock, *lock_fd
   LevelDB's lock on LOCK (both -1 on failure, nothing held). */
static int lock_database(const char *path, int *dir_fd, int *lock_fd, err_t *err) {
  *dir_fd = *lock_fd = -1;
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return err_errno(err, errno, "%s: open directory", path);
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int e = errno;
    close(fd);
    return e == EWOULDBLOCK ? err_set(err, BFH_E_BUSY,
                                      "%s: database is open in a bfh handle: close it to repair",
                                      path)
                            : err_errno(err, e, "%s: lock directory", path);
  }
  long holder = foreign_lock_holder(path);
  if (holder) {
    close(fd);
    return err_set(err, BFH_E_BUSY,
                   "%s: database is open in process %ld%s (it holds LevelDB's LOCK): close it "
                   "to repair",
                   path, holder, holder == (long)getpid() ? " (this one)" : "");
  }
  char p[4400];
  snprintf(p, sizeof p, "%s/LOCK", path);
  int lfd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lfd < 0) {
    int e = errno;
    close(fd);
    return err_errno(err, e, "%s: open", p);
  }
  struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
  if (fcntl(lfd, F_SETLK, &fl) != 0) {
    int e = errno;
    close(lfd);
    close(fd);
    return e == EAGAIN || e == EACCES
               ? err_set(err, BFH_E_BUSY,
                         "%s: database is open in another process (it holds LevelDB's LOCK): "
                         "close it to repair",
                         path)
               : err_errno(err, e, "%s: lock", p);
  }
  *dir_fd = fd;
  *lock_fd = lfd;
  return BFH_OK;
}

int engine_leveldb_repair(const char *path, const bfh_options *opt, bfh_repair_report *rep,
                          err_t *err) {
  (void)opt, (void)rep; /* LevelDB reports what it kept to its LOG file */
  int rc = check_contents(path, err);
  int dir_fd = -1, lock_fd = -1;
  if (rc == BFH_OK) rc = lock_database(path, &dir_fd, &lock_fd, err);
  if (rc != BFH_OK) return rc;
  if (repair_hook) repair_hook(repair_hook_arg, path);
  leveldb_options_t *o = leveldb_options_create();
  char *lerr = NULL;
  if (o) leveldb_repair_db(o, path, &lerr);
  leveldb_options_destroy(o);
  if (!o)
    rc = err_set(err, BFH_E_NOMEM, "%s: out of memory", path);
  else if (lerr)
    rc = err_set(err, BFH_E_IO, "%s: LevelDB repair: %s", path, lerr);
  leveldb_free(lerr);
  struct flock fl = {.l_type = F_UNLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
  (void)fcntl(lock_fd, F_SETLK, &fl);
  close(lock_fd);
  close(dir_fd); /* releases the flock */
  return rc;
}
