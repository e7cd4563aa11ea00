// Object-detection kernels: NonMaxSuppression and RoiAlign. Both follow ONNX Runtime's
// reference behaviour (the ONNX test data comes from the same algorithm), including
// its tie-breaking and its "max" RoiAlign quirk.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/ops/misc.h"

namespace kiln::cpu {
namespace {

// Refuses RoiAlign sampling grids so large they could only come from corrupt rois.
constexpr int64_t kMaxRoiSamples = int64_t{1} << 26;

// A box as its x/y extents. Corner boxes are sorted so min <= max; center boxes
// keep their (possibly negative) width, which makes their area <= 0.
struct Box {
  double xMin, yMin, xMax, yMax;
};

Box readBox(const double* b, bool centerPoint) {
  if (centerPoint) {  // [x_center, y_center, width, height]
    return {b[0] - b[2] / 2, b[1] - b[3] / 2, b[0] + b[2] / 2, b[1] + b[3] / 2};
  }
  // [y1, x1, y2, x2], either corner pair first.
  return {std::min(b[1], b[3]), std::min(b[0], b[2]), std::max(b[1], b[3]), std::max(b[0], b[2])};
}

// True when the boxes overlap by more than `threshold` intersection-over-union.
bool suppresses(const Box& a, const Box& b, double threshold) {
  const double ix0 = std::max(a.xMin, b.xMin), ix1 = std::min(a.xMax, b.xMax);
  if (ix1 <= ix0) return false;
  const double iy0 = std::max(a.yMin, b.yMin), iy1 = std::min(a.yMax, b.yMax);
  if (iy1 <= iy0) return false;
  const double inter = (ix1 - ix0) * (iy1 - iy0);
  const double areaA = (a.xMax - a.xMin) * (a.yMax - a.yMin);
  const double areaB = (b.xMax - b.xMin) * (b.yMax - b.yMin);
  const double unionArea = areaA + areaB - inter;
  if (inter <= 0 || areaA <= 0 || areaB <= 0 || unionArea <= 0) return false;
  return inter / unionArea > threshold;
}

struct NmsOptions {
  int64_t maxPerClass = 0;
  double iouThreshold = 0;
  bool hasScoreThreshold = false;
  double scoreThreshold = 0;
  bool centerPoint = false;
};

Status readNmsOptions(const KernelContext& ctx, NmsOptions* o) {
  auto present = [&](size_t i) { return ctx.hasInput(i) && ctx.input(i).numel() > 0; };
  if (present(2)) {
    KILN_RETURN_IF_ERROR(readScalarInt(ctx, 2, "max_output_boxes_per_class", &o->maxPerClass));
    o->maxPerClass = std::max<int64_t>(o->maxPerClass, 0);
  }
  if (present(3)) KILN_RETURN_IF_ERROR(readScalarDouble(ctx, 3, "iou_threshold", &o->iouThreshold));
  if (!(o->iouThreshold >= 0.0 && o->iouThreshold <= 1.0)) {
    return ctx.error("iou_threshold must be in [0, 1], got " + std::to_string(o->iouThreshold));
  }
  if (present(4)) {
    o->hasScoreThreshold = true;
    KILN_RETURN_IF_ERROR(readScalarDouble(ctx, 4, "score_threshold", &o->scoreThreshold));
  }
  const int64_t center = ctx.node().attrInt("center_point_box", 0);
  if (center != 0 && center != 1) return ctx.error("center_point_box must be 0 or 1");
  o->centerPoint = center == 1;
  return Status::ok();
}

// Greedy selection for one (batch, class): highest score first, ties to the lower
// box index; a candidate survives unless it overlaps an already selected box.
void selectBoxes(const std::vector<Box>& boxes, const double* scores, const NmsOptions& o,
                 std::vector<int64_t>* selected) {
  std::vector<int64_t> order;
  for (int64_t i = 0; i < static_cast<int64_t>(boxes.size()); ++i) {
    if (!o.hasScoreThreshold || scores[i] > o.scoreThreshold) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return scores[a] > scores[b]; });
  selected->clear();
  for (int64_t candidate : order) {
    if (static_cast<int64_t>(selected->size()) >= o.maxPerClass) break;
    bool keep = true;
    for (int64_t s : *selected) {
      if (suppresses(boxes[candidate], boxes[s], o.iouThreshold)) {
        keep = false;
        break;
      }
    }
    if (keep) selected->push_back(candidate);
  }
}

Status nonMaxSuppressionKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(2));
  const Tensor& boxesIn = ctx.input(0);
  const Tensor& scoresIn = ctx.input(1);
  if (!isFloatingPoint(boxesIn.type()) || !isFloatingPoint(scoresIn.type())) {
    return ctx.error("boxes and scores must be floating-point tensors");
  }
  if (boxesIn.rank() != 3 || boxesIn.dim(2) != 4) {
    return ctx.error("boxes must be [batches, boxes, 4], got " + shapeToString(boxesIn.shape()));
  }
  if (scoresIn.rank() != 3 || scoresIn.dim(0) != boxesIn.dim(0) ||
      scoresIn.dim(2) != boxesIn.dim(1)) {
    return ctx.error("scores must be [batches, classes, boxes] matching boxes " +
                     shapeToString(boxesIn.shape()) + ", got " + shapeToString(scoresIn.shape()));
  }
  NmsOptions options;
  KILN_RETURN_IF_ERROR(readNmsOptions(ctx, &options));
  const Tensor boxes = castTensor(boxesIn, DataType::kFloat64);
  const Tensor scores = castTensor(scoresIn, DataType::kFloat64);
  const int64_t batches = boxesIn.dim(0), count = boxesIn.dim(1), classes = scoresIn.dim(1);

  std::vector<int64_t> triples;  // (batch, class, box) per selected box
  std::vector<Box> batchBoxes(count);
  std::vector<int64_t> selected;
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t i = 0; i < count; ++i) {
      batchBoxes[i] = readBox(boxes.data<double>() + (b * count + i) * 4, options.centerPoint);
    }
    for (int64_t c = 0; c < classes; ++c) {
      selectBoxes(batchBoxes, scores.data<double>() + (b * classes + c) * count, options,
                  &selected);
      for (int64_t s : selected) triples.insert(triples.end(), {b, c, s});
    }
  }
  const int64_t rows = static_cast<int64_t>(triples.size() / 3);
  Tensor& out = ctx.allocateOutput(0, DataType::kInt64, {rows, 3});
  std::copy(triples.begin(), triples.end(), out.data<int64_t>());
  return Status::ok();
}

