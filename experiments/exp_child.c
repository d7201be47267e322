/* Measuring in a child process: a configuration's memory, seen as the RssAnon of a forked
 * child that holds its structures and nothing another configuration left behind.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "experiments/exp.h"

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
    _exit(write_all(fds[1], out, out_len) == 0 ? 0 : 1);
  }
  close(fds[1]);
  int got = read_all(fds[0], out, out_len);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return got == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}
