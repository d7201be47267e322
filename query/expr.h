/* expr: the predicate language of a value query, parsed once into a plan.
 *
 *   expr    := or
 *   or      := and ( OR and )*
 *   and     := primary ( AND primary )*
 *   primary := '(' expr ')' | NAME cmp literal | NAME IN '(' literal ( ',' literal )* ')'
 *            | NAME BETWEEN literal AND literal | NAME LIKE 'prefix%'
 *   cmp     := '=' | '<' | '<=' | '>' | '>='
 *   literal := 'text' (a quote inside doubled: 'it''s') | integer (-?[0-9]+)
 *   NAME    := [A-Za-z_][A-Za-z0-9_]*, at most EXPR_MAX_NAME bytes
 * AND, OR, IN, BETWEEN and LIKE are keywords in any case; blanks (space, tab, CR, LF)
 * separate tokens. BETWEEN a AND b holds for a <= x <= b (nothing when a > b). LIKE takes a
 * quoted literal prefix and one trailing '%', nothing else: '%' or '_' anywhere before it
 * (SQL's wildcards) is refused rather than read as a literal character.
 *
 * Order. An :int attribute's values compare as integers; any other attribute's terms compare
 * bytewise (memcmp, a proper prefix first), whether its literal is quoted or not: x < 10 on a
 * text attribute compares with the two bytes "10". LIKE applies to text attributes only.
 *
 * The plan is a tree of AND and OR nodes over leaves, one leaf per (attribute, literal): IN
 * is an OR of its literals, and nested ANDs (ORs) are flattened into one. Each leaf is a
 * term of one attribute, which the filters, maps and slices hold as a tagged item. A search
 * tests each leaf against a table's filters (or a value's extracted terms) and evaluates the
 * tree over those answers (expr_eval): AND intersects, OR unions, so a table or value is a
 * candidate exactly when the predicate may hold there.
 *
 * Names are bound to the declared attributes after parsing (expr_bind), which also turns
 * each literal into the attribute's term bytes: a text attribute's term is the literal's
 * text (a number as written: 007 stays "007"); an :int attribute's is attr_int_term of the
 * literal's value, so that 7, 007 and '007' are one term. Errors name the 1-based column of
 * the expression where the parse stopped or the bad name or literal starts.
 *
 * Not thread-safe to build; a bound plan is read-only and may be evaluated from any number
 * of threads, each with its own marks.
 */
#ifndef BFH_QUERY_EXPR_H
#define BFH_QUERY_EXPR_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define EXPR_MAX_TEXT (64u << 10) /* bytes of an expression */
#define EXPR_MAX_NAME 64          /* bytes of an attribute name */
#define EXPR_MAX_LEAVES 4096      /* (attribute, literal) pairs, IN lists counted whole */
#define EXPR_MAX_DEPTH 64         /* nested parentheses */

typedef struct expr expr_t;

typedef enum expr_op { EXPR_LEAF = 0, EXPR_AND = 1, EXPR_OR = 2 } expr_op_t;

/* What a leaf asks of a term t of its attribute. */
typedef enum expr_cmp {
  EXPR_EQ = 0,      /* t = term (= and each literal of IN) */
  EXPR_LT = 1,      /* t < term */
  EXPR_LE = 2,      /* t <= term */
  EXPR_GT = 3,      /* t > term */
  EXPR_GE = 4,      /* t >= term */
  EXPR_BETWEEN = 5, /* term <= t <= term_hi */
  EXPR_PREFIX = 6,  /* t starts with term (LIKE 'term%') */
  EXPR_ITEM = 7     /* only in an expanded plan (expr_expand): a range item, not a term */
} expr_cmp_t;

/* One (attribute, comparison) of the plan. */
typedef struct expr_leaf {
  const char *name;       /* the attribute's name, NUL-terminated */
  uint32_t column;        /* where the name starts in the expression, from 1 */
  int attr;               /* the attribute's index once bound; -1 before */
  const uint8_t *term;    /* what the filters hold: the literal before binding, the */
  size_t term_len;        /* attribute's term for it after */
  const uint8_t *literal; /* the literal as written, quotes and doubling undone */
  size_t literal_len;
  int is_number; /* the literal was written as an integer, not quoted */
  expr_cmp_t cmp;
  const uint8_t *term_hi; /* EXPR_BETWEEN: the upper end, as term and literal are the lower */
  size_t term_hi_len;
  const uint8_t *literal_hi;
  size_t literal_hi_len;
  int hi_is_number;
} expr_leaf_t;

/* Parses text (len bytes, not NUL-terminated) into *out. ST_OK; ST_E_INVALID with "column N:
   ..." in err for a bad expression, one over the limits above, or one that is empty;
   ST_E_NOMEM. */
int expr_parse(const char *text, size_t len, expr_t **out, err_t *err);
void expr_destroy(expr_t *e); /* NULL is allowed */

/* The declared attribute called name (name_len bytes): its index (>= 0) and whether it is
   an :int attribute; -1 if there is none. */
typedef int (*expr_lookup_fn)(void *arg, const char *name, size_t name_len, int *is_int);

/* Binds every leaf to its attribute and makes its term. ST_OK; ST_E_INVALID naming the
   column of an unknown attribute, of a literal that is not an integer where the attribute
   is :int, or of LIKE on an :int attribute (so the error is found here, not as a search that
   matches nothing); ST_E_NOMEM. */
int expr_bind(expr_t *e, expr_lookup_fn lookup, void *arg, err_t *err);

size_t expr_leaf_count(const expr_t *e);
const expr_leaf_t *expr_leaf(const expr_t *e, size_t i);

