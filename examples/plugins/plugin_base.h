// The boilerplate both example plugins would otherwise repeat, written once, so that
// copy_concat_plugin.h and quantized_pool_plugin.h show only what their plugin does.
// Nothing in kiln/plugin.h asks for these classes: a plugin of your own may derive
// from them or implement the interfaces directly.
#pragma once

#include "plugin_support.h"

namespace kiln_examples {

// What the registry and a plan find a creator by (a plugin reports the same).
struct PluginIdentity {
  const char* name;
  const char* version;
  const char* nameSpace;
};

// A plugin whose one object is all three capabilities (core, build, runtime). It
// reports `identity`, keeps the text of its last failure for getLastError(), deletes
// itself on destroy(), needs no workspace and always has a CPU path; it has a CUDA
// path when the library is built with CUDA (KILN_EXAMPLES_HAVE_CUDA).
class PluginBase : public kp::IPlugin, public kp::IPluginBuild, public kp::IPluginRuntime {
 public:
  explicit PluginBase(const PluginIdentity& identity) : m_identity(identity) {}

  const char* getPluginName() const noexcept override { return m_identity.name; }
  const char* getPluginVersion() const noexcept override { return m_identity.version; }
  const char* getPluginNamespace() const noexcept override { return m_identity.nameSpace; }
  kp::IPluginBuild* getBuildCapability() noexcept override { return this; }
  kp::IPluginRuntime* getRuntimeCapability() noexcept override { return this; }
  const char* getLastError() const noexcept override { return m_error.c_str(); }
  void destroy() noexcept override { delete this; }

  size_t getWorkspaceSize(const kp::DynamicTensorDesc*, int32_t, const kp::DynamicTensorDesc*,
                          int32_t) const noexcept override {
    return 0;
  }
  bool hasCpuImplementation() const noexcept override { return true; }
  bool hasCudaImplementation() const noexcept override {
#ifdef KILN_EXAMPLES_HAVE_CUDA
    return true;
#else
    return false;
#endif
  }

 protected:
  // Keeps `message` for getLastError() and returns `code` (a kStatus value).
  int32_t fail(int32_t code, const char* message) const noexcept {
    m_error.set(message);
    return code;
  }
  // What enqueue() answers in a library built without CUDA.
  int32_t failWithoutCuda() const noexcept {
    return fail(kp::kStatusUnsupported, "this build of the example plugins has no CUDA");
  }

 private:
  PluginIdentity m_identity;
  mutable ErrorText m_error;
};

// A creator reporting `identity` and keeping the text of its last failure.
class CreatorBase : public kp::IPluginCreator {
 public:
  explicit CreatorBase(const PluginIdentity& identity) : m_identity(identity) {}

  const char* getPluginName() const noexcept override { return m_identity.name; }
  const char* getPluginVersion() const noexcept override { return m_identity.version; }
  const char* getPluginNamespace() const noexcept override { return m_identity.nameSpace; }
  const char* getLastError() const noexcept override { return m_error.c_str(); }

 protected:
  // Keeps `message` for getLastError(); returns nullptr, createPlugin's failure.
  kp::IPlugin* fail(const char* message) noexcept {
    m_error.set(message);
    return nullptr;
  }

 private:
  PluginIdentity m_identity;
  ErrorText m_error;
};

}  // namespace kiln_examples
