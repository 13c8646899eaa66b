/*
** passthrough: the least a virtual table can cost to hand over another
** statement's rows, as a yardstick for QueryPilot's answer tables in
** bench/streaming.py. Not part of QueryPilot: no checks, no limits, no agent.
**
** Usage:
**   .load ./passthrough
**   CREATE VIRTUAL TABLE temp.p USING passthrough('SELECT id, name FROM big');
**   SELECT * FROM p;
**
** Each scan prepares the SQL on the same connection, steps it once per xNext,
** and hands each value on with sqlite3_result_value(sqlite3_column_value()),
** as QueryPilot's answer tables do: SQLite copies the value once.
*/
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1
#include <string.h>

typedef struct {
  sqlite3_vtab base;
  sqlite3* db;
  char* sql;
} PassVtab;

typedef struct {
  sqlite3_vtab_cursor base;
  sqlite3_stmt* stmt;
  sqlite3_int64 rowid;
  int eof;
} PassCursor;

/* The module's one argument, '...' with doubled quotes, as plain text. */
static char* unquote(const char* arg) {
  size_t n = strlen(arg);
  char* out;
  size_t i, j = 0;
  if (n < 2 || arg[0] != '\'' || arg[n - 1] != '\'') return 0;
  out = sqlite3_malloc64(n);
  if (!out) return 0;
  for (i = 1; i + 1 < n; i++) {
    out[j++] = arg[i];
    if (arg[i] == '\'' && arg[i + 1] == '\'') i++;
  }
  out[j] = 0;
  return out;
}

static int passConnect(sqlite3* db, void* aux, int argc, const char* const* argv,
                       sqlite3_vtab** out, char** err) {
  PassVtab* vtab;
  sqlite3_stmt* stmt = 0;
  sqlite3_str* decl;
  char* sql;
  int i, rc;
  (void)aux;
  if (argc != 4 || !(sql = unquote(argv[3]))) {
    *err = sqlite3_mprintf("passthrough: one argument, the SQL in single quotes");
    return SQLITE_ERROR;
  }
  rc = sqlite3_prepare_v2(db, sql, -1, &stmt, 0);
  if (rc != SQLITE_OK) {
    *err = sqlite3_mprintf("passthrough: %s", sqlite3_errmsg(db));
    sqlite3_free(sql);
    return rc;
  }
  decl = sqlite3_str_new(db);
  sqlite3_str_appendall(decl, "CREATE TABLE x(");
  for (i = 0; i < sqlite3_column_count(stmt); i++) {
    sqlite3_str_appendf(decl, "%s\"c%d\"", i ? "," : "", i);
  }
  sqlite3_str_appendall(decl, ")");
  sqlite3_finalize(stmt);
  {
    char* text = sqlite3_str_finish(decl);
    rc = text ? sqlite3_declare_vtab(db, text) : SQLITE_NOMEM;
    sqlite3_free(text);
  }
  if (rc != SQLITE_OK) {
    sqlite3_free(sql);
    return rc;
  }
  vtab = sqlite3_malloc(sizeof(*vtab));
  if (!vtab) {
    sqlite3_free(sql);
    return SQLITE_NOMEM;
  }
  memset(vtab, 0, sizeof(*vtab));
  vtab->db = db;
  vtab->sql = sql;
  *out = &vtab->base;
  return SQLITE_OK;
}

static int passDisconnect(sqlite3_vtab* base) {
  PassVtab* vtab = (PassVtab*)base;
  sqlite3_free(vtab->sql);
  sqlite3_free(vtab);
  return SQLITE_OK;
}

static int passBestIndex(sqlite3_vtab* base, sqlite3_index_info* info) {
  (void)base;
  info->estimatedCost = 1e6;
  return SQLITE_OK;
}

static int passOpen(sqlite3_vtab* base, sqlite3_vtab_cursor** out) {
  PassCursor* cur = sqlite3_malloc(sizeof(*cur));
  (void)base;
  if (!cur) return SQLITE_NOMEM;
  memset(cur, 0, sizeof(*cur));
  *out = &cur->base;
  return SQLITE_OK;
}

static int passClose(sqlite3_vtab_cursor* base) {
  PassCursor* cur = (PassCursor*)base;
  sqlite3_finalize(cur->stmt);
  sqlite3_free(cur);
  return SQLITE_OK;
}

static int passNext(sqlite3_vtab_cursor* base) {
  PassCursor* cur = (PassCursor*)base;
  int rc = sqlite3_step(cur->stmt);
  cur->eof = rc != SQLITE_ROW;
  cur->rowid++;
  return rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static int passFilter(sqlite3_vtab_cursor* base, int idx, const char* idx_str, int argc,
                      sqlite3_value** argv) {
  PassCursor* cur = (PassCursor*)base;
  PassVtab* vtab = (PassVtab*)base->pVtab;
  int rc;
  (void)idx, (void)idx_str, (void)argc, (void)argv;
  sqlite3_finalize(cur->stmt);
  cur->stmt = 0;
  cur->rowid = 0;
  rc = sqlite3_prepare_v2(vtab->db, vtab->sql, -1, &cur->stmt, 0);
  if (rc != SQLITE_OK) return rc;
  return passNext(base);
}

static int passEof(sqlite3_vtab_cursor* base) {
  return ((PassCursor*)base)->eof;
}

static int passColumn(sqlite3_vtab_cursor* base, sqlite3_context* ctx, int i) {
  sqlite3_result_value(ctx, sqlite3_column_value(((PassCursor*)base)->stmt, i));
  return SQLITE_OK;
}

static int passRowid(sqlite3_vtab_cursor* base, sqlite3_int64* rowid) {
  *rowid = ((PassCursor*)base)->rowid;
  return SQLITE_OK;
}

static sqlite3_module passModule = {
    .iVersion = 0,
    .xCreate = passConnect,
    .xConnect = passConnect,
    .xBestIndex = passBestIndex,
    .xDisconnect = passDisconnect,
    .xDestroy = passDisconnect,
    .xOpen = passOpen,
    .xClose = passClose,
    .xFilter = passFilter,
    .xNext = passNext,
    .xEof = passEof,
    .xColumn = passColumn,
    .xRowid = passRowid,
};

#ifdef _WIN32
__declspec(dllexport)
#endif
    int sqlite3_passthrough_init(sqlite3* db, char** err, const sqlite3_api_routines* api) {
  (void)err;
  SQLITE_EXTENSION_INIT2(api);
  return sqlite3_create_module(db, "passthrough", &passModule, 0);
}
