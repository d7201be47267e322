/* Printing bfh_tables and bfh_check (tools/bfh/inspect.h). Both collect their rows as text
 * cells first, then print them in the format asked for: one path for the three formats, and
 * the text table can size its columns.
 */
#include "tools/bfh/inspect.h"

#include "tools/bfh/cli_kv.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- Cells ------------------------------------------------------------------------------- */

typedef enum { CELL_NUMBER, CELL_STRING, CELL_FLAG } cell_kind;

typedef struct column {
  const char *name;
  cell_kind kind;
} column_t;

/* Rows of ncols text cells (owned), filled by the callbacks. */
typedef struct rows {
  const column_t *cols;
  size_t ncols;
  char **cells; /* n * ncols */
  size_t n, cap;
  int nomem;
} rows_t;

static char *cell_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *cell_printf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (!s) return NULL;
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return s;
}

static char *cell_key(const void *p, size_t n) {
  char *s = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&s, &len);
  if (!m) return NULL;
  cli_kv_write_field(m, p, n, 0);
  if (fclose(m) == 0) return s;
  free(s);
  return NULL;
}

/* Appends a row; takes the cells (NULL ones mean no memory). */
static void add_row(rows_t *r, char **cells) {
  int ok = r->n < r->cap;
  if (!ok) {
    size_t cap = r->cap ? 2 * r->cap : 64;
    char **c = realloc(r->cells, cap * r->ncols * sizeof *c);
    if ((ok = c != NULL)) {
      r->cells = c;
      r->cap = cap;
    }
  }
  for (size_t i = 0; i < r->ncols; i++) ok = ok && cells[i];
  if (!ok) {
    for (size_t i = 0; i < r->ncols; i++) free(cells[i]);
    r->nomem = 1;
    return;
  }
  memcpy(r->cells + r->n * r->ncols, cells, r->ncols * sizeof *cells);
  r->n++;
}

static void rows_release(rows_t *r) {
  for (size_t i = 0; i < r->n * r->ncols; i++) free(r->cells[i]);
  free(r->cells);
}

/* ---- The three formats -------------------------------------------------------------------- */

static void print_text(const rows_t *r, FILE *out) {
  size_t width[16] = {0};
  for (size_t c = 0; c < r->ncols; c++) {
    width[c] = strlen(r->cols[c].name);
    for (size_t i = 0; i < r->n; i++) {
      size_t w = strlen(r->cells[i * r->ncols + c]);
      if (w > width[c]) width[c] = w;
    }
  }
  for (size_t c = 0; c < r->ncols; c++)
    fprintf(out, "%s%-*s", c ? "  " : "", c + 1 < r->ncols ? (int)width[c] : 0, r->cols[c].name);
  fputc('\n', out);
  for (size_t i = 0; i < r->n; i++) {
    for (size_t c = 0; c < r->ncols; c++) {
      const char *s = r->cells[i * r->ncols + c];
      int w = c + 1 < r->ncols || r->cols[c].kind == CELL_NUMBER ? (int)width[c] : 0;
      if (r->cols[c].kind == CELL_FLAG) s = strcmp(s, "1") == 0 ? "yes" : "no";
      fprintf(out, r->cols[c].kind == CELL_NUMBER ? "%s%*s" : "%s%-*s", c ? "  " : "", w, s);
    }
    fputc('\n', out);
  }
}

static void json_string(FILE *out, const char *s) {
  fputc('"', out);
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\')
      fprintf(out, "\\%c", ch);
    else if (ch < ' ')
      fprintf(out, "\\u%04x", ch);
    else
      fputc(ch, out);
  }
  fputc('"', out);
}

/* The rows as a JSON array of objects. */
static void print_json_rows(const rows_t *r, FILE *out) {
  fputc('[', out);
  for (size_t i = 0; i < r->n; i++) {
    fputs(i ? ",\n  {" : "\n  {", out);
    for (size_t c = 0; c < r->ncols; c++) {
      const char *s = r->cells[i * r->ncols + c];
      fprintf(out, "%s\"%s\": ", c ? ", " : "", r->cols[c].name);
      if (r->cols[c].kind == CELL_STRING)
        json_string(out, s);
      else if (r->cols[c].kind == CELL_FLAG)
        fputs(strcmp(s, "1") == 0 ? "true" : "false", out);
      else
        fputs(s, out);
    }
    fputc('}', out);
  }
  fputs(r->n ? "\n]" : "]", out);
}