// One bilinear sample of RoiAlign: four flat pixel offsets and their weights.
struct RoiSample {
  int64_t pos[4] = {0, 0, 0, 0};
  double w[4] = {0, 0, 0, 0};
};

RoiSample bilinearSample(double y, double x, int64_t height, int64_t width) {
  RoiSample s;
  // Samples more than one pixel outside the map contribute nothing.
  if (y < -1.0 || y > height || x < -1.0 || x > width) return s;
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  int64_t y0 = static_cast<int64_t>(y), x0 = static_cast<int64_t>(x), y1 = y0 + 1, x1 = x0 + 1;
  if (y0 >= height - 1) y = static_cast<double>(y0 = y1 = height - 1);
  if (x0 >= width - 1) x = static_cast<double>(x0 = x1 = width - 1);
  const double ly = y - y0, lx = x - x0, hy = 1.0 - ly, hx = 1.0 - lx;
  s.pos[0] = y0 * width + x0;
  s.pos[1] = y0 * width + x1;
  s.pos[2] = y1 * width + x0;
  s.pos[3] = y1 * width + x1;
  s.w[0] = hy * hx;
  s.w[1] = hy * lx;
  s.w[2] = ly * hx;
  s.w[3] = ly * lx;
  return s;
}

struct RoiAlignOptions {
  bool maxMode = false;
  bool halfPixel = true;
  int64_t outH = 1, outW = 1, samplingRatio = 0;
  double spatialScale = 1.0;
};

