#include "lsm/compaction.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lsm/filename.h"
#include "lsm/internal_key.h"
#include "lsm/iterator.h"
#include "lsm/table.h"

/* Smallest and largest user keys over the files (n >= 1). */
static void key_range(lsm_file_meta_t *const *files, size_t n, const uint8_t **lo, size_t *lo_len,
                      const uint8_t **hi, size_t *hi_len) {
  *lo = files[0]->smallest;
  *lo_len = files[0]->smallest_len - 8;
  *hi = files[0]->largest;
  *hi_len = files[0]->largest_len - 8;
  for (size_t i = 1; i < n; i++) {
    const lsm_file_meta_t *f = files[i];
    if (bytewise_compare(f->smallest, f->smallest_len - 8, *lo, *lo_len) < 0) {
      *lo = f->smallest;
      *lo_len = f->smallest_len - 8;
    }
    if (bytewise_compare(f->largest, f->largest_len - 8, *hi, *hi_len) > 0) {
      *hi = f->largest;
      *hi_len = f->largest_len - 8;
    }
  }
}

lsm_compaction_t *lsm_compaction_pick(lsm_version_set_t *vs, uint64_t table_bytes) {
  lsm_version_t *v = vs->current;
  if (v->score < 1 || v->score_level < 0) return NULL;
  int level = v->score_level;
  lsm_compaction_t *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->level = level;
  c->version = v;
  lsm_version_ref(v);
  c->max_output_bytes = table_bytes;
  c->max_grandparent_overlap = 10 * table_bytes;

  /* The seed file. */
  lsm_file_meta_t *seed = v->files[level][0];
  if (level > 0 && vs->compact_pointer[level]) {
    for (size_t i = 0; i < v->nfiles[level]; i++) {
      lsm_file_meta_t *f = v->files[level][i];
      if (internal_key_compare(f->largest, f->largest_len, vs->compact_pointer[level],
                               vs->compact_pointer_len[level]) > 0) {
        seed = f;
        break;
      }
    }
  }
  const uint8_t *lo, *hi;
  size_t lo_len, hi_len;
  key_range(&seed, 1, &lo, &lo_len, &hi, &hi_len);
  if (level == 0) {
    if (lsm_version_overlapping_files(v, 0, lo, lo_len, hi, hi_len, &c->inputs[0], &c->ninputs[0]))
      goto fail;
  } else {
    c->inputs[0] = malloc(sizeof *c->inputs[0]);
    if (!c->inputs[0]) goto fail;
    c->inputs[0][0] = seed;
    c->ninputs[0] = 1;
  }
  key_range(c->inputs[0], c->ninputs[0], &lo, &lo_len, &hi, &hi_len);
  if (lsm_version_overlapping_files(v, level + 1, lo, lo_len, hi, hi_len, &c->inputs[1],
                                    &c->ninputs[1]))
    goto fail;
  if (level + 2 < LSM_NUM_LEVELS) {
    if (c->ninputs[1]) {
      const uint8_t *lo1, *hi1;
      size_t lo1_len, hi1_len;
      key_range(c->inputs[1], c->ninputs[1], &lo1, &lo1_len, &hi1, &hi1_len);
      if (bytewise_compare(lo1, lo1_len, lo, lo_len) < 0) lo = lo1, lo_len = lo1_len;
      if (bytewise_compare(hi1, hi1_len, hi, hi_len) > 0) hi = hi1, hi_len = hi1_len;
    }
    if (lsm_version_overlapping_files(v, level + 2, lo, lo_len, hi, hi_len, &c->grandparents,
                                      &c->ngrandparents))
      goto fail;
  }
  return c;
fail:
  lsm_compaction_destroy(c);
  return NULL;
}

void lsm_outputs_free(lsm_output_t *o, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(o[i].smallest);
    free(o[i].largest);
  }
  free(o);
}

void lsm_compaction_destroy(lsm_compaction_t *c) {
  if (!c) return;
  lsm_version_unref(c->version);
  free(c->inputs[0]);
  free(c->inputs[1]);
  free(c->grandparents);
  lsm_outputs_free(c->outputs, c->noutputs);
  free(c);
}

int lsm_compaction_is_trivial_move(const lsm_compaction_t *c) {
  if (c->ninputs[0] != 1 || c->ninputs[1] != 0) return 0;
  uint64_t overlap = 0;
  for (size_t i = 0; i < c->ngrandparents; i++) overlap += c->grandparents[i]->size;
  return overlap <= c->max_grandparent_overlap;
}

