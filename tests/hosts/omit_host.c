/*
** omit_host: a SQLite host program built from an amalgamation with the
** SQLITE_OMIT_* options a real client may use (better-sqlite3 omits progress
** callbacks), to check that QueryPilot never calls a routine the host lacks.
**
** Usage: omit_host DATABASE EXTENSION SQL...
** Loads EXTENSION, runs each SQL statement and prints its rows as
** "a|b|c", or "error: <message>" for a statement that fails.
*/
#include <stdio.h>

#include "sqlite3.h"

static void run(sqlite3* db, const char* sql) {
  sqlite3_stmt* stmt = 0;
  int rc = sqlite3_prepare_v2(db, sql, -1, &stmt, 0);
  if (rc == SQLITE_OK) {
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
      for (int i = 0; i < sqlite3_column_count(stmt); i++) {
        const unsigned char* v = sqlite3_column_text(stmt, i);
        printf("%s%s", i ? "|" : "", v ? (const char*)v : "");
      }
      printf("\n");
    }
  }
  if (rc != SQLITE_DONE) printf("error: %s\n", sqlite3_errmsg(db));
  sqlite3_finalize(stmt);
  fflush(stdout);
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s DATABASE EXTENSION SQL...\n", argv[0]);
    return 2;
  }
  sqlite3* db = 0;
  if (sqlite3_open(argv[1], &db) != SQLITE_OK) {
    fprintf(stderr, "cannot open %s: %s\n", argv[1], sqlite3_errmsg(db));
    return 1;
  }
  sqlite3_enable_load_extension(db, 1);
  char* err = 0;
  if (sqlite3_load_extension(db, argv[2], 0, &err) != SQLITE_OK) {
    printf("load error: %s\n", err ? err : "?");
    sqlite3_free(err);
    sqlite3_close(db);
    return 1;
  }
  for (int i = 3; i < argc; i++) run(db, argv[i]);
  return sqlite3_close(db) == SQLITE_OK ? 0 : 1;
}
