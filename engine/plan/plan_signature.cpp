#include "kiln/plan_signature.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <mutex>
#include <sstream>

#include "kiln/file_io.h"

namespace kiln {
namespace {

constexpr const char* kSignatureMagic = "kiln-plan-signature";
constexpr int kSignatureVersion = 1;
constexpr int64_t kMaxKeyFileBytes = 64 << 10;

using PKey = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using Bio = std::unique_ptr<BIO, decltype(&BIO_free)>;
using MdCtx = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;

struct TrustedKey {
  std::string file;
  std::string raw;  // 32-byte Ed25519 public key
};

std::mutex& policyMutex() {
  static std::mutex m;
  return m;
}
std::vector<TrustedKey>& trustedKeys() {
  static std::vector<TrustedKey> keys;
  return keys;
}

std::string hex(const std::string& bytes) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

bool unhex(const std::string& text, std::string* out) {
  if (text.size() % 2) return false;
  auto digit = [](char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
  };
  out->clear();
  for (size_t i = 0; i < text.size(); i += 2) {
    const int hi = digit(text[i]), lo = digit(text[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi * 16 + lo));
  }
  return true;
}

Result<PKey> readKey(const std::string& path, bool isPrivate) {
  KILN_ASSIGN_OR_RETURN(std::string pem, readRegularFile(path, kMaxKeyFileBytes));
  Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
  PKey key(isPrivate ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr)
                     : PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr),
           EVP_PKEY_free);
  if (!key || EVP_PKEY_get_id(key.get()) != EVP_PKEY_ED25519)
    return parseError(path + ": not an Ed25519 " + (isPrivate ? "private" : "public") +
                      " key in PEM (make one with `kiln keygen`)");
  return key;
}

std::string rawPublicKey(EVP_PKEY* key) {
  std::string raw(32, '\0');
  size_t size = raw.size();
  if (EVP_PKEY_get_raw_public_key(key, reinterpret_cast<unsigned char*>(raw.data()), &size) != 1)
    return "";
  raw.resize(size);
  return raw;
}

std::string pemOf(EVP_PKEY* key, bool isPrivate) {
  Bio bio(BIO_new(BIO_s_mem()), BIO_free);
  const int ok =
      isPrivate ? PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr)
                : PEM_write_bio_PUBKEY(bio.get(), key);
  if (ok != 1) return "";
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(size));
}

// Creates `path` exclusively with `mode` and writes `text`: a key never replaces a file.
Status writeNewFile(const std::string& path, const std::string& text, mode_t mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0)
    return Status(StatusCode::kIoError,
                  path + ": cannot create (it exists, or the folder is not writable)");
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  if (::close(fd) != 0 || !ok) return Status(StatusCode::kIoError, path + ": writing failed");
  return Status::ok();
}

struct SignatureFile {
  std::string publicKey;  // raw
  std::string signature;  // raw, 64 bytes
};

Result<SignatureFile> parseSignatureFile(const std::string& path, const std::string& text) {
  std::istringstream in(text);
  std::string magic, keyWord, keyHex, sigWord, sigHex;
  int version = 0;
  SignatureFile parsed;
  if (!(in >> magic >> version >> keyWord >> keyHex >> sigWord >> sigHex) ||
      magic != kSignatureMagic || version != kSignatureVersion || keyWord != "key" ||
      sigWord != "ed25519" || !unhex(keyHex, &parsed.publicKey) ||
      !unhex(sigHex, &parsed.signature) || parsed.publicKey.size() != 32 ||
      parsed.signature.size() != 64)
    return parseError(path + ": not a Kiln plan signature");
  return parsed;
}

bool verify(const std::string& rawKey, const std::string& signature, const std::string& bytes) {
  PKey key(EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr,
                                       reinterpret_cast<const unsigned char*>(rawKey.data()),
                                       rawKey.size()),
           EVP_PKEY_free);
  MdCtx md(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!key || !md || EVP_DigestVerifyInit(md.get(), nullptr, nullptr, nullptr, key.get()) != 1)
    return false;
  return EVP_DigestVerify(md.get(), reinterpret_cast<const unsigned char*>(signature.data()),
                          signature.size(), reinterpret_cast<const unsigned char*>(bytes.data()),
                          bytes.size()) == 1;
}

}  // namespace

std::string planSignaturePath(const std::string& planPath) {
  return planPath + ".sig";
}

