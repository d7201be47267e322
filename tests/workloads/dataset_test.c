/* Tests of workloads/dataset.h: each kind parsed from chosen text (quotes and backslashes
   escaped in JSON, CRLF, blank and unreadable lines skipped and counted, RFC 4180 quoting
   in oui.csv, the header skipped), keys past the count repeating with the cycle appended,
   and the real files from Debian's packages when they are installed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "workloads/dataset.h"

static dataset_t *parse(dataset_kind_t kind, const char *text) {
  dataset_t *d = NULL;
  err_t err;
  err_clear(&err);
  assert_int_equal(dataset_parse(kind, text, strlen(text), &d, &err), ST_OK);
  return d;
}

/* Record i's key and value must be want_key and want_val. */
static void assert_record(const dataset_t *d, uint64_t i, const char *want_key,
                          const char *want_val) {
  char key[DATASET_MAX_KEY + 1];
  size_t kn, vn;
  const char *val;
  dataset_record(d, i, key, &kn, &val, &vn);
  key[kn] = '\0';
  assert_string_equal(key, want_key);
  if (vn != strlen(want_val) || memcmp(val, want_val, vn) != 0)
    fail_msg("record %llu: value '%.*s', not '%s'", (unsigned long long)i, (int)vn, val,
             want_val);
}

static void test_words(void **state) {
  (void)state;
  dataset_t *d = parse(DATASET_WORDS, "Aachen\r\n\nO'Neil\nsay \"hi\\\"\n\xff\xfe\ncafé\n");
  assert_int_equal(dataset_count(d), 4);
  assert_int_equal(dataset_skipped(d), 1); /* the line that is not UTF-8 */
  assert_record(d, 0, "w0", "{\"word\":\"Aachen\",\"len\":6,\"initial\":\"a\"}");
  assert_record(d, 1, "w1", "{\"word\":\"O'Neil\",\"len\":6,\"initial\":\"o\"}");
  assert_record(d, 2, "w2", "{\"word\":\"say \\\"hi\\\\\\\"\",\"len\":9,\"initial\":\"s\"}");
  assert_record(d, 3, "w3", "{\"word\":\"café\",\"len\":5,\"initial\":\"c\"}");
  assert_record(d, 9, "w1.2", "{\"word\":\"O'Neil\",\"len\":6,\"initial\":\"o\"}");
  dataset_destroy(d);
}

static void test_oui(void **state) {
  (void)state;
  dataset_t *d = parse(DATASET_OUI,
                       "Registry,Assignment,Organization Name,Organization Address\n"
                       "MA-L,002272,American Micro-Fuel Device Corp.,2181 Buchanan Loop US \n"
                       "MA-L,F4BD9E,\"Cisco Systems, Inc\",\"80 West Tasman\nSan Jose\"\r\n"
                       "no second field\n"
                       "MA-S,002272,a second record of one assignment,\n"
                       "MA-L,ABCDEF,\"unclosed");
  assert_int_equal(dataset_count(d), 2);
  assert_int_equal(dataset_skipped(d), 3);
  assert_record(d, 0, "o002272", "MA-L,002272,American Micro-Fuel Device Corp.,2181 Buchanan Loop US");
  assert_record(d, 1, "oF4BD9E", "MA-L,F4BD9E,\"Cisco Systems, Inc\",\"80 West Tasman\nSan Jose\"");
  dataset_destroy(d);
}

