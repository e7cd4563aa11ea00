// The .kiln plan file: header, metadata JSON, ONNX model protobuf, weight blobs.
// See kiln/plan.h for the layout. Reading checks each field before trusting it.
#include <cstring>
#include <fstream>
#include <sstream>

#include "kiln/onnx_export.h"
#include "kiln/onnx_import.h"
#include "kiln/plan.h"
#include "plan/plan_metadata.h"

namespace kiln {
namespace {

constexpr const char* kWeightsLocation = "kiln-plan-weights";

uint64_t fnv1a(const char* data, size_t size) {
  uint64_t hash = 1469598103934665603ull;
  for (size_t i = 0; i < size; ++i) {
    hash ^= static_cast<unsigned char>(data[i]);
    hash *= 1099511628211ull;
  }
  return hash;
}

void putU32(std::string& out, uint32_t v) {
  out.append(reinterpret_cast<const char*>(&v), 4);
}
void putU64(std::string& out, uint64_t v) {
  out.append(reinterpret_cast<const char*>(&v), 8);
}
uint64_t getU64(const std::string& in, size_t at) {
  uint64_t v;
  std::memcpy(&v, in.data() + at, 8);
  return v;
}
uint32_t getU32(const std::string& in, size_t at) {
  uint32_t v;
  std::memcpy(&v, in.data() + at, 4);
  return v;
}

void padTo(std::string& out, int64_t alignment) {
  while (static_cast<int64_t>(out.size()) % alignment) out.push_back('\0');
}

struct Section {
  uint64_t offset = 0, size = 0;
};

}  // namespace

Result<std::string> serializePlan(const Plan& plan) {
  if (!plan.network) return invalidArgument("plan has no network");
  std::string weights;
  ExportOptions exportOptions;
  exportOptions.externalLocation = kWeightsLocation;
  exportOptions.externalizeConstants = true;  // many exporters keep weights in Constant nodes
  exportOptions.weightSink = [&weights](const std::string&, const Tensor&,
                                        const std::string& raw) -> Result<int64_t> {
    padTo(weights, kPlanWeightAlignment);
    const int64_t offset = static_cast<int64_t>(weights.size());
    weights += raw;
    return offset;
  };
  KILN_ASSIGN_OR_RETURN(std::string model, exportOnnxBytes(*plan.network, exportOptions));
  const std::string metadata =
      plan::metadataToJson(plan).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);

  std::string body;  // everything after the header; offsets are absolute
  Section sections[3];
  const std::string* parts[3] = {&metadata, &model, &weights};
  for (int i = 0; i < 3; ++i) {
    // Every section starts at an aligned file offset (the header is 72 bytes).
    while ((kPlanHeaderBytes + body.size()) % kPlanWeightAlignment) body.push_back('\0');
    sections[i] = {kPlanHeaderBytes + body.size(), parts[i]->size()};
    body += *parts[i];
  }
  std::string file(kPlanMagic, sizeof(kPlanMagic));
  putU32(file, kPlanFormatVersion);
  putU32(file, kPlanHeaderBytes);
  for (const Section& s : sections) {
    putU64(file, s.offset);
    putU64(file, s.size);
  }
  putU64(file, fnv1a(body.data(), body.size()));
  file += body;
  return file;
}

Status savePlan(const Plan& plan, const std::string& path) {
  KILN_ASSIGN_OR_RETURN(std::string bytes, serializePlan(plan));
  // Write beside the target and rename, so a failed write never destroys an older plan.
  const std::string temp = path + ".partial";
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) return Status(StatusCode::kIoError, path + ": cannot write the plan");
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) return Status(StatusCode::kIoError, path + ": writing the plan failed (disk full?)");
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0)
    return Status(StatusCode::kIoError, path + ": cannot replace the plan file");
  return Status::ok();
}

Result<Plan> deserializePlan(const std::string& bytes, const std::string& name) {
  auto damaged = [&name](const std::string& why) { return parseError(name + ": " + why); };
  if (bytes.size() < 8 || std::memcmp(bytes.data(), kPlanMagic, 8) != 0)
    return damaged("not a Kiln plan (no KILNPLAN magic)");
  if (bytes.size() < kPlanHeaderBytes)
    return damaged("plan is truncated (" + std::to_string(bytes.size()) +
                   " bytes, header alone is " + std::to_string(kPlanHeaderBytes) + ")");
  const uint32_t version = getU32(bytes, 8);
  if (version != kPlanFormatVersion) {
    return Status(StatusCode::kUnsupported,
                  name + ": plan format version " + std::to_string(version) +
                      " is not supported (this Kiln reads version " +
                      std::to_string(kPlanFormatVersion) + "); rebuild the plan");
  }
  if (getU32(bytes, 12) != kPlanHeaderBytes) return damaged("plan header size is wrong");
  Section sections[3];
  for (int i = 0; i < 3; ++i) {
    sections[i] = {getU64(bytes, 16 + 16 * i), getU64(bytes, 24 + 16 * i)};
    const Section& s = sections[i];
    if (s.offset < kPlanHeaderBytes || s.offset > bytes.size() || s.size > bytes.size() - s.offset)
      return damaged("plan is truncated or damaged (section " + std::to_string(i) +
                     " lies outside the file's " + std::to_string(bytes.size()) + " bytes)");
  }
  const uint64_t checksum = getU64(bytes, 64);
  if (fnv1a(bytes.data() + kPlanHeaderBytes, bytes.size() - kPlanHeaderBytes) != checksum)
    return damaged("plan checksum mismatch: the file is damaged");

  Plan plan;
  auto section = [&bytes, &sections](int i) {
    return bytes.substr(sections[i].offset, sections[i].size);
  };
  nlohmann::json metadata = nlohmann::json::parse(section(0), nullptr, false);
  if (metadata.is_discarded()) return damaged("plan metadata is not JSON");
  KILN_RETURN_IF_ERROR_CTX(plan::metadataFromJson(metadata, &plan), name);

  const Section weights = sections[2];
  ImportOptions importOptions;
  importOptions.checkSupport = false;  // the builder already checked; unknown ops fail at run
  importOptions.externalData = [&bytes, weights](const std::string& location, int64_t offset,
                                                 int64_t length) -> Result<std::string> {
    if (location != kWeightsLocation)
      return parseError("external data location '" + location + "' is not the plan's weights");
    if (offset < 0 || length < 0 || static_cast<uint64_t>(offset) > weights.size ||
        static_cast<uint64_t>(length) > weights.size - offset)
      return parseError("weight bytes [" + std::to_string(offset) + ", +" + std::to_string(length) +
                        ") lie outside the plan's weights");
    return bytes.substr(weights.offset + offset, length);
  };
  KILN_ASSIGN_OR_RETURN(Network network, importOnnxBytes(section(1), "", name, importOptions));
  network.sourcePath = name;
  plan.network = std::make_shared<Network>(std::move(network));
  return plan;
}

Result<Plan> loadPlanFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return notFound(path + ": plan file not found");
  std::stringstream data;
  data << in.rdbuf();
  return deserializePlan(data.str(), path);
}

bool looksLikePlanFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[8] = {};
  in.read(magic, 8);
  return in && std::memcmp(magic, kPlanMagic, 8) == 0;
}

}  // namespace kiln
