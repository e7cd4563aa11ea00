// What the statically registered test plugins (static_test_plugins.cpp) record.
#pragma once

#include <vector>

#include "kiln/plugin.h"

namespace kiln::test {

// Every configurePlugin() input 0 range RangeProbe has seen, in call order.
extern std::vector<plugin::DynamicTensorDesc> g_rangeProbeConfigs;

}  // namespace kiln::test
