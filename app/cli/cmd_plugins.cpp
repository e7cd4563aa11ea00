// `kiln plugins`: the plugin libraries loaded with --plugins and the creators they
// registered (name, version, namespace, fields). The loading itself is global:
// main.cpp takes --plugins LIB.so[,LIB.so] before any command runs.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/commands.h"
#include "kiln/plugin_registry.h"

namespace kiln::cli {
namespace {

std::string fieldText(const PluginFieldInfo& f) {
  return f.name + ": " + f.type + (f.length >= 0 ? "[" + std::to_string(f.length) + "]" : "");
}

nlohmann::json pluginsJson() {
  nlohmann::json doc = {{"libraries", nlohmann::json::array()},
                        {"creators", nlohmann::json::array()}};
  for (const PluginLibraryInfo& library : loadedPluginLibraries())
    doc["libraries"].push_back({{"path", library.path}, {"creators", library.creators}});
  for (const PluginCreatorInfo& c : registeredPlugins()) {
    nlohmann::json fields = nlohmann::json::array();
    for (const PluginFieldInfo& f : c.fields)
      fields.push_back({{"name", f.name}, {"type", f.type}, {"length", f.length}});
    doc["creators"].push_back({{"name", c.name},
                               {"version", c.version},
                               {"namespace", c.pluginNamespace},
                               {"library", c.library},
                               {"fields", fields}});
  }
  return doc;
}

}  // namespace

const char kPluginsUsage[] =
    "usage: kiln --plugins LIB.so[,LIB.so] plugins [--json]\n"
    "  Lists the plugin libraries loaded with --plugins and every registered plugin\n"
    "  creator: name, version, namespace, library and typed fields (length -1: any).\n"
    "  --plugins works with every command (build, run, inspect, conformance, ...).\n";

int runPlugins(const std::vector<std::string>& argv) {
  Args args({}, {"json"});
  Status parsed = args.parse(argv);
  if (!parsed.isOk()) return fail("plugins", parsed.message(), 2);
  if (!args.positional().empty()) return printUsage(kPluginsUsage, 2);
  if (args.flag("json")) {
    std::printf(
        "%s\n",
        pluginsJson().dump(1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  const auto libraries = loadedPluginLibraries();
  std::printf("plugin libraries: %zu\n", libraries.size());
  for (const PluginLibraryInfo& library : libraries)
    std::printf("  %s (%zu creators)\n", library.path.c_str(), library.creators.size());
  const auto creators = registeredPlugins();
  std::printf("plugin creators: %zu\n", creators.size());
  for (const PluginCreatorInfo& c : creators) {
    std::printf("  %-40s %s\n", c.displayName().c_str(),
                c.library.empty() ? "(static)" : c.library.c_str());
    for (const PluginFieldInfo& f : c.fields) std::printf("      %s\n", fieldText(f).c_str());
  }
  return 0;
}

}  // namespace kiln::cli
