// The process-wide plugin registry: creators by (namespace, name, version), the
// libraries they came from, and node -> creator resolution (see plugin_registry.h).
#include "kiln/plugin_registry.h"

#include <dlfcn.h>

#include <algorithm>
#include <filesystem>
#include <mutex>

#include "ops/reference_ops.h"
#include "plugin/plugin_fields.h"

namespace kiln {
namespace {

struct Entry {
  plugin::IPluginCreator* creator = nullptr;
  PluginCreatorInfo info;
};

// Compares plugin versions numerically where both are numbers ("10" > "9").
bool versionLess(const std::string& a, const std::string& b) {
  const bool numeric = !a.empty() && !b.empty() &&
                       a.find_first_not_of("0123456789.") == std::string::npos &&
                       b.find_first_not_of("0123456789.") == std::string::npos;
  if (!numeric) return a < b;
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    const size_t ei = std::min(a.find('.', i), a.size()), ej = std::min(b.find('.', j), b.size());
    const long long x = i < ei ? std::stoll(a.substr(i, ei - i)) : 0;
    const long long y = j < ej ? std::stoll(b.substr(j, ej - j)) : 0;
    if (x != y) return x < y;
    i = ei + 1;
    j = ej + 1;
  }
  return false;
}

class Registry {
 public:
  static Registry& instance() {
    static Registry registry;
    return registry;
  }

  Status add(plugin::IPluginCreator& creator, const std::string& ns, const std::string& library) {
    if (creator.getInterfaceVersion() != plugin::kPluginApiVersion) {
      return invalidArgument("plugin creator built for plugin API version " +
                             std::to_string(creator.getInterfaceVersion()) +
                             ", this Kiln has version " +
                             std::to_string(plugin::kPluginApiVersion));
    }
    PluginCreatorInfo info;
    info.name = safeText(creator.getPluginName());
    info.version = safeText(creator.getPluginVersion());
    info.pluginNamespace = ns;
    info.library = library;
    info.fields = describeDeclaredFields(creator.getFieldNames());
    if (info.name.empty()) return invalidArgument("a plugin creator has an empty name");
    std::lock_guard<std::mutex> lock(m_mutex);
    for (const Entry& e : m_entries) {
      if (e.info.name == info.name && e.info.version == info.version &&
          e.info.pluginNamespace == info.pluginNamespace) {
        return invalidArgument("plugin " + info.displayName() + " is already registered" +
                               (e.info.library.empty() ? "" : " by " + e.info.library));
      }
    }
    m_entries.push_back({&creator, std::move(info)});
    return Status::ok();
  }

  std::vector<Entry> entries() const {
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_entries;
  }
  bool empty() const {
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_entries.empty();
  }

  // Loaded library paths in load order; true when `path` was added now.
  bool noteLibrary(const std::string& path) {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (std::find(m_libraries.begin(), m_libraries.end(), path) != m_libraries.end()) return false;
    m_libraries.push_back(path);
    return true;
  }
  void forgetLibrary(const std::string& path) {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_libraries.erase(std::remove(m_libraries.begin(), m_libraries.end(), path), m_libraries.end());
  }
  std::vector<std::string> libraries() const {
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_libraries;
  }

 private:
  mutable std::mutex m_mutex;
  std::vector<Entry> m_entries;
  std::vector<std::string> m_libraries;
};

// The registrar a library's entry point sees: it records the library's path and
// keeps the first error to report.
class LibraryRegistrar final : public plugin::IPluginRegistrar {
 public:
  explicit LibraryRegistrar(std::string library) : m_library(std::move(library)) {}
  int32_t getHostApiVersion() const noexcept override { return plugin::kPluginApiVersion; }
  bool registerCreator(plugin::IPluginCreator& creator, const char* ns) noexcept override {
    try {
      const std::string space = ns ? ns : safeText(creator.getPluginNamespace());
      Status s = Registry::instance().add(creator, space, m_library);
      if (!s.isOk() && m_error.isOk()) m_error = s;
      return s.isOk();
    } catch (...) {
      if (m_error.isOk()) m_error = internalError("registering a creator failed (out of memory?)");
      return false;
    }
  }
  const Status& error() const { return m_error; }

