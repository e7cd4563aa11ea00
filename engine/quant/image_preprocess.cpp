// Images for calibration: the binary PPM/PGM decoder (the CLI's only image format;
// it stays free of image libraries), the preprocessing that turns an RGB image into
// a network sample, and the preprocessing spec file.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "kiln/calibration_data.h"
#include "kiln/file_io.h"

namespace kiln {
namespace {

// The next header token of a PNM file, skipping whitespace and '#' comments.
bool nextToken(std::istream& in, std::string* token) {
  token->clear();
  int c = in.get();
  while (c != EOF) {
    if (c == '#') {
      while (c != EOF && c != '\n') c = in.get();
    } else if (!std::isspace(c)) {
      break;
    }
    c = in.get();
  }
  while (c != EOF && !std::isspace(c)) {
    *token += static_cast<char>(c);
    c = in.get();
  }
  return !token->empty();  // the one whitespace after the last token is consumed
}

bool parseDimension(const std::string& text, int limit, int* out) {
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v <= 0 || v > limit) return false;
  *out = static_cast<int>(v);
  return true;
}

float sampleBilinear(const RgbImage& image, double x, double y, int channel) {
  const int x0 = std::clamp(static_cast<int>(std::floor(x)), 0, image.width - 1);
  const int y0 = std::clamp(static_cast<int>(std::floor(y)), 0, image.height - 1);
  const int x1 = std::min(x0 + 1, image.width - 1), y1 = std::min(y0 + 1, image.height - 1);
  const double fx = std::clamp(x - x0, 0.0, 1.0), fy = std::clamp(y - y0, 0.0, 1.0);
  auto at = [&](int px, int py) {
    return static_cast<double>(
        image.rgb[(static_cast<size_t>(py) * image.width + px) * 3 + channel]);
  };
  const double top = at(x0, y0) * (1 - fx) + at(x1, y0) * fx;
  const double bottom = at(x0, y1) * (1 - fx) + at(x1, y1) * fx;
  return static_cast<float>(top * (1 - fy) + bottom * fy);
}

Status parseFloats(const std::vector<std::string>& t, size_t count, float* out) {
  if (t.size() != count + 1)
    return invalidArgument("'" + t[0] + "' needs " + std::to_string(count) + " numbers");
  for (size_t i = 0; i < count; ++i) {
    char* end = nullptr;
    out[i] = std::strtof(t[i + 1].c_str(), &end);
    if (*end != '\0' || !std::isfinite(out[i]))
      return invalidArgument("'" + t[0] + "': '" + t[i + 1] + "' is not a number");
  }
  return Status::ok();
}

Status parseSpecLine(const std::vector<std::string>& t, PreprocessSpec* spec) {
  const std::string& key = t[0];
  if (key == "size") {
    if (t.size() != 3 || !parseDimension(t[1], 1 << 14, &spec->width) ||
        !parseDimension(t[2], 1 << 14, &spec->height))
      return invalidArgument("'size' needs a width and a height in 1..16384");
    return Status::ok();
  }
  if (key == "scale") return parseFloats(t, 1, &spec->scale);
  if (key == "mean") return parseFloats(t, 3, spec->mean.data());
  if (key == "std") {
    KILN_RETURN_IF_ERROR(parseFloats(t, 3, spec->std.data()));
    for (float s : spec->std)
      if (s == 0) return invalidArgument("'std' values must not be zero");
    return Status::ok();
  }
  if (key == "channels" && t.size() == 2) {
    if (t[1] == "rgb")
      spec->channels = PreprocessSpec::Channels::kRgb;
    else if (t[1] == "bgr")
      spec->channels = PreprocessSpec::Channels::kBgr;
    else if (t[1] == "gray")
      spec->channels = PreprocessSpec::Channels::kGray;
    else
      return invalidArgument("'channels' is rgb, bgr or gray, not '" + t[1] + "'");
    return Status::ok();
  }
  if (key == "layout" && t.size() == 2) {
    if (t[1] != "nchw" && t[1] != "nhwc")
      return invalidArgument("'layout' is nchw or nhwc, not '" + t[1] + "'");
    spec->nhwc = t[1] == "nhwc";
    return Status::ok();
  }
  return invalidArgument("unknown entry '" + key +
                         "' (expected size, scale, mean, std, channels or layout)");
}

}  // namespace