Status readRoiAlignOptions(const KernelContext& ctx, RoiAlignOptions* o) {
  const Node& node = ctx.node();
  const std::string mode = node.attrString("mode", "avg");
  if (mode != "avg" && mode != "max")
    return ctx.error("mode must be avg or max, got '" + mode + "'");
  o->maxMode = mode == "max";
  // Opset 16 added coordinate_transformation_mode; older RoiAlign had no pixel shift.
  const std::string ctm = node.attrString("coordinate_transformation_mode",
                                          ctx.opset() < 16 ? "output_half_pixel" : "half_pixel");
  if (ctm != "half_pixel" && ctm != "output_half_pixel") {
    return ctx.error("coordinate_transformation_mode '" + ctm + "' is not supported");
  }
  o->halfPixel = ctm == "half_pixel";
  o->outH = node.attrInt("output_height", 1);
  o->outW = node.attrInt("output_width", 1);
  o->samplingRatio = node.attrInt("sampling_ratio", 0);
  o->spatialScale = node.attrFloat("spatial_scale", 1.0f);
  if (o->outH <= 0 || o->outW <= 0) return ctx.error("output_height/output_width must be positive");
  if (o->samplingRatio < 0) return ctx.error("sampling_ratio must be >= 0");
  return Status::ok();
}

// Computes the sampling points of one roi (shared by all channels) into `samples`
// and returns the grid size per output bin through gridH / gridW.
Status roiSamples(const KernelContext& ctx, const double* roi, const RoiAlignOptions& o,
                  int64_t height, int64_t width, std::vector<RoiSample>* samples, int64_t* gridH,
                  int64_t* gridW) {
  const double offset = o.halfPixel ? 0.5 : 0.0;
  const double startW = roi[0] * o.spatialScale - offset, startH = roi[1] * o.spatialScale - offset;
  double roiW = roi[2] * o.spatialScale - offset - startW;
  double roiH = roi[3] * o.spatialScale - offset - startH;
  if (!std::isfinite(startW) || !std::isfinite(startH) || !std::isfinite(roiW) ||
      !std::isfinite(roiH)) {
    return ctx.error("rois holds a non-finite coordinate");
  }
  if (!o.halfPixel) {  // malformed rois become 1x1
    roiW = std::max(roiW, 1.0);
    roiH = std::max(roiH, 1.0);
  }
  const double binH = roiH / o.outH, binW = roiW / o.outW;
  // Negative sizes (inverted half_pixel rois) give an empty grid and a zero output.
  double autoH = std::max(0.0, std::ceil(roiH / o.outH));
  double autoW = std::max(0.0, std::ceil(roiW / o.outW));
  if (autoH == 0.0 || autoW == 0.0) autoH = autoW = 0.0;
  // Products in double so absurd sizes cannot overflow before they are refused.
  const double ratio = static_cast<double>(o.samplingRatio);
  const double perBin = o.samplingRatio > 0 ? ratio * ratio : autoH * autoW;
  if (perBin * static_cast<double>(o.outH) * static_cast<double>(o.outW) > kMaxRoiSamples) {
    return ctx.error("the sampling grid of an roi is too large");
  }
  *gridH = o.samplingRatio > 0 ? o.samplingRatio : static_cast<int64_t>(autoH);
  *gridW = o.samplingRatio > 0 ? o.samplingRatio : static_cast<int64_t>(autoW);
  samples->clear();
  for (int64_t ph = 0; ph < o.outH; ++ph) {
    for (int64_t pw = 0; pw < o.outW; ++pw) {
      for (int64_t iy = 0; iy < *gridH; ++iy) {
        const double y = startH + ph * binH + (iy + 0.5) * binH / *gridH;
        for (int64_t ix = 0; ix < *gridW; ++ix) {
          const double x = startW + pw * binW + (ix + 0.5) * binW / *gridW;
          samples->push_back(bilinearSample(y, x, height, width));
        }
      }
    }
  }
  return Status::ok();
}

