/* Plotting a driver's CSV with its gnuplot script (exp.h). */
#include "experiments/exp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/path.h"

static int is_file(const char *p) {
  struct stat sb;
  return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* Finds <plots>/<name>.gp: the --plots flag, $BFH_PLOTS_DIR, ../plots and ../share/bfh/plots
   next to the executable (a build directory, an installed prefix), the source tree this file
   was compiled from. */
static int find_script(const exp_ctx_t *x, const char *name, char *out, size_t cap) {
  char cand[5][1024];
  int nc = 0;
  if (x->plots_dir) snprintf(cand[nc++], sizeof cand[0], "%s", x->plots_dir);
  const char *env = getenv("BFH_PLOTS_DIR");
  if (env && *env) snprintf(cand[nc++], sizeof cand[0], "%s", env);
  char exe[900];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) *slash = '\0';
    snprintf(cand[nc++], sizeof cand[0], "%s/../plots", exe);
    snprintf(cand[nc++], sizeof cand[0], "%s/../share/bfh/plots", exe);
  }
  char src[900];
  snprintf(src, sizeof src, "%s", __FILE__);
  char *e = strstr(src, "experiments/exp_plot.c");
  if (e && src[0] == '/') {
    *e = '\0';
    snprintf(cand[nc++], sizeof cand[0], "%splots", src);
  }
  for (int i = 0; i < nc; i++) {
    int w = snprintf(out, cap, "%s/%s.gp", cand[i], name);
    if (w > 0 && (size_t)w < cap && is_file(out)) return 1;
  }
  return 0;
}

int exp_plot(const exp_ctx_t *x, const char *name) {
  if (x->no_plot) return 0;
  char script[1100];
  if (!find_script(x, name, script, sizeof script)) {
    fprintf(stderr, "bfh: plots/%s.gp not found (use --plots DIR); no plot\n", name);
    return 0;
  }
  if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
    fprintf(stderr, "bfh: gnuplot not installed; %s.csv not plotted\n", name);
    return 0;
  }
  /* gnuplot's chatter goes to a log, shown only if it fails. */
  char *log = path_fmt("%s/%s.gnuplot.log", x->out_dir, name);
  char *cmd = log ? path_fmt("gnuplot -e \"in='%s/%s.csv'; out='%s/%s'\" '%s' >'%s' 2>&1",
                             x->out_dir, name, x->out_dir, name, script, log)
                  : NULL;
  int rc = cmd ? system(cmd) : -1;
  if (!cmd)
    fprintf(stderr, "bfh: no memory to run gnuplot; %s.csv not plotted\n", name);
  else if (rc != 0)
    fprintf(stderr, "bfh: gnuplot failed for %s (status %d); its output is in %s\n", name, rc, log);
  else
    remove(log);
  free(log);
  free(cmd);
  return rc != 0 ? -1 : 0;
}
