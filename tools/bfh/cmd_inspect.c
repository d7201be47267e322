/* bfh tables, index, check and repair: what a database holds, whether its files check out, and
 * salvaging one that does not (cmd.h; the printing is inspect.c's). */
#include <stdio.h>
#include <string.h>

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

int cmd_index(cli_t *c) {
  if (strcmp(c->pos[0], "list") != 0) {
    fprintf(stderr,
            "bfh index: '%s': the action is list (adding an attribute to an existing database "
            "and dropping one are not built yet)\n",
            c->pos[0]);
    return EXIT_ERROR;
  }
  const char *dir = c->pos[1];
  bfh_engine found; /* cli_args_parse detected the engine of pos[0], the action */
  if (!cli_args_given(c, "engine") && bfh_engine_detect(dir, &found) == BFH_OK)
    c->opt.engine = found;
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
