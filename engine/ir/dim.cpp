#include "kiln/dim.h"

#include <algorithm>
#include <atomic>
#include <limits>

namespace kiln {

DimExpr::DimExpr(int64_t value) {
  auto node = std::make_shared<Node>();
  node->op = Op::kConst;
  node->value = value;
  m_node = node;
}

DimExpr DimExpr::symbol(const std::string& name) {
  auto node = std::make_shared<Node>();
  node->op = Op::kSymbol;
  node->name = name;
  return DimExpr(std::shared_ptr<const Node>(node));
}

DimExpr DimExpr::unknown() {
  static std::atomic<int> counter{0};
  return symbol("unk__" + std::to_string(counter++));
}

// Constant arithmetic saturates instead of wrapping: a hostile shape value may be
// near 2^63, and a saturated dim then fails the size check (kiln/tensor_size.h)
// where a wrapped one could look small.
static int64_t saturate(bool negative) {
  return negative ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
}
static int64_t saturatingAdd(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? saturate(a < 0) : r;
}
static int64_t saturatingMul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? saturate((a < 0) != (b < 0)) : r;
}

static int64_t floorDivInt(int64_t a, int64_t b) {
  if (b == -1) return a == std::numeric_limits<int64_t>::min() ? saturate(false) : -a;
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

DimExpr DimExpr::binary(Op op, const DimExpr& a, const DimExpr& b) {
  // Fold constants and identities so that equal shapes print (and compare) equal.
  if (a.isConst() && b.isConst()) {
    int64_t x = a.constValue(), y = b.constValue();
    switch (op) {
      case Op::kAdd:
        return saturatingAdd(x, y);
      case Op::kMul:
        return saturatingMul(x, y);
      case Op::kFloorDiv:
        if (y != 0) return floorDivInt(x, y);
        break;
      case Op::kCeilDiv:
        if (y != 0) return -floorDivInt(saturatingMul(x, -1), y);
        break;
      case Op::kMod:
        if (y != 0) return x - saturatingMul(y, floorDivInt(x, y));
        break;
      case Op::kMax:
        return std::max(x, y);
      case Op::kMin:
        return std::min(x, y);
      default:
        break;
    }
  }
  if (op == Op::kAdd && a.isConst() && a.constValue() == 0) return b;
  if (op == Op::kAdd && b.isConst() && b.constValue() == 0) return a;
  if (op == Op::kMul && a.isConst() && a.constValue() == 1) return b;
  if (op == Op::kMul && b.isConst() && b.constValue() == 1) return a;
  if (op == Op::kMul &&
      ((a.isConst() && a.constValue() == 0) || (b.isConst() && b.constValue() == 0)))
    return 0;
  if ((op == Op::kFloorDiv || op == Op::kCeilDiv) && b.isConst() && b.constValue() == 1) return a;
  if (op == Op::kMul && b.isConst() && a.m_node->op == Op::kMul &&
      a.m_node->rhs->op == Op::kConst) {
    // (x * c1) * c2 = x * (c1 * c2): keeps products in one canonical form.
    return DimExpr(a.m_node->lhs) * DimExpr(saturatingMul(a.m_node->rhs->value, b.constValue()));
  }
  if (op == Op::kMul && a.isConst() && b.m_node->op == Op::kMul &&
      b.m_node->rhs->op == Op::kConst) {
    return DimExpr(b.m_node->lhs) * DimExpr(saturatingMul(b.m_node->rhs->value, a.constValue()));
  }
  if (op == Op::kFloorDiv || op == Op::kCeilDiv) {
    if (auto exact = divideExactly(a, b)) return *exact;
  }
  if ((op == Op::kMax || op == Op::kMin) && a == b) return a;
  auto node = std::make_shared<Node>();
  node->op = op;
  // Commutative ops keep a canonical operand order (constants last) for comparison.
  bool commutative = op == Op::kAdd || op == Op::kMul || op == Op::kMax || op == Op::kMin;
  if (commutative && (a.isConst() || (!b.isConst() && b.toString() < a.toString()))) {
    node->lhs = b.m_node;
    node->rhs = a.m_node;
  } else {
    node->lhs = a.m_node;
    node->rhs = b.m_node;
  }
  return DimExpr(std::shared_ptr<const Node>(node));
}

DimExpr operator+(const DimExpr& a, const DimExpr& b) {
  return DimExpr::binary(DimExpr::Op::kAdd, a, b);
}
DimExpr operator-(const DimExpr& a, const DimExpr& b) {
  if (b.isConst()) return a + DimExpr(saturatingMul(b.constValue(), -1));
  if (a == b) return 0;
  return DimExpr::binary(DimExpr::Op::kAdd, a, DimExpr::binary(DimExpr::Op::kMul, b, -1));
}
DimExpr operator*(const DimExpr& a, const DimExpr& b) {
  return DimExpr::binary(DimExpr::Op::kMul, a, b);
}
DimExpr DimExpr::floorDiv(const DimExpr& a, const DimExpr& b) {
  return binary(Op::kFloorDiv, a, b);
}
DimExpr DimExpr::ceilDiv(const DimExpr& a, const DimExpr& b) {
  return binary(Op::kCeilDiv, a, b);
}
DimExpr DimExpr::max(const DimExpr& a, const DimExpr& b) {
  return binary(Op::kMax, a, b);
}
DimExpr DimExpr::min(const DimExpr& a, const DimExpr& b) {
  return binary(Op::kMin, a, b);
}
DimExpr DimExpr::mod(const DimExpr& a, const DimExpr& b) {
  return binary(Op::kMod, a, b);
}

// Splits a product into its constant coefficient and its other factors.
void DimExpr::factorize(const DimExpr& e, int64_t* coefficient, std::vector<DimExpr>* factors) {
  if (e.isConst()) {
    *coefficient = saturatingMul(*coefficient, e.constValue());
  } else if (e.m_node->op == Op::kMul) {
    factorize(DimExpr(e.m_node->lhs), coefficient, factors);
    factorize(DimExpr(e.m_node->rhs), coefficient, factors);
  } else {
    factors->push_back(e);
  }
}

// a / b when b's factors all appear in a and the coefficients divide: the
// quotient is exact, so floor and ceil agree (e.g. batch*20 / batch = 20).
std::optional<DimExpr> DimExpr::divideExactly(const DimExpr& a, const DimExpr& b) {
  int64_t ca = 1, cb = 1;
  std::vector<DimExpr> fa, fb;
  factorize(a, &ca, &fa);
  factorize(b, &cb, &fb);
  if (cb == 0 || cb == -1 || ca % cb != 0 || (fa.empty() && fb.empty())) return std::nullopt;
  for (const DimExpr& f : fb) {
    auto it = std::find(fa.begin(), fa.end(), f);
    if (it == fa.end()) return std::nullopt;
    fa.erase(it);
  }
  DimExpr q(ca / cb);
  for (const DimExpr& f : fa) q = q * f;
  return q;
}

std::optional<int64_t> DimExpr::evaluate(const std::map<std::string, int64_t>& bindings) const {
  const Node& n = *m_node;
  if (n.op == Op::kConst) return n.value;
  if (n.op == Op::kSymbol) {
    auto it = bindings.find(n.name);
    if (it == bindings.end()) return std::nullopt;
    return it->second;
  }
  auto l = DimExpr(n.lhs).evaluate(bindings);
  auto r = DimExpr(n.rhs).evaluate(bindings);
  if (!l || !r) return std::nullopt;
  DimExpr folded = binary(n.op, *l, *r);
  if (!folded.isConst()) return std::nullopt;  // division by zero
  return folded.constValue();
}

std::string DimExpr::toString() const {
  const Node& n = *m_node;
  auto side = [](const std::shared_ptr<const Node>& p) { return DimExpr(p).toString(); };
  switch (n.op) {
    case Op::kConst:
      return std::to_string(n.value);
    case Op::kSymbol:
      return n.name;
    case Op::kAdd:
      return "(" + side(n.lhs) + "+" + side(n.rhs) + ")";
    case Op::kMul:
      return side(n.lhs) + "*" + side(n.rhs);
    case Op::kFloorDiv:
      return "floor(" + side(n.lhs) + "/" + side(n.rhs) + ")";
    case Op::kCeilDiv:
      return "ceil(" + side(n.lhs) + "/" + side(n.rhs) + ")";
    case Op::kMod:
      return "(" + side(n.lhs) + "%" + side(n.rhs) + ")";
    case Op::kMax:
      return "max(" + side(n.lhs) + "," + side(n.rhs) + ")";
    case Op::kMin:
      return "min(" + side(n.lhs) + "," + side(n.rhs) + ")";
  }
  return "?";
}

std::string symbolicShapeToString(const SymbolicShape& shape) {
  if (shape.empty()) return "scalar";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += "x";
    s += shape[i].toString();
  }
  return s;
}

}  // namespace kiln
