/* The predicate language's parser, binder and evaluator (expr.h). A recursive descent over
 * the text builds the tree bottom-up in two arrays: nodes, and the child lists of the AND and
 * OR nodes, each list contiguous, so that the plan is three allocations however large. */
#include "query/expr.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/attr.h"

typedef struct node {
  expr_op_t op;
  uint32_t leaf;         /* EXPR_LEAF: its index in leaves */
  uint32_t first, count; /* EXPR_AND, EXPR_OR: children kids[first .. first + count) */
} node_t;

/* Leaves of one attribute, as a run of order[]: its equalities first, sorted by term, so
   that an extracted term is found by binary search whatever the size of an IN list; then
   its other comparisons, each tested in turn. */
typedef struct group {
  int attr;
  uint32_t first, count, equal;
} group_t;

struct expr {
  node_t *nodes;
  size_t n_nodes, cap_nodes;
  uint32_t *kids;
  size_t n_kids, cap_kids;
  expr_leaf_t *leaves;
  size_t n_leaves, cap_leaves;
  uint32_t root;
  uint32_t *order; /* after expr_bind: leaf indices by (attr, term) */
  group_t *groups;
  size_t n_groups;
};

typedef struct parser {
  const char *s;
  size_t n, pos;
  int depth;
  expr_t *e;
  err_t *err;
} parser_t;

/* A growing child list on the parser's stack frames (copied into kids when complete). */
typedef struct list {
  uint32_t *v;
  size_t n, cap;
} list_t;

static int grow(void **v, size_t *cap, size_t need, size_t size) {
  if (need <= *cap) return ST_OK;
  size_t c = *cap ? *cap * 2 : 8;
  while (c < need) c *= 2;
  void *nv = realloc(*v, c * size);
  if (!nv) return ST_E_NOMEM;
  *v = nv;
  *cap = c;
  return ST_OK;
}

