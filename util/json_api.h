/* json-c's API, bound at the first JSON value an attribute extracts rather than linked: only
 * a database that declares a json:PATH attribute parses JSON, and every other bfh process
 * would map and relocate the library at start for nothing (util/dynlib.h). query/attr.c
 * includes this header and calls jsonc_api_bind before its first call; the names it calls
 * (json_tokener_parse_ex ...) are the table's pointers. */
#ifndef BFH_UTIL_JSON_API_H
#define BFH_UTIL_JSON_API_H

#include <json-c/json.h>

#include "util/dynlib.h"

#define JSONC_API_FUNCTIONS(X, P)                                                             \
  X(P, object_array_get_idx) X(P, object_array_length) X(P, object_get_boolean)               \
  X(P, object_get_int64) X(P, object_get_string) X(P, object_get_string_len)                  \
  X(P, object_get_type) X(P, object_get_uint64) X(P, object_is_type) X(P, object_object_get_ex) \
  X(P, object_put) X(P, tokener_free) X(P, tokener_get_parse_end) X(P, tokener_new_ex)        \
  X(P, tokener_parse_ex) X(P, tokener_reset) X(P, tokener_set_flags)

typedef DYNLIB_TABLE(JSONC_API_FUNCTIONS, json) jsonc_api_fns_t;

extern jsonc_api_fns_t jsonc_api;

/* Binds libjson-c once per process (dynlib_bind): ST_OK, or ST_E_UNSUPPORTED naming the
   library and its Debian package. */
int jsonc_api_bind(err_t *err);

#define json_object_array_get_idx jsonc_api.f.object_array_get_idx
#define json_object_array_length jsonc_api.f.object_array_length
#define json_object_get_boolean jsonc_api.f.object_get_boolean
#define json_object_get_int64 jsonc_api.f.object_get_int64
#define json_object_get_string jsonc_api.f.object_get_string
#define json_object_get_string_len jsonc_api.f.object_get_string_len
#define json_object_get_type jsonc_api.f.object_get_type
#define json_object_get_uint64 jsonc_api.f.object_get_uint64
#define json_object_is_type jsonc_api.f.object_is_type
#define json_object_object_get_ex jsonc_api.f.object_object_get_ex
#define json_object_put jsonc_api.f.object_put
#define json_tokener_free jsonc_api.f.tokener_free
#define json_tokener_get_parse_end jsonc_api.f.tokener_get_parse_end
#define json_tokener_new_ex jsonc_api.f.tokener_new_ex
#define json_tokener_parse_ex jsonc_api.f.tokener_parse_ex
#define json_tokener_reset jsonc_api.f.tokener_reset
#define json_tokener_set_flags jsonc_api.f.tokener_set_flags

#endif
