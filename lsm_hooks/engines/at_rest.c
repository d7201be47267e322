/* at_rest_id (at_rest.h says why the identity holds). */
#include "lsm_hooks/engines/at_rest.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/path.h"

static int name_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int at_rest_id(const char *path, env_t *io, at_rest_data_file_fn data_file, char **id, err_t *err) {
  *id = NULL;
  char **names = NULL;
  size_t n = 0;
  int rc = env_list_dir(io, path, &names, &n, err);
  if (rc != BFH_OK) return rc;
  size_t kept = 0;
  for (size_t i = 0; i < n; i++) {
    if (data_file(names[i])) {
      char *keep = names[i];
      names[i] = names[kept];
      names[kept++] = keep;
    }
  }
  if (kept > 1) qsort(names, kept, sizeof *names, name_cmp);
  /* One line a file: "NAME SIZE DEV:INO\n". */
  size_t cap = 1, len = 0;
  for (size_t i = 0; i < kept; i++) cap += strlen(names[i]) + 3 * 21 + 4;
  char *out = malloc(cap);
  if (!out) rc = err_set(err, BFH_E_NOMEM, "%s: no memory for the list of its files", path);
  if (out) out[0] = '\0';
  for (size_t i = 0; rc == BFH_OK && i < kept; i++) {
    char *p = path_join(path, names[i]);
    uint64_t size = 0;
    env_file_id_t fid = {0, 0};
    rc = p ? env_path_stat(io, p, &size, &fid, err)
           : err_set(err, BFH_E_NOMEM, "%s/%s: no memory for its path", path, names[i]);
    if (rc == BFH_NOT_FOUND) /* deleted while listed: no database at rest */
      rc = err_set(err, BFH_E_BUSY, "%s: changed while its files were listed", path);
    if (rc == BFH_OK)
      len += (size_t)snprintf(out + len, cap - len, "%s %" PRIu64 " %" PRIu64 ":%" PRIu64 "\n",
                              names[i], size, fid.dev, fid.ino);
    free(p);
  }
  env_names_free(names, n);
  if (rc != BFH_OK) {
    free(out);
    return rc;
  }
  *id = out;
  return BFH_OK;
}