 private:
  std::string m_library;
  Status m_error;
};

std::string lookedFor(const std::string& name, const std::string& version, const std::string& ns) {
  std::string text = ns.empty() ? "'" + name + "'" : "'" + ns + "::" + name + "'";
  return "plugin " + text + (version.empty() ? "" : " version " + version);
}

bool hasBuiltinKernel(const Node& node) {
  const std::string domain = node.domain == "ai.onnx" ? "" : node.domain;
  return ops::isKnownOp(domain, node.opType, node.opset);
}

std::string stringAttr(const Node& node, const char* key) {
  auto it = node.attributes.find(key);
  return it != node.attributes.end() && it->second.kind == Attribute::Kind::kString ? it->second.s
                                                                                    : "";
}

}  // namespace

std::string PluginCreatorInfo::displayName() const {
  return (pluginNamespace.empty() ? name : pluginNamespace + "::" + name) + " version " + version;
}

Status registerPluginCreator(plugin::IPluginCreator& creator, const std::string& ns,
                             const std::string& library) {
  return Registry::instance().add(creator, ns, library);
}

Status loadPluginLibrary(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return notFound(path + ": plugin library not found");
  const std::string canonical = std::filesystem::weakly_canonical(path, ec).string();
  const std::string key = ec ? path : canonical;
  if (!Registry::instance().noteLibrary(key)) return Status::ok();
  auto refuse = [&key](Status s) {
    Registry::instance().forgetLibrary(key);
    return s;
  };
  // RTLD_LOCAL: two libraries may use the same internal symbol names. Never closed:
  // creators and the plugins they made point into the library.
  void* handle = dlopen(key.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    return refuse(invalidArgument(path + ": cannot load plugin library: " + (why ? why : "?")));
  }
  using VersionFn = int32_t (*)();
  using RegisterFn = int32_t (*)(plugin::IPluginRegistrar*);
  auto version = reinterpret_cast<VersionFn>(dlsym(handle, KILN_PLUGIN_API_VERSION_SYMBOL));
  auto registerFn = reinterpret_cast<RegisterFn>(dlsym(handle, KILN_PLUGIN_REGISTER_SYMBOL));
  if (!version || !registerFn) {
    return refuse(invalidArgument(path + ": not a Kiln plugin library (no " +
                                  std::string(KILN_PLUGIN_REGISTER_SYMBOL) +
                                  " entry point; define it with KILN_PLUGIN_LIBRARY)"));
  }
  if (version() != plugin::kPluginApiVersion) {
    return refuse(invalidArgument(path + ": built for plugin API version " +
                                  std::to_string(version()) + ", this Kiln has version " +
                                  std::to_string(plugin::kPluginApiVersion) + "; rebuild it"));
  }
  LibraryRegistrar registrar(key);
  const int32_t code = registerFn(&registrar);
  if (!registrar.error().isOk()) return refuse(registrar.error().withContext(path));
  if (code != 0) {
    return refuse(invalidArgument(path + ": its registration entry point failed (returned " +
                                  std::to_string(code) + ")"));
  }
  return Status::ok();
}

Status loadPluginLibraries(const std::string& list) {
  size_t start = 0;
  while (start <= list.size()) {
    const size_t end = std::min(list.find(',', start), list.size());
    const std::string path = list.substr(start, end - start);
    if (!path.empty()) KILN_RETURN_IF_ERROR(loadPluginLibrary(path));
    start = end + 1;
  }
  return Status::ok();
}

std::vector<PluginCreatorInfo> registeredPlugins() {
  std::vector<PluginCreatorInfo> out;
  for (const Entry& e : Registry::instance().entries()) out.push_back(e.info);
  return out;
}

std::vector<PluginLibraryInfo> loadedPluginLibraries() {
  std::vector<PluginLibraryInfo> out;
  const std::vector<Entry> entries = Registry::instance().entries();
  for (const std::string& path : Registry::instance().libraries()) {
    PluginLibraryInfo library{path, {}};
    for (const Entry& e : entries)
      if (e.info.library == path) library.creators.push_back(e.info.displayName());
    out.push_back(std::move(library));
  }
  return out;
}

std::string describeLoadedPlugins() {
  const std::vector<Entry> entries = Registry::instance().entries();
  if (entries.empty()) return "no plugin is loaded (load a library with --plugins LIB.so)";
  std::string text = "loaded plugins: ";
  for (size_t i = 0; i < entries.size(); ++i)
    text += (i ? ", " : "") + entries[i].info.displayName();
  return text;
}

