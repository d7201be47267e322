/* dynlib: a shared library bound at its first use rather than at process start.
 *
 * Linking librocksdb makes every bfh process pay its dynamic loading (the symbols and
 * relocations of a large C++ library, and the C++ runtime) at start, several times what an
 * own-engine search costs, although most processes never open a stock engine; libleveldb,
 * libsnappy and the compressors of RocksDB's tables cost less, for the same reason (doc/lsm.md
 * "Performance goals"). So the stock engines and the readers of their tables reach each
 * library through a table of function pointers,
 * filled here at first use, after SQLite's loadable extensions (sqlite3ext.h: a struct of
 * pointers and a #define per API name, so call sites read as ordinary calls).
 *
 * A binding is loaded once per process and never unloaded (the C++ libraries keep static
 * state). Thread-safe: concurrent first uses wait for one load.
 */
#ifndef BFH_UTIL_DYNLIB_H
#define BFH_UTIL_DYNLIB_H

#include <pthread.h>
#include <stddef.h>

#include "util/err.h"

typedef struct dynlib {
  const char *soname;        /* "librocksdb.so.7.8" */
  const char *package;       /* the Debian package that installs it, for the error message */
  const char *const *names;  /* the symbols to bind, in the order of fns */
  size_t count;
  void **fns;                /* count pointers, filled by dynlib_bind */
  /* private */
  pthread_once_t once;
  int status;
  char why[256];
} dynlib_t;

/* The table of an API's functions, from LIST(X, P), which expands X(P, name) for each function
   P_name it lists: DYNLIB_TABLE(LIST, P) is a union whose f.name is the typed pointer to P_name
   and whose p[] is the array dynlib_bind fills, in LIST's order, from the names DYNLIB_NAME
   makes of the same list ({LIST(DYNLIB_NAME, P)}). An API whose functions share no prefix
   (zlib's inflate, inflateEnd) lists each function by its whole name and uses the BARE forms:
   DYNLIB_BARE_TABLE(LIST) and DYNLIB_BARE_DEFINE, with f.name the pointer to name itself. */
#define DYNLIB_FIELD(P, name) __typeof__(P##_##name) *name;
#define DYNLIB_BARE_FIELD(P, name) __typeof__(name) *name;
#define DYNLIB_ONE(P, name) +1
#define DYNLIB_NAME(P, name) #P "_" #name,
#define DYNLIB_BARE_NAME(P, name) #name,
#define DYNLIB_TABLE_OF(LIST, P, FIELD) \
  union {                               \
    struct {                            \
      LIST(FIELD, P)                    \
    } f;                                \
    void *p[0 LIST(DYNLIB_ONE, P)];     \
  }
#define DYNLIB_TABLE(LIST, P) DYNLIB_TABLE_OF(LIST, P, DYNLIB_FIELD)
#define DYNLIB_BARE_TABLE(LIST) DYNLIB_TABLE_OF(LIST, , DYNLIB_BARE_FIELD)

#define DYNLIB_INIT(soname, package, names, fns)                                            \
  {(soname), (package), (names), sizeof(names) / sizeof((names)[0]), (void **)(fns),      \
   PTHREAD_ONCE_INIT, 0, ""}

/* Defines, for a table declared as DYNLIB_TABLE(LIST, P) and named table, the names and the
   binding of its library, and `int table_bind(err_t *err)`, which calls dynlib_bind.
   DYNLIB_BARE_DEFINE(table, LIST, soname, package): the same for a DYNLIB_BARE_TABLE. */
#define DYNLIB_DEFINE_OF(table, LIST, P, NAME, soname, package)                              \
  static const char *const table##_names[] = {LIST(NAME, P)};                                \
  _Static_assert(sizeof table##_names / sizeof table##_names[0] ==                           \
                     sizeof table.p / sizeof table.p[0],                                     \
                 "one name per function pointer");                                           \
  static dynlib_t table##_lib = DYNLIB_INIT(soname, package, table##_names, table.p);        \
  int table##_bind(err_t *err) { return dynlib_bind(&table##_lib, err); }
#define DYNLIB_DEFINE(table, LIST, P, soname, package) \
  DYNLIB_DEFINE_OF(table, LIST, P, DYNLIB_NAME, soname, package)
#define DYNLIB_BARE_DEFINE(table, LIST, soname, package) \
  DYNLIB_DEFINE_OF(table, LIST, , DYNLIB_BARE_NAME, soname, package)

/* Loads lib->soname and binds every name into lib->fns, once per process. ST_OK, or
 * ST_E_UNSUPPORTED with a message naming the library, the Debian package and the loader's
 * reason ("librocksdb.so.7.8 (Debian package librocksdb7.8): cannot open shared object file");
 * a later call returns the same result. */
int dynlib_bind(dynlib_t *lib, err_t *err);

#endif
