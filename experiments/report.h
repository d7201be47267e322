/* REPORT.md: for every paper artifact, the paper's numbers and ours side by side, read back
 * from the CSVs `bfh run` wrote into the results directory, with the plot linked; artifacts
 * without a CSV are listed as not run, and every other CSV of the directory (a kept CSV of
 * another run, fig9-medium.csv) gets a section with its plot. `bfh run all` writes it at its
 * end; `bfh run report` draws every plot (exp_plot_all) and writes it from the CSVs already
 * there.
 */
#ifndef BFH_EXPERIMENTS_REPORT_H
#define BFH_EXPERIMENTS_REPORT_H

#include "experiments/exp.h"

/* What the report says about the run that made it. Strings borrowed. */
typedef struct exp_report_run {
  const char *cmdline; /* the command line, as typed (quoted where needed) */
  double elapsed_s;    /* < 0: not measured (the report alone) */
  int failures;        /* experiments that failed */
} exp_report_run_t;

/* Writes <x->out_dir>/REPORT.md (through a temporary file, renamed over it). Returns 0, or -1
   (printed on stderr) if it cannot be written. */
int exp_report_write(const exp_ctx_t *x, const exp_report_run_t *run);

#endif
