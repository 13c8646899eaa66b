/*
** auto_host: a SQLite host program that never calls sqlite3_load_extension.
** It registers QueryPilot the way a host whose connections cannot load
** extensions does (docs/beyond-one-machine.md): sqlite3_auto_extension with
** sqlite3_querypilot_init, once, before its first open.
**
** Usage: auto_host [--single-thread] DATABASE EXTENSION SQL...
** --single-thread first sets SQLITE_CONFIG_SINGLETHREAD, as go-dqlite does.
** EXTENSION is querypilot.so's path. Each SQL statement's rows are printed as
** "a|b|c", or "error: <message>" for a statement that fails.
*/
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

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
  int arg = 1;
  if (arg < argc && strcmp(argv[arg], "--single-thread") == 0) {
    if (sqlite3_config(SQLITE_CONFIG_SINGLETHREAD) != SQLITE_OK) {
      fprintf(stderr, "auto_host: could not set SQLITE_CONFIG_SINGLETHREAD\n");
      return 1;
    }
    arg++;
  }
  if (argc - arg < 2) {
    fprintf(stderr, "usage: auto_host [--single-thread] DATABASE EXTENSION SQL...\n");
    return 2;
  }
  const char* database = argv[arg];
  void* extension = dlopen(argv[arg + 1], RTLD_NOW | RTLD_LOCAL);
  if (extension == NULL) {
    fprintf(stderr, "auto_host: %s\n", dlerror());
    return 1;
  }
  void (*init)(void) = (void (*)(void))dlsym(extension, "sqlite3_querypilot_init");
  if (init == NULL || sqlite3_auto_extension(init) != SQLITE_OK) {
    fprintf(stderr, "auto_host: could not register sqlite3_querypilot_init\n");
    return 1;
  }
  sqlite3* db = 0;
  if (sqlite3_open(database, &db) != SQLITE_OK) {
    fprintf(stderr, "auto_host: %s\n", db ? sqlite3_errmsg(db) : "out of memory");
    sqlite3_close(db);
    return 1;
  }
  for (int i = arg + 2; i < argc; i++) run(db, argv[i]);
  sqlite3_close(db);
  return 0;
}