/* The predicate's value when leaf i is true exactly where marks[i] is nonzero. */
int expr_eval(const expr_t *e, const uint8_t *marks);

/* Calls fn once per term the value holds for attribute attr (query/attr.h's attr_extract
   does that for a declared attribute); fn returns nonzero to stop. Returns >= 0, or a
   negative status (ST_E_NOMEM) that ends the evaluation. */
typedef int (*expr_term_fn)(void *arg, const void *term, size_t term_len);
typedef int (*expr_terms_fn)(void *arg, int attr, const void *value, size_t value_len,
                             expr_term_fn fn, void *fn_arg);

/* Whether the value satisfies the bound predicate: each attribute the plan names is
   extracted once through terms, marks (expr_leaf_count bytes, the caller's scratch) record
   which leaves it holds, and the tree is evaluated over them. A value with no term for an
   attribute (a missing field, bad JSON) makes that attribute's leaves false. 1 or 0; a
   negative status from terms. */
int expr_match_value(const expr_t *e, const void *value, size_t value_len, expr_terms_fn terms,
                     void *arg, uint8_t *marks);

/* Does term t[0, len) of leaf l's attribute satisfy l (a bound leaf, not EXPR_ITEM)? */
int expr_leaf_holds(const expr_leaf_t *l, const void *t, size_t len);

/* ---- Expansion: the plan the filters are asked ------------------------------------------
   A leaf that is not an equality (a range, a prefix) is not one item of the filters: the
   filters are asked a set of items per leaf instead (range_cover's probes), any of which
   may stand for it. expr_expand makes that plan: a new tree of the same shape whose leaves
   are items, each original leaf replaced by what fn says it is:
     EXPR_EXPAND_SELF   the leaf itself (an equality: its term is one item)
     EXPR_EXPAND_TRUE   no item can narrow it (every table may hold it)
     n >= 0             an OR of the n items fn wrote to out (n 0: false; nothing can hold it,
                        an empty range)
   Constants are folded: AND drops true children and is false with a false one, OR the
   reverse. A plan that folds to a constant has no leaves; its root is an AND (true) or an OR
   (false) without children, which expr_eval reads as the constant. */
#define EXPR_ITEM_MAX_BYTES 16
typedef struct expr_item {
  expr_cmp_t cmp; /* EXPR_EQ: a term of the attribute; EXPR_ITEM: another item (a range's) */
  uint8_t len;
  uint8_t bytes[EXPR_ITEM_MAX_BYTES];
} expr_item_t;
#define EXPR_EXPAND_SELF (-1)
#define EXPR_EXPAND_TRUE (-2)
typedef int (*expr_expand_fn)(void *arg, const expr_leaf_t *leaf, expr_item_t *out, size_t cap);
#define EXPR_EXPAND_CAP 256 /* the most items fn may write for one leaf */

/* The expansion of the bound e through fn into *out (new, the caller's: expr_destroy; its
   leaves keep the attributes and columns of the leaves they came from, and it is bound but
   for expr_match_value, which it does not serve). ST_OK or ST_E_NOMEM. */
int expr_expand(const expr_t *e, expr_expand_fn fn, void *arg, expr_t **out, err_t *err);
/* Implied conjuncts. An AND may imply more than its children say, given how the items were
   made: a composite of attributes A and B holds a pair's term for each term of A and of B of
   a value (query/terms.h), so A = x AND B = y implies the composite's term for (x, y).
   expr_expand_implied is expr_expand that also calls imply once per AND node of the new plan,
   with the node's equality groups: each child that is an equality on one attribute, or an OR
   of equalities on one attribute (an IN), as in the original (bound) tree; imply may give the
   node more children, each an OR of terms of one attribute (expr_implied_add for each term,
   then expr_implied_end), or none. The caller vouches that each holds wherever the node
   does, so that a search asks the filters for less and misses nothing; validation evaluates
   the predicate as written, never the plan. */
typedef struct expr_eq_group {
  int attr;                       /* the attribute of every leaf */
  const expr_leaf_t *const *leaf; /* its equalities (EXPR_EQ), borrowed for the call */
  size_t n;
} expr_eq_group_t;
typedef struct expr_implied expr_implied_t; /* the AND node being given children */
typedef int (*expr_imply_fn)(void *arg, const expr_eq_group_t *groups, size_t n,
                             expr_implied_t *out);
/* Adds term[0, len) of attribute attr (called name, for messages) to the OR being made for
   out's node. ST_OK or ST_E_NOMEM (then imply returns it). */
int expr_implied_add(expr_implied_t *out, int attr, const char *name, const void *term, size_t len);
/* Ends the OR being made: out's node gets it as one more child (none if it has no term).
   ST_OK or ST_E_NOMEM. */
int expr_implied_end(expr_implied_t *out);
/* expr_expand with imply (NULL: none) called per AND node as above; ST_OK, ST_E_NOMEM or what
   imply returned. */
int expr_expand_implied(const expr_t *e, expr_expand_fn fn, expr_imply_fn imply, void *arg,
                        expr_t **out, err_t *err);

/* 1 when e's tree is a constant (no leaves; see above), *value its value. */
int expr_constant(const expr_t *e, int *value);

/* The plan in a canonical form, for messages and tests: a = 'x' AND (b = 1 OR b >= 2), the
   literals as written (quotes doubled), IN as an OR of =, the ANDs and ORs flattened; LIKE
   and BETWEEN as written, keywords upper case. Writes at most cap bytes with a
   NUL and returns the length the whole form needs, as snprintf. */
size_t expr_format(const expr_t *e, char *buf, size_t cap);

#endif
