/* ldb_sstables: see leveldb_format/ldb_sstables.h for the text format. */
#include "bfh.h"
#include "lsm_hooks/leveldb_format/ldb_sstables.h"

#include <stdlib.h>
#include <string.h>

/* Reads decimal digits at *p into *v; returns 0 if there are none or they overflow. */
static int get_number(const char **p, uint64_t *v) {
  const char *s = *p;
  uint64_t x = 0;
  if (*s < '0' || *s > '9') return 0;
  while (*s >= '0' && *s <= '9') {
    uint64_t d = (uint64_t)(*s - '0');
    if (x > (UINT64_MAX - d) / 10) return 0;
    x = x * 10 + d;
    s++;
  }
  *p = s;
  *v = x;
  return 1;
}

int ldb_sstables_parse(const char *text, ldb_sstable_t **out, size_t *n, err_t *err) {
  *out = NULL;
  *n = 0;
  size_t cap = 0, cnt = 0, line = 0;
  ldb_sstable_t *v = NULL;
  int level = -1;
  const char *p = text;
  while (*p) {
    line++;
    const char *eol = strchr(p, '\n');
    if (!eol) eol = p + strlen(p);
    const char *q = p;
    uint64_t a, b;
    if (strncmp(q, "--- level ", 10) == 0) {
      q += 10;
      if (!get_number(&q, &a) || a >= LDB_SSTABLES_LEVELS || strncmp(q, " ---", 4) != 0) goto bad;
      level = (int)a;
    } else if (q[0] == ' ' && level >= 0) {
      q++;
      if (!get_number(&q, &a) || *q++ != ':' || !get_number(&q, &b) || *q != '[') goto bad;
      if (cnt == cap) {
        size_t c = cap ? 2 * cap : 64;
        ldb_sstable_t *nv = realloc(v, c * sizeof *nv);
        if (!nv) {
          free(v);
          return err_set(err, BFH_E_NOMEM, "leveldb.sstables: no memory");
        }
        v = nv;
        cap = c;
      }
      v[cnt++] = (ldb_sstable_t){.level = level, .number = a, .size = b};
    } else if (eol != p) {
      goto bad;
    }
    p = *eol ? eol + 1 : eol;
  }
  *out = v;
  *n = cnt;
  return BFH_OK;
bad:
  free(v);
  return err_set(err, BFH_E_CORRUPT, "leveldb.sstables: line %zu does not parse", line);
}