static void csv_field(FILE *out, const char *s) {
  if (!strpbrk(s, ",\"\r\n")) {
    fputs(s, out);
    return;
  }
  fputc('"', out);
  for (; *s; s++) {
    if (*s == '"') fputc('"', out);
    fputc(*s, out);
  }
  fputc('"', out);
}

static void print_csv(const rows_t *r, FILE *out) {
  for (size_t c = 0; c < r->ncols; c++) fprintf(out, "%s%s", c ? "," : "", r->cols[c].name);
  fputc('\n', out);
  for (size_t i = 0; i < r->n; i++) {
    for (size_t c = 0; c < r->ncols; c++) {
      if (c) fputc(',', out);
      csv_field(out, r->cells[i * r->ncols + c]);
    }
    fputc('\n', out);
  }
}

/* ---- bfh tables --------------------------------------------------------------------------- */

static const column_t table_cols[] = {
    {"number", CELL_NUMBER},      {"level", CELL_NUMBER},      {"entries", CELL_NUMBER},
    {"bytes", CELL_NUMBER},       {"smallest", CELL_STRING},   {"largest", CELL_STRING},
    {"filter_fill", CELL_NUMBER}, {"filter_fpr", CELL_NUMBER}, {"value_filter", CELL_FLAG},
    {"block_filter", CELL_FLAG},
};
#define TABLE_COLS (sizeof table_cols / sizeof table_cols[0])

static int table_row(void *arg, const bfh_table_info *t) {
  char *cells[TABLE_COLS] = {
      cell_printf("%" PRIu64, t->number),        cell_printf("%d", t->level),
      cell_printf("%" PRIu64, t->entries),       cell_printf("%" PRIu64, t->bytes),
      cell_key(t->smallest, t->smallest_len),    cell_key(t->largest, t->largest_len),
      cell_printf("%.6g", t->value_filter_fill), cell_printf("%.3g", t->value_filter_fpr),
      cell_printf("%d", t->has_value_filter),    cell_printf("%d", t->has_block_filter),
  };
  rows_t *r = arg;
  add_row(r, cells);
  return r->nomem;
}

int inspect_tables(bfh_db *db, inspect_format f, FILE *out) {
  rows_t r = {.cols = table_cols, .ncols = TABLE_COLS};
  int rc = bfh_tables(db, table_row, &r);
  if (rc == BFH_OK && r.nomem) rc = BFH_E_NOMEM;
  if (rc == BFH_OK) {
    if (f == INSPECT_TEXT) print_text(&r, out);
    if (f == INSPECT_CSV) print_csv(&r, out);
    if (f == INSPECT_JSON) {
      fputs("{\"tables\": ", out);
      print_json_rows(&r, out);
      fputs("}\n", out);
    }
  }
  rows_release(&r);
  return rc == BFH_OK ? 0 : 2;
}

/* ---- bfh index list ----------------------------------------------------------------------- */

static const column_t attr_cols[] = {
    {"name", CELL_STRING}, {"extractor", CELL_STRING}, {"values_without_term", CELL_NUMBER}};
#define ATTR_COLS (sizeof attr_cols / sizeof attr_cols[0])

