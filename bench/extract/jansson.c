/* extract_bench with jansson: json_loadb (numbers are printed back: jansson keeps no text).
 *
 * json-c defines json_object_get too, and the program's one reference to the name binds to
 * json-c's: jansson's is looked up by its symbol version instead.
 */
#include <dlfcn.h>
#include <jansson.h>
#include <stdio.h>

#include "bench/extract/extract.h"

static size_t term(json_t *o, uint64_t *sink) {
  char num[64];
  switch (json_typeof(o)) {
    case JSON_STRING:
      *sink += extract_touch(json_string_value(o), json_string_length(o));
      return 1;
    case JSON_INTEGER:
      *sink += extract_touch(
          num, (size_t)snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(o)));
      return 1;
    case JSON_REAL:
      *sink += extract_touch(num, (size_t)snprintf(num, sizeof num, "%.17g", json_real_value(o)));
      return 1;
    case JSON_TRUE:
      *sink += extract_touch("true", 4);
      return 1;
    case JSON_FALSE:
      *sink += extract_touch("false", 5);
      return 1;
    case JSON_NULL:
      *sink += extract_touch("null", 4);
      return 1;
    default:
      return 0;
  }
}

static json_t *(*object_get)(const json_t *, const char *);

static size_t extract(const char *v, size_t n, const extract_path_t *p, uint64_t *sink) {
  if (!object_get) {
    *(void **)&object_get = dlvsym(RTLD_DEFAULT, "json_object_get", "libjansson.so.4");
    if (!object_get) return 0;
  }
  json_t *root = json_loadb(v, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL), *o = root;
  if (!root) return 0;
  size_t terms = 0;
  for (int i = 0; i < p->nseg && o; i++) o = json_is_object(o) ? object_get(o, p->seg[i]) : NULL;
  if (o && json_is_array(o)) {
    size_t k = json_array_size(o);
    for (size_t i = 0; i < k; i++) terms += term(json_array_get(o, i), sink);
  } else if (o) {
    terms = term(o, sink);
  }
  json_decref(root);
  return terms;
}

const extract_lib_t extract_jansson = {"jansson", jansson_version_str, extract};