Result<RgbImage> decodePnm(const std::string& path) {
  Result<std::string> bytes = readRegularFile(path, kMaxTextFileBytes);
  if (!bytes.isOk()) return bytes.status().withContext("image");
  std::istringstream in(bytes.value());
  std::string magic, width, height, maxval;
  const std::string where = "image '" + path + "'";
  if (!nextToken(in, &magic) || (magic != "P6" && magic != "P5"))
    return parseError(where + ": not a binary PPM/PGM (P6/P5) file");
  RgbImage image;
  int maxValue = 0;
  if (!nextToken(in, &width) || !nextToken(in, &height) || !nextToken(in, &maxval) ||
      !parseDimension(width, 1 << 15, &image.width) ||
      !parseDimension(height, 1 << 15, &image.height) || !parseDimension(maxval, 255, &maxValue))
    return parseError(where + ": bad header (width, height up to 32768; maxval up to 255)");
  const int channels = magic == "P6" ? 3 : 1;
  const size_t pixels = static_cast<size_t>(image.width) * image.height;
  std::vector<uint8_t> raw(pixels * channels);
  in.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(raw.size()));
  if (static_cast<size_t>(in.gcount()) != raw.size())
    return parseError(where + ": truncated pixel data (" + std::to_string(in.gcount()) + " of " +
                      std::to_string(raw.size()) + " bytes)");
  image.rgb.resize(pixels * 3);
  for (size_t p = 0; p < pixels; ++p)
    for (int c = 0; c < 3; ++c) {
      const int v = raw[p * channels + (channels == 3 ? c : 0)];
      image.rgb[p * 3 + c] = static_cast<uint8_t>(v * 255 / maxValue);
    }
  return image;
}

Tensor preprocessImage(const RgbImage& image, const PreprocessSpec& spec) {
  const bool gray = spec.channels == PreprocessSpec::Channels::kGray;
  const int channels = gray ? 1 : 3;
  const int64_t h = spec.height, w = spec.width;
  Tensor out(DataType::kFloat32, spec.nhwc ? Shape{h, w, channels} : Shape{channels, h, w});
  float* data = out.data<float>();
  // Pixel centres map onto each other (align_corners = false).
  const double sx = static_cast<double>(image.width) / w,
               sy = static_cast<double>(image.height) / h;
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      const double srcX = (x + 0.5) * sx - 0.5, srcY = (y + 0.5) * sy - 0.5;
      float rgb[3];
      for (int c = 0; c < 3; ++c) rgb[c] = sampleBilinear(image, srcX, srcY, c);
      for (int c = 0; c < channels; ++c) {
        float v = gray ? 0.299f * rgb[0] + 0.587f * rgb[1] + 0.114f * rgb[2]
                       : rgb[spec.channels == PreprocessSpec::Channels::kBgr ? 2 - c : c];
        v = (v * spec.scale - spec.mean[c]) / spec.std[c];
        const int64_t index = spec.nhwc ? (y * w + x) * channels + c : (c * h + y) * w + x;
        data[index] = v;
      }
    }
  }
  return out;
}

Result<PreprocessSpec> parsePreprocessSpec(const std::string& text,
                                           const std::string& displayName) {
  const std::string where = "preprocessing spec '" + displayName + "'";
  std::istringstream in(text);
  std::string line;
  int lineNumber = 0;
  bool sawHeader = false;
  PreprocessSpec spec;
  while (std::getline(in, line)) {
    ++lineNumber;
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::vector<std::string> tokens;
    for (std::string word; words >> word;) tokens.push_back(word);
    if (tokens.empty()) continue;
    if (!sawHeader) {
      if (tokens.size() != 2 || tokens[0] != "kiln-preprocess" || tokens[1] != "1")
        return parseError(where +
                          ": not a preprocessing spec (the first entry must be "
                          "'kiln-preprocess 1')");
      sawHeader = true;
      continue;
    }
    Status status = parseSpecLine(tokens, &spec);
    if (!status.isOk())
      return parseError(where + " line " + std::to_string(lineNumber) + ": " + status.message());
  }
  if (!sawHeader) return parseError(where + ": empty file, not a preprocessing spec");
  return spec;
}

Result<PreprocessSpec> loadPreprocessSpec(const std::string& path) {
  // A spec is a few lines; a FIFO, /dev/zero or a huge file is refused, not read whole.
  constexpr int64_t kMaxSpecBytes = 1 << 20;
  Result<std::string> bytes = readRegularFile(path, kMaxSpecBytes);
  if (!bytes.isOk()) return bytes.status().withContext("preprocessing spec");
  return parsePreprocessSpec(bytes.value(), path);
}

std::string formatPreprocessSpec(const PreprocessSpec& spec) {
  std::ostringstream out;
  out.precision(9);
  out << "kiln-preprocess 1\n";
  out << "size " << spec.width << " " << spec.height << "\n";
  out << "scale " << spec.scale << "\n";
  out << "mean " << spec.mean[0] << " " << spec.mean[1] << " " << spec.mean[2] << "\n";
  out << "std " << spec.std[0] << " " << spec.std[1] << " " << spec.std[2] << "\n";
  const char* channels = spec.channels == PreprocessSpec::Channels::kBgr    ? "bgr"
                         : spec.channels == PreprocessSpec::Channels::kGray ? "gray"
                                                                            : "rgb";
  out << "channels " << channels << "\n";
  out << "layout " << (spec.nhwc ? "nhwc" : "nchw") << "\n";
  return out.str();
}

Status savePreprocessSpec(const PreprocessSpec& spec, const std::string& path) {
  return writeFileAtomically(path, formatPreprocessSpec(spec), "the preprocessing spec");
}

}  // namespace kiln
