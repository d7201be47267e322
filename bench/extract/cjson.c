/* extract_bench with cJSON: cJSON_ParseWithLengthOpts (numbers are printed back: cJSON keeps
   a double only). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "bench/extract/extract.h"

static size_t term(const cJSON *o, uint64_t *sink) {
  char num[64];
  if (cJSON_IsString(o)) {
    *sink += extract_touch(o->valuestring, strlen(o->valuestring));
    return 1;
  }
  if (cJSON_IsNumber(o)) {
    *sink += extract_touch(num, (size_t)snprintf(num, sizeof num, "%.17g", o->valuedouble));
    return 1;
  }
  if (cJSON_IsTrue(o)) {
    *sink += extract_touch("true", 4);
    return 1;
  }
  if (cJSON_IsFalse(o)) {
    *sink += extract_touch("false", 5);
    return 1;
  }
  if (cJSON_IsNull(o)) {
    *sink += extract_touch("null", 4);
    return 1;
  }
  return 0;
}

static size_t extract(const char *v, size_t n, const extract_path_t *p, uint64_t *sink) {
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(v, n, &end, 0), *o = root;
  if (!root || end != v + n) {
    cJSON_Delete(root);
    return 0;
  }
  size_t terms = 0;
  for (int i = 0; i < p->nseg && o; i++)
    o = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, p->seg[i]) : NULL;
  if (o && cJSON_IsArray(o)) {
    const cJSON *e;
    cJSON_ArrayForEach(e, o) terms += term(e, sink);
  } else if (o) {
    terms = term(o, sink);
  }
  cJSON_Delete(root);
  return terms;
}

const extract_lib_t extract_cjson = {"cjson", cJSON_Version, extract};
