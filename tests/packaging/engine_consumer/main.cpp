// Imports an ONNX model through the installed Kiln::engine, infers its shapes and
// asks the installed Kiln::cuda runtime about the GPU: the public API links and works
// from the package alone.
#include <cstdio>

#include "kiln/cuda_runtime.h"
#include "kiln/onnx_import.h"
#include "kiln/shape_inference.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: kiln_engine_consumer MODEL.onnx\n");
    return 2;
  }
  kiln::Result<kiln::Network> network = kiln::importOnnxFile(argv[1]);
  if (!network.isOk()) {
    std::fprintf(stderr, "%s\n", network.status().message().c_str());
    return 1;
  }
  kiln::Result<kiln::ShapeInferenceResult> shapes = kiln::inferShapes(*network);
  if (!shapes.isOk()) {
    std::fprintf(stderr, "%s\n", shapes.status().message().c_str());
    return 1;
  }
  std::printf("nodes: %zu, values with shapes: %zu\n", network->graph.nodes.size(),
              shapes->values.size());
  std::printf("built with CUDA: %s\n", kiln::cuda::builtWithCuda() ? "yes" : "no");
  return 0;
}
