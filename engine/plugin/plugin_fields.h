// Plugin fields on the host side: ONNX attributes -> typed fields (build phase),
// a plan's serialized fields <-> node attributes (runtime phase), and the type
// conversions between kiln and the plugin ABI. Internal to kiln_engine.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kiln/graph.h"
#include "kiln/plugin.h"
#include "kiln/plugin_registry.h"
#include "kiln/status.h"

namespace kiln {

// A C string from a plugin; "" for nullptr.
std::string safeText(const char* text);
const char* fieldTypeName(plugin::FieldType type);
std::vector<PluginFieldInfo> describeDeclaredFields(const plugin::FieldCollection* declared);

// kiln and plugin element types (the plugin ABI has a subset). False when `type`
// has no plugin counterpart.
bool toPluginType(DataType type, plugin::DataType* out);
DataType fromPluginType(plugin::DataType type);

// Fields the host owns; collection() points into this object, so keep it alive (and
// unchanged) while the plugin reads them.
class OwnedFields {
 public:
  void addInts(const std::string& name, std::vector<int64_t> values);
  void addFloats(const std::string& name, std::vector<float> values);
  void addString(const std::string& name, std::string value);
  void addWeights(const std::string& name, const Tensor& value, plugin::DataType type);
  const plugin::FieldCollection* collection();
  size_t size() const { return m_items.size(); }

 private:
  struct Item {
    std::string name;
    plugin::FieldType type;
    std::vector<int64_t> ints;
    std::vector<float> floats;
    std::string text;
    Tensor weights;
    plugin::DataType weightType = plugin::DataType::kFloat32;
  };
  std::vector<Item> m_items;
  std::vector<plugin::Field> m_fields;
  plugin::FieldCollection m_collection;
};

// Build phase: the node's attributes as fields, except kiln_* attributes and
// plugin_version/plugin_namespace. Each must be declared by the creator with the
// same type (and length, when fixed); the error names the attribute and `plugin`.
Result<OwnedFields> fieldsFromAttributes(const Node& node, const plugin::FieldCollection* declared,
                                         const std::string& plugin);
// Runtime phase: the fields a plan stored on the node (kiln_plugin_state:<name>).
Result<OwnedFields> fieldsFromPlanState(const Node& node);
// The fields a plugin serialized, as prefixed node attributes; checks each field
// (name set, data present, type known, sizes within bounds).
Result<std::map<std::string, Attribute>> stateAttributes(const plugin::FieldCollection* fields,
                                                         const std::string& plugin);

}  // namespace kiln
