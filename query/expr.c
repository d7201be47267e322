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

/* Leaves of one attribute, as a run of order[] sorted by term: an extracted term is found
   by binary search whatever the size of an IN list. */
typedef struct group {
  int attr;
  uint32_t first, count;
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
  return word_is(w, len, "and") || word_is(w, len, "or") || word_is(w, len, "in");
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

static int add_leaf(parser_t *p, const char *name, size_t name_len, size_t name_pos, uint32_t *id) {
  expr_t *e = p->e;
  if (e->n_leaves >= EXPR_MAX_LEAVES)
    return fail(p, p->pos, "more than %u terms in one expression", EXPR_MAX_LEAVES);
  if (grow((void **)&e->leaves, &e->cap_leaves, e->n_leaves + 1, sizeof *e->leaves) != ST_OK)
    return nomem(p);
  char *nm = malloc(name_len + 1);
  if (!nm) return nomem(p);
  memcpy(nm, name, name_len);
  nm[name_len] = '\0';
  uint8_t *term = NULL;
  size_t term_len = 0;
  int is_number = 0;
  int rc = parse_literal(p, &term, &term_len, &is_number);
  if (rc != ST_OK) {
    free(nm);
    return rc;
  }
  e->leaves[e->n_leaves] =
      (expr_leaf_t){nm, column(name_pos), -1, term, term_len, term, term_len, is_number};
  rc = add_node(p, (node_t){EXPR_LEAF, (uint32_t)e->n_leaves, 0, 0}, id);
  e->n_leaves++; /* owned by the plan from here, node or not */
  return rc;
}

static int parse_or(parser_t *p, uint32_t *id);

/* NAME = literal | NAME IN (literal, ...) */
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
  if (take_char(p, '=')) return add_leaf(p, name, name_len, name_pos, id);
  if (!take_keyword(p, "in"))
    return fail(p, p->pos, "expected '=' or IN after '%.*s', found %s", (int)name_len, name,
                here(p, shown, sizeof shown));
  if (!take_char(p, '('))
    return fail(p, p->pos, "expected '(' after IN, found %s", here(p, shown, sizeof shown));
  list_t items = {0};
  int rc;
  do {
    uint32_t leaf;
    rc = add_leaf(p, name, name_len, name_pos, &leaf);
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
  return term_cmp(a->term, a->term_len, b->term, b->term_len);
}

/* The term of an :int attribute for the literal: 7, 007 and '007' alike. */
static int int_term(expr_leaf_t *l, err_t *err) {
  int64_t v;
  if (attr_int_parse((const char *)l->literal, l->literal_len, &v) != ST_OK)
    return err_set(err, ST_E_INVALID,
                   "expression: column %u: %s is an integer attribute, and '%.*s' is not an "
                   "integer",
                   l->column, l->name, (int)(l->literal_len < 40 ? l->literal_len : 40),
                   (const char *)l->literal);
  uint8_t *t = malloc(8);
  if (!t) return err_set(err, ST_E_NOMEM, "expression: out of memory");
  attr_int_term(v, t);
  l->term = t;
  l->term_len = 8;
  return ST_OK;
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
      int rc = int_term(l, err);
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
      e->groups[e->n_groups++] = (group_t){attr, (uint32_t)i, 0};
    e->groups[e->n_groups - 1].count++;
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

/* Marks every leaf of the group whose term is this one. */
static int mark_term(void *arg, const void *term, size_t len) {
  marker_t *m = arg;
  const expr_t *e = m->e;
  const uint32_t *run = e->order + m->g->first;
  size_t lo = 0, hi = m->g->count;
  while (lo < hi) { /* the first leaf whose term is >= this one */
    size_t mid = lo + (hi - lo) / 2;
    const expr_leaf_t *l = &e->leaves[run[mid]];
    if (term_cmp(l->term, l->term_len, term, len) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  for (; lo < m->g->count; lo++) {
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

static void format_node(const expr_t *e, uint32_t id, int nested, out_t *o) {
  const node_t *nd = &e->nodes[id];
  if (nd->op == EXPR_LEAF) {
    const expr_leaf_t *l = &e->leaves[nd->leaf];
    put_str(o, l->name);
    put_str(o, " = ");
    if (l->is_number) {
      put(o, (const char *)l->literal, l->literal_len);
      return;
    }
    put_str(o, "'");
    for (size_t i = 0; i < l->literal_len; i++) {
      if (l->literal[i] == '\'') put_str(o, "'");
      put(o, (const char *)&l->literal[i], 1);
    }
    put_str(o, "'");
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
