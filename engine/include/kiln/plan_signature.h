// Ed25519 signatures of plan files (docs/security.md). A CUDA plan carries code that
// runs on the GPU (NVRTC cubins, serialized cuDNN plans); its FNV-1a checksum only
// catches damage. A signature, detached beside the plan ("PLAN.kiln.sig"), says who
// built it. Keys are PEM files (PKCS#8 private, SubjectPublicKeyInfo public) that
// OpenSSL reads and writes.
#pragma once

#include <string>
#include <vector>

#include "kiln/status.h"

namespace kiln {

// Writes a new key pair: `privatePath` (mode 0600) and `publicPath`; neither may exist.
Status generateSigningKeyPair(const std::string& privatePath, const std::string& publicPath);

// "PLAN.kiln" -> "PLAN.kiln.sig".
std::string planSignaturePath(const std::string& planPath);

// Signs the plan file at `planPath` with the private key at `keyPath` and writes
// planSignaturePath(planPath) (atomically).
Status signPlanFile(const std::string& planPath, const std::string& keyPath);

// From now on, loadPlanFile() in this process requires plans to be signed by one of
// the public keys in `publicKeyFiles` (process-wide, like the plugin registry: the
// CLI sets it once from --trust before any command runs). A plan whose signature file
// does not verify against a trusted key is refused; a plan without a signature file is
// refused when it carries generated code, and loads otherwise. An empty list turns the
// requirement off. Errors name the key file.
Status requirePlanSignatures(const std::vector<std::string>& publicKeyFiles);
bool planSignaturesRequired();

// How one plan stood with the policy when it was loaded (loadPlanFile's out-parameter),
// read from the same snapshot of the trusted keys that checked it.
struct PlanTrust {
  bool required = false;  // signatures were required (trusted keys were set)
  bool isSigned = false;  // its signature verified against a trusted key
  std::string keyFile;    // that key's public key file; "" when not signed
};

// The id of the Ed25519 public key in `publicKeyFile` as refusals name it (the first
// 16 hex digits of the raw key), or the one-line error requirePlanSignatures() would
// give for that file. Does not change the policy.
Result<std::string> publicKeyId(const std::string& publicKeyFile);

// Under the policy above, before the plan is parsed: when planSignaturePath(path)
// exists, `planBytes` (the whole plan file, read once) must verify against a trusted
// key; `*trust` says whether signatures were required and which key verified it. Ok
// (and not signed) when none is required.
Status checkPlanSignature(const std::string& path, const std::string& planBytes, PlanTrust* trust);
// After parsing: an unsigned plan is refused when signatures are required and it
// carries generated code (cubins, cuDNN plan records).
Status checkUnsignedPlan(const std::string& path, bool isSigned, bool carriesGeneratedCode);

}  // namespace kiln
