// Pair expressions: user-defined two-body operators (DESIGN.md "The pair pipeline"). A pair
// expression is a typed tree over the numeric columns of two rows `a` and `b`, translated by the
// SQL layer from PostgreSQL's analyzed expression (never from user text). It has SQL's semantics:
// NULL propagation, three-valued logic, float8 comparison with NaN equal to NaN and above every
// other value, and the errors PostgreSQL's float functions raise (division by zero, overflow,
// logarithm of zero, ...). The CPU engine evaluates it (pair_expr_cpu.inc, vectorized over
// tiles of pairs); the code generator turns it into the `gpu2bs_pair` source of the GPU ABI
// (kernels/expr/expr_gpu.h). No PostgreSQL and no CUDA headers here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine.h"
#include "error.h"
#include "pair_ir.h"

namespace gpu2bs {

// Operations of the tree. Num nodes yield a real number or NULL; Bool nodes a Tri.
enum class ExprOp : uint8_t {
  Col,        // Num: column `col` of side `side` (0 = a, 1 = b)
  Const,      // Num: `value`, or NULL with `is_null`
  Truth,      // Bool: the constant `truth`
  Add, Sub, Mul, Div,  // Num x Num: float8 + - * / with PostgreSQL's overflow/underflow checks
  Neg, Abs, Sqrt,      // Num
  Pow,        // Num x Num: power(x, y) (the SQL layer accepts constant exponents only)
  Least, Greatest,     // Num^n: NULLs ignored, NULL only when every argument is
  Sin, Cos, Tan, Asin, Acos, Atan, Exp, Ln, Radians, Degrees,  // Num
  Atan2,      // Num x Num
  Cmp,        // Num x Num -> Bool (`cmp`)
  And, Or,    // Bool^n (n >= 2), evaluated left to right, stopping as SQL does
  Not,        // Bool
  IsNull, IsNotNull,   // Num -> Bool (never unknown)
  Case        // cond1, val1, cond2, val2, ..., else: Num or Bool by `type`
};

enum class ExprType : uint8_t { Num = 0, Bool = 1 };

// Errors of the evaluation, with PostgreSQL's SQLSTATE and message. The generated GPU code
// reports them through gpu2bs_raise(fault) with these numbers.
enum class ExprFault : int {
  None = 0,
  DivisionByZero = 1,  // 22012 "division by zero"
  Overflow = 2,        // 22003 "value out of range: overflow"
  Underflow = 3,       // 22003 "value out of range: underflow"
  LogZero = 4,         // 2201E "cannot take logarithm of zero"
  LogNegative = 5,     // 2201E "cannot take logarithm of a negative number"
  SqrtNegative = 6,    // 2201F "cannot take square root of a negative number"
  InputOutOfRange = 7, // 22003 "input is out of range" (sin/cos/tan of infinity, asin/acos)
  PowZeroNegative = 8, // 2201F "zero raised to a negative power is undefined"
  PowNegativeFraction = 9,  // 2201F "a negative number raised to a non-integer power ..."
  HistogramNaN = 10    // 2201G "operand, lower bound, and upper bound cannot be NaN"
};
constexpr int kExprFaultCount = 11;

// PostgreSQL's message and SQLSTATE (five characters) of a fault.
const char* expr_fault_message(ExprFault f);
const char* expr_fault_sqlstate(ExprFault f);

// The exception the CPU evaluation throws (and the CUDA engine, for a fault the device
// reported); the SQL boundary raises it with the fault's SQLSTATE.
class ExprError : public Error {
 public:
  explicit ExprError(ExprFault f, const char* file = __builtin_FILE(), int line = __builtin_LINE(),
                     const char* function = __builtin_FUNCTION())
      : Error(ErrorCode::Internal, expr_fault_message(f), {}, {}, file, line, function), fault_(f) {}
  ExprFault fault() const { return fault_; }

 private:
  ExprFault fault_;
};

struct ExprNode {
  ExprOp op = ExprOp::Const;
  ExprType type = ExprType::Num;
  CmpOp cmp = CmpOp::Eq;     // Cmp
  Tri truth = Tri::True;     // Truth
  uint8_t side = 0;          // Col
  bool is_null = false;      // Const
  uint16_t col = 0;          // Col
  double value = 0;          // Const
  uint32_t first = 0;        // arguments: args[first, first + nargs)
  uint32_t nargs = 0;
};

// A validated program: nodes in topological order (arguments before their node), a predicate
// root (Bool, optional) and a value root (Num, optional), over ncols[0] columns of a and
// ncols[1] of b.
class PairExpr {
 public:
  std::vector<ExprNode> nodes;
  std::vector<uint32_t> args;
  int predicate = -1;  // node index, -1: every pair is kept
  int value = -1;      // node index, -1: no value
  int ncols[2] = {0, 0};