Result<ResolvedPlugin> resolvePlugin(const Node& node) {
  const std::vector<Entry> entries = Registry::instance().entries();
  ResolvedPlugin resolved;
  std::string name = node.opType, version, ns;
  bool anyNamespace = false;
  if (node.hasAttr(kPluginVersionAttribute)) {
    resolved.fromPlan = true;
    name = stringAttr(node, kPluginNameAttribute);
    version = stringAttr(node, kPluginVersionAttribute);
    ns = stringAttr(node, kPluginNamespaceAttribute);
  } else {
    version = stringAttr(node, kOnnxPluginVersionAttribute);
    if (node.hasAttr(kOnnxPluginNamespaceAttribute)) {
      ns = stringAttr(node, kOnnxPluginNamespaceAttribute);
    } else if (!node.domain.empty() && node.domain != "ai.onnx") {
      ns = node.domain;
    } else {
      anyNamespace = true;
    }
  }
  const bool domainNamespace =
      !resolved.fromPlan && !anyNamespace && !node.hasAttr(kOnnxPluginNamespaceAttribute);
  const Entry* best = nullptr;
  std::vector<std::string> namespaces;
  for (const Entry& e : entries) {
    if (e.info.name != name || (!version.empty() && e.info.version != version)) continue;
    const bool nsMatches = anyNamespace || e.info.pluginNamespace == ns ||
                           (domainNamespace && e.info.pluginNamespace.empty());
    if (!nsMatches) continue;
    if (std::find(namespaces.begin(), namespaces.end(), e.info.pluginNamespace) == namespaces.end())
      namespaces.push_back(e.info.pluginNamespace);
    // A creator of the exact namespace wins over a global one, then the highest version.
    const bool exact = e.info.pluginNamespace == ns;
    const bool bestExact = best && best->info.pluginNamespace == ns;
    if (!best || (exact && !bestExact) ||
        (exact == bestExact && versionLess(best->info.version, e.info.version)))
      best = &e;
  }
  if (anyNamespace && namespaces.size() > 1) {
    std::string list;
    for (const std::string& n : namespaces) list += (list.empty() ? "'" : ", '") + n + "'";
    return invalidArgument(node.describe() + ": plugin '" + name +
                           "' is registered in several namespaces (" + list +
                           "); set the node's domain or its plugin_namespace attribute")
        .withNodeOf(node);
  }
  if (!best) {
    std::string message = node.describe() + ": " + lookedFor(name, version, ns);
    if (resolved.fromPlan) {
      // The plan names the library it was built with, but that path is the plan's to
      // choose: recommending it would have the user load whatever the plan says.
      return notFound(message +
                      ", which this plan was built with, is not loaded; load a library that "
                      "provides it, one you trust, with --plugins")
          .withNodeOf(node);
    }
    return notFound(message + " is not registered; " + describeLoadedPlugins()).withNodeOf(node);
  }
  resolved.creator = best->creator;
  resolved.info = best->info;
  return resolved;
}

bool isPluginNode(const Node& node) {
  if (hasBuiltinKernel(node)) return false;
  if (node.hasAttr(kPluginVersionAttribute)) return true;
  if (Registry::instance().empty()) return false;
  return resolvePlugin(node).isOk();
}

Status checkPluginsAvailable(const Network& network) {
  std::vector<std::string> missing;
  for (const Node& node : network.graph.nodes) {
    if (!node.hasAttr(kPluginVersionAttribute) || hasBuiltinKernel(node)) continue;
    auto resolved = resolvePlugin(node);
    if (!resolved.isOk()) missing.push_back(resolved.status().message());
  }
  if (missing.empty()) return Status::ok();
  std::string message;
  for (size_t i = 0; i < missing.size(); ++i) message += (i ? "; " : "") + missing[i];
  return notFound(message);
}

}  // namespace kiln

extern "C" int32_t kilnRegisterStaticPluginCreator(kiln::plugin::IPluginCreator* creator) noexcept {
  if (!creator) return kiln::plugin::kStatusInvalidArgument;
  try {
    const std::string ns = kiln::safeText(creator->getPluginNamespace());
    kiln::Status s = kiln::registerPluginCreator(*creator, ns, "");
    return s.isOk() ? kiln::plugin::kStatusSuccess : kiln::plugin::kStatusInvalidArgument;
  } catch (...) {
    return kiln::plugin::kStatusInternal;
  }
}