static void test_unicode(void **state) {
  (void)state;
  dataset_t *d = parse(DATASET_UNICODE,
                       "0041;LATIN CAPITAL LETTER A;Lu;0;L;;;;;N;;;;0061;\n"
                       "0300;COMBINING GRAVE ACCENT;Mn;230;NSM;;;;;N;NON-SPACING GRAVE;;;;\n"
                       "ZZZZ;BAD;Lu;0;L;;;;;N;;;;;\n"
                       "110000;TOO HIGH;Lu;0;L;;;;;N;;;;;\n");
  assert_int_equal(dataset_count(d), 2);
  assert_int_equal(dataset_skipped(d), 2);
  assert_record(d, 0, "u0041",
                "{\"cp\":65,\"name\":\"LATIN CAPITAL LETTER A\",\"cat\":\"Lu\",\"ccc\":0,\"bidi\":\"L\"}");
  assert_record(d, 1, "u0300",
                "{\"cp\":768,\"name\":\"COMBINING GRAVE ACCENT\",\"cat\":\"Mn\",\"ccc\":230,"
                "\"bidi\":\"NSM\"}");
  dataset_destroy(d);
}

static void test_wordnet(void **state) {
  (void)state;
  dataset_t *d = parse(DATASET_WORDNET,
                       "  1 This software and database is being provided to you, the LICENSEE\n"
                       "00002137 03 n 02 abstraction 0 abstract_entity 0 001 @ 00001740 n 0000 | "
                       "a general \"concept\"  \n"
                       "00001740 03 n 01 entity 0 000 no gloss bar\n"
                       "0000X740 03 n 01 entity 0 000 | bad offset\n"
                       "00001741 03 n 03 entity 0 000 | fewer words than w_cnt\n"
                       "00002137 05 n 01 again 0 000 | a repeated offset\n");
  assert_int_equal(dataset_count(d), 1);
  assert_int_equal(dataset_skipped(d), 4); /* the license line is no record and not counted */
  assert_record(d, 0, "n00002137",
                "{\"word\":\"abstraction\",\"words\":[\"abstraction\",\"abstract entity\"],"
                "\"lex\":3,\"ptrs\":1,\"gloss\":\"a general \\\"concept\\\"\"}");
  dataset_destroy(d);
}

static void test_names_and_missing_file(void **state) {
  (void)state;
  dataset_kind_t k;
  assert_int_equal(dataset_kind_parse("oui", &k), ST_OK);
  assert_int_equal(k, DATASET_OUI);
  assert_int_equal(dataset_kind_parse("ycsb", &k), ST_E_INVALID);
  size_t n;
  assert_int_equal(dataset_attrs(DATASET_UNICODE, &n)[1][0], 'n');
  assert_int_equal(n, 5);
  dataset_t *d = NULL;
  err_t err;
  err_clear(&err);
  assert_int_equal(dataset_open(DATASET_WORDS, "/nonexistent/words", &d, &err), ST_E_IO);
  assert_null(d);
  assert_non_null(strstr(err.msg, "wamerican-insane"));
}

/* The installed files (scripts/install-deps.sh installs their packages): every line read. */
static void test_debian_files(void **state) {
  (void)state;
  const uint64_t at_least[DATASET_KINDS] = {600000, 30000, 30000, 80000};
  for (int k = 0; k < DATASET_KINDS; k++) {
    if (access(dataset_default_path((dataset_kind_t)k), R_OK) != 0) {
      print_message("skipped: %s is not installed\n", dataset_default_path((dataset_kind_t)k));
      continue;
    }
    dataset_t *d = NULL;
    err_t err;
    err_clear(&err);
    if (dataset_open((dataset_kind_t)k, NULL, &d, &err) != ST_OK) fail_msg("%s", err.msg);
    print_message("%s: %llu records, %llu skipped\n", dataset_name((dataset_kind_t)k),
                  (unsigned long long)dataset_count(d), (unsigned long long)dataset_skipped(d));
    assert_true(dataset_count(d) >= at_least[k]);
    assert_true(dataset_skipped(d) * 1000 <= dataset_count(d));
    dataset_destroy(d);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_words),
      cmocka_unit_test(test_wordnet),
      cmocka_unit_test(test_oui),
      cmocka_unit_test(test_unicode),
      cmocka_unit_test(test_names_and_missing_file),
      cmocka_unit_test(test_debian_files),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
