#include "passes/strided_view.h"

#include <deque>

namespace kiln::passes {
namespace {

// Joins adjacent atoms that nest (outer stride = inner size * inner stride) and drops
// atoms of size 1, which index nothing.
std::vector<ViewAtom> merged(const std::vector<ViewAtom>& atoms) {
  std::vector<ViewAtom> out;
  for (const ViewAtom& a : atoms) {
    if (a.size == 1) continue;
    if (!out.empty() && out.back().stride == a.size * a.stride) {
      out.back() = {out.back().size * a.size, a.stride};
      continue;
    }
    out.push_back(a);
  }
  return out;
}

}  // namespace

bool StridedView::contiguous(const Shape& shape, StridedView* out) {
  StridedView v;
  int64_t stride = 1;
  v.m_dims.resize(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] < 1) return false;
    v.m_dims[i] = {{shape[i], stride}};
    if (stride > (int64_t{1} << 50) / shape[i]) return false;
    stride *= shape[i];
  }
  *out = std::move(v);
  return true;
}

Shape StridedView::shape() const {
  Shape s;
  for (const auto& atoms : m_dims) {
    int64_t n = 1;
    for (const ViewAtom& a : atoms) n *= a.size;
    s.push_back(n);
  }
  return s;
}

bool StridedView::transpose(const std::vector<int64_t>& perm) {
  if (perm.size() != m_dims.size()) return false;
  std::vector<bool> seen(perm.size(), false);
  std::vector<std::vector<ViewAtom>> dims;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(m_dims.size()) || seen[p]) return false;
    seen[p] = true;
    dims.push_back(m_dims[p]);
  }
  m_dims = std::move(dims);
  return true;
}

// Row-major order is kept: the atoms of all dims, outermost first, are regrouped into
// the new dims, splitting an atom where a new dim ends inside it ((a, s) -> outer
// (a / n, s * n) and inner (n, s) when n divides a).
bool StridedView::reshape(const Shape& to) {
  std::deque<ViewAtom> atoms;
  for (const auto& dim : m_dims)
    for (const ViewAtom& a : merged(dim)) atoms.push_back(a);
  std::vector<std::vector<ViewAtom>> dims;
  for (int64_t size : to) {
    if (size < 1) return false;
    std::vector<ViewAtom> dim;
    int64_t need = size;
    // Innermost atoms of this dim come last in the queue's front part: take from the
    // front (outermost) while the whole atom fits, split the last one.
    while (need > 1) {
      if (atoms.empty()) return false;
      ViewAtom& a = atoms.front();
      if (need % a.size == 0) {
        dim.push_back(a);
        need /= a.size;
        atoms.pop_front();
      } else if (a.size % need == 0) {
        dim.push_back({need, a.stride * (a.size / need)});
        a = {a.size / need, a.stride};
        need = 1;
      } else {
        return false;
      }
    }
    dims.push_back(merged(dim));
  }
  if (!atoms.empty()) return false;
  m_dims = std::move(dims);
  return true;
}

bool StridedView::select(int64_t axis, int64_t index) {
  if (axis < 0 || axis >= static_cast<int64_t>(m_dims.size())) return false;
  const Shape s = shape();
  if (index < 0 || index >= s[axis]) return false;
  // The index in the dim's mixed radix, innermost atom first.
  const auto& atoms = m_dims[axis];
  for (size_t i = atoms.size(); i-- > 0;) {
    m_offset += (index % atoms[i].size) * atoms[i].stride;
    index /= atoms[i].size;
  }
  m_dims.erase(m_dims.begin() + axis);
  return true;
}

bool StridedView::narrow(int64_t axis, int64_t start, int64_t size) {
  int64_t full = 0, stride = 0;
  if (!simpleDim(axis, &full, &stride)) return false;
  if (start < 0 || size < 1 || start + size > full) return false;
  m_offset += start * stride;
  m_dims[axis] = {{size, stride}};
  return true;
}

bool StridedView::gatherProgression(int64_t axis, int64_t start, const std::vector<int64_t>& sizes,
                                    const std::vector<int64_t>& steps) {
  int64_t full = 0, stride = 0;
  if (!simpleDim(axis, &full, &stride) || sizes.empty() || sizes.size() != steps.size())
    return false;
  int64_t last = start;
  for (size_t k = 0; k < sizes.size(); ++k) {
    if (sizes[k] < 1 || steps[k] < 0 || steps[k] > full) return false;
    last += (sizes[k] - 1) * steps[k];
  }
  if (start < 0 || last >= full) return false;
  m_offset += start * stride;
  std::vector<std::vector<ViewAtom>> dims;
  for (size_t k = 0; k < sizes.size(); ++k) dims.push_back({{sizes[k], steps[k] * stride}});
  m_dims.erase(m_dims.begin() + axis);
  m_dims.insert(m_dims.begin() + axis, dims.begin(), dims.end());
  return true;
}

bool StridedView::simpleDim(int64_t axis, int64_t* size, int64_t* stride) const {
  if (axis < 0 || axis >= static_cast<int64_t>(m_dims.size())) return false;
  const std::vector<ViewAtom> atoms = merged(m_dims[axis]);
  if (atoms.size() > 1) return false;
  *size = atoms.empty() ? 1 : atoms[0].size;
  *stride = atoms.empty() ? 0 : atoms[0].stride;
  return true;
}

}  // namespace kiln::passes
