// The passes, one factory each (one file each); pipeline.cpp lists them in order.
#pragma once

#include <memory>

#include "passes/pass.h"

namespace kiln::passes {

std::unique_ptr<Pass> makeFoldBatchNorm();
std::unique_ptr<Pass> makeFuseConvBiasActivation();
std::unique_ptr<Pass> makeFuseMatMulBiasActivation();
std::unique_ptr<Pass> makeFuseSoftmaxScaleMask();
std::unique_ptr<Pass> makeFuseAddLayerNorm();
std::unique_ptr<Pass> makeRemoveDeadNodes();

}  // namespace kiln::passes
