/* bfh tables, index, check and repair: what a database holds and the attributes it indexes
 * (index list, add, drop), whether its files check out, and salvaging one that does not
 * (cmd.h; the printing is inspect.c's). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bfh.h"
#include "tools/bfh/cli_db.h"
#include "tools/bfh/cmd.h"
#include "tools/bfh/inspect.h"

/* ---- tables, check ------------------------------------------------------------------------ */

static inspect_format output_format(const cli_t *c) {
  return c->json ? INSPECT_JSON : c->csv ? INSPECT_CSV : INSPECT_TEXT;
}

int cmd_tables(cli_t *c) {
  bfh_db *db;
  int rc = cli_db_open(c, c->pos[0], 0, &db);
  if (rc) return rc;
  rc = inspect_tables(db, output_format(c), stdout);
  if (rc) fprintf(stderr, "bfh tables: %s\n", bfh_last_error(db));
  return cli_db_close(c, db, rc);
}

/* bfh_progress_fn of index add: a bar on a terminal (stderr), nothing otherwise. */
static void draw_bar(void *arg, uint64_t done, uint64_t total) {
  (void)arg;
  if (!isatty(STDERR_FILENO)) return;
  int width = 30, full = (int)(width * done / total);
  fprintf(stderr, "\r\033[Kbfh index add: [%.*s%*s] %llu/%llu", full,
          "##############################", width - full, "", (unsigned long long)done,
          (unsigned long long)total);
  if (done == total) fputs("\r\033[K", stderr);
  fflush(stderr);
}

/* bfh index add DIR NAME=EXTRACTOR. */
static int index_add(cli_t *c, const char *dir, const char *decl) {
  char name[256];
  const char *eq = strchr(decl, '=');
  if (!eq || eq == decl || (size_t)(eq - decl) >= sizeof name) {
    fprintf(stderr, "bfh index add: '%s': want NAME=EXTRACTOR (e.g. city=json:address.city)\n",
            decl);
    return EXIT_ERROR;
  }
  memcpy(name, decl, (size_t)(eq - decl));
  name[eq - decl] = '\0';
  bfh_attribute a = {name, eq + 1};
  bfh_index_report r;
  int rc = bfh_index_add(dir, &c->opt, &a, draw_bar, NULL, &r);
  if (rc != BFH_OK) return cli_db_fail(c, NULL, "add", rc);
  printf("declared %s: its items are in the filters of every table (%llu tables, %llu keys)\n",
         decl, (unsigned long long)r.tables_out, (unsigned long long)r.keys_out);
  if (r.before_change)
    printf("the old database  %s/lost/before-repair-%llu (remove it once the change is trusted)\n",
           dir, (unsigned long long)r.before_change);
  return 0;
}

int cmd_index(cli_t *c) {
  const char *action = c->pos[0], *dir = c->pos[1];
  int list = strcmp(action, "list") == 0, add = strcmp(action, "add") == 0;
  if (!list && !add && strcmp(action, "drop") != 0) {
    fprintf(stderr, "bfh index: '%s': the action is list, add or drop\n", action);
    return EXIT_ERROR;
  }
  if (c->npos != (list ? 2 : 3)) {
    fprintf(stderr, "bfh index %s: usage: bfh index %s\n", action,
            list ? "list DIR" : add ? "add DIR NAME=EXTRACTOR" : "drop DIR NAME");
    return EXIT_ERROR;
  }
  bfh_engine found; /* cli_args_parse detected the engine of pos[0], the action */
  if (!cli_args_given(c, "engine") && bfh_engine_detect(dir, &found) == BFH_OK)
    c->opt.engine = found;
  if (!list) {
    if (cli_db_require(c, dir)) return EXIT_ERROR;
    c->opt.read_only = 0;
    if (add) return index_add(c, dir, c->pos[2]);
    int rc = bfh_index_drop(dir, &c->opt, c->pos[2]);
    if (rc != BFH_OK) return cli_db_fail(c, NULL, "drop", rc);
    printf("dropped %s (its items stay in the filters until the tables are rewritten)\n",
           c->pos[2]);
    return 0;
  }
  bfh_db *db;
  int rc = cli_db_open(c, dir, 0, &db);
  if (rc) return rc;
  rc = inspect_attributes(db, output_format(c), stdout);
  if (rc) fprintf(stderr, "bfh index: %s\n", bfh_last_error(db));
  return cli_db_close(c, db, rc);
}

int cmd_check(cli_t *c) {
  if (cli_db_require(c, c->pos[0])) return EXIT_ERROR;
  return inspect_check(c->pos[0], &c->opt, output_format(c), stdout, stderr);
}

int cmd_repair(cli_t *c) {
  if (cli_db_require(c, c->pos[0])) return EXIT_ERROR;
  bfh_repair_report r;
  int rc = bfh_repair(c->pos[0], &c->opt, &r);
  if (rc != BFH_OK) return cli_db_fail(c, NULL, "repair", rc);
  const bfh_engine_info *eng = bfh_engine_get(c->opt.engine);
  if (eng && !(eng->caps & BFH_ENGINE_CAN_REPAIR_REPORT)) {
    printf("repaired by the %s engine's own repair (its log says what it kept)\n", eng->name);
  } else {
    printf("logs              %llu read, %llu records kept, %llu bytes dropped\n",
           (unsigned long long)r.logs, (unsigned long long)r.log_records,
           (unsigned long long)r.log_bytes_dropped);
    printf("tables            %llu read, %llu damaged (%llu blocks dropped), %llu lost\n",
           (unsigned long long)r.tables, (unsigned long long)r.tables_damaged,
           (unsigned long long)r.blocks_dropped, (unsigned long long)r.tables_lost);
    printf("written           %llu keys in %llu tables\n", (unsigned long long)r.keys_out,
           (unsigned long long)r.tables_out);
    printf("moved to lost/    %llu files%s\n", (unsigned long long)r.files_moved,
           r.params_rewritten ? " (BFH-PARAMS written from the options)" : "");
  }
  if (r.before_repair)
    printf("the old database  %s/lost/before-repair-%llu (remove it once the repair is trusted)\n",
           c->pos[0], (unsigned long long)r.before_repair);
  return 0;
}
