/* repair_stage: a repair built beside the database and swapped in (repair_stage.h). */
#include "lsm_hooks/engines/repair_stage.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"

#define STAGE_SUFFIX ".bfh-repair"
#define LOST_DIR "lost"
#define BEFORE_REPAIR "before-repair-"
#define COPY_BYTES 65536

struct repair_stage {
  env_t *io;
  char *path;  /* the database directory */
  char *stage; /* <parent>/.<name>.bfh-repair */
  char *parent;
};

static void (*step_hook)(void *arg, int step);
static void *step_hook_arg;
static int steps_taken;

void repair_stage_set_step_hook(void (*fn)(void *arg, int step), void *arg) {
  step_hook = fn;
  step_hook_arg = arg;
}

/* Before each change to the file system (a test may stop the process there). */
static void step(void) {
  steps_taken++;
  if (step_hook) step_hook(step_hook_arg, steps_taken);
}

static char *join(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s/%s", dir, name);
  return p;
}

/* ---- Removing a tree ---------------------------------------------------------------- */

/* Removes dir and all it holds; the entry named last (may be NULL) goes after every other
   one, so that a stage whose removal a crash cut short still has its marker. */
static int remove_tree(env_t *io, const char *dir, const char *last, err_t *err) {
  char **names = NULL;
  size_t n = 0;
  int rc = env_list_dir(io, dir, &names, &n, err);
  for (size_t i = 0; last && i + 1 < n; i++)
    if (!strcmp(names[i], last)) {
      char *t = names[i];
      names[i] = names[n - 1];
      names[n - 1] = t;
    }
  for (size_t i = 0; i < n && rc == BFH_OK; i++) {
    char *p = join(dir, names[i]);
    env_path_type_t t;
    if (!p) rc = err_set(err, BFH_E_NOMEM, "%s: no memory", dir);
    if (rc == BFH_OK) rc = env_path_type(io, p, &t, err);
    if (rc == BFH_NOT_FOUND) rc = BFH_OK, t = ENV_PATH_FILE;
    if (rc == BFH_OK) {
      step();
      rc = t == ENV_PATH_DIR ? remove_tree(io, p, NULL, err) : env_unlink(io, p, err);
      if (rc == BFH_NOT_FOUND) rc = BFH_OK;
    }
    free(p);
  }
  env_names_free(names, n);
  if (rc == BFH_OK) {
    step();
    rc = env_rmdir(io, dir, err);
    if (rc == BFH_NOT_FOUND) rc = BFH_OK;
  }
  return rc;
}

/* ---- Mirroring path into the stage ---------------------------------------------------- */

/* Whether a file is linked rather than copied: no repair writes into it, it is only read,
   renamed or left alone. */
static int linked(const char *name, int under_lost) {
  size_t n = strlen(name);
  return under_lost ||
         (n > 4 && (!strcmp(name + n - 4, ".sst") || !strcmp(name + n - 4, ".ldb"))) ||
         (n > 3 && !strcmp(name + n - 3, ".vf"));
}

static int copy_file(env_t *io, const char *from, const char *to, err_t *err) {
  env_rfile_t *in = NULL;
  env_file_t *out = NULL;
  uint8_t *buf = malloc(COPY_BYTES);
  if (!buf) return err_set(err, BFH_E_NOMEM, "%s: no memory", from);
  int rc = env_open_read(io, from, &in, err);
  if (rc == BFH_OK) rc = env_open_write(io, to, &out, err);
  for (uint64_t off = 0; rc == BFH_OK;) {
    size_t got = 0;
    rc = env_rfile_pread(in, off, buf, COPY_BYTES, &got, err);
    if (rc != BFH_OK || got == 0) break;
    rc = env_file_append(out, buf, got, err);
    off += got;
  }
  if (rc == BFH_OK) rc = env_file_sync(out, err);
  int crc = env_file_close(out, rc == BFH_OK ? err : NULL);
  if (rc == BFH_OK) rc = crc;
  env_rfile_close(in);
  free(buf);
  return rc;
}

