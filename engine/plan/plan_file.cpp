// The .kiln plan file: header, metadata JSON, ONNX model protobuf, weight blobs,
// generated kernels. See kiln/plan.h for the layout. Reading checks each field
// before trusting it; version 1 files (no generated kernels) still load.
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/fnv1a.h"
#include "kiln/file_io.h"
#include "kiln/json_reader.h"
#include "kiln/plan_signature.h"
#include "kiln/onnx_export.h"
#include "kiln/onnx_import.h"
#include "kiln/plan.h"
#include "plan/generated_kernel_section.h"
#include "plan/plan_metadata.h"
#include "plan/plan_validation.h"

namespace kiln {
namespace {

constexpr const char* kWeightsLocation = "kiln-plan-weights";

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

// Version 1 had three sections (no generated kernels); version 2 adds the fourth.
constexpr int kSectionCount = 4;

uint32_t headerBytesOf(uint32_t version) {
  return version == 1 ? kPlanHeaderBytesV1 : kPlanHeaderBytes;
}

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
  // An unnamed node is known as OpType_index (Node::displayName), the index being its
  // place in the model the build started from; re-import would number the nodes anew
  // (passes removed some), so the plan names them: its runtime layers, profiles and
  // the build record then agree on every layer's name.
  Network named = *plan.network;
  for (Node& node : named.graph.nodes)
    if (node.name.empty()) node.name = node.displayName();
  KILN_ASSIGN_OR_RETURN(std::string model, exportOnnxBytes(named, exportOptions));
  const std::string metadata =
      plan::metadataToJson(plan).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  const std::string kernels = plan::encodeGeneratedKernels(plan.generatedKernels);

  std::string body;  // everything after the header; offsets are absolute
  Section sections[kSectionCount];
  const std::string* parts[kSectionCount] = {&metadata, &model, &weights, &kernels};
  for (int i = 0; i < kSectionCount; ++i) {
    // Every section starts at an aligned file offset.
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
  putU64(file, fnv1a64(body.data(), body.size()));
  file += body;
  return file;
}

Status savePlan(const Plan& plan, const std::string& path) {
  KILN_ASSIGN_OR_RETURN(std::string bytes, serializePlan(plan));
  // Written beside the target and renamed, so a failed write never destroys an older
  // plan; the temporary is created exclusively, so a link planted there is not followed.
  return writeFileAtomically(path, bytes, "the plan");
}

namespace {

// The header's version, sections and checksum, each checked against the file.
struct Header {
  uint32_t version = 0;
  int sectionCount = 0;  // 3 in version 1; the generated kernels are absent there
  Section sections[kSectionCount];
};

Result<Header> readHeader(const std::string& bytes, const std::string& name) {
  auto damaged = [&name](const std::string& why) { return parseError(name + ": " + why); };
  if (bytes.size() < 8 || std::memcmp(bytes.data(), kPlanMagic, 8) != 0)
    return damaged("not a Kiln plan (no KILNPLAN magic)");
  if (bytes.size() < 16)
    return damaged("plan is truncated (" + std::to_string(bytes.size()) + " bytes)");
  Header header;
  header.version = getU32(bytes, 8);
  if (header.version != 1 && header.version != kPlanFormatVersion) {
    return Status(StatusCode::kUnsupported,
                  name + ": plan format version " + std::to_string(header.version) +
                      " is not supported (this Kiln reads versions 1 to " +
                      std::to_string(kPlanFormatVersion) + "); rebuild the plan");
  }
  const uint32_t headerBytes = headerBytesOf(header.version);
  if (bytes.size() < headerBytes)
    return damaged("plan is truncated (" + std::to_string(bytes.size()) +
                   " bytes, header alone is " + std::to_string(headerBytes) + ")");
  if (getU32(bytes, 12) != headerBytes) return damaged("plan header size is wrong");
  header.sectionCount = header.version == 1 ? 3 : kSectionCount;
  for (int i = 0; i < header.sectionCount; ++i) {
    header.sections[i] = {getU64(bytes, 16 + 16 * i), getU64(bytes, 24 + 16 * i)};
    const Section& s = header.sections[i];
    if (s.offset < headerBytes || s.offset > bytes.size() || s.size > bytes.size() - s.offset)
      return damaged("plan is truncated or damaged (section " + std::to_string(i) +
                     " lies outside the file's " + std::to_string(bytes.size()) + " bytes)");
  }
  const uint64_t checksum = getU64(bytes, headerBytes - 8);
  if (fnv1a64(bytes.data() + headerBytes, bytes.size() - headerBytes) != checksum)
    return damaged("plan checksum mismatch: the file is damaged");
  return header;
}

Result<std::shared_ptr<Network>> readNetwork(const std::string& bytes, const Header& header,
                                             const std::string& name) {
  const Section model = header.sections[1], weights = header.sections[2];
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
  KILN_ASSIGN_OR_RETURN(Network network, importOnnxBytes(bytes.substr(model.offset, model.size), "",
                                                         name, importOptions));
  network.sourcePath = name;
  return std::make_shared<Network>(std::move(network));
}

}  // namespace

Result<Plan> deserializePlan(const std::string& bytes, const std::string& name) {
  KILN_ASSIGN_OR_RETURN(Header header, readHeader(bytes, name));
  auto section = [&bytes, &header](int i) {
    return bytes.substr(header.sections[i].offset, header.sections[i].size);
  };
  Plan plan;
  Result<nlohmann::json> metadata = parseJsonText(section(0), name + ": plan metadata");
  if (!metadata.isOk()) return metadata.status();
  KILN_RETURN_IF_ERROR_CTX(plan::metadataFromJson(metadata.value(), &plan), name);
  if (header.sectionCount > 3) {  // version 1 plans have no generated kernels
    auto kernels = plan::decodeGeneratedKernels(section(3), plan.identity);
    if (!kernels.isOk()) return kernels.status().withContext(name);
    plan.generatedKernels = std::move(kernels.value());
  }
  KILN_ASSIGN_OR_RETURN(plan.network, readNetwork(bytes, header, name));
  KILN_RETURN_IF_ERROR_CTX(plan::validatePlan(plan), name);
  return plan;
}

Result<Plan> loadPlanFile(const std::string& path, PlanTrust* trust) {
  Result<std::string> bytes = readRegularFile(path, kMaxPlanFileBytes);
  if (!bytes.isOk() && bytes.status().code() == StatusCode::kNotFound)
    return notFound(path + ": plan file not found");
  if (!bytes.isOk()) return bytes.status();
  // The signature is checked on the very bytes then parsed (nothing can swap the file
  // in between), before parsing: a signed plan that was changed fails as such.
  PlanTrust checked;
  KILN_RETURN_IF_ERROR(checkPlanSignature(path, bytes.value(), &checked));
  KILN_ASSIGN_OR_RETURN(Plan plan, deserializePlan(bytes.value(), path));
  KILN_RETURN_IF_ERROR(checkUnsignedPlan(path, checked.isSigned, !plan.generatedKernels.empty()));
  if (trust) *trust = std::move(checked);
  return plan;
}

bool looksLikePlanFile(const std::string& path) {
  // Regular files only: opening a FIFO here would block before any check ran.
  Result<std::string> magic = readRegularFileRange(path, 0, 8);
  return magic.isOk() && std::memcmp(magic->data(), kPlanMagic, 8) == 0;
}

}  // namespace kiln
