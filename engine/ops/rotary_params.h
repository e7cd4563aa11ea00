// RotaryEmbedding's (opset 23) geometry, decided once for both backends (issue 23's op
// table): X's head layout, the rotated half, the pairing and how the caches are addressed.
// Host-only, no backend header; errors are messages without the node's name (the kernels
// add it). Each backend then reads the position ids its own way (the CPU checks every id
// against the cache; the GPU reads them on the device).
#pragma once

#include <cstdint>

#include "kiln/data_type.h"
#include "kiln/graph.h"
#include "kiln/status.h"

namespace kiln::ops {

struct RotaryGeometry {
  int64_t batch = 0, heads = 0, seq = 0, headSize = 0;
  bool packed = false;  // 3-D X (batch, seq, heads * headSize), else (batch, heads, seq, headSize)
  int64_t half = 0;     // rotary_embedding_dim / 2 (the head size's half when 0)
  bool interleaved = false;      // pairs (x[2i], x[2i + 1]), else (x[i], x[i + half])
  bool byPositionIds = false;    // rows of a 2-D (positions, half) cache picked by position_ids
  int64_t positions = 0;         // with position_ids: the cache's rows
  int64_t idsBatchStride = 0;    // with position_ids: seq, or 0 when its batch of 1 broadcasts
  int64_t cacheBatchStride = 0;  // without: rows between batch entries (0: a batch of 1)
};

// The geometry of a RotaryEmbedding node from X's shape and the caches' (`positionIds`:
// position_ids' shape and type, or nullptr when the input is omitted). Refuses X that is
// not 3-D or 4-D, a 3-D X without a num_heads dividing its hidden size, a
// rotary_embedding_dim that is odd or past the head size, caches of another type than X or
// of different shapes or not ending in half, caches of the wrong rank for their addressing,
// position_ids not (batch or 1, seq) or not integer.
Result<RotaryGeometry> rotaryGeometry(const Node& node, const Shape& x, DataType xType,
                                      const Shape& cosCache, DataType cosType,
                                      const Shape& sinCache, DataType sinType,
                                      const Shape* positionIds, DataType idsType);

}  // namespace kiln::ops
