/* Measuring in a child process: a configuration's memory, seen as the RssAnon of a forked
 * child that holds its structures and nothing another configuration left behind; and a cold
 * query, in a child of a database just opened (exp_cold_call), which first takes its own copy
 * of the memory it shares with its parent (exp_child_own_memory).
 */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "experiments/exp.h"

#define EXP_CHILD_OWN_MAX (512ul << 20)

uint64_t exp_rss_anon(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  unsigned long long kb = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "RssAnon: %llu kB", &kb) == 1) break;
  fclose(f);
  return (uint64_t)kb * 1024;
}

/* The value of field `name` ("VmRSS:") of /proc/self/status in bytes, or 0. */
static uint64_t status_kb(const char *name) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  unsigned long long kb = 0;
  size_t n = strlen(name);
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, name, n) && sscanf(line + n, " %llu kB", &kb) == 1) break;
  fclose(f);
  return (uint64_t)kb * 1024;
}

uint64_t exp_rss_peak_reset(void) {
  FILE *f = fopen("/proc/self/clear_refs", "w");
  if (!f) return 0;
  int ok = fputs("5", f) >= 0; /* 5: the peak RSS (VmHWM) restarts from the RSS of now */
  ok = fclose(f) == 0 && ok;
  return ok ? status_kb("VmRSS:") : 0;
}

uint64_t exp_rss_peak(void) {
  return status_kb("VmHWM:");
}

/* The value of attribute `attr` (e.g. "size=\"") in the first tag of p that begins with
   `tag`, or 0. */
static uint64_t tag_value(const char *p, const char *tag, const char *attr) {
  const char *t = strstr(p, tag);
  const char *a = t ? strstr(t, attr) : NULL;
  return a ? strtoull(a + strlen(attr), NULL, 10) : 0;
}

uint64_t exp_heap_in_use(void) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) return 0;
  int rc = malloc_info(0, f);
  fclose(f);
  uint64_t used = 0;
  /* The totals over every arena follow the last arena's section. */
  const char *totals = text ? text : "", *h;
  while (rc == 0 && (h = strstr(totals, "</heap>"))) totals = h + 7;
  if (rc == 0 && text) {
    uint64_t system = tag_value(totals, "<system type=\"current\"", "size=\"");
    uint64_t fast = tag_value(totals, "<total type=\"fast\"", "size=\"");
    uint64_t rest = tag_value(totals, "<total type=\"rest\"", "size=\"");
    uint64_t mapped = tag_value(totals, "<total type=\"mmap\"", "size=\"");
    used = system > fast + rest ? system - fast - rest + mapped : mapped;
  }
  free(text);
  return used;
}

/* n bytes from fd into buf: 0, or -1 at an error or an early end. */
static int read_all(int fd, void *buf, size_t n) {
  char *p = buf;
  while (n > 0) {
    ssize_t got = read(fd, p, n);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return -1;
    p += got;
    n -= (size_t)got;
  }
  return 0;
}

static int write_all(int fd, const void *buf, size_t n) {
  const char *p = buf;
  while (n > 0) {
    ssize_t put = write(fd, p, n);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return -1;
    p += put;
    n -= (size_t)put;
  }
  return 0;
}

int exp_in_child(exp_child_fn fn, void *arg, void *out, size_t out_len) {
  int fds[2];
  if (pipe(fds) != 0) {
    fprintf(stderr, "bfh: pipe: %s\n", strerror(errno));
    return -1;
  }
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "bfh: fork: %s\n", strerror(errno));
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if (pid == 0) { /* out is the child's copy of the caller's buffer */
    close(fds[0]);
    fn(arg, out);
    fflush(NULL); /* what fn printed: _exit flushes nothing */
    _exit(write_all(fds[1], out, out_len) == 0 ? 0 : 1);
  }
  close(fds[1]);
  int got = read_all(fds[0], out, out_len);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (got == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
  if (WIFSIGNALED(status))
    fprintf(stderr, "bfh: the measuring child was killed by signal %d\n", WTERMSIG(status));
  else
    fprintf(stderr, "bfh: the measuring child exited with status %d\n", WEXITSTATUS(status));
  return -1;
}