int lsm_compaction_fill_edit(const lsm_compaction_t *c, lsm_version_edit_t *edit) {
  for (int w = 0; w < 2; w++)
    for (size_t i = 0; i < c->ninputs[w]; i++)
      if (lsm_version_edit_delete_file(edit, c->level + w, c->inputs[w][i]->number))
        return ST_E_NOMEM;
  for (size_t i = 0; i < c->noutputs; i++) {
    const lsm_output_t *o = &c->outputs[i];
    if (lsm_version_edit_add_table(edit, c->level + 1, o->number, o->size, o->smallest,
                                   o->smallest_len, o->largest, o->largest_len, o->max_seq))
      return ST_E_NOMEM;
  }
  /* The next compaction of this level starts after the largest key compacted now. */
  const lsm_file_meta_t *last = c->inputs[0][0];
  for (size_t i = 1; i < c->ninputs[0]; i++)
    if (internal_key_compare(c->inputs[0][i]->largest, c->inputs[0][i]->largest_len, last->largest,
                             last->largest_len) > 0)
      last = c->inputs[0][i];
  if (c->level > 0 &&
      lsm_version_edit_set_compact_pointer(edit, c->level, last->largest, last->largest_len))
    return ST_E_NOMEM;
  return ST_OK;
}

/* 1 if no level below the output level holds user key ukey (keys arrive in order, so the
   per-level cursors only move forward). */
static int is_base_level_for_key(lsm_compaction_t *c, const uint8_t *ukey, size_t ulen) {
  for (int l = c->level + 2; l < LSM_NUM_LEVELS; l++) {
    lsm_file_meta_t *const *files = c->version->files[l];
    size_t n = c->version->nfiles[l];
    while (c->level_ptrs[l] < n) {
      const lsm_file_meta_t *f = files[c->level_ptrs[l]];
      if (bytewise_compare(ukey, ulen, f->largest, f->largest_len - 8) <= 0) {
        if (bytewise_compare(ukey, ulen, f->smallest, f->smallest_len - 8) >= 0) return 0;
        break;
      }
      c->level_ptrs[l]++;
    }
  }
  return 1;
}

/* 1 if the current output should end before ikey (it would overlap too much of level+2). */
static int should_stop_before(lsm_compaction_t *c, const uint8_t *ikey, size_t len) {
  while (c->grand_index < c->ngrandparents) {
    const lsm_file_meta_t *g = c->grandparents[c->grand_index];
    if (internal_key_compare(ikey, len, g->largest, g->largest_len) <= 0) break;
    if (c->seen_key) c->overlapped_bytes += g->size;
    c->grand_index++;
  }
  c->seen_key = 1;
  if (c->overlapped_bytes > c->max_grandparent_overlap) {
    c->overlapped_bytes = 0;
    return 1;
  }
  return 0;
}

static uint8_t *dup_bytes(const void *p, size_t n) {
  uint8_t *d = malloc(n ? n : 1);
  if (d && n) memcpy(d, p, n);
  return d;
}

/* Finishes the builder and records the output (only a complete table is recorded; a
   failed one is unlinked here). */
static int finish_output(lsm_compaction_t *c, const lsm_compaction_env_t *env, table_builder_t *tb,
                         uint64_t number, const char *path, err_t *err) {
  int rc = table_builder_finish(tb, err);
  if (rc == ST_OK) {
    lsm_output_t o = {.number = number,
                      .size = table_builder_file_size(tb),
                      .max_seq = table_builder_max_seq(tb)};
    const uint8_t *s, *l;
    s = table_builder_smallest(tb, &o.smallest_len);
    l = table_builder_largest(tb, &o.largest_len);
    o.smallest = dup_bytes(s, o.smallest_len);
    o.largest = dup_bytes(l, o.largest_len);
    lsm_output_t *arr = realloc(c->outputs, (c->noutputs + 1) * sizeof *arr);
    if (arr) c->outputs = arr;
    if (!o.smallest || !o.largest || !arr) {
      free(o.smallest);
      free(o.largest);
      table_builder_destroy(tb);
      (void)env_unlink(env->io, path, NULL);
      /* end(ok = 1) was called: the hook must still hear that the table is gone. */
      const lsm_table_hook_t *h = env->topt.hook;
      if (h && h->table_removed) h->table_removed(h->ctx, number);
      return err_set(err, ST_E_NOMEM, "compaction: out of memory");
    }
    c->outputs[c->noutputs++] = o;
    c->bytes_written += o.size;
  } else {
    (void)env_unlink(env->io, path, NULL);
  }
  table_builder_destroy(tb);
  return rc;
}

