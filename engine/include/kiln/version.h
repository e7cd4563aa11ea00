// Kiln's version, as plans and reports record it.
#pragma once

namespace kiln {
constexpr const char* kKilnVersion = "0.1.0";
}  // namespace kiln
