// The host's IExprBuilder: plugin dimension expressions backed by kiln DimExprs,
// owned by the builder for the duration of one getOutputShapes() call. A pointer
// the plugin hands back is accepted only if this builder made it.
#pragma once

#include <deque>
#include <string>
#include <unordered_set>

#include "kiln/dim.h"
#include "kiln/plugin.h"
#include "kiln/status.h"

namespace kiln {

class DimExprBuilder final : public plugin::IExprBuilder {
 public:
  DimExprBuilder();
  const plugin::IDimExpr* constant(int64_t value) noexcept override;
  const plugin::IDimExpr* operation(plugin::DimOperation op, const plugin::IDimExpr& a,
                                    const plugin::IDimExpr& b) noexcept override;

  // An expression for a kiln dimension (an input's).
  const plugin::IDimExpr* wrap(const DimExpr& value);
  // The kiln expression behind `expr`; an error when this builder did not make it.
  Result<DimExpr> unwrap(const plugin::IDimExpr* expr) const;
  // The first misuse seen (an unknown operation, a division by zero, a foreign
  // expression); "" when none.
  const std::string& error() const { return m_error; }

 private:
  struct Expr final : plugin::IDimExpr {
    explicit Expr(DimExpr v) : value(std::move(v)) {}
    bool isConstant() const noexcept override { return value.isConst(); }
    int64_t getConstantValue() const noexcept override {
      return value.isConst() ? value.constValue() : 0;
    }
    DimExpr value;
  };
  const plugin::IDimExpr* fail(const std::string& why) noexcept;

  std::deque<Expr> m_exprs;
  std::unordered_set<const plugin::IDimExpr*> m_owned;
  Expr m_zero{DimExpr(int64_t{0})};  // returned after a failure, so no call returns nullptr
  std::string m_error;
};

}  // namespace kiln
