/* REPORT.md from the experiments' CSVs (see report.h). */
#include "experiments/report.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "experiments/drivers.h"

/* ---- a CSV as the drivers write it: a header row, no quoting, no commas in cells ---------- */

typedef struct csv {
  char *text;    /* the whole file, split in place */
  char ***rows;  /* rows[0] = the header; rows[r][i] the cells */
  size_t *ncell; /* cells per row */
  size_t nrows;
} csv_t;

static void csv_release(csv_t *c) {
  if (c->rows)
    for (size_t r = 0; r < c->nrows; r++) free(c->rows[r]);
  free(c->rows);
  free(c->ncell);
  free(c->text);
  memset(c, 0, sizeof *c);
}

/* 0, or -1 if the file is missing, empty or out of memory. On 0, release with csv_release. */
static int csv_load(const char *path, csv_t *c) {
  memset(c, 0, sizeof *c);
  FILE *f = exp_fopen(path, "rb");
  if (!f) return -1;
  size_t cap = 1 << 16, len = 0;
  char *text = malloc(cap + 1);
  size_t got;
  while (text && (got = fread(text + len, 1, cap - len, f)) > 0) {
    len += got;
    if (len == cap) {
      char *t = realloc(text, 2 * cap + 1);
      if (!t) {
        free(text);
        text = NULL;
        break;
      }
      text = t;
      cap *= 2;
    }
  }
  fclose(f);
  if (!text || len == 0) {
    free(text);
    return -1;
  }
  text[len] = '\0';
  c->text = text;
  size_t lines = 1;
  for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
  c->rows = calloc(lines, sizeof *c->rows);
  c->ncell = calloc(lines, sizeof *c->ncell);
  if (!c->rows || !c->ncell) {
    csv_release(c);
    return -1;
  }
  for (char *line = text; line && *line;) {
    char *next = strchr(line, '\n');
    if (next) *next++ = '\0';
    size_t n = 1;
    for (char *p = line; *p; p++) n += *p == ',';
    char **cells = malloc(n * sizeof *cells);
    if (!cells) {
      csv_release(c);
      return -1;
    }
    size_t i = 0;
    for (char *p = line;;) {
      cells[i++] = p;
      char *comma = strchr(p, ',');
      if (!comma) break;
      *comma = '\0';
      p = comma + 1;
    }
    c->rows[c->nrows] = cells;
    c->ncell[c->nrows++] = n;
    line = next;
  }
  return c->nrows ? 0 : (csv_release(c), -1);
}

/* The cell of column name in row r ("" if the CSV has no such column). */
static const char *csv_cell(const csv_t *c, size_t r, const char *name) {
  for (size_t i = 0; i < c->ncell[0]; i++)
    if (strcmp(c->rows[0][i], name) == 0) return i < c->ncell[r] ? c->rows[r][i] : "";
  return "";
}

/* Does row r meet cond: space-separated terms "col=value" (equal) or "col^prefix" (begins
   with); "" or NULL: every row. */
static int csv_match(const csv_t *c, size_t r, const char *cond) {
  if (!cond) return 1;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", cond);
  for (char *save = NULL, *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
    char *op = strpbrk(t, "=^");
    if (!op) continue;
    char kind = *op;
    *op = '\0';
    const char *v = csv_cell(c, r, t);
    if (kind == '=' ? strcmp(v, op + 1) != 0 : strncmp(v, op + 1, strlen(op + 1)) != 0) return 0;
  }
  return 1;
}

/* ---- the report ------------------------------------------------------------------------- */

typedef struct report {
  FILE *f;
  const char *dir;
  const char *commit; /* this binary's */
  char engines[128];  /* the engines of the run's CSVs (engines_of) */
} report_t;

