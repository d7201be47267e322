/* expr: the predicate language of a value query, parsed once into a plan.
 *
 *   expr    := or
 *   or      := and ( OR and )*
 *   and     := primary ( AND primary )*
 *   primary := '(' expr ')' | NAME '=' literal | NAME IN '(' literal ( ',' literal )* ')'
 *   literal := 'text' (a quote inside doubled: 'it''s') | integer (-?[0-9]+)
 *   NAME    := [A-Za-z_][A-Za-z0-9_]*, at most EXPR_MAX_NAME bytes
 * AND, OR and IN are keywords in any case; blanks (space, tab, CR, LF) separate tokens.
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

/* One (attribute, term) of the plan. */
typedef struct expr_leaf {
  const char *name;       /* the attribute's name, NUL-terminated */
  uint32_t column;        /* where the name starts in the expression, from 1 */
  int attr;               /* the attribute's index once bound; -1 before */
  const uint8_t *term;    /* what the filters hold: the literal before binding, the */
  size_t term_len;        /* attribute's term for it after */
  const uint8_t *literal; /* the literal as written, quotes and doubling undone */
  size_t literal_len;
  int is_number; /* the literal was written as an integer, not quoted */
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
   column of an unknown attribute or of a literal that is not an integer where the attribute
   is :int (so the error is found here, not as a search that matches nothing); ST_E_NOMEM. */
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

/* The plan in a canonical form, for messages and tests: a = 'x' AND (b = 1 OR b = 2), the
   literals as written (quotes doubled), the ANDs and ORs flattened. Writes at most cap bytes with a
   NUL and returns the length the whole form needs, as snprintf. */
size_t expr_format(const expr_t *e, char *buf, size_t cap);

#endif
