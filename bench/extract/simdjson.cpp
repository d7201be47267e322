// extract_bench with simdjson (C++; its DOM API, which checks the whole document as the C
// libraries do): the value is copied into a buffer with SIMDJSON_PADDING bytes after it, as
// simdjson requires of its input; numbers are printed back (the DOM keeps no text).
#include <simdjson.h>

#include <cstdio>
#include <cstring>
#include <string>

extern "C" {
#include "bench/extract/extract.h"
}

namespace {

simdjson::dom::parser parser;
std::string padded;

size_t term(simdjson::dom::element o, uint64_t *sink) {
  char num[64];
  switch (o.type()) {
    case simdjson::dom::element_type::STRING: {
      std::string_view s = o.get_string().value_unsafe();
      *sink += extract_touch(s.data(), s.size());
      return 1;
    }
    case simdjson::dom::element_type::INT64:
      *sink += extract_touch(
          num, (size_t)snprintf(num, sizeof num, "%lld", (long long)o.get_int64().value_unsafe()));
      return 1;
    case simdjson::dom::element_type::UINT64:
      *sink +=
          extract_touch(num, (size_t)snprintf(num, sizeof num, "%llu",
                                              (unsigned long long)o.get_uint64().value_unsafe()));
      return 1;
    case simdjson::dom::element_type::DOUBLE:
      *sink += extract_touch(
          num, (size_t)snprintf(num, sizeof num, "%.17g", o.get_double().value_unsafe()));
      return 1;
    case simdjson::dom::element_type::BOOL:
      *sink += o.get_bool().value_unsafe() ? extract_touch("true", 4) : extract_touch("false", 5);
      return 1;
    case simdjson::dom::element_type::NULL_VALUE:
      *sink += extract_touch("null", 4);
      return 1;
    default:
      return 0;
  }
}

size_t extract(const char *v, size_t n, const extract_path_t *p, uint64_t *sink) {
  if (padded.size() < n + simdjson::SIMDJSON_PADDING) padded.resize(n + simdjson::SIMDJSON_PADDING);
  memcpy(&padded[0], v, n);
  simdjson::dom::element o;
  if (parser.parse(padded.data(), n, false).get(o)) return 0;
  for (int i = 0; i < p->nseg; i++)
    if (!o.is_object() || o.at_key(p->seg[i]).get(o)) return 0;
  simdjson::dom::array a;
  if (!o.get_array().get(a)) {
    size_t terms = 0;
    for (simdjson::dom::element e : a) terms += term(e, sink);
    return terms;
  }
  return term(o, sink);
}

#define STR2(x) #x
#define STR(x) STR2(x)
const char *version() {
  return STR(SIMDJSON_VERSION);
}

}  // namespace

extern "C" const extract_lib_t extract_simdjson = {"simdjson", version, extract};