static void say(report_t *rp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(report_t *rp, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfprintf(rp->f, fmt, ap);
  va_end(ap);
}

/* A number rounded to 4 significant digits; whole numbers and text as they are. */
static void put_cell(FILE *f, const char *v) {
  char *end;
  if (*v == '\0' || strspn(v, "-0123456789") == strlen(v)) {
    fputs(v, f);
    return;
  }
  double d = strtod(v, &end);
  if (*end == '\0')
    fprintf(f, "%.4g", d);
  else
    fputs(v, f);
}

/* The rows of <dir>/<name>.csv that meet cond, as a markdown table of cols: space-separated
   names, "head=col" showing column col under the header head. */
static void table(report_t *rp, const char *name, const char *cond, const char *cols) {
  char path[1200], spec[1024];
  snprintf(path, sizeof path, "%s/%s.csv", rp->dir, name);
  csv_t c;
  if (csv_load(path, &c) != 0) {
    say(rp, "(%s.csv unreadable)\n", name);
    return;
  }
  const char *head[48], *src[48];
  size_t n = 0;
  snprintf(spec, sizeof spec, "%s", cols);
  for (char *save = NULL, *t = strtok_r(spec, " ", &save); t && n < 48;
       t = strtok_r(NULL, " ", &save)) {
    char *eq = strchr(t, '=');
    if (eq) *eq = '\0';
    head[n] = t;
    src[n++] = eq ? eq + 1 : t;
  }
  say(rp, "|");
  for (size_t i = 0; i < n; i++) say(rp, " %s |", head[i]);
  say(rp, "\n|");
  for (size_t i = 0; i < n; i++) say(rp, "---|");
  say(rp, "\n");
  size_t shown = 0;
  for (size_t r = 1; r < c.nrows; r++) {
    if (!csv_match(&c, r, cond)) continue;
    say(rp, "|");
    for (size_t i = 0; i < n; i++) {
      fputc(' ', rp->f);
      put_cell(rp->f, csv_cell(&c, r, src[i]));
      fputs(" |", rp->f);
    }
    say(rp, "\n");
    shown++;
  }
  if (!shown) say(rp, "| (no rows) |\n");
  csv_release(&c);
}

static int exists(const report_t *rp, const char *name, const char *ext) {
  char path[1200];
  struct stat st;
  snprintf(path, sizeof path, "%s/%s.%s", rp->dir, name, ext);
  return stat(path, &st) == 0 && st.st_size > 0;
}

/* Is e one of the ", "-separated items of list? */
static int listed(const char *list, const char *e) {
  size_t el = strlen(e);
  for (const char *p = list; *p;) {
    const char *end = strstr(p, ", ");
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n == el && strncmp(p, e, el) == 0) return 1;
    p = end ? end + 2 : p + n;
  }
  return 0;
}

/* Appends the distinct engine cells of c's rows to out (", "-separated, each once). */
static void add_engines(const csv_t *c, char *out, size_t cap) {
  for (size_t r = 1; r < c->nrows; r++) {
    const char *e = csv_cell(c, r, "engine");
    size_t used = strlen(out);
    if (*e == '\0' || listed(out, e) || used + strlen(e) + 3 > cap) continue;
    snprintf(out + used, cap - used, "%s%s", used ? ", " : "", e);
  }
}

/* A heading, then the plot if there is one, and the commit of the CSV when it is not this
   binary's. 0 if <name>.csv exists, else -1 (after saying "not run"). */
static int section(report_t *rp, const char *name, const char *title) {
  say(rp, "\n## %s\n\n", title);
  char path[1200];
  snprintf(path, sizeof path, "%s/%s.csv", rp->dir, name);
  csv_t c;
  if (!exists(rp, name, "csv") || csv_load(path, &c) != 0) {
    say(rp, "Not run (no %s.csv).\n", name);
    return -1;
  }
  if (exists(rp, name, "png")) say(rp, "![%s](%s.png)\n\n", name, name);
  const char *commit = c.nrows > 1 ? csv_cell(&c, 1, "commit") : "";
  if (*commit == '\0')
    say(rp, "(%s.csv does not say its commit: written by an older bfh.)\n\n", name);
  else if (strcmp(commit, rp->commit) != 0)
    say(rp, "(%s.csv was measured at commit %s, not this report's.)\n\n", name, commit);
  char engines[128] = "";
  add_engines(&c, engines, sizeof engines);
  if (*engines && strcmp(engines, rp->engines) != 0) say(rp, "Engine: %s.\n\n", engines);
  csv_release(&c);
  return 0;
}

/* The scale of the run: the scale cell of the first CSV found, the drivers' outputs in the
   order of their table. */
static void scale_of(const report_t *rp, char *out, size_t cap) {
  snprintf(out, cap, "unknown");
  char name[64];
  for (size_t i = 0; exp_driver_output_at(i, name, sizeof name) == 0; i++) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s.csv", rp->dir, name);
    csv_t c;
    if (csv_load(path, &c) != 0) continue;
    const char *s = c.nrows > 1 ? csv_cell(&c, 1, "scale") : "";
    int found = *s != '\0';
    if (found) snprintf(out, cap, "%s", s);
    csv_release(&c); /* s pointed into c */
    if (found) return;
  }
}

