/* The reader of the "rocksdb.sstables" property; see rdb_sstables.h. */
#include "lsm_hooks/rocksdb_format/rdb_sstables.h"

#include <stddef.h>

/* A decimal number at *p (at least one digit, no sign, no overflow) into *v, *p moved past
   it: 1, or 0 with *p unchanged. */
static int get_number(const char **p, uint64_t *v) {
  const char *q = *p;
  uint64_t x = 0;
  for (; *q >= '0' && *q <= '9'; q++) {
    uint64_t d = (uint64_t)(*q - '0');
    if (x > (UINT64_MAX - d) / 10) return 0;
    x = x * 10 + d;
  }
  if (q == *p) return 0;
  *p = q;
  *v = x;
  return 1;
}

/* The literal s at *p, *p moved past it: 1, or 0. */
static int get_literal(const char **p, const char *s) {
  const char *q = *p;
  for (; *s; s++, q++)
    if (*q != *s) return 0;
  *p = q;
  return 1;
}

/* The table line at p: 1 with its number and largest sequence, or 0. */
static int parse_line(const char *p, uint64_t *number, uint64_t *largest) {
  uint64_t size, smallest;
  return get_literal(&p, " ") && get_number(&p, number) && get_literal(&p, ":") &&
         get_number(&p, &size) && get_literal(&p, "[") && get_number(&p, &smallest) &&
         get_literal(&p, " .. ") && get_number(&p, largest) && get_literal(&p, "]");
}

uint64_t rdb_sstables_bounds(const char *text,
                             void (*fn)(void *arg, uint64_t number, uint64_t largest_seq),
                             void *arg) {
  uint64_t n = 0;
  for (const char *line = text; line && *line;) {
    uint64_t number, largest;
    if (parse_line(line, &number, &largest)) {
      fn(arg, number, largest);
      n++;
    }
    while (*line && *line != '\n') line++;
    if (*line) line++;
  }
  return n;
}
