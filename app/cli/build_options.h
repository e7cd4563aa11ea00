// `kiln build` options -> BuilderConfig (trtexec's flags under Kiln's spellings).
#pragma once

#include "cli/args.h"
#include "kiln/builder_config.h"

namespace kiln::cli {

// The options `kiln build` declares: valued and flags.
std::set<std::string> buildValuedOptions();
std::set<std::string> buildFlagOptions();
// Fills `config` from parsed arguments (not the cache, replay or callbacks).
// Errors name the option.
Status builderConfigFromArgs(const Args& args, BuilderConfig* config);

}  // namespace kiln::cli
