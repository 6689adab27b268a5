// PostgreSQL headers for C++ translation units, and the C++/PostgreSQL boundary (pg_duckdb's
// model): every SQL entry point that runs C++ is defined with GPU2BS_FUNCTION, which catches C++
// exceptions and raises the ereport only after the C++ frames are gone; PostgreSQL calls made
// from C++ go through pg_guard(), which turns an ereport into a C++ exception (PgError).
#pragma once

extern "C" {
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/elog.h"
}

#include <exception>

namespace gpu2bs {
namespace pg {

// A PostgreSQL error caught by pg_guard(), carried through C++ frames to the boundary.
class PgError : public std::exception {
 public:
  explicit PgError(ErrorData* e) : edata(e) {}
  const char* what() const noexcept override { return edata && edata->message ? edata->message : "postgres error"; }
  ErrorData* edata;  // palloc'd in the memory context current at the guard
};

// Runs `fn` (which must hold no C++ objects with destructors and throw no C++ exceptions) under
// PG_TRY; an ereport inside becomes a PgError thrown after the PostgreSQL error state is reset.
template <typename F>
void pg_guard(F&& fn) {
  MemoryContext mcx = CurrentMemoryContext;
  ErrorData* volatile edata = nullptr;
  PG_TRY();
  {
    fn();
  }
  PG_CATCH();
  {
    MemoryContextSwitchTo(mcx);
    edata = CopyErrorData();
    FlushErrorState();
  }
  PG_END_TRY();
  if (edata) throw PgError(edata);
}

// Calls `impl` and converts any C++ exception into an ereport once the C++ frames are gone.
Datum invoke(PGFunction impl, FunctionCallInfo fcinfo);

// The same for a callback that is not an SQL function (executor hooks): runs fn(arg).
void call_at_boundary(void (*fn)(void*), void* arg);

// A huge allocation (may exceed 1 GB) in `ctx` whose 2 MB-aligned interior is advised to use
// transparent huge pages: large point arrays and spools are written once right after, and with
// 4 KB pages that first write is mostly page faults. PostgreSQL code (may ereport).
void* alloc_big(MemoryContext ctx, Size bytes);
// Grows `old` (nullptr or from alloc_big, `used` bytes in use) to `bytes` with alloc_big: the
// new block is advised before the used bytes are copied over; `old` is freed.
void* realloc_big(MemoryContext ctx, void* old, Size used, Size bytes);

}  // namespace pg
}  // namespace gpu2bs

// Defines the SQL-callable function `name`; its C++ body follows the macro.
#define GPU2BS_FUNCTION(name)                                                  \
  static Datum name##_impl(FunctionCallInfo fcinfo);                           \
  extern "C" {                                                                 \
  PG_FUNCTION_INFO_V1(name);                                                   \
  Datum name(PG_FUNCTION_ARGS) { return gpu2bs::pg::invoke(name##_impl, fcinfo); } \
  }                                                                            \
  static Datum name##_impl(FunctionCallInfo fcinfo)