static int list_push(list_t *l, uint32_t x) {
  if (grow((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v) != ST_OK) return ST_E_NOMEM;
  l->v[l->n++] = x;
  return ST_OK;
}

static uint32_t column(size_t pos) {
  return (uint32_t)pos + 1;
} /* from 1 */

static int fail(parser_t *p, size_t pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(parser_t *p, size_t pos, const char *fmt, ...) {
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return err_set(p->err, ST_E_INVALID, "expression: column %u: %s", column(pos), what);
}

static int nomem(parser_t *p) {
  return err_set(p->err, ST_E_NOMEM, "expression: out of memory");
}

static void skip_blanks(parser_t *p) {
  while (p->pos < p->n && strchr(" \t\r\n", p->s[p->pos]) && p->s[p->pos]) p->pos++;
}

static int is_name_start(char c) {
  return isalpha((unsigned char)c) || c == '_';
}
static int is_name_char(char c) {
  return isalnum((unsigned char)c) || c == '_';
}

/* The length of the word at the cursor (0 if none starts there). */
static size_t word_len(const parser_t *p) {
  if (p->pos >= p->n || !is_name_start(p->s[p->pos])) return 0;
  size_t i = p->pos + 1;
  while (i < p->n && is_name_char(p->s[i])) i++;
  return i - p->pos;
}

static int word_is(const char *w, size_t len, const char *keyword) {
  return strlen(keyword) == len && strncasecmp(w, keyword, len) == 0;
}

static int is_keyword(const char *w, size_t len) {
  return word_is(w, len, "and") || word_is(w, len, "or") || word_is(w, len, "in") ||
         word_is(w, len, "between") || word_is(w, len, "like");
}

/* Consumes the keyword at the cursor, after blanks; 1 if it was there. */
static int take_keyword(parser_t *p, const char *keyword) {
  skip_blanks(p);
  size_t len = word_len(p);
  if (!len || !word_is(p->s + p->pos, len, keyword)) return 0;
  p->pos += len;
  return 1;
}

static int take_char(parser_t *p, char c) {
  skip_blanks(p);
  if (p->pos >= p->n || p->s[p->pos] != c) return 0;
  p->pos++;
  return 1;
}

/* What stands at the cursor, for a message: a few characters, or "the end". */
static const char *here(const parser_t *p, char *buf, size_t cap) {
  if (p->pos >= p->n) return "the end";
  size_t len = p->n - p->pos < 12 ? p->n - p->pos : 12;
  snprintf(buf, cap, "'%.*s'", (int)len, p->s + p->pos);
  return buf;
}

static int add_node(parser_t *p, node_t nd, uint32_t *id) {
  expr_t *e = p->e;
  if (grow((void **)&e->nodes, &e->cap_nodes, e->n_nodes + 1, sizeof *e->nodes) != ST_OK)
    return nomem(p);
  e->nodes[e->n_nodes] = nd;
  *id = (uint32_t)e->n_nodes++;
  return ST_OK;
}

/* A node of op over the items, each child of the same op spliced in (AND of ANDs is one
   AND). One item stands for itself. */
static int add_branch(parser_t *p, expr_op_t op, const list_t *items, uint32_t *id) {
  if (items->n == 1) {
    *id = items->v[0];
    return ST_OK;
  }
  expr_t *e = p->e;
  size_t total = 0;
  for (size_t i = 0; i < items->n; i++) {
    const node_t *c = &e->nodes[items->v[i]];
    total += c->op == op ? c->count : 1;
  }
  if (grow((void **)&e->kids, &e->cap_kids, e->n_kids + total, sizeof *e->kids) != ST_OK)
    return nomem(p);
  uint32_t first = (uint32_t)e->n_kids;
  for (size_t i = 0; i < items->n; i++) {
    const node_t *c = &e->nodes[items->v[i]];
    if (c->op == op) {
      memmove(e->kids + e->n_kids, e->kids + c->first, c->count * sizeof *e->kids);
      e->n_kids += c->count;
    } else {
      e->kids[e->n_kids++] = items->v[i];
    }
  }
  return add_node(p, (node_t){op, 0, first, (uint32_t)total}, id);
}

/* A literal at the cursor: its unescaped bytes in a new buffer. */
static int parse_literal(parser_t *p, uint8_t **out, size_t *len, int *is_number) {
  skip_blanks(p);
  size_t start = p->pos;
  char shown[32];
  if (p->pos < p->n && p->s[p->pos] == '\'') {
    uint8_t *b = malloc(p->n - p->pos + 1); /* never longer than the rest of the text */
    if (!b) return nomem(p);
    size_t k = 0;
    for (p->pos++;; p->pos++) {
      if (p->pos >= p->n) {
        free(b);
        return fail(p, start, "a quoted text without its closing quote");
      }
      if (p->s[p->pos] == '\'') {
        if (p->pos + 1 < p->n && p->s[p->pos + 1] == '\'') {
          b[k++] = '\'';
          p->pos++;
          continue;
        }
        p->pos++;
        break;
      }
      b[k++] = (uint8_t)p->s[p->pos];
    }
    *out = b;
    *len = k;
    *is_number = 0;
    return ST_OK;
  }
  size_t i = p->pos;
  if (i < p->n && p->s[i] == '-') i++;
  size_t digits = i;
  while (i < p->n && isdigit((unsigned char)p->s[i])) i++;
  if (i == digits || (i < p->n && is_name_char(p->s[i])))
    return fail(p, start, "expected a quoted text or an integer, found %s",
                here(p, shown, sizeof shown));
  uint8_t *b = malloc(i - start + 1);
  if (!b) return nomem(p);
  memcpy(b, p->s + start, i - start);
  *out = b;
  *len = i - start;
  *is_number = 1;
  p->pos = i;
  return ST_OK;
}

/* LIKE's pattern: a literal prefix and one trailing '%' (SQL's wildcards refused anywhere
   else). The prefix's length into *len. */
static int like_prefix(parser_t *p, size_t start, const uint8_t *lit, size_t n, int is_number,
                       size_t *len) {
  const char *want = "LIKE takes a quoted literal prefix followed by one '%' ('abc%')";
  if (is_number || n == 0 || lit[n - 1] != '%') return fail(p, start, "%s", want);
  for (size_t i = 0; i + 1 < n; i++)
    if (lit[i] == '%' || lit[i] == '_')
      return fail(p, start, "%s; '%c' before the end is a wildcard, which is not supported", want,
                  lit[i]);
  *len = n - 1;
  return ST_OK;
}

/* The literals of a leaf of comparison cmp at the cursor: one, two for BETWEEN. */
static int leaf_literals(parser_t *p, expr_leaf_t *l) {
  uint8_t *lit = NULL;
  skip_blanks(p);
  size_t start = p->pos;
  int rc = parse_literal(p, &lit, &l->literal_len, &l->is_number);
  if (rc != ST_OK) return rc;
  l->literal = l->term = lit;
  if (l->cmp == EXPR_PREFIX)
    rc = like_prefix(p, start, lit, l->literal_len, l->is_number, &l->literal_len);
  l->term_len = l->literal_len;
  if (rc != ST_OK || l->cmp != EXPR_BETWEEN) return rc;
  char shown[32];
  if (!take_keyword(p, "and"))
    return fail(p, p->pos, "expected AND after BETWEEN's first literal, found %s",
                here(p, shown, sizeof shown));
  rc = parse_literal(p, &lit, &l->literal_hi_len, &l->hi_is_number);
  if (rc != ST_OK) return rc;
  l->literal_hi = l->term_hi = lit;
  l->term_hi_len = l->literal_hi_len;
  return ST_OK;
}

static int add_leaf(parser_t *p, const char *name, size_t name_len, size_t name_pos, expr_cmp_t cmp,
                    uint32_t *id) {
  expr_t *e = p->e;
  if (e->n_leaves >= EXPR_MAX_LEAVES)
    return fail(p, p->pos, "more than %u terms in one expression", EXPR_MAX_LEAVES);
  if (grow((void **)&e->leaves, &e->cap_leaves, e->n_leaves + 1, sizeof *e->leaves) != ST_OK)
    return nomem(p);
  char *nm = malloc(name_len + 1);
  if (!nm) return nomem(p);
  memcpy(nm, name, name_len);
  nm[name_len] = '\0';
  expr_leaf_t *l = &e->leaves[e->n_leaves++]; /* owned by the plan from here, whole or not */
  *l = (expr_leaf_t){.name = nm, .column = column(name_pos), .attr = -1, .cmp = cmp};
  int rc = leaf_literals(p, l);
  if (rc == ST_OK) rc = add_node(p, (node_t){EXPR_LEAF, (uint32_t)(l - e->leaves), 0, 0}, id);
  return rc;
}

static int parse_or(parser_t *p, uint32_t *id);

/* A comparison sign at the cursor (after blanks): 1 and *cmp, or 0. */
static int take_cmp(parser_t *p, expr_cmp_t *cmp) {
  skip_blanks(p);
  if (p->pos >= p->n) return 0;
  char c = p->s[p->pos];
  int eq = p->pos + 1 < p->n && p->s[p->pos + 1] == '=';
  if (c == '=')
    *cmp = EXPR_EQ;
  else if (c == '<')
    *cmp = eq ? EXPR_LE : EXPR_LT;
  else if (c == '>')
    *cmp = eq ? EXPR_GE : EXPR_GT;
  else
    return 0;
  p->pos += 1 + (c != '=' && eq);
  return 1;
}

/* NAME cmp literal | NAME IN (literal, ...) | NAME BETWEEN literal AND literal
   | NAME LIKE 'prefix%' */
static int parse_comparison(parser_t *p, uint32_t *id) {
  char shown[32];
  size_t name_pos = p->pos, name_len = word_len(p);
  const char *name = p->s + name_pos;
  if (!name_len)
    return fail(p, name_pos, "expected an attribute name or '(', found %s",
                here(p, shown, sizeof shown));
  if (is_keyword(name, name_len))
    return fail(p, name_pos, "'%.*s' is a keyword, not an attribute name", (int)name_len, name);
  if (name_len > EXPR_MAX_NAME)
    return fail(p, name_pos, "an attribute name longer than %d bytes", EXPR_MAX_NAME);
  p->pos += name_len;
  expr_cmp_t cmp;
  if (take_cmp(p, &cmp)) return add_leaf(p, name, name_len, name_pos, cmp, id);
  if (take_keyword(p, "between")) return add_leaf(p, name, name_len, name_pos, EXPR_BETWEEN, id);
  if (take_keyword(p, "like")) return add_leaf(p, name, name_len, name_pos, EXPR_PREFIX, id);
  if (!take_keyword(p, "in"))
    return fail(p, p->pos,
                "expected '=', '<', '<=', '>', '>=', IN, BETWEEN or LIKE after '%.*s', found %s",
                (int)name_len, name, here(p, shown, sizeof shown));
  if (!take_char(p, '('))
    return fail(p, p->pos, "expected '(' after IN, found %s", here(p, shown, sizeof shown));
  list_t items = {0};
  int rc;
  do {
    uint32_t leaf;
    rc = add_leaf(p, name, name_len, name_pos, EXPR_EQ, &leaf);
    if (rc == ST_OK && list_push(&items, leaf) != ST_OK) rc = nomem(p);
  } while (rc == ST_OK && take_char(p, ','));
  if (rc == ST_OK && !take_char(p, ')'))
    rc = fail(p, p->pos, "expected ',' or ')' in the IN list, found %s",
              here(p, shown, sizeof shown));
  if (rc == ST_OK) rc = add_branch(p, EXPR_OR, &items, id);
  free(items.v);
  return rc;
}

static int parse_primary(parser_t *p, uint32_t *id) {
  skip_blanks(p);
  size_t open = p->pos;
  if (!take_char(p, '(')) return parse_comparison(p, id);
  if (++p->depth > EXPR_MAX_DEPTH)
    return fail(p, open, "parentheses nested deeper than %d", EXPR_MAX_DEPTH);
  int rc = parse_or(p, id);
  p->depth--;
  if (rc != ST_OK) return rc;
  char shown[32];
  if (!take_char(p, ')'))
    return fail(p, p->pos, "expected ')' to close the '(' of column %u, found %s", column(open),
                here(p, shown, sizeof shown));
  return ST_OK;
}

/* One level of the grammar: items of `next` joined by the keyword into an op node. */
static int parse_joined(parser_t *p, const char *keyword, expr_op_t op,
                        int (*next)(parser_t *, uint32_t *), uint32_t *id) {
  list_t items = {0};
  int rc;
  do {
    uint32_t item;
    rc = next(p, &item);
    if (rc == ST_OK && list_push(&items, item) != ST_OK) rc = nomem(p);
  } while (rc == ST_OK && take_keyword(p, keyword));
  if (rc == ST_OK) rc = add_branch(p, op, &items, id);
  free(items.v);
  return rc;
}

static int parse_and(parser_t *p, uint32_t *id) {
  return parse_joined(p, "and", EXPR_AND, parse_primary, id);
}

static int parse_or(parser_t *p, uint32_t *id) {
  return parse_joined(p, "or", EXPR_OR, parse_and, id);
}

int expr_parse(const char *text, size_t len, expr_t **out, err_t *err) {
  *out = NULL;
  parser_t p = {text, len, 0, 0, NULL, err};
  if (len > EXPR_MAX_TEXT)
    return err_set(err, ST_E_INVALID, "expression: longer than %u bytes", EXPR_MAX_TEXT);
  if (memchr(text, '\0', len))
    return fail(&p, (size_t)((const char *)memchr(text, '\0', len) - text),
                "a NUL byte in the expression");
  skip_blanks(&p);
  if (p.pos == len) return fail(&p, p.pos, "the expression is empty");
  if (!(p.e = calloc(1, sizeof *p.e))) return nomem(&p);
  int rc = parse_or(&p, &p.e->root);
  skip_blanks(&p);
  char shown[32];
  if (rc == ST_OK && p.pos < len)
    rc = fail(&p, p.pos, "expected AND, OR or the end, found %s", here(&p, shown, sizeof shown));
  if (rc != ST_OK) {
    expr_destroy(p.e);
    return rc;
  }
  *out = p.e;
  return ST_OK;
}

void expr_destroy(expr_t *e) {
  if (!e) return;
  for (size_t i = 0; i < e->n_leaves; i++) {
    expr_leaf_t *l = &e->leaves[i];
    if (l->term != l->literal) free((uint8_t *)l->term);
    free((uint8_t *)l->literal);
    if (l->term_hi != l->literal_hi) free((uint8_t *)l->term_hi);
    free((uint8_t *)l->literal_hi);
    free((char *)l->name);
  }
  free(e->leaves);
  free(e->nodes);
  free(e->kids);
  free(e->order);
  free(e->groups);
  free(e);
}

size_t expr_leaf_count(const expr_t *e) {
  return e->n_leaves;
}
const expr_leaf_t *expr_leaf(const expr_t *e, size_t i) {
  return &e->leaves[i];
}

/* ---- Binding ------------------------------------------------------------------------ */

static int term_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen) {
  int c = memcmp(a, b, alen < blen ? alen : blen);
  return c ? c : (alen > blen) - (alen < blen);
}

static int leaf_order(const void *x, const void *y, void *arg) {
  const expr_t *e = arg;
  const expr_leaf_t *a = &e->leaves[*(const uint32_t *)x];
  const expr_leaf_t *b = &e->leaves[*(const uint32_t *)y];
  if (a->attr != b->attr) return a->attr < b->attr ? -1 : 1;
  if ((a->cmp != EXPR_EQ) != (b->cmp != EXPR_EQ)) return a->cmp != EXPR_EQ ? 1 : -1;
  return term_cmp(a->term, a->term_len, b->term, b->term_len);
}

/* The term of an :int attribute for a literal: 7, 007 and '007' alike. */
static int int_term(const expr_leaf_t *l, const uint8_t *lit, size_t len, const uint8_t **term,
                    size_t *term_len, err_t *err) {
  int64_t v;
  if (attr_int_parse((const char *)lit, len, &v) != ST_OK)
    return err_set(err, ST_E_INVALID,
                   "expression: column %u: %s is an integer attribute, and '%.*s' is not an "
                   "integer",
                   l->column, l->name, (int)(len < 40 ? len : 40), (const char *)lit);
  uint8_t *t = malloc(ATTR_INT_TERM_BYTES);
  if (!t) return err_set(err, ST_E_NOMEM, "expression: out of memory");
  attr_int_term(v, t);
  *term = t;
  *term_len = ATTR_INT_TERM_BYTES;
  return ST_OK;
}

static int int_terms(expr_leaf_t *l, err_t *err) {
  if (l->cmp == EXPR_PREFIX)
    return err_set(err, ST_E_INVALID,
                   "expression: column %u: %s is an integer attribute; LIKE applies to text",
                   l->column, l->name);
  int rc = int_term(l, l->literal, l->literal_len, &l->term, &l->term_len, err);
  if (rc == ST_OK && l->cmp == EXPR_BETWEEN)
    rc = int_term(l, l->literal_hi, l->literal_hi_len, &l->term_hi, &l->term_hi_len, err);
  return rc;
}

int expr_bind(expr_t *e, expr_lookup_fn lookup, void *arg, err_t *err) {
  for (size_t i = 0; i < e->n_leaves; i++) {
    expr_leaf_t *l = &e->leaves[i];
    int is_int = 0;
    int attr = lookup(arg, l->name, strlen(l->name), &is_int);
    if (attr < 0)
      return err_set(err, ST_E_INVALID, "expression: column %u: no attribute called %s", l->column,
                     l->name);
    if (l->attr >= 0) return err_set(err, ST_E_INVALID, "expression: bound twice");
    l->attr = attr;
    if (is_int) {
      int rc = int_terms(l, err);
      if (rc != ST_OK) return rc;
    }
  }
  e->order = malloc((e->n_leaves ? e->n_leaves : 1) * sizeof *e->order);
  e->groups = malloc((e->n_leaves ? e->n_leaves : 1) * sizeof *e->groups);
  if (!e->order || !e->groups) return err_set(err, ST_E_NOMEM, "expression: out of memory");
  for (size_t i = 0; i < e->n_leaves; i++) e->order[i] = (uint32_t)i;
  qsort_r(e->order, e->n_leaves, sizeof *e->order, leaf_order, e);
  e->n_groups = 0;
  for (size_t i = 0; i < e->n_leaves; i++) {
    int attr = e->leaves[e->order[i]].attr;
    if (!e->n_groups || e->groups[e->n_groups - 1].attr != attr)
      e->groups[e->n_groups++] = (group_t){attr, (uint32_t)i, 0, 0};
    e->groups[e->n_groups - 1].count++;
    e->groups[e->n_groups - 1].equal += e->leaves[e->order[i]].cmp == EXPR_EQ;
  }
  return ST_OK;
}

/* ---- Evaluation --------------------------------------------------------------------- */

static int eval_node(const expr_t *e, uint32_t id, const uint8_t *marks) {
  const node_t *nd = &e->nodes[id];
  if (nd->op == EXPR_LEAF) return marks[nd->leaf] != 0;
  int and = nd->op == EXPR_AND;
  for (uint32_t i = 0; i < nd->count; i++)
    if (eval_node(e, e->kids[nd->first + i], marks) != and) return !and;
  return and;
}

int expr_eval(const expr_t *e, const uint8_t *marks) {
  return eval_node(e, e->root, marks);
}

typedef struct marker {
  const expr_t *e;
  const group_t *g;
  uint8_t *marks;
} marker_t;

int expr_leaf_holds(const expr_leaf_t *l, const void *t, size_t len) {
  int c = term_cmp(t, len, l->term, l->term_len);
  switch (l->cmp) {
    case EXPR_EQ:
      return c == 0;
    case EXPR_LT:
      return c < 0;
    case EXPR_LE:
      return c <= 0;
    case EXPR_GT:
      return c > 0;
    case EXPR_GE:
      return c >= 0;
    case EXPR_BETWEEN:
      return c >= 0 && term_cmp(t, len, l->term_hi, l->term_hi_len) <= 0;
    case EXPR_PREFIX:
      return len >= l->term_len && memcmp(t, l->term, l->term_len) == 0;
    default:
      return 0;
  }
}

/* Marks every leaf of the group that this term satisfies. */
static int mark_term(void *arg, const void *term, size_t len) {
  marker_t *m = arg;
  const expr_t *e = m->e;
  const uint32_t *run = e->order + m->g->first;
  for (size_t i = m->g->equal; i < m->g->count; i++)
    if (expr_leaf_holds(&e->leaves[run[i]], term, len)) m->marks[run[i]] = 1;
  size_t lo = 0, hi = m->g->equal;
  while (lo < hi) { /* the first leaf whose term is >= this one */
    size_t mid = lo + (hi - lo) / 2;
    const expr_leaf_t *l = &e->leaves[run[mid]];
    if (term_cmp(l->term, l->term_len, term, len) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  for (; lo < m->g->equal; lo++) {
    const expr_leaf_t *l = &e->leaves[run[lo]];
    if (term_cmp(l->term, l->term_len, term, len) != 0) break;
    m->marks[run[lo]] = 1;
  }
  return 0;
}

int expr_match_value(const expr_t *e, const void *value, size_t value_len, expr_terms_fn terms,
                     void *arg, uint8_t *marks) {
  memset(marks, 0, e->n_leaves);
  for (size_t i = 0; i < e->n_groups; i++) {
    marker_t m = {e, &e->groups[i], marks};
    int rc = terms(arg, e->groups[i].attr, value, value_len, mark_term, &m);
    if (rc < 0) return rc;
  }
  return expr_eval(e, marks);
}

/* ---- The canonical form ------------------------------------------------------------- */

typedef struct out {
  char *buf;
  size_t cap, len;
} out_t;

static void put(out_t *o, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++, o->len++)
    if (o->len + 1 < o->cap) o->buf[o->len] = s[i];
}

static void put_str(out_t *o, const char *s) {
  put(o, s, strlen(s));
}

static void format_literal(out_t *o, const uint8_t *lit, size_t len, int is_number,
                           const char *tail) {
  if (is_number) {
    put(o, (const char *)lit, len);
    return;
  }
  put_str(o, "'");
  for (size_t i = 0; i < len; i++) {
    if (lit[i] == '\'') put_str(o, "'");
    put(o, (const char *)&lit[i], 1);
  }
  put_str(o, tail);
  put_str(o, "'");
}

static void format_leaf(const expr_leaf_t *l, out_t *o) {
  static const char *const sign[] = {" = ",  " < ",       " <= ",   " > ",
                                     " >= ", " BETWEEN ", " LIKE ", " ITEM "};
  put_str(o, l->name);
  put_str(o, sign[l->cmp]);
  format_literal(o, l->literal, l->literal_len, l->is_number, l->cmp == EXPR_PREFIX ? "%" : "");
  if (l->cmp != EXPR_BETWEEN) return;
  put_str(o, " AND ");
  format_literal(o, l->literal_hi, l->literal_hi_len, l->hi_is_number, "");
}

static void format_node(const expr_t *e, uint32_t id, int nested, out_t *o) {
  const node_t *nd = &e->nodes[id];
  if (nd->op == EXPR_LEAF) {
    format_leaf(&e->leaves[nd->leaf], o);
    return;
  }
  if (nd->count == 0) { /* a constant (expr_expand) */
    put_str(o, nd->op == EXPR_AND ? "TRUE" : "FALSE");
    return;
  }
  if (nested) put_str(o, "(");
  for (uint32_t i = 0; i < nd->count; i++) {
    if (i) put_str(o, nd->op == EXPR_AND ? " AND " : " OR ");
    format_node(e, e->kids[nd->first + i], 1, o);
  }
  if (nested) put_str(o, ")");
}

size_t expr_format(const expr_t *e, char *buf, size_t cap) {
  out_t o = {buf, cap, 0};
  format_node(e, e->root, 0, &o);
  if (cap) buf[o.len < cap ? o.len : cap - 1] = '\0';
  return o.len;
}

/* ---- Expansion ---------------------------------------------------------------------- */

#define CONST_TRUE UINT32_MAX
#define CONST_FALSE (UINT32_MAX - 1)
#define NOT_CONST (UINT32_MAX - 2)

typedef struct expander {
  const expr_t *from;
  expr_expand_fn fn;
  expr_imply_fn imply; /* NULL: none */
  void *arg;
  parser_t p; /* the new plan being built (p.e), and its error */
  expr_item_t *items;
  int *kind; /* per leaf of from: what fn said (EXPR_EXPAND_SELF, _TRUE or a count) */
} expander_t;

/* CONST_TRUE or CONST_FALSE when node id of the original folds to that constant, else
   NOT_CONST; computed first, so that no leaf is made for a part that folds away. */
static uint32_t node_const(const expander_t *x, uint32_t id) {
  const node_t *nd = &x->from->nodes[id];
  if (nd->op == EXPR_LEAF) {
    int k = x->kind[nd->leaf];
    return k == EXPR_EXPAND_TRUE ? CONST_TRUE : k == 0 ? CONST_FALSE : NOT_CONST;
  }
  uint32_t neutral = nd->op == EXPR_AND ? CONST_TRUE : CONST_FALSE;
  uint32_t absorbing = nd->op == EXPR_AND ? CONST_FALSE : CONST_TRUE;
  uint32_t all = neutral;
  for (uint32_t i = 0; i < nd->count; i++) {
    uint32_t c = node_const(x, x->from->kids[nd->first + i]);
    if (c == absorbing) return absorbing;
    if (c == NOT_CONST) all = NOT_CONST;
  }
  return all;
}

/* A leaf of the new plan for src: bytes[0, len) its term, cmp its kind. */
static int expand_leaf(expander_t *x, const expr_leaf_t *src, expr_cmp_t cmp, const void *bytes,
                       size_t len, uint32_t *id) {
  expr_t *e = x->p.e;
  if (grow((void **)&e->leaves, &e->cap_leaves, e->n_leaves + 1, sizeof *e->leaves) != ST_OK)
    return nomem(&x->p);
  char *nm = strdup(src->name);
  uint8_t *t = malloc(len ? len : 1);
  if (!nm || !t) {
    free(nm);
    free(t);
    return nomem(&x->p);
  }
  memcpy(t, bytes, len);
  e->leaves[e->n_leaves] = (expr_leaf_t){.name = nm,
                                         .column = src->column,
                                         .attr = src->attr,
                                         .term = t,
                                         .term_len = len,
                                         .literal = t,
                                         .literal_len = len,
                                         .cmp = cmp};
  int rc = add_node(&x->p, (node_t){EXPR_LEAF, (uint32_t)e->n_leaves, 0, 0}, id);
  e->n_leaves++;
  return rc;
}

struct expr_implied {
  expander_t *x;
  list_t *kids; /* the AND node's children in the new plan */
  list_t or ;   /* the leaves of the OR being made */
};

int expr_implied_add(expr_implied_t *out, int attr, const char *name, const void *term,
                     size_t len) {
  expr_leaf_t src = {.name = name, .attr = attr};
  uint32_t id;
  int rc = expand_leaf(out->x, &src, EXPR_EQ, term, len, &id);
  if (rc == ST_OK && list_push(&out->or, id) != ST_OK) rc = nomem(&out->x->p);
  return rc;
}

int expr_implied_end(expr_implied_t *out) {
  if (out->or.n == 0) return ST_OK;
  uint32_t id;
  int rc = add_branch(&out->x->p, EXPR_OR, &out->or, &id);
  if (rc == ST_OK && list_push(out->kids, id) != ST_OK) rc = nomem(&out->x->p);
  out->or.n = 0;
  return rc;
}

/* Whether node id of the original is an equality group (expr_eq_group_t), a leaf whose
   expansion is itself: *attr its attribute, its leaves appended to leaf[*n ...]. */
static int eq_group(const expander_t *x, uint32_t id, int *attr, const expr_leaf_t **leaf,
                    size_t *n) {
  const node_t *nd = &x->from->nodes[id];
  uint32_t one = id, count = 1;
  const uint32_t *ids = &one;
  if (nd->op == EXPR_AND) return 0;
  if (nd->op == EXPR_OR) ids = x->from->kids + nd->first, count = nd->count;
  size_t start = *n;
  for (uint32_t i = 0; i < count; i++) {
    const node_t *c = &x->from->nodes[ids[i]];
    const expr_leaf_t *l = c->op == EXPR_LEAF ? &x->from->leaves[c->leaf] : NULL;
    if (!l || l->cmp != EXPR_EQ || x->kind[c->leaf] != EXPR_EXPAND_SELF ||
        (i && l->attr != *attr)) {
      *n = start;
      return 0;
    }
    *attr = l->attr;
    leaf[(*n)++] = l;
  }
  return 1;
}

/* Gives the new plan's AND node for node id of the original the conjuncts x->imply says its
   equality groups imply (appended to kids). */
static int add_implied(expander_t *x, uint32_t id, list_t *kids) {
  const node_t *nd = &x->from->nodes[id];
  const expr_leaf_t **leaf = malloc((x->from->n_leaves ? x->from->n_leaves : 1) * sizeof *leaf);
  expr_eq_group_t *g = malloc((nd->count ? nd->count : 1) * sizeof *g);
  int rc = leaf && g ? ST_OK : nomem(&x->p);
  size_t ng = 0, nl = 0;
  for (uint32_t i = 0; rc == ST_OK && i < nd->count; i++) {
    uint32_t kid = x->from->kids[nd->first + i];
    size_t at = nl;
    int attr = -1;
    if (node_const(x, kid) == NOT_CONST && eq_group(x, kid, &attr, leaf, &nl))
      g[ng++] = (expr_eq_group_t){attr, leaf + at, nl - at};
  }
  expr_implied_t out = {x, kids, {0}};
  if (rc == ST_OK && ng) rc = x->imply(x->arg, g, ng, &out);
  if (rc == ST_E_NOMEM) rc = nomem(&x->p); /* imply returns the status alone */
  free(out.or.v);
  free(leaf);
  free(g);
  return rc;
}

/* The new plan's node for node id of the original, which does not fold to a constant: its
   constant children are neutral ones, left out. */
static int expand_node(expander_t *x, uint32_t id, uint32_t *out) {
  const node_t *nd = &x->from->nodes[id];
  list_t kids = {0};
  int rc = ST_OK;
  if (nd->op != EXPR_LEAF) {
    for (uint32_t i = 0; i < nd->count && rc == ST_OK; i++) {
      uint32_t kid = x->from->kids[nd->first + i], c;
      if (node_const(x, kid) != NOT_CONST) continue;
      rc = expand_node(x, kid, &c);
      if (rc == ST_OK && list_push(&kids, c) != ST_OK) rc = nomem(&x->p);
    }
    if (rc == ST_OK && x->imply && nd->op == EXPR_AND) rc = add_implied(x, id, &kids);
    if (rc == ST_OK) rc = add_branch(&x->p, nd->op, &kids, out);
    free(kids.v);
    return rc;
  }
  const expr_leaf_t *l = &x->from->leaves[nd->leaf];
  if (x->kind[nd->leaf] == EXPR_EXPAND_SELF)
    return expand_leaf(x, l, l->cmp, l->term, l->term_len, out);
  int n = x->fn(x->arg, l, x->items, EXPR_EXPAND_CAP); /* again: fn is a function of l */
  for (int i = 0; i < n && i < EXPR_EXPAND_CAP && rc == ST_OK; i++) {
    uint32_t leaf;
    rc = expand_leaf(x, l, x->items[i].cmp, x->items[i].bytes, x->items[i].len, &leaf);
    if (rc == ST_OK && list_push(&kids, leaf) != ST_OK) rc = nomem(&x->p);
  }
  if (rc == ST_OK) rc = add_branch(&x->p, EXPR_OR, &kids, out);
  free(kids.v);
  return rc;
}

int expr_expand(const expr_t *e, expr_expand_fn fn, void *arg, expr_t **out, err_t *err) {
  return expr_expand_implied(e, fn, NULL, arg, out, err);
}

int expr_expand_implied(const expr_t *e, expr_expand_fn fn, expr_imply_fn imply, void *arg,
                        expr_t **out, err_t *err) {
  *out = NULL;
  expander_t x = {e, fn, imply, arg, {NULL, 0, 0, 0, NULL, err}, NULL, NULL};
  x.p.e = calloc(1, sizeof *x.p.e);
  x.items = malloc(EXPR_EXPAND_CAP * sizeof *x.items);
  x.kind = malloc((e->n_leaves ? e->n_leaves : 1) * sizeof *x.kind);
  int rc = x.p.e && x.items && x.kind ? ST_OK : nomem(&x.p);
  for (size_t i = 0; rc == ST_OK && i < e->n_leaves; i++)
    x.kind[i] = fn(arg, &e->leaves[i], x.items, EXPR_EXPAND_CAP);
  uint32_t root = 0, c = rc == ST_OK ? node_const(&x, e->root) : NOT_CONST;
  if (rc == ST_OK && c != NOT_CONST)
    rc = add_node(&x.p, (node_t){c == CONST_TRUE ? EXPR_AND : EXPR_OR, 0, 0, 0}, &root);
  else if (rc == ST_OK)
    rc = expand_node(&x, e->root, &root);
  free(x.items);
  free(x.kind);
  if (rc != ST_OK) {
    expr_destroy(x.p.e);
    return rc;
  }
  x.p.e->root = root;
  *out = x.p.e;
  return ST_OK;
}

int expr_constant(const expr_t *e, int *value) {
  const node_t *nd = &e->nodes[e->root];
  if (nd->op == EXPR_LEAF || nd->count) return 0;
  *value = nd->op == EXPR_AND;
  return 1;
}
