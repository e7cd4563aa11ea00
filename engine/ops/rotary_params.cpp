// RotaryEmbedding's geometry (ops/rotary_params.h).
#include "ops/rotary_params.h"

#include <string>

namespace kiln::ops {

Result<RotaryGeometry> rotaryGeometry(const Node& node, const Shape& x, DataType xType,
                                      const Shape& cosCache, DataType cosType,
                                      const Shape& sinCache, DataType sinType,
                                      const Shape* positionIds, DataType idsType) {
  RotaryGeometry g;
  if (x.size() == 4) {
    g.batch = x[0];
    g.heads = x[1];
    g.seq = x[2];
    g.headSize = x[3];
  } else if (x.size() == 3) {
    const int64_t heads = node.attrInt("num_heads", 0);
    if (heads <= 0 || x[2] % heads != 0)
      return invalidArgument("3-D input needs a num_heads attribute dividing its hidden size " +
                             std::to_string(x[2]));
    g.batch = x[0];
    g.heads = heads;
    g.seq = x[1];
    g.headSize = x[2] / heads;
    g.packed = true;
  } else {
    return invalidArgument("input 'X' must be 3-D or 4-D, got " + shapeToString(x));
  }
  const int64_t dim = node.attrInt("rotary_embedding_dim", 0);
  const int64_t rotary = dim == 0 ? g.headSize : dim;
  if (rotary < 0 || rotary > g.headSize || rotary % 2 != 0)
    return invalidArgument("rotary_embedding_dim " + std::to_string(rotary) +
                           " must be even and at most the head size " + std::to_string(g.headSize));
  g.half = rotary / 2;
  g.interleaved = node.attrInt("interleaved", 0) != 0;
  if (cosType != xType || sinType != xType)
    return invalidArgument("cos_cache and sin_cache must have X's data type");
  if (cosCache != sinCache)
    return invalidArgument("cos_cache " + shapeToString(cosCache) + " and sin_cache " +
                           shapeToString(sinCache) + " differ");
  if (cosCache.size() < 2 || cosCache.back() != g.half)
    return invalidArgument("cache shape " + shapeToString(cosCache) + " must end in " +
                           std::to_string(g.half) + " (rotary_embedding_dim / 2)");
  if (!positionIds) {
    if (cosCache.size() != 3 || (cosCache[0] != g.batch && cosCache[0] != 1) ||
        cosCache[1] != g.seq)
      return invalidArgument("without position_ids the caches must be (batch, seq, dim/2), got " +
                             shapeToString(cosCache));
    g.cacheBatchStride = cosCache[0] == 1 ? 0 : g.seq;
    return g;
  }
  const Shape& ids = *positionIds;
  if (cosCache.size() != 2)
    return invalidArgument("with position_ids the caches must be 2-D, got " +
                           shapeToString(cosCache));
  if (ids.size() != 2 || (ids[0] != g.batch && ids[0] != 1) || ids[1] != g.seq)
    return invalidArgument("position_ids must be (batch, seq), got " + shapeToString(ids));
  if (!isInteger(idsType)) return invalidArgument("position_ids must be an integer tensor");
  g.byPositionIds = true;
  g.positions = cosCache[0];
  g.idsBatchStride = ids[0] == 1 ? 0 : g.seq;
  return g;
}

}  // namespace kiln::ops
