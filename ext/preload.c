/*
** libquerypilot_preload.so: QueryPilot in every connection of a program that
** never loads extensions, or cannot (a VFS without xDlOpen, as dqlite's).
**
** Usage:
**
**   LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libquerypilot_preload.so dqlite-demo ...
**   -- then, on any of the program's connections:
**   SELECT * FROM ask('How many keys are stored?');
**
** It registers sqlite3_querypilot_init (from querypilot.so beside this
** library, else found by the dynamic loader's search) as an automatic
** extension with sqlite3_auto_extension, so that SQLite runs it in every
** connection it opens from then on. It does so at the program's first
** sqlite3_open, sqlite3_open_v2 or sqlite3_open16, not when the library is
** loaded: sqlite3_auto_extension initialises SQLite, after which the
** program's own sqlite3_config calls (dqlite makes some before its first
** open) would fail with SQLITE_MISUSE. Each of the three is passed on to
** SQLite's own unchanged, and QueryPilot, told it runs inside an open
** (querypilot_preload_opening), reads nothing of the file there: a file that
** is not a database opens as it does without the preload.
**
** Should querypilot.so not be found, or the SQLite in use have no
** sqlite3_auto_extension, one line on stderr says so and the program runs
** without QueryPilot. A program that can call SQLite itself needs no preload:
** sqlite3_auto_extension((void (*)(void))sqlite3_querypilot_init) before its
** first open does the same (docs/beyond-one-machine.md).
*/
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

typedef struct sqlite3 sqlite3;

#define QP_EXPORT __attribute__((visibility("default")))

/* The full path of querypilot.so in this library's folder, or its bare name
** (found then as `.load querypilot` finds it) when this one's is unknown. */
static void ExtensionPath(char* out, size_t size) {
  Dl_info self;
  const char* slash = NULL;
  if (dladdr((void*)&ExtensionPath, &self) != 0 && self.dli_fname != NULL) {
    slash = strrchr(self.dli_fname, '/');
  }
  if (slash == NULL) {
    snprintf(out, size, "querypilot.so");
    return;
  }
  snprintf(out, size, "%.*s/querypilot.so", (int)(slash - self.dli_fname), self.dli_fname);
}

/* SQLite's own routine `name` for the code at `caller`: the next definition
** after this library's in the global scope (a program linked with
** libsqlite3), else in the scope of the object that called (Python's sqlite3
** module loads libsqlite3 into a scope of its own), else in the system's
** libsqlite3.so.0 where it is loaded already. NULL where none is found. */
static void* Resolve(const char* name, const void* caller, const void* own) {
  void* found = dlsym(RTLD_NEXT, name);
  if (found != NULL && found != own) return found;
  Dl_info info;
  if (caller != NULL && dladdr(caller, &info) != 0 && info.dli_fname != NULL) {
    void* object = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (object != NULL) {
      found = dlsym(object, name);
      dlclose(object);
      if (found != NULL && found != own) return found;
    }
  }
  void* library = dlopen("libsqlite3.so.0", RTLD_LAZY | RTLD_NOLOAD);
  if (library != NULL) {
    found = dlsym(library, name);
    dlclose(library);
    if (found != NULL && found != own) return found;
  }
  return NULL;
}

/* Nonzero while this thread is inside one of the opens below: QueryPilot,
** registered as an automatic extension, then runs inside it, and leaves the
** file alone until the connection's first call of QueryPilot's
** (ext/querypilot.cpp). */
static __thread int opening = 0;

QP_EXPORT int querypilot_preload_opening(void) {
  return opening;
}

static void* real_open = NULL;
static void* real_open16 = NULL;
static void* real_open_v2 = NULL;
static pthread_mutex_t registering = PTHREAD_MUTEX_INITIALIZER;
static int registered = 0;

/* `*cache`, else what Resolve finds, kept in `*cache`: the program's SQLite
** is the same at every open. */
static void* Cached(void** cache, const char* name, const void* caller, const void* own) {
  void* found = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
  if (found == NULL) {
    found = Resolve(name, caller, own);
    __atomic_store_n(cache, found, __ATOMIC_RELEASE);
  }
  return found;
}

/* Registers QueryPilot once, with the SQLite that `caller` uses. */
static void Register(const void* caller) {
  if (__atomic_load_n(&registered, __ATOMIC_ACQUIRE)) return;
  pthread_mutex_lock(&registering);
  if (registered) {
    pthread_mutex_unlock(&registering);
    return;
  }
  char path[PATH_MAX];
  ExtensionPath(path, sizeof path);
  void* extension = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (extension == NULL) extension = dlopen("querypilot.so", RTLD_NOW | RTLD_LOCAL);
  void (*init)(void) = NULL;
  int (*auto_extension)(void (*)(void)) = NULL;
  const char* why = NULL;
  if (extension == NULL) {
    why = dlerror();
  } else if ((init = (void (*)(void))dlsym(extension, "sqlite3_querypilot_init")) == NULL) {
    why = "querypilot.so has no sqlite3_querypilot_init";
  } else if ((auto_extension = (int (*)(void (*)(void)))Resolve("sqlite3_auto_extension", caller,
                                                                NULL)) == NULL) {
    why = "this program's SQLite has no sqlite3_auto_extension";
  } else if (auto_extension(init) != 0) {
    why = "sqlite3_auto_extension failed";
  }
  if (why != NULL) fprintf(stderr, "querypilot_preload: QueryPilot not registered: %s\n", why);
  __atomic_store_n(&registered, 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&registering);
}

/* What an open gives where no SQLite follows this library: SQLITE_ERROR. */
static int NoSqlite(sqlite3** db) {
  if (db != NULL) *db = NULL;
  return 1;
}

QP_EXPORT int sqlite3_open(const char* filename, sqlite3** db) {
  const void* caller = __builtin_return_address(0);
  Register(caller);
  int (*real)(const char*, sqlite3**) = (int (*)(const char*, sqlite3**))Cached(
      &real_open, "sqlite3_open", caller, (void*)&sqlite3_open);
  if (real == NULL) return NoSqlite(db);
  ++opening;
  int rc = real(filename, db);
  --opening;
  return rc;
}

QP_EXPORT int sqlite3_open16(const void* filename, sqlite3** db) {
  const void* caller = __builtin_return_address(0);
  Register(caller);
  int (*real)(const void*, sqlite3**) = (int (*)(const void*, sqlite3**))Cached(
      &real_open16, "sqlite3_open16", caller, (void*)&sqlite3_open16);
  if (real == NULL) return NoSqlite(db);
  ++opening;
  int rc = real(filename, db);
  --opening;
  return rc;
}

QP_EXPORT int sqlite3_open_v2(const char* filename, sqlite3** db, int flags, const char* vfs) {
  const void* caller = __builtin_return_address(0);
  Register(caller);
  int (*real)(const char*, sqlite3**, int, const char*) =
      (int (*)(const char*, sqlite3**, int, const char*))Cached(&real_open_v2, "sqlite3_open_v2",
                                                                caller, (void*)&sqlite3_open_v2);
  if (real == NULL) return NoSqlite(db);
  ++opening;
  int rc = real(filename, db, flags, vfs);
  --opening;
  return rc;
}
