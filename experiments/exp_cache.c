/* Evicting a database's files from the page cache, for the cold measurements (exp.h). */
#include "experiments/exp.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static double evict_resident, evict_total; /* pages, summed by evict_entry */

static int evict_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)ftw;
  if (flag != FTW_F || !S_ISREG(sb->st_mode) || sb->st_size == 0) return 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return 0;
  (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  long page = sysconf(_SC_PAGESIZE);
  size_t pages = (size_t)((sb->st_size + page - 1) / page);
  void *map = mmap(NULL, (size_t)sb->st_size, PROT_READ, MAP_SHARED, fd, 0);
  unsigned char *vec = map != MAP_FAILED ? malloc(pages) : NULL;
  if (vec && mincore(map, (size_t)sb->st_size, vec) == 0) {
    for (size_t i = 0; i < pages; i++) evict_resident += vec[i] & 1;
    evict_total += (double)pages;
  }
  free(vec);
  if (map != MAP_FAILED) munmap(map, (size_t)sb->st_size);
  close(fd);
  return 0;
}

double exp_cache_evict(const char *dir, int *dropped) {
  if (dropped) { /* system-wide, and slow: once per query, before the reopen */
    *dropped = 0;
    sync(); /* dirty pages cannot be dropped */
    FILE *f = fopen("/proc/sys/vm/drop_caches", "w");
    if (f) {
      *dropped = fputs("1", f) >= 0;
      if (fclose(f) != 0) *dropped = 0;
    }
  }
  evict_resident = evict_total = 0;
  if (nftw(dir, evict_entry, 16, FTW_PHYS) != 0 || evict_total == 0) return -1;
  return evict_resident / evict_total;
}
