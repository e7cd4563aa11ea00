#include "plugin/plugin_fields.h"

#include <cstring>

namespace kiln {
namespace {

// Serialized fields larger than this are refused as damage (a plan is untrusted
// input and a plugin may return garbage lengths).
constexpr int64_t kMaxFieldBytes = int64_t{1} << 32;

bool isReservedAttribute(const std::string& key) {
  return key.rfind("kiln_", 0) == 0 || key == kOnnxPluginVersionAttribute ||
         key == kOnnxPluginNamespaceAttribute;
}

const plugin::Field* findDeclared(const plugin::FieldCollection* declared,
                                  const std::string& name) {
  if (!declared || !declared->fields) return nullptr;
  for (int32_t i = 0; i < declared->nbFields; ++i)
    if (declared->fields[i].name && name == declared->fields[i].name) return &declared->fields[i];
  return nullptr;
}

std::string declaredList(const plugin::FieldCollection* declared) {
  std::string list;
  for (const PluginFieldInfo& f : describeDeclaredFields(declared))
    list += (list.empty() ? "" : ", ") + f.name + " (" + f.type + ")";
  return list.empty() ? "none" : list;
}

// The field type an ONNX attribute becomes, and its element count.
Result<plugin::FieldType> attributeFieldType(const Attribute& a, int64_t* length) {
  switch (a.kind) {
    case Attribute::Kind::kInt:
      *length = 1;
      return plugin::FieldType::kInt64;
    case Attribute::Kind::kInts:
      *length = static_cast<int64_t>(a.ints.size());
      return plugin::FieldType::kInt64;
    case Attribute::Kind::kFloat:
      *length = 1;
      return plugin::FieldType::kFloat32;
    case Attribute::Kind::kFloats:
      *length = static_cast<int64_t>(a.floats.size());
      return plugin::FieldType::kFloat32;
    case Attribute::Kind::kString:
      *length = static_cast<int64_t>(a.s.size());
      return plugin::FieldType::kString;
    case Attribute::Kind::kTensor:
      *length = a.t.numel();
      return plugin::FieldType::kWeights;
    default:
      return unsupported("has a kind plugins cannot take (graphs, string lists, tensor lists)");
  }
}

Status addAttribute(OwnedFields* fields, const std::string& name, const Attribute& a) {
  switch (a.kind) {
    case Attribute::Kind::kInt:
      fields->addInts(name, {a.i});
      return Status::ok();
    case Attribute::Kind::kInts:
      fields->addInts(name, a.ints);
      return Status::ok();
    case Attribute::Kind::kFloat:
      fields->addFloats(name, {a.f});
      return Status::ok();
    case Attribute::Kind::kFloats:
      fields->addFloats(name, a.floats);
      return Status::ok();
    case Attribute::Kind::kString:
      fields->addString(name, a.s);
      return Status::ok();
    case Attribute::Kind::kTensor: {
      plugin::DataType type;
      if (!toPluginType(a.t.type(), &type))
        return unsupported(std::string("is a ") + dataTypeName(a.t.type()) +
                           " tensor, which plugins cannot take");
      if (a.t.rank() > plugin::kMaxDims)
        return unsupported("is a tensor of rank " + std::to_string(a.t.rank()) +
                           " (plugins take at most " + std::to_string(plugin::kMaxDims) + ")");
      fields->addWeights(name, a.t, type);
      return Status::ok();
    }
    default:
      return unsupported("has a kind plugins cannot take");
  }
}

}  // namespace

std::string safeText(const char* text) {
  return text ? std::string(text) : std::string();
}

const char* fieldTypeName(plugin::FieldType type) {
  switch (type) {
    case plugin::FieldType::kInt64:
      return "int64";
    case plugin::FieldType::kFloat32:
      return "float32";
    case plugin::FieldType::kString:
      return "string";
    case plugin::FieldType::kWeights:
      return "weights";
  }
  return "unknown";
}

std::vector<PluginFieldInfo> describeDeclaredFields(const plugin::FieldCollection* declared) {
  std::vector<PluginFieldInfo> out;
  if (!declared || !declared->fields || declared->nbFields < 0) return out;
  for (int32_t i = 0; i < declared->nbFields; ++i) {
    const plugin::Field& f = declared->fields[i];
    out.push_back({safeText(f.name), fieldTypeName(f.type), f.length});
  }
  return out;
}

bool toPluginType(DataType type, plugin::DataType* out) {
  switch (type) {
    case DataType::kFloat32:
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kBool:
    case DataType::kFloat16:
    case DataType::kBFloat16:
      *out = static_cast<plugin::DataType>(static_cast<int32_t>(type));
      return true;
    default:
      return false;
  }
}

DataType fromPluginType(plugin::DataType type) {
  DataType kilnType = static_cast<DataType>(static_cast<int32_t>(type));
  plugin::DataType back;
  return toPluginType(kilnType, &back) ? kilnType : DataType::kUndefined;
}

void OwnedFields::addInts(const std::string& name, std::vector<int64_t> values) {
  Item item{name, plugin::FieldType::kInt64, std::move(values), {}, {}, {}, {}};
  m_items.push_back(std::move(item));
}

void OwnedFields::addFloats(const std::string& name, std::vector<float> values) {
  Item item{name, plugin::FieldType::kFloat32, {}, std::move(values), {}, {}, {}};
  m_items.push_back(std::move(item));
}

void OwnedFields::addString(const std::string& name, std::string value) {
  Item item{name, plugin::FieldType::kString, {}, {}, std::move(value), {}, {}};
  m_items.push_back(std::move(item));
}

void OwnedFields::addWeights(const std::string& name, const Tensor& value, plugin::DataType type) {
  Item item{name, plugin::FieldType::kWeights, {}, {}, {}, value, type};
  m_items.push_back(std::move(item));
}

const plugin::FieldCollection* OwnedFields::collection() {
  m_fields.clear();
  for (const Item& item : m_items) {
    plugin::Field f;
    f.name = item.name.c_str();
    f.type = item.type;
    switch (item.type) {
      case plugin::FieldType::kInt64:
        f.data = item.ints.data();
        f.length = static_cast<int64_t>(item.ints.size());
        break;
      case plugin::FieldType::kFloat32:
        f.data = item.floats.data();
        f.length = static_cast<int64_t>(item.floats.size());
        break;
      case plugin::FieldType::kString:
        f.data = item.text.data();
        f.length = static_cast<int64_t>(item.text.size());
        break;
      case plugin::FieldType::kWeights:
        f.data = item.weights.rawData();
        f.length = item.weights.numel();
        f.weightType = item.weightType;
        f.weightDims.nbDims = item.weights.rank();
        for (int d = 0; d < item.weights.rank(); ++d) f.weightDims.d[d] = item.weights.dim(d);
        break;
    }
    m_fields.push_back(f);
  }
  m_collection.nbFields = static_cast<int32_t>(m_fields.size());
  m_collection.fields = m_fields.data();
  return &m_collection;
}

Result<OwnedFields> fieldsFromAttributes(const Node& node, const plugin::FieldCollection* declared,
                                         const std::string& plugin) {
  OwnedFields fields;
  for (const auto& [key, attr] : node.attributes) {
    if (isReservedAttribute(key)) continue;
    const std::string where = node.describe() + ": attribute '" + key + "' of " + plugin;
    const plugin::Field* field = findDeclared(declared, key);
    if (!field) {
      return invalidArgument(where + " is not one of its fields (it declares " +
                             declaredList(declared) + ")");
    }
    int64_t length = 0;
    auto type = attributeFieldType(attr, &length);
    if (!type.isOk()) return type.status().withContext(where);
    if (*type != field->type) {
      return invalidArgument(where + " is " + fieldTypeName(*type) + ", the plugin declares " +
                             fieldTypeName(field->type));
    }
    if (field->length >= 0 && field->length != length) {
      return invalidArgument(where + " has " + std::to_string(length) +
                             " elements, the plugin declares " + std::to_string(field->length));
    }
    KILN_RETURN_IF_ERROR_CTX(addAttribute(&fields, key, attr), where);
  }
  return fields;
}

Result<OwnedFields> fieldsFromPlanState(const Node& node) {
  OwnedFields fields;
  const std::string prefix = kPluginStatePrefix;
  for (const auto& [key, attr] : node.attributes) {
    if (key.rfind(prefix, 0) != 0) continue;
    KILN_RETURN_IF_ERROR_CTX(
        addAttribute(&fields, key.substr(prefix.size()), attr),
        node.describe() + ": serialized plugin field '" + key.substr(prefix.size()) + "'");
  }
  return fields;
}

Result<std::map<std::string, Attribute>> stateAttributes(const plugin::FieldCollection* fields,
                                                         const std::string& plugin) {
  std::map<std::string, Attribute> out;
  if (!fields) return out;
  if (fields->nbFields < 0 || (fields->nbFields > 0 && !fields->fields))
    return invalidArgument(plugin + ": getFieldsToSerialize() returned a malformed collection");
  for (int32_t i = 0; i < fields->nbFields; ++i) {
    const plugin::Field& f = fields->fields[i];
    const std::string name = safeText(f.name);
    const std::string where = plugin + ": serialized field #" + std::to_string(i) +
                              (name.empty() ? "" : " '" + name + "'");
    if (name.empty()) return invalidArgument(where + " has no name");
    if (f.length < 0 || (f.length > 0 && !f.data))
      return invalidArgument(where + " has no data or a negative length");
    Attribute a;
    switch (f.type) {
      case plugin::FieldType::kInt64: {
        if (f.length * 8 > kMaxFieldBytes) return invalidArgument(where + " is too large");
        const auto* p = static_cast<const int64_t*>(f.data);
        a.kind = Attribute::Kind::kInts;
        a.ints.assign(p, p + f.length);
        break;
      }
      case plugin::FieldType::kFloat32: {
        if (f.length * 4 > kMaxFieldBytes) return invalidArgument(where + " is too large");
        const auto* p = static_cast<const float*>(f.data);
        a.kind = Attribute::Kind::kFloats;
        a.floats.assign(p, p + f.length);
        break;
      }
      case plugin::FieldType::kString:
        if (f.length > kMaxFieldBytes) return invalidArgument(where + " is too large");
        a.kind = Attribute::Kind::kString;
        a.s.assign(static_cast<const char*>(f.data), static_cast<size_t>(f.length));
        break;
      case plugin::FieldType::kWeights: {
        const DataType type = fromPluginType(f.weightType);
        if (type == DataType::kUndefined) return invalidArgument(where + " has an unknown type");
        if (f.weightDims.nbDims < 0 || f.weightDims.nbDims > plugin::kMaxDims)
          return invalidArgument(where + " has rank " + std::to_string(f.weightDims.nbDims));
        Shape shape(f.weightDims.d, f.weightDims.d + f.weightDims.nbDims);
        if (shapeNumel(shape) != f.length)
          return invalidArgument(where + ": its dims hold " + std::to_string(shapeNumel(shape)) +
                                 " elements, its length says " + std::to_string(f.length));
        if (f.length * static_cast<int64_t>(dataTypeSize(type)) > kMaxFieldBytes)
          return invalidArgument(where + " is too large");
        a.kind = Attribute::Kind::kTensor;
        a.t = Tensor(type, shape);
        if (a.t.byteSize() > 0) std::memcpy(a.t.rawData(), f.data, a.t.byteSize());
        break;
      }
      default:
        return invalidArgument(where + " has an unknown field type " +
                               std::to_string(static_cast<int32_t>(f.type)));
    }
    out[kPluginStatePrefix + name] = std::move(a);
  }
  return out;
}

}  // namespace kiln