  // Appends a node with the given arguments; returns its index.
  int add(const ExprNode& n, const std::vector<int>& operands = {});
  const ExprNode& node(int k) const { return nodes[size_t(k)]; }
  int arg(int k, int a) const { return int(args[nodes[size_t(k)].first + uint32_t(a)]); }
  // Checks the program's shape: operand counts and types, topological order, column indices,
  // root types. Throws Error(Internal) when malformed.
  void validate() const;
  // The expression as text over a.c<k> / b.c<k> (tests, messages): "((a.c0 - b.c0) < 1)".
  std::string describe(int root) const;
  // Depth of the deepest path from `root` (the generated code nests this deep).
  int depth(int root) const;
};

// What the engine computes over the pairs kept by the predicate.
enum class PairExprKind : uint8_t { Count, Sum, Histogram, Join };

// One side's columns: ncols float64 columns of n rows, column-major (data[c * n + i]); nulls in
// the same layout (1 = NULL), or null when no value is NULL.
struct ExprSide {
  const double* data = nullptr;
  const uint8_t* nulls = nullptr;
  int64_t n = 0;
  int ncols = 0;
};

// A pair-expression problem: all pairs (i, j) of a x b, or with `self` the unordered pairs
// i < j of a.
struct PairExprProblem {
  PairExprKind kind = PairExprKind::Count;
  bool self = false;
  Precision prec = Precision::Float64;
  ExprSide a, b;
  const PairExpr* expr = nullptr;
  std::string device_source;  // gpu2bs_pair for the GPU (generate_pair_source)
  double lo = 0, hi = 0;      // Histogram: lo < hi, both finite
  int nbuckets = 0;           // Histogram: >= 1
  uint64_t max_pairs = 0;     // Join: Error(ProgramLimit) beyond this many pairs (0: none)
};

struct PairExprResult {
  uint64_t count = 0;           // kept pairs (with a non-NULL value for Sum / Histogram)
  double sum = 0;               // Sum (0 when no pair is kept; the SQL layer returns NULL)
  bool sum_has_inf = false;     // Sum: an infinite value was summed (else an infinite sum
                                // is an overflow, as PostgreSQL's sum(float8) reports it)
  std::vector<uint64_t> hist;   // Histogram: nbuckets counts
};

// The bucket of `v` as PostgreSQL's width_bucket(v, lo, hi, nbuckets) computes it, minus one:
// -1 below lo, nbuckets at or above hi. v must not be NaN; lo < hi finite.
int pair_expr_bucket(double v, double lo, double hi, int nbuckets);

// The CPU evaluation of `p` (every core through parallel_for; counts exact; the sum in the
// fixed order documented in docs/pair-expressions.md). Join pairs go to `sink` (dist = 0).
// Throws ExprError for an evaluation error, Error(Interrupted) on cancel.
PairExprResult cpu_pair_expr(const PairExprProblem& p, PairSink* sink, Control& ctl);
// Test and benchmark hook: the instruction-set variant of cpu_pair_expr, 0 = automatic (the
// widest the processor runs), 1 = generic, 2 = AVX2, 3 = AVX-512 (the caller checks that the
// processor has it). Every variant returns the same bits.
void set_cpu_pair_expr_isa(int isa);

// Float32 histograms of a value F(g) (docs/pair-expressions-gpu.md, "Threshold table"): where
// every input value is 0, NaN or of magnitude within [2^-k, 2^k] for this k (the values rounded
// to float32), the generated g may drop overflow and underflow checks that cannot fire.
constexpr int kPairExprSafeExponent = 60;

// The CUDA source of `gpu2bs_pair` (kernels/expr/expr_gpu.h) for the expression and kind:
// generated from the tree only, constants as exact hexadecimal floating literals.
std::string generate_pair_source(const PairExpr& e, PairExprKind kind, Precision prec);

// Evaluates the predicate and value of one pair (i of a, j of b) with the scalar reference
// evaluator (tests): returns the predicate's truth, *value and *value_null set when the
// program has a value and the predicate is true. Throws ExprError.
Tri pair_expr_eval_one(const PairExpr& e, Precision prec, const ExprSide& a, int64_t i,
                       const ExprSide& b, int64_t j, double* value, bool* value_null);

}  // namespace gpu2bs
