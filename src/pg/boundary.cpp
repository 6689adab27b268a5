// The SQL boundary: exceptions from the engine or from guarded PostgreSQL calls become
// ereports with an SQLSTATE, raised after every C++ frame below has unwound.
#include "pg.h"

#include <sys/mman.h>

#include <cstdio>
#include <new>

#include "../core/error.h"
#include "../core/pair_expr.h"

namespace gpu2bs {
namespace pg {

namespace {

// SQLSTATE of an engine error code.
int sqlstate_of(ErrorCode c) {
  switch (c) {
    case ErrorCode::InvalidParameter: return ERRCODE_INVALID_PARAMETER_VALUE;
    case ErrorCode::ProgramLimit: return ERRCODE_PROGRAM_LIMIT_EXCEEDED;
    case ErrorCode::OutOfMemory: return ERRCODE_OUT_OF_MEMORY;
    case ErrorCode::Interrupted: return ERRCODE_QUERY_CANCELED;
    case ErrorCode::DeviceUnavailable: return ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE;
    case ErrorCode::DeviceError: return ERRCODE_SYSTEM_ERROR;
    case ErrorCode::Internal: break;
  }
  return ERRCODE_INTERNAL_ERROR;
}

// Plain-data copy of an error, so nothing with a destructor is alive when ereport longjmps.
struct ErrorText {
  int sqlstate = 0;
  bool interrupted = false;
  char msg[512] = {};
  char detail[1024] = {};
  char hint[512] = {};
  const char* file = nullptr;  // where the engine threw (static strings), else the boundary
  int line = 0;
  const char* function = nullptr;
};

void copy_text(char* dst, size_t cap, const char* src) { snprintf(dst, cap, "%s", src ? src : ""); }

// Fills `out` from the exception in flight; returns the PostgreSQL error to rethrow, if any.
ErrorData* describe_current(ErrorText* out) {
  try {
    throw;
  } catch (const PgError& e) {
    return e.edata;
  } catch (const ExprError& e) {
    // A pair expression's evaluation error: PostgreSQL's SQLSTATE and message for it.
    const char* s = expr_fault_sqlstate(e.fault());
    out->sqlstate = MAKE_SQLSTATE(s[0], s[1], s[2], s[3], s[4]);
    copy_text(out->msg, sizeof out->msg, e.what());
    out->file = e.file();
    out->line = e.line();
    out->function = e.function();
  } catch (const Error& e) {
    out->sqlstate = sqlstate_of(e.code());
    out->interrupted = e.code() == ErrorCode::Interrupted;
    copy_text(out->msg, sizeof out->msg, e.what());
    copy_text(out->detail, sizeof out->detail, e.detail().c_str());
    copy_text(out->hint, sizeof out->hint, e.hint().c_str());
    out->file = e.file();
    out->line = e.line();
    out->function = e.function();
  } catch (const std::bad_alloc&) {
    out->sqlstate = ERRCODE_OUT_OF_MEMORY;
    copy_text(out->msg, sizeof out->msg, "out of memory in gpu2bs");
  } catch (const std::exception& e) {
    out->sqlstate = ERRCODE_INTERNAL_ERROR;
    copy_text(out->msg, sizeof out->msg, e.what());
  } catch (...) {
    out->sqlstate = ERRCODE_INTERNAL_ERROR;
    copy_text(out->msg, sizeof out->msg, "unknown C++ exception in gpu2bs");
  }
  return nullptr;
}

}  // namespace

namespace {

// Raises the described error; called only once no C++ object is alive.
[[noreturn]] void raise(const ErrorText& err, ErrorData* pg_error) {
  if (pg_error) ReThrowError(pg_error);
  if (err.interrupted) {
    CHECK_FOR_INTERRUPTS();
    ereport(ERROR, (errcode(ERRCODE_QUERY_CANCELED), errmsg("canceling statement due to user request")));
  }
  // ereport with the location of the throw site (an engine Error) instead of this line's.
  if (errstart(ERROR, TEXTDOMAIN)) {
    errcode(err.sqlstate);
    errmsg("%s", err.msg);
    if (err.detail[0]) errdetail("%s", err.detail);
    if (err.hint[0]) errhint("%s", err.hint);
    if (err.file)
      errfinish(err.file, err.line, err.function);
    else
      errfinish(__FILE__, __LINE__, PG_FUNCNAME_MACRO);
  }
  pg_unreachable();
}

}  // namespace

Datum invoke(PGFunction impl, FunctionCallInfo fcinfo) {
  ErrorText err;
  ErrorData* pg_error = nullptr;
  try {
    return impl(fcinfo);
  } catch (...) {
    pg_error = describe_current(&err);
  }
  raise(err, pg_error);  // no C++ object is alive past the catch block
}

void call_at_boundary(void (*fn)(void*), void* arg) {
  ErrorText err;
  ErrorData* pg_error = nullptr;
  try {
    fn(arg);
    return;
  } catch (...) {
    pg_error = describe_current(&err);
  }
  raise(err, pg_error);
}

void* alloc_big(MemoryContext ctx, Size bytes) {
  void* p = MemoryContextAllocExtended(ctx, bytes, MCXT_ALLOC_HUGE);
#ifdef MADV_HUGEPAGE
  const uintptr_t huge = uintptr_t(2) << 20;
  const uintptr_t lo = (uintptr_t(p) + huge - 1) & ~(huge - 1);
  const uintptr_t hi = (uintptr_t(p) + bytes) & ~(huge - 1);
  if (hi > lo) (void)madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE);
#endif
  return p;
}

void* realloc_big(MemoryContext ctx, void* old, Size used, Size bytes) {
  void* p = alloc_big(ctx, bytes);
  if (old) {
    memcpy(p, old, used);
    pfree(old);
  }
  return p;
}

}  // namespace pg
}  // namespace gpu2bs