/* The engines the run's CSVs were measured on (the engine column of every row of the
   drivers' outputs), or "unknown". */
static void engines_of(const report_t *rp, char *out, size_t cap) {
  out[0] = '\0';
  char name[64];
  for (size_t i = 0; exp_driver_output_at(i, name, sizeof name) == 0; i++) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s.csv", rp->dir, name);
    csv_t c;
    if (csv_load(path, &c) != 0) continue;
    add_engines(&c, out, cap);
    csv_release(&c);
  }
  if (!out[0]) snprintf(out, cap, "unknown");
}

/* A section for each CSV of the directory that no driver writes under its name (a kept CSV
   of another run, e.g. fig9-medium.csv), with its plot and commit. */
static void others(report_t *rp) {
  char **names;
  size_t n;
  if (exp_plot_csv_names(rp->dir, &names, &n) != 0) {
    say(rp, "\n(the CSV files of this directory could not be listed)\n");
    return;
  }
  for (size_t i = 0; i < n; i++) {
    if (exp_driver_find(names[i])) continue; /* a section of its own above */
    char title[300];
    snprintf(title, sizeof title, "Also in this directory: %s.csv", names[i]);
    if (section(rp, names[i], title) == 0) {
      const char *dash = strchr(names[i], '-');
      if (dash) say(rp, "Drawn with plots/%.*s.gp.\n", (int)(dash - names[i]), names[i]);
    }
  }
  exp_plot_names_free(names, n);
}

/* A folder of the authors' code's CSVs (exp_csv_is_authors): their rows as tables, no plot
   (bfh's plots draw bfh's columns). */
static const char *const AUTHORS_TABLES[][3] = {
    {"table1", "Table I: insert, the scan for a key, the first get after a reopen (seconds)",
     "build n tables insert_s scan_lookup_s key_lookup_s key_lookup_min_s key_lookups"},
    {"fig8", "Fig. 8: their three methods for one value",
     "build n method query time_s tables_scanned leaf_probes internal_maybe"},
    {"fig13", "Fig. 13: their six domains",
     "build n domain_pct method time_s tables_live leaf_probes internal_maybe entries_found"},
    {"table3", "Table III: leaves reached and entries found by domain",
     "build n domain_pct leaf_filters_scanned leaf_filters_scanned_pct entries_found "
     "internal_maybe time_s"},
};

static int authors_folder(const report_t *rp) {
  for (size_t i = 0; i < sizeof AUTHORS_TABLES / sizeof AUTHORS_TABLES[0]; i++)
    if (exp_csv_is_authors(rp->dir, AUTHORS_TABLES[i][0])) return 1;
  return 0;
}

static void authors_body(report_t *rp, const exp_report_run_t *run) {
  say(rp, "# The authors' code: their own phases, measured here\n\n");
  say(rp, "- Command: `%s`\n\n", run->cmdline ? run->cmdline : "(unknown)");
  say(rp,
      "The CSVs in this directory were written by scripts/authors-baseline.sh, which builds\n"
      "the authors' public code (a LevelDB 1.23 fork) and runs their experiment phases with\n"
      "bfh's column names: `source` = authors, `build` = shipped (their Makefile, no -O) or O2,\n"
      "each row with their checkout's commit (`authors_commit`) and bfh's (`commit`). Each\n"
      "figure is one search of their fixed query. phases.csv has every phase with their own\n"
      "figure and the driver's clock around it. No plot: bfh's plots draw bfh's columns.\n");
  for (size_t i = 0; i < sizeof AUTHORS_TABLES / sizeof AUTHORS_TABLES[0]; i++) {
    const char *const *t = AUTHORS_TABLES[i];
    say(rp, "\n## %s\n\n", t[1]);
    if (!exists(rp, t[0], "csv")) {
      say(rp, "Not run (no %s.csv).\n", t[0]);
      continue;
    }
    table(rp, t[0], NULL, t[2]);
  }
}

