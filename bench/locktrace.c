/*
** locktrace: records every POSIX advisory lock a process sets, with the time,
** for bench/contention.py to see when each process held which lock on the
** database file. Not part of QueryPilot.
**
** Usage: LD_PRELOAD=build/bench/locktrace.so QP_LOCKTRACE=/tmp/prefix program
** At exit, /tmp/prefix.<pid> holds one line per F_SETLK/F_SETLKW call:
**   <CLOCK_MONOTONIC ns> <fd> <l_type> <l_start> <l_len> <result>
** (l_type 0 F_RDLCK, 1 F_WRLCK, 2 F_UNLCK; result 0 or -1). SQLite's unix VFS
** takes its locks this way: a SHARED lock is a read lock on the 510 bytes at
** 0x40000002, an EXCLUSIVE lock a write lock on them, both undone by an
** unlock of the whole file (start 0, length 0) or of that range.
**
** Only what the program sets through the C library's fcntl() is seen. Events
** past the buffer's size are dropped; the file then says so in a last line
** "dropped <n>".
*/
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

typedef struct {
  long long ns;
  int fd;
  int type;
  long long start;
  long long len;
  int result;
} LockEvent;

enum { kMaxEvents = 1 << 20 };
static LockEvent events[kMaxEvents];
static int n_events; /* taken with an atomic add: SQLite may lock from any thread */
static int (*real_fcntl)(int, int, ...);

static void write_events(void) {
  const char* prefix = getenv("QP_LOCKTRACE");
  char name[4096];
  FILE* f;
  int i, n = __atomic_load_n(&n_events, __ATOMIC_ACQUIRE);
  if (!prefix) return;
  snprintf(name, sizeof name, "%s.%d", prefix, (int)getpid());
  f = fopen(name, "w");
  if (!f) return;
  for (i = 0; i < n && i < kMaxEvents; i++) {
    fprintf(f, "%lld %d %d %lld %lld %d\n", events[i].ns, events[i].fd, events[i].type,
            events[i].start, events[i].len, events[i].result);
  }
  if (n > kMaxEvents) fprintf(f, "dropped %d\n", n - kMaxEvents);
  fclose(f);
}

static void resolve(void) {
  real_fcntl = (int (*)(int, int, ...))dlsym(RTLD_NEXT, "fcntl64");
  if (!real_fcntl) real_fcntl = (int (*)(int, int, ...))dlsym(RTLD_NEXT, "fcntl");
}

__attribute__((constructor)) static void start(void) {
  if (!real_fcntl) resolve();
  atexit(write_events);
}

static int traced(int fd, int cmd, void* arg) {
  int result;
  if (!real_fcntl) resolve(); /* a call from another library's constructor */
  result = real_fcntl(fd, cmd, arg);
  if ((cmd == F_SETLK || cmd == F_SETLKW) && arg) {
    const struct flock* l = (const struct flock*)arg;
    struct timespec ts;
    int i = __atomic_fetch_add(&n_events, 1, __ATOMIC_ACQ_REL);
    clock_gettime(CLOCK_MONOTONIC, &ts);
    if (i < kMaxEvents) {
      LockEvent e = {ts.tv_sec * 1000000000LL + ts.tv_nsec,
                     fd,
                     l->l_type,
                     (long long)l->l_start,
                     (long long)l->l_len,
                     result};
      events[i] = e;
    }
  }
  return result;
}

/* glibc names the 64-bit-offset call fcntl64; programs built against older
** headers call fcntl. Every command SQLite uses takes a pointer or an int,
** passed on as one pointer-sized argument. */
int fcntl64(int fd, int cmd, ...) {
  va_list ap;
  void* arg;
  va_start(ap, cmd);
  arg = va_arg(ap, void*);
  va_end(ap);
  return traced(fd, cmd, arg);
}

int fcntl(int fd, int cmd, ...) {
  va_list ap;
  void* arg;
  va_start(ap, cmd);
  arg = va_arg(ap, void*);
  va_end(ap);
  return traced(fd, cmd, arg);
}
