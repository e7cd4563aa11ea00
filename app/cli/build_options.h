// `kiln build` options -> BuilderConfig (trtexec's flags under Kiln's spellings).
#pragma once

#include "cli/args.h"
#include "kiln/builder_config.h"

namespace kiln::cli {

// The backend a plan is built for when --backend is not given (kiln build, kiln sweep).
// The other build defaults are BuilderConfig's own (kiln/builder_config.h): an option
// not given leaves the config's default.
inline constexpr char kDefaultBuildBackend[] = "cpu";

// The options `kiln build` declares: valued and flags.
std::set<std::string> buildValuedOptions();
std::set<std::string> buildFlagOptions();
// Fills `config`, a default BuilderConfig, from parsed arguments (not the cache, replay
// or callbacks): an option not given leaves BuilderConfig's default. Errors name the
// option.
Status builderConfigFromArgs(const Args& args, BuilderConfig* config);

}  // namespace kiln::cli
