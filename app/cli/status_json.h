// A failed Status as JSON, for the --json outputs: the message as the text output
// prints it, plus the node, tensor and layer fields when the status has them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "kiln/status.h"

namespace kiln::cli {

// {"name", "index", "op_type", "domain"}: the node a status is about.
nlohmann::json statusNodeJson(const StatusNode& node);

// {"code": "invalid argument", "message": "...", "node": {"name", "index", "op_type",
// "domain"}, "tensor": "...", "layer": "..."}; fields the status lacks are left out.
nlohmann::json statusJson(const Status& status);

// As fail(): "kiln <command>: <message>" on stderr, returning `code`; with `json`, also
// {"error": statusJson(status)} on stdout, so a script reading --json gets the fields.
int failStatus(const std::string& command, const Status& status, bool json, int code = 1);

}  // namespace kiln::cli
