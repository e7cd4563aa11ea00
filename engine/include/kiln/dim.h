// Symbolic dimensions. A DimExpr is a number, a named symbol ("batch"), or an
// expression over them (sum, product, floor/ceil division, max, min), kept
// simplified so that equal shapes compare equal. Shape inference builds these;
// binding symbols to numbers evaluates them.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

class DimExpr {
 public:
  enum class Op { kConst, kSymbol, kAdd, kMul, kFloorDiv, kCeilDiv, kMax, kMin, kMod };

  DimExpr() : DimExpr(int64_t{0}) {}
  DimExpr(int64_t value);  // NOLINT: numbers convert implicitly
  static DimExpr symbol(const std::string& name);
  // An unnamed unknown dimension gets a fresh symbol "unk__N".
  static DimExpr unknown();

  bool isConst() const { return m_node->op == Op::kConst; }
  bool isSymbol() const { return m_node->op == Op::kSymbol; }
  int64_t constValue() const { return m_node->value; }
  const std::string& symbolName() const { return m_node->name; }
  // The value when every symbol is bound; nullopt otherwise.
  std::optional<int64_t> evaluate(const std::map<std::string, int64_t>& bindings = {}) const;
  std::string toString() const;
  bool operator==(const DimExpr& other) const { return toString() == other.toString(); }
  bool operator!=(const DimExpr& other) const { return !(*this == other); }

  friend DimExpr operator+(const DimExpr& a, const DimExpr& b);
  friend DimExpr operator-(const DimExpr& a, const DimExpr& b);
  friend DimExpr operator*(const DimExpr& a, const DimExpr& b);
  static DimExpr floorDiv(const DimExpr& a, const DimExpr& b);
  static DimExpr ceilDiv(const DimExpr& a, const DimExpr& b);
  static DimExpr max(const DimExpr& a, const DimExpr& b);
  static DimExpr min(const DimExpr& a, const DimExpr& b);
  static DimExpr mod(const DimExpr& a, const DimExpr& b);

 private:
  struct Node {
    Op op = Op::kConst;
    int64_t value = 0;
    std::string name;
    std::shared_ptr<const Node> lhs, rhs;
  };
  explicit DimExpr(std::shared_ptr<const Node> node) : m_node(std::move(node)) {}
  static DimExpr binary(Op op, const DimExpr& a, const DimExpr& b);
  static void factorize(const DimExpr& e, int64_t* coefficient, std::vector<DimExpr>* factors);
  static std::optional<DimExpr> divideExactly(const DimExpr& a, const DimExpr& b);
  std::shared_ptr<const Node> m_node;
};

using SymbolicShape = std::vector<DimExpr>;
std::string symbolicShapeToString(const SymbolicShape& shape);  // "batchx3x224x224"

}  // namespace kiln