/* Mirrors the directory from into the new directory to (1 in repair_stage.h). */
static int mirror(env_t *io, const char *from, const char *to, int under_lost, err_t *err) {
  step();
  int rc = env_mkdir(io, to, err);
  char **names = NULL;
  size_t n = 0;
  if (rc == BFH_OK) rc = env_list_dir(io, from, &names, &n, err);
  for (size_t i = 0; i < n && rc == BFH_OK; i++) {
    char *src = join(from, names[i]), *dst = join(to, names[i]);
    env_path_type_t t = ENV_PATH_LINK;
    if (!src || !dst) rc = err_set(err, BFH_E_NOMEM, "%s: no memory", from);
    if (rc == BFH_OK) rc = env_path_type(io, src, &t, err);
    if (rc == BFH_NOT_FOUND)
      rc = err_set(err, BFH_E_IO,
                   "%s: vanished while the repair copied the directory: is the "
                   "database in use?",
                   src);
    if (rc == BFH_OK && t != ENV_PATH_FILE && t != ENV_PATH_DIR)
      rc = err_set(err, BFH_E_INVALID,
                   "%s is not a regular file or directory (%s): repair copies only files and "
                   "directories; move it away to repair",
                   src, env_path_type_name(t));
    if (rc == BFH_OK && t == ENV_PATH_DIR)
      rc = mirror(io, src, dst, under_lost || !strcmp(names[i], LOST_DIR), err);
    else if (rc == BFH_OK && linked(names[i], under_lost)) {
      step();
      rc = env_link(io, src, dst, err);
    } else if (rc == BFH_OK && strcmp(names[i], REPAIR_STAGE_MARKER) != 0) {
      step();
      rc = copy_file(io, src, dst, err);
    }
    free(src);
    free(dst);
  }
  env_names_free(names, n);
  if (rc == BFH_OK) {
    step();
    rc = env_sync_dir(io, to, err);
  }
  return rc;
}

/* ---- What a crashed repair left ------------------------------------------------------- */

/* Moves dir into path/lost/before-repair-N, N the first free number (into *kept). */
static int move_into_lost(env_t *io, const char *path, const char *dir, unsigned *kept,
                          err_t *err) {
  char *lost = join(path, LOST_DIR);
  if (!lost) return err_set(err, BFH_E_NOMEM, "%s: no memory", path);
  step();
  int rc = env_mkdir(io, lost, err);
  char name[64];
  char *to = NULL;
  unsigned number = 1;
  for (; rc == BFH_OK; number++) {
    snprintf(name, sizeof name, BEFORE_REPAIR "%u", number);
    free(to);
    if (!(to = join(lost, name))) rc = err_set(err, BFH_E_NOMEM, "%s: no memory", path);
    if (rc == BFH_OK && !env_exists(io, to)) break;
  }
  if (rc == BFH_OK) {
    step();
    rc = env_rename(io, dir, to, err);
  }
  if (rc == BFH_OK) {
    step();
    rc = env_sync_dir(io, lost, err);
  }
  if (rc == BFH_OK) *kept = number;
  free(to);
  free(lost);
  return rc;
}

/* An earlier repair's stage that a crash left: removed if it has the marker (it was never
   swapped in); without the marker it is the old database a swap put there, which goes into
   path/lost/. And the marker of a stage swapped in, left in path. */
static int tidy(repair_stage_t *s, unsigned *kept, err_t *err) {
  char *marker = join(s->path, REPAIR_STAGE_MARKER);
  char *stage_marker = join(s->stage, REPAIR_STAGE_MARKER);
  int rc = marker && stage_marker ? BFH_OK : err_set(err, BFH_E_NOMEM, "%s: no memory", s->path);
  env_path_type_t t;
  int stale = rc == BFH_OK ? env_path_type(s->io, s->stage, &t, err) : rc;
  if (stale == BFH_OK && t != ENV_PATH_DIR)
    rc = err_set(err, BFH_E_INVALID, "%s is in the way of the repair's stage: move it away",
                 s->stage);
  else if (stale == BFH_OK && env_exists(s->io, stage_marker))
    rc = remove_tree(s->io, s->stage, REPAIR_STAGE_MARKER, err);
  else if (stale == BFH_OK)
    rc = move_into_lost(s->io, s->path, s->stage, kept, err);
  else if (stale != BFH_NOT_FOUND)
    rc = stale;
  if (rc == BFH_OK && env_exists(s->io, marker)) {
    step();
    rc = env_unlink(s->io, marker, err);
    if (rc == BFH_OK) rc = env_sync_dir(s->io, s->path, err);
  }
  free(marker);
  free(stage_marker);
  return rc;
}

/* ---- The stage's life ----------------------------------------------------------------- */

static void stage_free(repair_stage_t *s) {
  if (!s) return;
  free(s->path);
  free(s->stage);
  free(s->parent);
  free(s);
}

