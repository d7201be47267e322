/* The BFH-ATTRS file and the declarations of bfh_options: see db_attrs.h. */
#include "api/db_attrs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/terms.h"
#include "util/path.h"

int db_attrs_parse(const bfh_attribute *attrs, size_t n, attr_spec_t **specs, err_t *err) {
  *specs = NULL;
  if (n == 0) return BFH_OK;
  if (!attrs)
    return err_set(err, BFH_E_INVALID, "attributes: attribute_count is %zu but attributes is NULL",
                   n);
  if (n > TERMS_MAX_ATTRS)
    return err_set(err, BFH_E_INVALID, "attributes: %zu declared; at most %d", n, TERMS_MAX_ATTRS);
  attr_spec_t *out = calloc(n, sizeof *out);
  if (!out) return err_set(err, BFH_E_NOMEM, "attributes: out of memory");
  int rc = BFH_OK;
  size_t done = 0;
  for (; done < n && rc == BFH_OK; done++) {
    const bfh_attribute *a = &attrs[done];
    if (!a->name || !a->extractor) {
      rc = err_set(err, BFH_E_INVALID, "attributes[%zu]: its %s is NULL", done,
                   a->name ? "extractor" : "name");
      break;
    }
    size_t len = strlen(a->name) + 1 + strlen(a->extractor);
    if (len > ATTR_MAX_DECL_BYTES) {
      rc = err_set(err, BFH_E_INVALID, "attributes[%zu]: a declaration of %zu bytes; at most %d",
                   done, len, ATTR_MAX_DECL_BYTES);
      break;
    }
    char decl[ATTR_MAX_DECL_BYTES + 1];
    if (snprintf(decl, sizeof decl, "%s=%s", a->name, a->extractor) >= (int)sizeof decl)
      abort(); /* len was checked above */
    /* A name that holds '=' would read as name and extractor elsewhere: refused here. */
    if (strchr(a->name, '=')) {
      rc = err_set(err, BFH_E_INVALID, "attribute '%s': the name holds '='", decl);
      break;
    }
    rc = attr_spec_parse(decl, &out[done], err);
    if (rc != BFH_OK) break;
    for (size_t j = 0; j < done; j++)
      if (strcmp(out[j].name, out[done].name) == 0) {
        attr_spec_release(&out[done]);
        rc = err_set(err, BFH_E_INVALID, "attributes: '%s' is declared twice", out[j].name);
        break;
      }
  }
  if (rc == BFH_OK) rc = attr_specs_check(out, n, err); /* each composite's members */
  if (rc != BFH_OK) {
    attr_specs_free(out, done); /* those parsed before the failure */
    return rc;
  }
  *specs = out;
  return BFH_OK;
}

int db_attrs_read(env_t *io, const char *dir, attr_spec_t **specs, size_t *n, err_t *err) {
  *specs = NULL;
  *n = 0;
  char *path = path_join(dir, DB_ATTRS_FILE);
  if (!path) return err_set(err, BFH_E_NOMEM, "%s/%s: no memory for its path", dir, DB_ATTRS_FILE);
  if (!env_exists(io, path)) { /* no I/O call: nothing to fault */
    free(path);
    return BFH_NOT_FOUND;
  }
  void *data = NULL;
  size_t len = 0;
  int rc = env_read_file(io, path, &data, &len, err);
  if (rc != BFH_OK) {
    if (rc != BFH_E_NOMEM && !env_exists(io, path)) rc = BFH_NOT_FOUND;
  } else if (len < 4 || memcmp(data, DB_ATTRS_MAGIC, 4) != 0) {
    rc = err_set(err, BFH_E_CORRUPT, "%s: bad magic at offset 0", path);
  } else {
    rc = attr_specs_decode((const uint8_t *)data + 4, len - 4, path, specs, n, err);
    /* (its offsets count from the list, 4 bytes into the file) */
  }
  free(data);
  free(path);
  return rc;
}

int db_attrs_write(env_t *io, const char *dir, const attr_spec_t *specs, size_t n, err_t *err) {
  uint8_t *list = NULL;
  size_t list_len = 0;
  int rc = attr_specs_encode(specs, n, &list, &list_len, err);
  if (rc != BFH_OK) return rc;
  char *path = path_join(dir, DB_ATTRS_FILE);
  char *tmp = path_fmt("%s/%s.tmp", dir, DB_ATTRS_FILE);
  uint8_t *buf = malloc(4 + list_len);
  if (!path || !tmp || !buf) {
    rc = err_set(err, BFH_E_NOMEM, "%s/%s: out of memory", dir, DB_ATTRS_FILE);
  } else {
    memcpy(buf, DB_ATTRS_MAGIC, 4);
    memcpy(buf + 4, list, list_len);
    rc = env_write_file(io, tmp, buf, 4 + list_len, err); /* create, write, fdatasync */
    if (rc == BFH_OK) rc = env_rename(io, tmp, path, err);
    if (rc != BFH_OK)
      (void)env_unlink(io, tmp, NULL);
    else
      rc = env_sync_dir(io, dir, err);
  }
  free(buf);
  free(list);
  free(path);
  free(tmp);
  return rc;
}

static const attr_spec_t *by_name(const attr_spec_t *specs, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(specs[i].name, name) == 0) return &specs[i];
  return NULL;
}

/* "a=json:a, b=csv:2", or "none", into buf. */
static const char *listed(const attr_spec_t *specs, size_t n, char *buf, size_t cap) {
  size_t len = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < n && len + 1 < cap; i++) {
    if (i) len += (size_t)snprintf(buf + len, cap - len, ", ");
    if (len + 1 < cap) len += attr_spec_format(&specs[i], buf + len, cap - len);
  }
  return n ? buf : "none";
}

int db_attrs_check(const char *dir, const attr_spec_t *stored, size_t ns, const attr_spec_t *want,
                   size_t nw, err_t *err) {
  char has[512], a[ATTR_MAX_DECL_BYTES + 1], b[ATTR_MAX_DECL_BYTES + 1];
  for (size_t i = 0; i < nw; i++) {
    const attr_spec_t *s = by_name(stored, ns, want[i].name);
    attr_spec_format(&want[i], a, sizeof a);
    if (!s)
      return err_set(err, BFH_E_INVALID,
                     "%s/%s: the options declare the attribute %s, which the database does not "
                     "have (its attributes: %s); open without declarations to take the stored "
                     "ones",
                     dir, DB_ATTRS_FILE, a, listed(stored, ns, has, sizeof has));
    attr_spec_format(s, b, sizeof b);
    if (strcmp(a, b) != 0)
      return err_set(err, BFH_E_INVALID,
                     "%s/%s: the options declare the attribute %s, the database has %s; open "
                     "without declarations to take the stored ones",
                     dir, DB_ATTRS_FILE, a, b);
  }
  for (size_t i = 0; i < ns; i++)
    if (!by_name(want, nw, stored[i].name)) {
      attr_spec_format(&stored[i], b, sizeof b);
      return err_set(err, BFH_E_INVALID,
                     "%s/%s: the database has the attribute %s, which the options do not declare "
                     "(they declare: %s); open without declarations to take the stored ones",
                     dir, DB_ATTRS_FILE, b, listed(want, nw, has, sizeof has));
    }
  return BFH_OK;
}
