#include "cli/status_json.h"

#include <cstdio>

#include "cli/commands.h"

namespace kiln::cli {

nlohmann::json statusNodeJson(const StatusNode& node) {
  return {{"name", node.name},
          {"index", node.index},
          {"op_type", node.opType},
          {"domain", node.domain}};
}

nlohmann::json statusJson(const Status& status) {
  nlohmann::json j = {{"code", statusCodeName(status.code())}, {"message", status.message()}};
  if (const StatusNode* node = status.node()) j["node"] = statusNodeJson(*node);
  if (!status.tensor().empty()) j["tensor"] = status.tensor();
  if (!status.layer().empty()) j["layer"] = status.layer();
  return j;
}

int failStatus(const std::string& command, const Status& status, bool json, int code) {
  if (json) {
    const nlohmann::json error = {{"error", statusJson(status)}};
    std::printf("%s\n",
                error.dump(1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  }
  return fail(command, status.message(), code);
}

}  // namespace kiln::cli
