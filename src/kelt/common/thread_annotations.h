// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Clang's thread-safety attributes
// (https://clang.llvm.org/docs/ThreadSafetyAnalysis.html) under kelt's names, as Abseil's
// thread_annotations.h has them. With clang, -Wthread-safety then checks that state
// marked KELT_GUARDED_BY(mu) is touched only with `mu` held; with other compilers the
// macros expand to nothing. std::mutex carries no annotations in libstdc++: lock
// kelt::internal::Mutex (common/mutex.h) instead.
#pragma once

#if defined(__clang__)
#define KELT_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define KELT_THREAD_ANNOTATION(x)
#endif

/// A type that is a lock (a mutex): `name` appears in the warnings.
#define KELT_CAPABILITY(name) KELT_THREAD_ANNOTATION(capability(name))

/// An RAII type that holds a lock from its construction to its destruction.
#define KELT_SCOPED_CAPABILITY KELT_THREAD_ANNOTATION(scoped_lockable)

/// A member that may be read or written only with `mu` held.
#define KELT_GUARDED_BY(mu) KELT_THREAD_ANNOTATION(guarded_by(mu))

/// A pointer member whose pointee may be touched only with `mu` held.
#define KELT_PT_GUARDED_BY(mu) KELT_THREAD_ANNOTATION(pt_guarded_by(mu))

/// A function its callers must call with these locks held.
#define KELT_REQUIRES(...) KELT_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))

/// A function its callers must not call with these locks held (it takes them).
#define KELT_EXCLUDES(...) KELT_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))

/// A function that takes these locks (no argument: the object it is called on).
#define KELT_ACQUIRE(...) KELT_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))

/// A function that releases these locks (no argument: the object it is called on).
#define KELT_RELEASE(...) KELT_THREAD_ANNOTATION(release_capability(__VA_ARGS__))

/// A function the analysis does not check (say why where it is used).
#define KELT_NO_THREAD_SAFETY_ANALYSIS KELT_THREAD_ANNOTATION(no_thread_safety_analysis)
