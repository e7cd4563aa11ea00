// The host side of plugins: one process-wide registry of plugin creators, filled by
// shared libraries (loadPluginLibrary, `kiln --plugins LIB.so`, the studio's Plugins
// panel) and by static registration (KILN_REGISTER_PLUGIN_CREATOR), and the rules
// that map an ONNX node to a creator.
//
// Mapping a node (the ONNX parser convention of the seeds, extended):
//  - a node whose (domain, op type, opset) has a built-in kernel is never a plugin;
//  - otherwise the plugin name is the op type; the version is the node's
//    `plugin_version` attribute, else the highest registered; the namespace is the
//    `plugin_namespace` attribute, else the node's domain (creators registered under
//    the global namespace "" serve every domain), else, for the default domain, any
//    namespace as long as only one has the name;
//  - a node of a built plan carries kiln_plugin_* attributes that pin the exact
//    creator (name, version, namespace) and the library it came from.
#pragma once

#include <string>
#include <vector>

#include "kiln/graph.h"
#include "kiln/plugin.h"
#include "kiln/status.h"

namespace kiln {

// Attributes the builder writes on a plugin layer of a plan.
constexpr const char* kPluginNameAttribute = "kiln_plugin_name";
constexpr const char* kPluginVersionAttribute = "kiln_plugin_version";
constexpr const char* kPluginNamespaceAttribute = "kiln_plugin_namespace";
constexpr const char* kPluginLibraryAttribute = "kiln_plugin_library";
// Prefix of the serialized fields ("kiln_plugin_state:<field>").
constexpr const char* kPluginStatePrefix = "kiln_plugin_state:";
// INT8 scales of the inputs then outputs (floats, 0 = none), set at import.
constexpr const char* kPluginScalesAttribute = "kiln_plugin_scales";
// ONNX attributes that select the creator (never passed on as fields).
constexpr const char* kOnnxPluginVersionAttribute = "plugin_version";
constexpr const char* kOnnxPluginNamespaceAttribute = "plugin_namespace";

struct PluginFieldInfo {
  std::string name;
  std::string type;     // "int64", "float32", "string", "weights"
  int64_t length = -1;  // -1: any length
};

struct PluginCreatorInfo {
  std::string name;
  std::string version;
  std::string pluginNamespace;
  std::string library;  // the file it came from; "" for static registration
  std::vector<PluginFieldInfo> fields;
  // "name" or "namespace::name", then " version V".
  std::string displayName() const;
};

struct PluginLibraryInfo {
  std::string path;
  std::vector<std::string> creators;  // display names
};

// The creator a node maps to.
struct ResolvedPlugin {
  plugin::IPluginCreator* creator = nullptr;
  PluginCreatorInfo info;
  bool fromPlan = false;  // the node carries a plan's serialized state
};

// Loads a plugin library: dlopen, the API version check, then its registration
// entry point. Loading the same file twice is a no-op. Errors name the file.
Status loadPluginLibrary(const std::string& path);
// Loads each path of a comma-separated list ("a.so,b.so").
Status loadPluginLibraries(const std::string& commaSeparatedPaths);
// Registers a creator from code linked into the program. `library` "" for static.
Status registerPluginCreator(plugin::IPluginCreator& creator, const std::string& pluginNamespace,
                             const std::string& library = "");

std::vector<PluginCreatorInfo> registeredPlugins();
std::vector<PluginLibraryInfo> loadedPluginLibraries();
// "loaded plugins: ns::A version 1, B version 2" or "no plugin is loaded (load a
// library with --plugins LIB.so)": the tail of every unresolved-node error.
std::string describeLoadedPlugins();

// True when `node` is a plugin layer: no built-in kernel runs it and either a
// creator maps to it or it is a plan's plugin layer (whose creator may be missing).
bool isPluginNode(const Node& node);
// The creator for `node`, or an error naming the node, what was looked for and,
// for a plan's layer, the library to load.
Result<ResolvedPlugin> resolvePlugin(const Node& node);
// Every plugin layer of the main graph whose creator is missing, in one error.
Status checkPluginsAvailable(const Network& network);

}  // namespace kiln