/* s->path (path without trailing slashes), s->parent and s->stage. */
static int names(repair_stage_t *s, const char *path, err_t *err) {
  /* The directory itself, not a symbolic link to it: the stage goes beside what it copies. */
  char *real = realpath(path, NULL);
  const char *p = real ? real : path;
  size_t n = strlen(p);
  while (n > 1 && p[n - 1] == '/') n--;
  s->path = strndup(p, n);
  free(real);
  if (!s->path) return err_set(err, BFH_E_NOMEM, "%s: no memory", path);
  const char *slash = strrchr(s->path, '/');
  const char *base = slash ? slash + 1 : s->path;
  if (!strcmp(base, "/") || !strcmp(base, ".") || !strcmp(base, "..") || !base[0])
    return err_set(err, BFH_E_INVALID,
                   "%s: repair needs the database directory by a name in its parent (not '.', "
                   "'..' or '/')",
                   path);
  s->parent = slash ? (slash == s->path ? strdup("/") : strndup(s->path, (size_t)(slash - s->path)))
                    : strdup(".");
  size_t sn = strlen(s->parent) + strlen(base) + sizeof("/." STAGE_SUFFIX);
  if (s->parent && (s->stage = malloc(sn)))
    snprintf(s->stage, sn, "%s/.%s" STAGE_SUFFIX, !strcmp(s->parent, "/") ? "" : s->parent, base);
  return s->parent && s->stage ? BFH_OK : err_set(err, BFH_E_NOMEM, "%s: no memory", path);
}

int repair_stage_create(env_t *io, const char *path, repair_stage_t **out, err_t *err) {
  *out = NULL;
  repair_stage_t *s = calloc(1, sizeof *s);
  if (!s) return err_set(err, BFH_E_NOMEM, "%s: no memory", path);
  s->io = io ? io : env_default();
  steps_taken = 0;
  int rc = names(s, path, err);
  env_path_type_t t;
  if (rc == BFH_OK && env_path_type(s->io, s->path, &t, NULL) != BFH_OK)
    rc = err_set(err, BFH_E_INVALID, "%s: does not exist: nothing to repair", path);
  else if (rc == BFH_OK && t != ENV_PATH_DIR)
    rc = err_set(err, BFH_E_INVALID, "%s: not a directory: nothing to repair", path);
  unsigned kept = 0; /* an old directory a crashed repair left goes into lost/ unreported */
  if (rc == BFH_OK) rc = tidy(s, &kept, err);
  /* The marker first: a crash from here on leaves a stage the next repair knows to remove. */
  int made = 0;
  char *marker = rc == BFH_OK ? join(s->stage, REPAIR_STAGE_MARKER) : NULL;
  if (rc == BFH_OK && !marker) rc = err_set(err, BFH_E_NOMEM, "%s: no memory", path);
  if (rc == BFH_OK) {
    step();
    rc = env_mkdir(s->io, s->stage, err);
    made = rc == BFH_OK;
  }
  if (rc == BFH_OK) {
    step();
    rc = env_write_file(s->io, marker, "", 0, err);
  }
  if (rc == BFH_OK) {
    step();
    rc = env_sync_dir(s->io, s->parent, err);
  }
  free(marker);
  if (rc == BFH_OK) rc = mirror(s->io, s->path, s->stage, 0, err);
  if (rc != BFH_OK) {
    if (made)
      repair_stage_destroy(s);
    else
      stage_free(s);
    return rc;
  }
  *out = s;
  return BFH_OK;
}

const char *repair_stage_dir(const repair_stage_t *s) {
  return s->stage;
}

int repair_stage_commit(repair_stage_t *s, unsigned *kept, err_t *err) {
  *kept = 0;
  step();
  int rc = env_rename_exchange(s->io, s->stage, s->path, err);
  if (rc == BFH_OK) rc = env_sync_dir(s->io, s->parent, err);
  if (rc != BFH_OK && env_exists(s->io, s->stage)) {
    /* Not swapped (a sync of the parent that failed after the swap counts as swapped: path
       is the stage then, which its marker tells). */
    char *marker = join(s->path, REPAIR_STAGE_MARKER);
    int swapped = marker && env_exists(s->io, marker);
    free(marker);
    if (!swapped) {
      repair_stage_destroy(s);
      return rc;
    }
  }
  /* Swapped: the repaired database is in place. What remains is tidying, which the next
     repair finishes if it fails now. */
  err_t e;
  (void)tidy(s, kept, &e);
  stage_free(s);
  return BFH_OK;
}

void repair_stage_destroy(repair_stage_t *s) {
  if (!s) return;
  err_t e;
  (void)remove_tree(s->io, s->stage, REPAIR_STAGE_MARKER, &e);
  stage_free(s);
}

void repair_stage_name_path(const repair_stage_t *s, err_t *err) {
  if (!err || !s) return;
  char out[ERR_MSG_BYTES];
  size_t o = 0, sl = strlen(s->stage), pl = strlen(s->path);
  for (const char *p = err->msg; *p && o + 1 < sizeof out;) {
    if (!strncmp(p, s->stage, sl)) {
      size_t n = pl < sizeof out - 1 - o ? pl : sizeof out - 1 - o;
      memcpy(out + o, s->path, n);
      o += n;
      p += sl;
    } else {
      out[o++] = *p++;
    }
  }
  out[o] = 0;
  memcpy(err->msg, out, o + 1);
}