/* exp_db_build_in_child: the build's arguments, and what it returns to the parent. */
typedef struct build_job {
  const exp_ctx_t *x;
  const exp_db_params_t *p;
  const char *dir;
} build_job_t;

typedef struct build_out {
  int rc;
  exp_build_result_t res;
} build_out_t;

static void build_child(void *arg, void *out) {
  const build_job_t *j = arg;
  build_out_t *o = out;
  o->rc = exp_db_build(j->x, j->p, j->dir, &o->res);
}

int exp_db_build_in_child(const exp_ctx_t *x, const exp_db_params_t *p, const char *dir,
                          exp_build_result_t *res) {
  build_job_t j = {x, p, dir};
  build_out_t o;
  memset(&o, 0, sizeof o);
  if (exp_in_child(build_child, &j, &o, sizeof o) != 0) return BFH_E_IO;
  *res = o.res;
  return o.rc;
}

/* Copies the resident pages of the private writable mapping [lo, hi) into the child, run by
   run (a page the parent never touched stays untouched). */
static void own_resident(unsigned long lo, unsigned long hi, unsigned long page) {
  size_t n = (hi - lo) / page;
  unsigned char *vec = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (vec == MAP_FAILED) return;
  if (mincore((void *)lo, hi - lo, vec) == 0) {
    for (size_t i = 0; i < n;) {
      if (!(vec[i] & 1)) {
        i++;
        continue;
      }
      size_t j = i;
      while (j < n && (vec[j] & 1)) j++;
      unsigned long a = lo + i * page, len = (j - i) * page;
#ifdef MADV_POPULATE_WRITE
      if (madvise((void *)a, len, MADV_POPULATE_WRITE) != 0)
#endif
        for (unsigned long q = a; q < a + len; q += page) { /* each page written */
          volatile char *p = (volatile char *)q;
          *p = *p;
        }
      i = j;
    }
  }
  munmap(vec, n);
}

void exp_child_own_memory(const char *except_dir) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return;
  long page = sysconf(_SC_PAGESIZE);
  /* Only mappings of up to EXP_CHILD_OWN_MAX: the stack, the libraries' data, the heap of a
     small database. Copying gigabytes (the heap and the leaves of a 500M database) cost
     seconds per child and made the search that followed it 2-3x slower (sliced index, 500M,
     cold: 53-72 ms against 23-25 ms without the copy); there a search's few copy-on-write
     faults are lost in its 25 ms. Larger mappings are also where reservations lie (a
     sanitizer's shadow). */
  const unsigned long most = EXP_CHILD_OWN_MAX;
  /* As /proc/self/maps names files: absolute, links resolved (NULL: no directory, or no
     memory, and then nothing is skipped). */
  char *dir = except_dir ? realpath(except_dir, NULL) : NULL;
  if (except_dir && !dir) dir = strdup(except_dir);
  size_t skip = dir ? strlen(dir) : 0;
  char *line = NULL;
  size_t lcap = 0;
  while (getline(&line, &lcap, f) > 0) {
    unsigned long lo, hi;
    char perms[5];
    int path_at = 0;
    if (sscanf(line, "%lx-%lx %4s %*s %*s %*s %n", &lo, &hi, perms, &path_at) != 3 ||
        hi - lo > most)
      continue;
    const char *path = line + path_at;
    if (skip && strncmp(path, dir, skip) == 0) continue; /* the database's own files */
    if (strcmp(perms, "rw-p") == 0) {
      own_resident(lo, hi, (unsigned long)page);
    } else if (perms[0] == 'r' && perms[3] == 'p') {
      /* Code and constants: a child's page tables start without them (the kernel maps file
         pages again at the first touch), one minor fault per page the search runs or reads. */
#ifdef MADV_POPULATE_READ
      (void)madvise((void *)lo, hi - lo, MADV_POPULATE_READ);
#endif
    }
  }
  free(line);
  free(dir);
  fclose(f);
}
