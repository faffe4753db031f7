#include "block_cyclic.hpp"

#include <algorithm>

namespace tessera::scalapack {

std::int64_t Axis::held_before(int p, std::int64_t g) const {
  const std::int64_t whole = g / block;  // blocks entirely before g
  const std::int64_t rest = g % block;
  const std::int64_t d = ((p - src) % procs + procs) % procs;  // p holds blocks d, d + procs, ...
  const std::int64_t blocks = whole > d ? (whole - d - 1) / procs + 1 : 0;
  const std::int64_t partial = owner(whole * block) == p ? rest : 0;
  return blocks * block + partial;
}

Span held_span(std::int64_t extent, std::int64_t c_offset, const Axis& c_axis, int p) {
  const std::int64_t first = c_axis.held_before(p, c_offset);
  return {first, c_axis.held_before(p, c_offset + extent) - first};
}

namespace {

std::vector<Run> cut(std::int64_t extent, std::int64_t offset, const Axis& held, std::int64_t c_offset,
                     const Axis* c_axis) {
  std::vector<Run> out;
  std::int64_t x = 0;
  while (x < extent) {
    const std::int64_t g = offset + x;
    std::int64_t end = x + (held.block - g % held.block);
    Run r;
    r.x0 = x;
    r.src = held.owner(g);
    r.src_local = held.held_before(r.src, g);
    if (c_axis) {
      const std::int64_t gc = c_offset + x;
      end = std::min(end, x + (c_axis->block - gc % c_axis->block));
      r.target = c_axis->owner(gc);
      r.target_pos = c_axis->held_before(r.target, gc) - c_axis->held_before(r.target, c_offset);
    } else {
      r.target_pos = x;
    }
    r.len = std::min(end, extent) - x;
    out.push_back(r);
    x += r.len;
  }
  return out;
}

}  // namespace

std::vector<Run> runs(std::int64_t extent, std::int64_t offset, const Axis& held) {
  return cut(extent, offset, held, 0, nullptr);
}

std::vector<Run> runs(std::int64_t extent, std::int64_t offset, const Axis& held, std::int64_t c_offset,
                      const Axis& c_axis) {
  return cut(extent, offset, held, c_offset, &c_axis);
}

}  // namespace tessera::scalapack
