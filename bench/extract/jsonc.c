/* extract_bench with json-c: one tokener in strict mode, reset per value (as query/attr.c). */
#include <json-c/json.h>
#include <string.h>

#include "bench/extract/extract.h"

static json_tokener *tok;

static size_t term(json_object *o, uint64_t *sink) {
  switch (json_object_get_type(o)) {
    case json_type_string:
      *sink += extract_touch(json_object_get_string(o), (size_t)json_object_get_string_len(o));
      return 1;
    case json_type_int:
    case json_type_double:
    case json_type_boolean: {
      const char *s = json_object_get_string(o);
      *sink += extract_touch(s, strlen(s));
      return 1;
    }
    case json_type_null:
      *sink += extract_touch("null", 4);
      return 1;
    default:
      return 0;
  }
}

static size_t extract(const char *v, size_t n, const extract_path_t *p, uint64_t *sink) {
  if (!tok) {
    tok = json_tokener_new();
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
  }
  json_tokener_reset(tok);
  json_object *root = json_tokener_parse_ex(tok, v, (int)n), *o = root;
  if (!root || json_tokener_get_parse_end(tok) != n) {
    json_object_put(root);
    return 0;
  }
  size_t terms = 0;
  for (int i = 0; i < p->nseg && o; i++)
    if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, p->seg[i], &o))
      o = NULL;
  if (o && json_object_is_type(o, json_type_array)) {
    size_t k = json_object_array_length(o);
    for (size_t i = 0; i < k; i++) terms += term(json_object_array_get_idx(o, i), sink);
  } else if (o) {
    terms = term(o, sink);
  }
  json_object_put(root);
  return terms;
}

const extract_lib_t extract_jsonc = {"json-c", json_c_version, extract};
