#include "plugin/dim_expr_builder.h"

namespace kiln {

DimExprBuilder::DimExprBuilder() {
  m_owned.insert(&m_zero);
}

const plugin::IDimExpr* DimExprBuilder::wrap(const DimExpr& value) {
  m_exprs.emplace_back(value);
  const plugin::IDimExpr* expr = &m_exprs.back();
  m_owned.insert(expr);
  return expr;
}

const plugin::IDimExpr* DimExprBuilder::fail(const std::string& why) noexcept {
  try {
    if (m_error.empty()) m_error = why;
  } catch (...) {
  }
  return &m_zero;
}

const plugin::IDimExpr* DimExprBuilder::constant(int64_t value) noexcept {
  try {
    return wrap(DimExpr(value));
  } catch (...) {
    return fail("out of memory building a dimension expression");
  }
}

const plugin::IDimExpr* DimExprBuilder::operation(plugin::DimOperation op,
                                                  const plugin::IDimExpr& a,
                                                  const plugin::IDimExpr& b) noexcept {
  try {
    if (!m_owned.count(&a) || !m_owned.count(&b))
      return fail("an operand of a dimension operation was not made by the expression builder");
    const DimExpr& x = static_cast<const Expr&>(a).value;
    const DimExpr& y = static_cast<const Expr&>(b).value;
    switch (op) {
      case plugin::DimOperation::kSum:
        return wrap(x + y);
      case plugin::DimOperation::kProd:
        return wrap(x * y);
      case plugin::DimOperation::kMax:
        return wrap(DimExpr::max(x, y));
      case plugin::DimOperation::kMin:
        return wrap(DimExpr::min(x, y));
      case plugin::DimOperation::kSub:
        return wrap(x - y);
      case plugin::DimOperation::kFloorDiv:
      case plugin::DimOperation::kCeilDiv:
        if (y.isConst() && y.constValue() == 0) return fail("a dimension is divided by zero");
        return wrap(op == plugin::DimOperation::kFloorDiv ? DimExpr::floorDiv(x, y)
                                                          : DimExpr::ceilDiv(x, y));
    }
    return fail("unknown dimension operation " + std::to_string(static_cast<int32_t>(op)));
  } catch (...) {
    return fail("out of memory building a dimension expression");
  }
}

Result<DimExpr> DimExprBuilder::unwrap(const plugin::IDimExpr* expr) const {
  if (!expr) return invalidArgument("a dimension expression is not set (nullptr)");
  if (!m_owned.count(expr))
    return invalidArgument("a dimension expression was not made by the expression builder");
  return static_cast<const Expr*>(expr)->value;
}

}  // namespace kiln