int inspect_attributes(bfh_db *db, inspect_format f, FILE *out) {
  rows_t r = {.cols = attr_cols, .ncols = ATTR_COLS};
  bfh_db_stats st;
  int rc = bfh_stats(db, &st);
  for (uint32_t i = 0; rc == BFH_OK && i < st.attributes; i++) {
    const char *name, *extractor;
    uint64_t without;
    rc = bfh_attribute_stats(db, i, &name, &extractor, &without);
    if (rc != BFH_OK) break;
    char *cells[ATTR_COLS] = {cell_printf("%s", name), cell_printf("%s", extractor),
                              cell_printf("%" PRIu64, without)};
    add_row(&r, cells);
  }
  if (rc == BFH_OK && r.nomem) rc = BFH_E_NOMEM;
  if (rc == BFH_OK) {
    if (f == INSPECT_TEXT && r.n) print_text(&r, out);
    if (f == INSPECT_TEXT && !r.n) fputs("no attributes declared: the whole value is indexed\n", out);
    if (f == INSPECT_CSV) print_csv(&r, out);
    if (f == INSPECT_JSON) {
      fputs("{\"attributes\": ", out);
      print_json_rows(&r, out);
      fputs("}\n", out);
    }
  }
  rows_release(&r);
  return rc == BFH_OK ? 0 : 2;
}

/* ---- bfh check ---------------------------------------------------------------------------- */

static const column_t damage_cols[] = {
    {"file", CELL_STRING}, {"offset", CELL_NUMBER}, {"what", CELL_STRING}};
#define DAMAGE_COLS (sizeof damage_cols / sizeof damage_cols[0])

static void damage_row(void *arg, const char *file, uint64_t offset, const char *what) {
  char *cells[DAMAGE_COLS] = {cell_printf("%s", file), cell_printf("%" PRIu64, offset),
                              cell_printf("%s", what)};
  add_row(arg, cells);
}

static void print_check_text(const rows_t *r, const bfh_check_report *rep, FILE *out) {
  if (r->n) print_text(r, out);
  fprintf(out,
          "%s: %" PRIu64 " files, %" PRIu64 " bytes, %" PRIu64 " blocks, %" PRIu64
          " records; %" PRIu64 " damaged\n",
          rep->damaged ? "damage found" : "no damage", rep->files, rep->bytes, rep->blocks,
          rep->records, rep->damaged);
  if (rep->torn_tails)
    fprintf(out,
            "torn tails: %" PRIu64 " (%" PRIu64
            " bytes): writes cut short by a crash, which the next open drops; not damage\n",
            rep->torn_tails, rep->torn_tail_bytes);
  if (rep->cache_damaged)
    fprintf(out, "filter cache: %" PRIu64 " damaged files: harmless, rebuilt at the next open\n",
            rep->cache_damaged);
}

static void print_check_json(const rows_t *r, const char *path, const bfh_check_report *rep,
                             const char *error, FILE *out) {
  fputs("{\"path\": ", out);
  json_string(out, path);
  fprintf(out, ", \"result\": \"%s\"", error ? "error" : rep->damaged ? "damaged" : "clean");
  if (error) {
    fputs(", \"error\": ", out);
    json_string(out, error);
  }
  fprintf(out,
          ", \"files\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"blocks\": %" PRIu64
          ", \"records\": %" PRIu64 ", \"damaged\": %" PRIu64 ", \"torn_tails\": %" PRIu64
          ", \"torn_tail_bytes\": %" PRIu64 ", \"cache_damaged\": %" PRIu64 ", \"damage\": ",
          rep->files, rep->bytes, rep->blocks, rep->records, rep->damaged, rep->torn_tails,
          rep->torn_tail_bytes, rep->cache_damaged);
  print_json_rows(r, out);
  fputs("}\n", out);
}

int inspect_check(const char *path, const bfh_options *opt, inspect_format f, FILE *out,
                  FILE *err) {
  rows_t r = {.cols = damage_cols, .ncols = DAMAGE_COLS};
  bfh_check_report rep;
  int rc = bfh_check(path, opt, damage_row, &r, &rep);
  const char *error = NULL;
  if (rc != BFH_OK && rc != BFH_E_CORRUPT) {
    error = bfh_last_error(NULL);
    memset(&rep, 0, sizeof rep);
  } else if (r.nomem) {
    error = "out of memory for the list of damage";
  }
  if (f == INSPECT_TEXT && !error) print_check_text(&r, &rep, out);
  if (f == INSPECT_CSV && !error) print_csv(&r, out);
  if (f == INSPECT_JSON) print_check_json(&r, path, &rep, error, out);
  if (error) fprintf(err, "bfh check: %s\n", error);
  rows_release(&r);
  return error ? 2 : rep.damaged ? 1 : 0;
}