Status generateSigningKeyPair(const std::string& privatePath, const std::string& publicPath) {
  std::unique_ptr<EVP_PKEY_CTX, decltype(&EVP_PKEY_CTX_free)> ctx(
      EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, nullptr), EVP_PKEY_CTX_free);
  EVP_PKEY* generated = nullptr;
  if (!ctx || EVP_PKEY_keygen_init(ctx.get()) != 1 || EVP_PKEY_keygen(ctx.get(), &generated) != 1)
    return internalError("OpenSSL could not generate an Ed25519 key");
  PKey key(generated, EVP_PKEY_free);
  const std::string privatePem = pemOf(key.get(), true), publicPem = pemOf(key.get(), false);
  if (privatePem.empty() || publicPem.empty())
    return internalError("OpenSSL could not write the key as PEM");
  KILN_RETURN_IF_ERROR(writeNewFile(privatePath, privatePem, 0600));
  return writeNewFile(publicPath, publicPem, 0644);
}

Status signPlanFile(const std::string& planPath, const std::string& keyPath) {
  KILN_ASSIGN_OR_RETURN(PKey key, readKey(keyPath, true));
  KILN_ASSIGN_OR_RETURN(std::string bytes, readRegularFile(planPath, kMaxPlanFileBytes));
  MdCtx md(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  std::string signature(64, '\0');
  size_t size = signature.size();
  if (!md || EVP_DigestSignInit(md.get(), nullptr, nullptr, nullptr, key.get()) != 1 ||
      EVP_DigestSign(md.get(), reinterpret_cast<unsigned char*>(signature.data()), &size,
                     reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()) != 1)
    return internalError(planPath + ": signing failed");
  signature.resize(size);
  const std::string text = std::string(kSignatureMagic) + " " + std::to_string(kSignatureVersion) +
                           "\nkey " + hex(rawPublicKey(key.get())) + "\ned25519 " + hex(signature) +
                           "\n";
  return writeFileAtomically(planSignaturePath(planPath), text, "the plan signature");
}

Status requirePlanSignatures(const std::vector<std::string>& publicKeyFiles) {
  std::vector<TrustedKey> keys;
  for (const std::string& file : publicKeyFiles) {
    KILN_ASSIGN_OR_RETURN(PKey key, readKey(file, false));
    keys.push_back({file, rawPublicKey(key.get())});
  }
  std::lock_guard<std::mutex> lock(policyMutex());
  trustedKeys() = std::move(keys);
  return Status::ok();
}

bool planSignaturesRequired() {
  std::lock_guard<std::mutex> lock(policyMutex());
  return !trustedKeys().empty();
}

Status checkUnsignedPlan(const std::string& path, bool isSigned, bool carriesGeneratedCode) {
  // A plan without generated code is data only: nothing runs from it.
  if (isSigned || !carriesGeneratedCode || !planSignaturesRequired()) return Status::ok();
  return Status(StatusCode::kInvalidArgument,
                path +
                    ": unsigned plan carries generated GPU code; --trust requires a "
                    "signature (" +
                    planSignaturePath(path) + ")");
}

Result<std::string> publicKeyId(const std::string& publicKeyFile) {
  KILN_ASSIGN_OR_RETURN(PKey key, readKey(publicKeyFile, false));
  return hex(rawPublicKey(key.get())).substr(0, 16);
}

Status checkPlanSignature(const std::string& path, const std::string& planBytes, PlanTrust* trust) {
  *trust = PlanTrust{};
  std::vector<TrustedKey> keys;
  {
    std::lock_guard<std::mutex> lock(policyMutex());
    keys = trustedKeys();
  }
  trust->required = !keys.empty();
  if (keys.empty()) return Status::ok();
  const std::string sigPath = planSignaturePath(path);
  Result<std::string> text = readRegularFile(sigPath, 4096);
  if (!text.isOk() && text.status().code() == StatusCode::kNotFound) return Status::ok();
  if (!text.isOk()) return text.status();
  KILN_ASSIGN_OR_RETURN(SignatureFile signature, parseSignatureFile(sigPath, text.value()));
  for (const TrustedKey& key : keys) {
    if (key.raw != signature.publicKey) continue;
    trust->isSigned = verify(key.raw, signature.signature, planBytes);
    if (trust->isSigned) {
      trust->keyFile = key.file;
      return Status::ok();
    }
    return Status(StatusCode::kInvalidArgument,
                  path + ": the signature does not match the plan (changed after signing?)");
  }
  return Status(StatusCode::kInvalidArgument, path + ": signed by key " +
                                                  hex(signature.publicKey).substr(0, 16) +
                                                  ", which is not among the trusted keys");
}

}  // namespace kiln
