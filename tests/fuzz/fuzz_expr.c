/* Fuzz target: the predicate language (query/expr.c): parse, bind, evaluate.
 *
 * Invariants checked:
 * - a failed parse or bind is ST_E_INVALID (or ST_E_NOMEM) with a message that names a
 *   column, and leaves no plan;
 * - a plan's canonical form (expr_format) parses again to the same form and the same
 *   number of leaves;
 * - a plan whose leaves are all true satisfies the predicate (AND and OR are monotone).
 * The input is the expression; the value evaluated is the input itself, its parts split at
 * '|' as attribute 0, 1, 2, ... (names beginning with 'n' are :int attributes).
 */
#include "fuzz_util.h"

#include "query/attr.h"
#include "query/expr.h"

static int lookup(void *arg, const char *name, size_t len, int *is_int) {
  (void)arg;
  *is_int = name[0] == 'n';
  return len <= 2 ? (int)len : -1; /* names of 1 or 2 bytes exist; longer ones do not */
}

static int terms(void *arg, int attr, const void *value, size_t len, expr_term_fn fn,
                 void *fn_arg) {
  (void)arg;
  const char *s = value, *end = s + len;
  for (int i = 0; i < attr; i++) {
    const char *bar = memchr(s, '|', (size_t)(end - s));
    if (!bar) return 0;
    s = bar + 1;
  }
  const char *bar = memchr(s, '|', (size_t)(end - s));
  fn(fn_arg, s, bar ? (size_t)(bar - s) : (size_t)(end - s));
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  expr_t *e = NULL;
  err_t err;
  err_clear(&err);
  int rc = expr_parse((const char *)data, size, &e, &err);
  if (rc != ST_OK) {
    fuzz_check(e == NULL && (rc == ST_E_INVALID || rc == ST_E_NOMEM));
    fuzz_check(rc == ST_E_NOMEM || strstr(err.msg, "expression: ") == err.msg);
    return 0;
  }
  size_t need = expr_format(e, NULL, 0);
  char *form = malloc(need + 1), *again = malloc(need + 1);
  fuzz_check(form && again);
  fuzz_check(expr_format(e, form, need + 1) == need && strlen(form) == need);
  expr_t *e2 = NULL;
  fuzz_check(expr_parse(form, need, &e2, &err) == ST_OK);
  fuzz_check(expr_leaf_count(e2) == expr_leaf_count(e));
  fuzz_check(expr_format(e2, again, need + 1) == need && memcmp(form, again, need) == 0);
  expr_destroy(e2);
  free(form);
  free(again);

  rc = expr_bind(e, lookup, NULL, &err);
  if (rc == ST_OK) {
    size_t n = expr_leaf_count(e);
    uint8_t *marks = malloc(n ? n : 1);
    fuzz_check(marks != NULL);
    rc = expr_match_value(e, data, size, terms, NULL, marks);
    fuzz_check(rc == 0 || rc == 1);
    memset(marks, 1, n);
    fuzz_check(expr_eval(e, marks) == 1);
    free(marks);
  } else {
    fuzz_check(rc == ST_E_INVALID || rc == ST_E_NOMEM);
    fuzz_check(rc == ST_E_NOMEM || strstr(err.msg, "column ") != NULL);
  }
  expr_destroy(e);
  return 0;
}
