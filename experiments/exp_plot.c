/* Plotting a driver's CSV with its gnuplot script (exp.h). */
#include "experiments/exp.h"

#include <dirent.h>
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

/* Draws <out>/<name>.csv with the gnuplot script at script into <out>/<name>.png and .svg:
   0, 1 if gnuplot is not installed (said), -1 if it failed (said). */
static int plot_with(const exp_ctx_t *x, const char *script, const char *name) {
  if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
    fprintf(stderr, "bfh: gnuplot not installed; %s.csv not plotted\n", name);
    return 1;
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

int exp_plot(const exp_ctx_t *x, const char *name) {
  if (x->no_plot) return 0;
  char script[1100];
  if (!find_script(x, name, script, sizeof script)) {
    fprintf(stderr, "bfh: plots/%s.gp not found (use --plots DIR); no plot\n", name);
    return 0;
  }
  return plot_with(x, script, name) < 0 ? -1 : 0;
}

int exp_plot_script_of(const exp_ctx_t *x, const char *csv, char *script, size_t cap) {
  char name[256];
  snprintf(name, sizeof name, "%s", csv);
  if (find_script(x, name, script, cap)) return 1;
  char *dash = strchr(name, '-');
  if (!dash) return 0;
  *dash = '\0';
  return find_script(x, name, script, cap);
}

/* qsort's order of names. */
static int cmp_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int exp_plot_csv_names(const char *dir, char ***names, size_t *n) {
  *names = NULL;
  *n = 0;
  DIR *d = opendir(dir);
  if (!d) return -1;
  size_t cap = 0;
  int rc = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    const size_t len = strlen(e->d_name);
    if (len <= 4 || strcmp(e->d_name + len - 4, ".csv") != 0) continue;
    char *path = path_fmt("%s/%s", dir, e->d_name);
    struct stat st;
    const int regular = path && stat(path, &st) == 0 && S_ISREG(st.st_mode);
    free(path);
    if (!regular) continue;
    if (*n == cap) {
      cap = cap ? 2 * cap : 16;
      char **grown = realloc(*names, cap * sizeof *grown);
      if (!grown) {
        rc = -1;
        break;
      }
      *names = grown;
    }
    if (!((*names)[*n] = strndup(e->d_name, len - 4))) {
      rc = -1;
      break;
    }
    (*n)++;
  }
  closedir(d);
  if (rc != 0) {
    exp_plot_names_free(*names, *n);
    *names = NULL;
    *n = 0;
    return -1;
  }
  if (*n) qsort(*names, *n, sizeof **names, cmp_name);
  return 0;
}

int exp_csv_is_authors(const char *dir, const char *name) {
  static const char head[] = "source,build,run,experiment,";
  char *path = path_fmt("%s/%s.csv", dir, name);
  FILE *f = path ? fopen(path, "r") : NULL;
  free(path);
  if (!f) return 0;
  char line[sizeof head];
  const int is = fgets(line, sizeof line, f) && strcmp(line, head) == 0;
  fclose(f);
  return is;
}

void exp_plot_names_free(char **names, size_t n) {
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
}

int exp_plot_all(const exp_ctx_t *x) {
  char **names;
  size_t n;
  if (exp_plot_csv_names(x->out_dir, &names, &n) != 0) {
    fprintf(stderr, "bfh: cannot list the CSV files of %s\n", x->out_dir);
    return 1;
  }
  int failed = 0;
  for (size_t i = 0; i < n && !x->no_plot; i++) {
    char script[1100];
    if (!exp_plot_script_of(x, names[i], script, sizeof script)) continue; /* no plot of it */
    if (exp_csv_is_authors(x->out_dir, names[i])) {
      printf("plot     -- %s/%s.csv: the authors' code's rows (REPORT.md lists them)\n",
             x->out_dir, names[i]);
      continue;
    }
    const int rc = plot_with(x, script, names[i]);
    if (rc < 0) failed++;
    if (rc == 0) printf("plot     -> %s/%s.png\n", x->out_dir, names[i]);
  }
  exp_plot_names_free(names, n);
  return failed;
}