Status roiAlignKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(3));
  const Tensor& x = ctx.input(0);
  const Tensor& roisIn = ctx.input(1);
  const Tensor& batchIndices = ctx.input(2);
  if (x.rank() != 4) return ctx.error("X must be [N, C, H, W], got " + shapeToString(x.shape()));
  if (roisIn.rank() != 2 || roisIn.dim(1) != 4 || !isFloatingPoint(roisIn.type())) {
    return ctx.error("rois must be a float [num_rois, 4] tensor, got " +
                     shapeToString(roisIn.shape()));
  }
  if (batchIndices.rank() != 1 || batchIndices.dim(0) != roisIn.dim(0) ||
      !isInteger(batchIndices.type())) {
    return ctx.error("batch_indices must be an integer [num_rois] tensor");
  }
  RoiAlignOptions o;
  KILN_RETURN_IF_ERROR(readRoiAlignOptions(ctx, &o));
  const int64_t numRois = roisIn.dim(0), channels = x.dim(1), height = x.dim(2), width = x.dim(3);
  const Tensor rois = castTensor(roisIn, DataType::kFloat64);
  const std::vector<int64_t> batch = batchIndices.toInt64Vector();
  for (int64_t b : batch) {
    if (b < 0 || b >= x.dim(0))
      return ctx.error("batch index " + std::to_string(b) + " is out of range");
  }
  if (height == 0 || width == 0) return ctx.error("X has an empty spatial dimension");
  return dispatchFloatTypes(x.type(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const T* src = x.data<T>();
    T* dst =
        ctx.allocateOutput(0, x.type(), {numRois, channels, o.outH, o.outW}).template data<T>();
    std::vector<RoiSample> samples;
    const int64_t bins = o.outH * o.outW;
    for (int64_t r = 0; r < numRois; ++r) {
      int64_t gridH = 0, gridW = 0;
      KILN_RETURN_IF_ERROR(
          roiSamples(ctx, rois.data<double>() + r * 4, o, height, width, &samples, &gridH, &gridW));
      const int64_t perBin = gridH * gridW;
      for (int64_t c = 0; c < channels; ++c) {
        const T* plane = src + (batch[r] * channels + c) * height * width;
        T* out = dst + (r * channels + c) * bins;
        for (int64_t bin = 0; bin < bins; ++bin) {
          double acc = 0.0;
          for (int64_t k = 0; k < perBin; ++k) {
            const RoiSample& s = samples[bin * perBin + k];
            if (o.maxMode) {
              // ONNX Runtime's max mode takes the largest weighted corner, not the
              // max of interpolated values; the ONNX tests expect exactly that.
              double v = s.w[0] * static_cast<double>(plane[s.pos[0]]);
              for (int q = 1; q < 4; ++q)
                v = std::max(v, s.w[q] * static_cast<double>(plane[s.pos[q]]));
              acc = k == 0 ? v : std::max(acc, v);
            } else {
              for (int q = 0; q < 4; ++q) acc += s.w[q] * static_cast<double>(plane[s.pos[q]]);
            }
          }
          if (!o.maxMode) acc /= static_cast<double>(std::max<int64_t>(perBin, 1));
          out[bin] = static_cast<T>(acc);
        }
      }
    }
    return Status::ok();
  });
}

}  // namespace

void registerDetectionKernels(KernelRegistry& registry) {
  registry.add("NonMaxSuppression", 10, 1000, &nonMaxSuppressionKernel);
  registry.add("RoiAlign", 10, 1000, &roiAlignKernel);
}

}  // namespace kiln::cpu