static void body(report_t *rp, const exp_report_run_t *run) {
  if (authors_folder(rp)) {
    authors_body(rp, run);
    return;
  }
  char scale[32];
  scale_of(rp, scale, sizeof scale);
  engines_of(rp, rp->engines, sizeof rp->engines);
  say(rp, "# bfh: the paper and our measurements side by side\n\n");
  say(rp,
      "Macyna & Ordonez, \"A Bloom Filter Hierarchy for Non-key Search in Key-Value "
      "Stores\".\n\n");
  say(rp, "- Commit: %s (the source `bfh` was built from)\n", rp->commit);
  say(rp, "- Command: `%s`\n", run->cmdline ? run->cmdline : "(unknown)");
  if (run->elapsed_s >= 0)
    say(rp, "- Run time: %.1f s, %d experiment(s) failed\n", run->elapsed_s, run->failures);
  else if (run->failures)
    say(rp, "- %d plot(s) failed (gnuplot's output: <name>.gnuplot.log)\n", run->failures);
  say(rp, "- Scale: %s\n", scale);
  say(rp, "- Engine: %s (`--engine`; each CSV's engine column)\n\n", rp->engines);
  say(rp,
      "Written by `bfh run` from the CSVs in this directory; PAPER_NOTES.md in the source\n"
      "tree has the reasoning behind each comparison. Placements: paper = the authors' "
      "static\ntree (exactly d children per node); positional and similarity = ours "
      "(B+-tree, d..2d\nchildren). Counters are per-query means; times are medians. At "
      "small scale the geometry\nis shrunk (smaller tables and m) toward the paper's table "
      "count and filter bits per\nentry, but does not reach them: every CSV has "
      "entries_per_table and bits_per_value,\nand the m column is the value used.\n");

  if (section(rp, "table1", "Table I: basic operations without value filters") == 0) {
    say(rp, "Paper (LevelDB), seconds: insert / non-key lookup / key lookup.\n\n");
    table(rp, "table1", NULL,
          "n tables insert_s paper_insert_s scan_lookup_s scan_lookup_cold_s "
          "paper_scan_lookup_s key_lookup_s key_lookup_cold_s paper_key_lookup_s");
  }
  if (section(rp, "fig6", "Fig. 6: creation time with and without value filters") == 0) {
    say(rp, "Paper: \"very similar\".\n\n");
    table(rp, "fig6", "value_filters=1",
          "n reps insert_s insert_min_s overhead_pct overhead_min_pct");
  }
  if (section(rp, "table2", "Table II: SSTable, leaf-filter and non-leaf filter sizes (MB)") == 0) {
    say(rp,
        "Paper, MB: 10M 293/29/7; 50M 1200/148/37; 100M 2420/296/75; 500M "
        "12500/1540/405.\n\n");
    table(rp, "table2", NULL,
          "source n placement tables sst_mb paper_sst_mb leaf_mb paper_leaf_mb nonleaf_mb "
          "paper_nonleaf_mb paper_model_nonleaf_mb");
  }
  if (section(rp, "fig7", "Fig. 7: non-leaf filter memory vs d") == 0) {
    say(rp, "Paper: the smaller d, the more memory (500M entries, 6434 tables, m = 2M).\n\n");
    table(rp, "fig7", NULL,
          "leaves d placement internal_nodes nonleaf_mb paper_model_nodes paper_model_mb "
          "query_leaf_probes");
  }
  if (section(rp, "fig8", "Fig. 8: search time vs N") == 0) {
    say(rp,
        "Paper: SSTable scan and classical Bloom scan (leaves read whole from disk)\n"
        "indistinguishable; the hierarchy far faster. Present values, seconds.\n\n");
    table(rp, "fig8", "query=present",
          "n series cache tables_live time_s tables_scanned leaf_probes internal_probes");
  }
  if (section(rp, "fig9", "Fig. 9: search time and filters checked vs d") == 0) {
    say(rp, "Paper: the larger d, the more filters checked (100M entries, m = 500k).\n\n");
    table(rp, "fig9", "query=present series^hierarchy",
          "d series time_s leaf_filters_reached internal_filters_tested tables_live");
  }
  if (section(rp, "fig10", "Fig. 10: filters accessed vs d and m") == 0) {
    say(rp,
        "Paper: at m = 2M and d = 3, 6%% of the filters accessed (leaf filters reached: "
        "about\n7 of 119) and 1 table scanned. The paper's metric is "
        "leaf_filters_reached_pct; internal\nnodes are counted both as the authors' code "
        "does (internal_maybe: those that said maybe)\nand as bfh does "
        "(internal_filters_tested: every one tested).\n\n");
    table(rp, "fig10", "query=present m_paper=2000000",
          "d placement tables_live leaf_filters_reached leaf_filters_reached_pct "
          "internal_maybe internal_filters_tested tables_scanned time_s");
  }
  if (section(rp, "fig11", "Fig. 11: search time vs m") == 0) {
    say(rp,
        "Paper: at 20k the hierarchy does not beat the others; at 200k the classical "
        "Bloom\nscan beats the table scan; best at 2M. Present values, seconds.\n\n");
    table(rp, "fig11", NULL, "m_paper series time_s tables_scanned");
  }
  if (section(rp, "fig12", "Fig. 12: leaf and non-leaf filters accessed vs m") == 0) {
    say(rp,
        "Paper: small m, many filters; at 2M about two leaf filters and a few non-leaf "
        "ones\n(non-leaf: those that said maybe, internal_maybe, as the authors' code "
        "counts).\n\n");
    table(rp, "fig12", "query=present d=3",
          "m_paper d placement leaf_filters_reached internal_maybe internal_filters_tested "
          "tables_scanned");
  }
  if (section(rp, "fig13", "Fig. 13: search time vs the value domain") == 0) {
    say(rp,
        "Paper: the smaller the domain, the slower the hierarchy; scan and Bloom scan "
        "flat.\nexact: each value on N/D keys; authors: values drawn with replacement, "
        "as their code.\n\n");
    table(rp, "fig13", NULL, "domain_pct domain_mode series time_s tables_scanned results");
  }
  if (section(rp, "table3",
              "Table III: leaf filters positive / SSTables found / leaf filters scanned") == 0) {
    say(rp,
        "Paper (50M, 599 tables): 1%%: 56/55/250, 5%%: 28/26/190, 10%%: 13/11/105,\n"
        "40%%: 5/5/125, 70%%: 2/1/70, 100%%: 0/0/65. Its \"SSTables found\" sums the "
        "occurrences\nin the tables read (entries_found); sstables_found counts distinct "
        "tables (bfh's). The\nauthors' workload (domain_mode authors) draws values with "
        "replacement over 2..100%% (their\ncode runs 2%% for the paper's 1%% row, "
        "paper_domain_pct); query domain = the mean of\nvalues drawn from the domain "
        "(some occur nowhere), fixed = their one query Value1879,\nwhich at 100%% occurs "
        "Poisson(1) times (0 with probability 37%%).\n\n");
    table(rp, "table3", NULL,
          "domain_pct mode=domain_mode paper_pct=paper_domain_pct placement query "
          "tables_live leaf_filters_found paper_leaf_filters_found entries_found "
          "sstables_found paper_sstables_found leaf_filters_scanned paper_leaf_filters_scanned "
          "internal_maybe internal_probes");
  }
  if (section(rp, "beyond", "Beyond the paper: search time vs N, AUTO's block path included") ==
      0) {
    say(rp,
        "Not in the paper. The named methods read each selected table whole; AUTO reads "
        "only\nthe data blocks its block filters name (PAPER_NOTES \"Beyond the paper\").\n\n");
    table(rp, "beyond", NULL, "n query series time_s tables_scanned blocks_read bytes_read");
  }
  if (section(rp, "tradeoff", "Beyond the paper: the stand-alone index trade-off") == 0) {
    say(rp,
        "Not in the paper. bare = value filters off (SCAN), bfh = value "
        "filters,\nblock filters and memtable index (HIERARCHY, SLICED, AUTO), standalone "
        "= a second\nstore keyed by value||key (LevelDB++'s stand-alone index, on the "
        "same\nengine). Ingest = "
        "puts + final\nflush (median of reps builds), overhead over bare; write_amp = "
        "bytes written (both\nstores) / bytes put; index_mem = bfh_stats value-index "
        "memory (bfh only); rss_over_bare\n= measured RssAnon of a process that opened "
        "the database and ran the queries, minus\nbare's. Latencies: medians of the "
        "second pass of the same queries; first = the\nfirst pass, which also opens "
        "tables at their first read (PAPER_NOTES \"Beyond the\npaper: the stand-alone "
        "index trade-off\").\n\n");
    table(rp, "tradeoff", NULL,
          "engine n domain_pct config series reps ingest_s ingest_overhead write_amp disk_bytes "
          "index_mem=index_memory_stats_bytes rss_over_bare=rss_anon_over_bare_bytes "
          "present_time_s absent_time_s present_first=present_first_pass_s wrong");
    if (exists(rp, "tradeoff_goals", "csv")) {
      say(rp,
          "\nGoals: (a) bfh ingest overhead <= 1/5 of standalone's; (b) AUTO present "
          "latency\n<= 2x STANDALONE's; (c) AUTO absent latency <= STANDALONE's.\n\n");
      table(rp, "tradeoff_goals", NULL, "n domain_pct goal what ratio bound met");
    }
  }
  if (section(rp, "memory", "Beyond the paper: index memory vs search time") == 0) {
    say(rp,
        "Not in the paper. paper = m = 2M bits per table (HIERARCHY, AUTO); lean =\n"
        "index_bits_per_value 3 with block filters (AUTO); lean-map = index_bits_per_value 10\n"
        "with value-to-block maps (AUTO); cuckoo = the Cuckoo Index (CUCKOO); standalone = the\n"
        "value||key store (STANDALONE). B/entry: what the method's index holds (source);\n"
        "rss_index: RssAnon growth of the open over the bare engine's (cross-check); ingest:\n"
        "puts + flush, overhead over the engine without an index; times: medians, seconds;\n"
        "tables and blocks read per present value (PAPER_NOTES \"Beyond the paper: index\n"
        "memory\").\n\n");
    table(rp, "memory", NULL,
          "n domain_pct config series B/entry=bytes_per_entry source=bytes_source "
          "rss_index=rss_index_per_entry ingest_overhead present_time_s absent_time_s "
          "tables=present_tables_read blocks=present_blocks_read wrong");
  }
  if (section(rp, "ycsb", "Beyond the paper: YCSB recast for value search") == 0) {
    say(rp,
        "Not in the paper. YCSB's mixes A, B, C and F with searches by value, or on a data\n"
        "set also by one attribute (query: value or the attribute), E's short ranges of a\n"
        ":range attribute with inserts (query: the attribute), and D's newest K (newest_k)\n"
        "of a record's term under the latest distribution, with inserts (query: the value on\n"
        "synth, else the attribute), over the synthetic values and four Debian data sets;\n"
        "p50, p95 and p99 of every search, range and newest K of the run (ycsb.csv holds\n"
        "every method, mix and operation; ycsb_cdf.csv the CDFs). Below: workload C (searches\n"
        "only) by AUTO, then by the stand-alone index, then workload D's newest K\n"
        "and E's ranges by AUTO, and E's by SCAN, the floor. wrong: searches, newest K and\n"
        "ranges whose keys differ from the driver's oracle (a newest K: key by key, in\n"
        "order).\n\n");
    table(rp, "ycsb", "workload=C op=search method=auto",
          "dataset query engine ops p50_us p95_us p99_us wrong index_B/entry=index_bytes_per_entry");
    say(rp, "\n");
    table(rp, "ycsb", "workload=C op=search method=standalone",
          "dataset query engine ops p50_us p95_us p99_us wrong");
    say(rp, "\n");
    table(rp, "ycsb", "workload=D op=newest method=auto",
          "dataset query engine newest_k ops p50_us p95_us p99_us wrong");
    say(rp, "\n");
    table(rp, "ycsb", "workload=E op=range method=auto",
          "dataset query engine ops p50_us p95_us p99_us wrong");
    say(rp, "\n");
    table(rp, "ycsb", "workload=E op=range method=scan",
          "dataset query engine ops p50_us p95_us p99_us wrong");
    say(rp,
        "\nThe ingest: each configuration's load (load_us, per record) and A's updates alone,\n"
        "the same stream with its searches skipped, a tenth of the records updated\n"
        "(ops_per_s: their throughput, flushes and compactions included); bare has no value\n"
        "filters.\n\n");
    table(rp, "ycsb", "workload=A op=update method=-",
          "dataset engine config ops ops_per_s p50_us p99_us load_us=load_us_per_record");
  }
  others(rp);
}

int exp_report_write(const exp_ctx_t *x, const exp_report_run_t *run) {
  char path[1200], tmp[1220];
  snprintf(path, sizeof path, "%s/REPORT.md", x->out_dir);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  report_t rp = {exp_fopen(tmp, "w"), x->out_dir, exp_commit(), ""};
  if (!rp.f) {
    fprintf(stderr, "bfh: cannot write %s: %s\n", tmp, strerror(errno));
    return -1;
  }
  body(&rp, run);
  int bad = ferror(rp.f);
  if (fclose(rp.f) != 0) bad = 1;
  if (bad || rename(tmp, path) != 0) {
    fprintf(stderr, "bfh: cannot write %s: %s\n", path, strerror(errno));
    remove(tmp);
    return -1;
  }
  return 0;
}
