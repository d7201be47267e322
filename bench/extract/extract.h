/* The JSON libraries extract_bench compares, one file each (their names clash: json-c and
 * jansson both define json_object_get), behind one function type.
 */
#ifndef BFH_BENCH_EXTRACT_EXTRACT_H
#define BFH_BENCH_EXTRACT_EXTRACT_H

#include <stddef.h>
#include <stdint.h>

#define EXTRACT_MAX_SEGS 4

typedef struct extract_path {
  const char *text; /* "address.city" */
  const char *seg[EXTRACT_MAX_SEGS];
  int nseg;
} extract_path_t;

/* Parses the JSON value v[0,n) (one call, the length given: v is not NUL-terminated), walks
   the path through objects, and reads each term (a string's content, a scalar's text, each
   element of an array) into *sink; frees the document. Returns the number of terms (0 for
   a value that is not JSON or lacks the path). */
typedef size_t (*extract_fn)(const char *v, size_t n, const extract_path_t *p, uint64_t *sink);

typedef struct extract_lib {
  const char *name;
  const char *(*version)(void);
  extract_fn extract;
} extract_lib_t;

extern const extract_lib_t extract_jsonc, extract_jansson, extract_cjson;
/* simdjson, a C++ library, when its Debian package is installed (BFH_BENCH_SIMDJSON). */
extern const extract_lib_t extract_simdjson;

/* What a term costs the caller: its bytes are read, as a hash would read them. */
static inline uint64_t extract_touch(const char *t, size_t n) {
  uint64_t h = n;
  for (size_t i = 0; i < n; i++) h = h * 31 + (uint8_t)t[i];
  return h;
}

#endif