int lsm_compaction_run(lsm_compaction_t *c, const lsm_compaction_env_t *env, err_t *err) {
  size_t n = c->ninputs[0] + c->ninputs[1];
  iterator_t **children = calloc(n ? n : 1, sizeof *children);
  if (!children) return err_set(err, ST_E_NOMEM, "compaction: out of memory");
  int rc = ST_OK;
  size_t k = 0;
  for (int w = 0; w < 2 && rc == ST_OK; w++) {
    for (size_t i = 0; i < c->ninputs[w] && rc == ST_OK; i++) {
      struct table *t;
      rc = env->open_table(env->arg, c->inputs[w][i], &t, err);
      if (rc != ST_OK) break;
      c->bytes_read += c->inputs[w][i]->size;
      children[k] = table_iterator_create(t);
      if (!children[k]) rc = err_set(err, ST_E_NOMEM, "compaction: out of memory");
      k++;
    }
  }
  if (rc != ST_OK) {
    for (size_t i = 0; i < k; i++) iterator_destroy(children[i]);
    free(children);
    return rc;
  }
  iterator_t *it = merging_iterator_create(children, k);
  free(children);
  if (!it) return err_set(err, ST_E_NOMEM, "compaction: out of memory");

  uint8_t *prev = NULL;
  size_t prev_len = 0, prev_cap = 0;
  int has_prev = 0;
  table_builder_t *tb = NULL;
  uint64_t out_number = 0;
  char *path = NULL; /* the output being built: tb's */
  for (iterator_seek_first(it); iterator_valid(it); iterator_next(it)) {
    if (env->interrupt(env->arg)) {
      rc = err_set(err, ST_E_IO, "compaction: interrupted by close");
      break;
    }
    size_t klen, vlen;
    const uint8_t *key = iterator_key(it, &klen);
    const void *val = iterator_value(it, &vlen);
    internal_key_parts_t parts;
    if (internal_key_parse(key, klen, &parts) != 0) {
      rc = err_set(err, ST_E_CORRUPT, "compaction: malformed internal key in level %d/%d input",
                   c->level, c->level + 1);
      break;
    }
    if (tb && should_stop_before(c, key, klen)) {
      rc = finish_output(c, env, tb, out_number, path, err);
      tb = NULL;
      if (rc != ST_OK) break;
    }
    int drop = 0;
    if (has_prev && bytewise_compare(parts.user_key, parts.user_len, prev, prev_len) == 0) {
      drop = 1; /* shadowed by a newer entry of the same key */
    } else {
      if (parts.user_len > prev_cap) {
        size_t cap = parts.user_len * 2 + 16;
        uint8_t *p = realloc(prev, cap);
        if (!p) {
          rc = err_set(err, ST_E_NOMEM, "compaction: out of memory");
          break;
        }
        prev = p;
        prev_cap = cap;
      }
      if (parts.user_len) memcpy(prev, parts.user_key, parts.user_len);
      prev_len = parts.user_len;
      has_prev = 1;
      if (parts.type == LSM_TYPE_DELETION &&
          is_base_level_for_key(c, parts.user_key, parts.user_len))
        drop = 1;
    }
    if (drop) continue;
    if (!tb) {
      out_number = env->new_file(env->arg);
      free(path);
      if (!(path = table_file_path(env->dir, out_number))) {
        rc = err_set(err, ST_E_NOMEM, "compaction: no memory for the path of table %06llu",
                     (unsigned long long)out_number);
        break;
      }
      rc = table_builder_create(env->io, path, out_number, &env->topt, &tb, err);
      if (rc != ST_OK) {
        tb = NULL;
        (void)env_unlink(env->io, path, NULL);
        break;
      }
    }
    rc = table_builder_add(tb, key, klen, val, vlen, err);
    if (rc != ST_OK) break;
    if (table_builder_file_size(tb) >= c->max_output_bytes) {
      rc = finish_output(c, env, tb, out_number, path, err);
      tb = NULL;
      if (rc != ST_OK) break;
    }
  }
  if (rc == ST_OK) rc = iterator_status(it, err);
  if (rc == ST_OK && tb) {
    rc = finish_output(c, env, tb, out_number, path, err);
    tb = NULL;
  }
  if (tb) {
    table_builder_destroy(tb);
    (void)env_unlink(env->io, path, NULL);
  }
  free(path);
  free(prev);
  iterator_destroy(it);
  return rc;
}
