// `kiln sweep MODEL.onnx --shape-sweep INPUT:LO..HI`: times a dynamic dimension across
// its range and proposes optimization profiles (inspector/shape_sweep.h; docs/sweep.md).
#pragma once

#include "cli/args.h"

namespace kiln::cli {

// Builds one plan per point of LO..HI (min LO, opt the point, max HI; the swept input's
// first symbolic dimension, and every input dimension of the same symbol), runs each plan
// at every point (`kiln run --json`, median), prints the timing matrix and the fewest
// profiles keeping every point within --tolerance (0.10) of its own-opt time, with the
// `kiln build` profile options. Writes DIR/shape_sweep.json (--dir, MODEL.shape-sweep).
// Other inputs' shapes come from --opt-shapes or their declared static dims. Exit 0,
// 1 (a failed build or run is a missing cell; no usable timing at all is an error),
// 2 usage, 130 interrupted.
int runShapeSweep(const Args& args);

}  // namespace kiln::cli
