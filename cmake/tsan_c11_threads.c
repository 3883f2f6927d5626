// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// ThreadSanitizer builds only (the tsan preset; CMakeLists.txt links it into every
// target). librdkafka uses C11 threads: thrd_create, mtx_lock, cnd_wait... glibc
// implements them by calling its internal pthread functions directly, and GCC 12's
// libtsan intercepts only the public pthread_* calls. Without this file librdkafka's
// threads ran with no TSan state (a SEGV in TSan's allocator on their first malloc),
// and its mutexes, condition variables and joins were invisible (hundreds of false
// reports). Here each C11 call is the pthread call that glibc makes, through the public
// symbol TSan intercepts, with glibc's own conventions: thrd_t is a pthread_t, mtx_t and
// cnd_t hold a pthread_mutex_t and pthread_cond_t, a thread's int result is its void*
// exit value. Hidden: each binary binds its own copy; nothing is exported.
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <threads.h>

#define KELT_TSAN_SHIM __attribute__((visibility("hidden")))

static int kelt_tsan_result(int rc) {
  switch (rc) {
    case 0:
      return thrd_success;
    case ENOMEM:
    case EAGAIN:
      return thrd_nomem;
    case EBUSY:
      return thrd_busy;
    case ETIMEDOUT:
      return thrd_timedout;
    default:
      return thrd_error;
  }
}

struct kelt_tsan_c11_start {
  thrd_start_t func;
  void* arg;
};

static void* kelt_tsan_c11_trampoline(void* p) {
  struct kelt_tsan_c11_start start = *(struct kelt_tsan_c11_start*)p;
  free(p);
  return (void*)(intptr_t)start.func(start.arg);
}

KELT_TSAN_SHIM int thrd_create(thrd_t* thr, thrd_start_t func, void* arg) {
  struct kelt_tsan_c11_start* start = malloc(sizeof *start);
  if (start == NULL) return thrd_nomem;
  start->func = func;
  start->arg = arg;
  int rc = pthread_create(thr, NULL, kelt_tsan_c11_trampoline, start);
  if (rc != 0) free(start);
  return kelt_tsan_result(rc);
}

KELT_TSAN_SHIM int thrd_join(thrd_t thr, int* res) {
  void* value = NULL;
  int rc = pthread_join(thr, &value);
  if (rc == 0 && res != NULL) *res = (int)(intptr_t)value;
  return kelt_tsan_result(rc);
}

KELT_TSAN_SHIM int thrd_detach(thrd_t thr) {
  return kelt_tsan_result(pthread_detach(thr));
}

KELT_TSAN_SHIM int mtx_init(mtx_t* m, int type) {
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  if (type & mtx_recursive) pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
  int rc = pthread_mutex_init((pthread_mutex_t*)m, &attr);
  pthread_mutexattr_destroy(&attr);
  return kelt_tsan_result(rc);
}

KELT_TSAN_SHIM int mtx_lock(mtx_t* m) {
  return kelt_tsan_result(pthread_mutex_lock((pthread_mutex_t*)m));
}

KELT_TSAN_SHIM int mtx_trylock(mtx_t* m) {
  return kelt_tsan_result(pthread_mutex_trylock((pthread_mutex_t*)m));
}

KELT_TSAN_SHIM int mtx_timedlock(mtx_t* restrict m, const struct timespec* restrict ts) {
  return kelt_tsan_result(pthread_mutex_timedlock((pthread_mutex_t*)m, ts));
}

KELT_TSAN_SHIM int mtx_unlock(mtx_t* m) {
  return kelt_tsan_result(pthread_mutex_unlock((pthread_mutex_t*)m));
}

KELT_TSAN_SHIM void mtx_destroy(mtx_t* m) { pthread_mutex_destroy((pthread_mutex_t*)m); }

KELT_TSAN_SHIM int cnd_init(cnd_t* c) {
  return kelt_tsan_result(pthread_cond_init((pthread_cond_t*)c, NULL));
}

KELT_TSAN_SHIM int cnd_signal(cnd_t* c) {
  return kelt_tsan_result(pthread_cond_signal((pthread_cond_t*)c));
}

KELT_TSAN_SHIM int cnd_broadcast(cnd_t* c) {
  return kelt_tsan_result(pthread_cond_broadcast((pthread_cond_t*)c));
}

KELT_TSAN_SHIM int cnd_wait(cnd_t* c, mtx_t* m) {
  return kelt_tsan_result(pthread_cond_wait((pthread_cond_t*)c, (pthread_mutex_t*)m));
}

KELT_TSAN_SHIM int cnd_timedwait(cnd_t* restrict c, mtx_t* restrict m,
                                 const struct timespec* restrict ts) {
  return kelt_tsan_result(
      pthread_cond_timedwait((pthread_cond_t*)c, (pthread_mutex_t*)m, ts));
}

KELT_TSAN_SHIM void cnd_destroy(cnd_t* c) { pthread_cond_destroy((pthread_cond_t*)c); }

KELT_TSAN_SHIM void call_once(once_flag* flag, void (*func)(void)) {
  pthread_once((pthread_once_t*)flag, func);
}
