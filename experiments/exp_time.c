/* The drivers' clock and their progress line on a terminal (exp.h). */
#include "experiments/exp.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

double exp_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void exp_progress(const char *fmt, ...) {
  if (!isatty(STDERR_FILENO)) return;
  char line[160];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\r\033[K%s", line);
  fflush(stderr);
}

void exp_progress_done(void) {
  if (!isatty(STDERR_FILENO)) return;
  fprintf(stderr, "\r\033[K");
  fflush(stderr);
}
