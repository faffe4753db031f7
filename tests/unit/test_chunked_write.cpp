// io/chunked_write.hpp in-process: the chunks a rank compresses inside its block are byte for byte
// those the writer would make of them, the writer stores them as given and compresses the rest,
// and the message carrying them between ranks round-trips (and refuses a truncated one).
#include <catch2/catch_test_macros.hpp>

#include <cstdint>
#include <cstring>
#include <map>
#include <stdexcept>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "io/chunked_write.hpp"

using tessera::io::ChunkedWriter;
using tessera::io::CompressedChunk;

namespace {

// A rows x cols float32 matrix of distinct values, row-major.
std::vector<float> matrix(std::int64_t rows, std::int64_t cols) {
  std::vector<float> m(static_cast<std::size_t>(rows * cols));
  for (std::size_t i = 0; i < m.size(); ++i) m[i] = static_cast<float>(i % 977) * 0.25f - 3.0f;
  return m;
}

// Rows [r0, r1) and columns [c0, c1) of `m` (cols wide), packed.
std::vector<float> block(const std::vector<float>& m, std::int64_t cols, std::int64_t r0, std::int64_t r1,
                         std::int64_t c0, std::int64_t c1) {
  std::vector<float> b;
  for (std::int64_t r = r0; r < r1; ++r) b.insert(b.end(), m.begin() + r * cols + c0, m.begin() + r * cols + c1);
  return b;
}

using Stored = std::map<std::pair<std::int64_t, std::int64_t>, std::vector<unsigned char>>;

}  // namespace

TEST_CASE("chunks compressed by a block's rank are the writer's own bytes; the rest the writer makes",
          "[io][chunked]") {
  // 37 x 29 in 8 x 6 chunks (edge chunks cut by the dataset), two blocks of rows cut at row 19 (a
  // chunk row straddles them), the second block's columns cut at 13 (straddling too).
  const std::int64_t rows = 37, cols = 29;
  const auto m = matrix(rows, cols);
  const auto into = [](Stored& s) {
    return [&s](std::int64_t r0, std::int64_t c0, const std::vector<unsigned char>& bytes) {
      REQUIRE(s.emplace(std::make_pair(r0, c0), bytes).second);  // each chunk once
    };
  };
  for (const bool shuffle : {false, true}) {
    Stored whole;  // one writer, blocks added as they are
    ChunkedWriter one(rows, cols, 8, 6, 4, shuffle, 1);
    const struct {
      std::int64_t r0, r1, c0, c1;
    } blocks[] = {{0, 19, 0, cols}, {19, rows, 0, 13}, {19, rows, 13, cols}};
    for (const auto& b : blocks)
      one.add(b.r0, b.c0, b.r1 - b.r0, b.c1 - b.c0, block(m, cols, b.r0, b.r1, b.c0, b.c1).data(), 3, into(whole));
    CHECK(one.unfinished() == 0);
    CHECK(whole.size() == 5 * 5);

    Stored parallel;  // the second and third blocks' inner chunks compressed "by their ranks"
    ChunkedWriter root(rows, cols, 8, 6, 4, shuffle, 1);
    for (const auto& b : blocks) {
      const auto data = block(m, cols, b.r0, b.r1, b.c0, b.c1);
      std::vector<CompressedChunk> ready;
      if (b.r0 > 0) {
        const ChunkedWriter other(root.layout());
        ready = tessera::io::unpack(
            tessera::io::pack(other.compress_inside(b.r0, b.c0, b.r1 - b.r0, b.c1 - b.c0, data.data(), 2)));
        for (const CompressedChunk& c : ready) {  // wholly inside the block
          CHECK(c.row0 >= b.r0);
          CHECK(c.col0 >= b.c0);
          CHECK(std::min(rows, c.row0 + 8) <= b.r1);
          CHECK(std::min(cols, c.col0 + 6) <= b.c1);
        }
      }
      // Block (19..37) x (0..13): chunk rows 24, 32 (32..37 cut by the dataset) x chunk columns 0, 6.
      if (b.r0 == 19 && b.c0 == 0) CHECK(ready.size() == 4);
      // Block (19..37) x (13..29): chunk columns 18, 24 (24..29 cut by the dataset).
      if (b.r0 == 19 && b.c0 == 13) CHECK(ready.size() == 4);
      for (const CompressedChunk& c : ready) {
        root.mark_stored(c.row0, c.col0);
        into(parallel)(c.row0, c.col0, c.bytes);
      }
      root.add(b.r0, b.c0, b.r1 - b.r0, b.c1 - b.c0, data.data(), 2, into(parallel));
    }
    CHECK(root.unfinished() == 0);
    CHECK(parallel == whole);  // the same bytes, whoever compressed them
  }
}

TEST_CASE("a chunk is stored once: marking a chunk twice, or one already begun, is refused", "[io][chunked]") {
  ChunkedWriter w(16, 16, 8, 8, 8, false, 1);
  w.mark_stored(0, 8);
  CHECK_THROWS_AS(w.mark_stored(0, 8), std::logic_error);
  CHECK_THROWS_AS(w.mark_stored(3, 0), std::invalid_argument);  // no chunk starts there
  const std::vector<double> half(4 * 16, 1.0);
  w.add(0, 0, 4, 16, half.data(), 1, [](std::int64_t, std::int64_t, const std::vector<unsigned char>&) {});
  CHECK_THROWS_AS(w.mark_stored(0, 0), std::logic_error);  // has elements waiting already
}

TEST_CASE("the message of compressed chunks round-trips and refuses a truncated one", "[io][chunked]") {
  const std::vector<CompressedChunk> chunks = {
      {0, 0, {1, 2, 3}}, {8, 16, {}}, {16, 0, std::vector<unsigned char>(300, 7)}};
  const auto message = tessera::io::pack(chunks);
  const auto back = tessera::io::unpack(message);
  REQUIRE(back.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(back[i].row0 == chunks[i].row0);
    CHECK(back[i].col0 == chunks[i].col0);
    CHECK(back[i].bytes == chunks[i].bytes);
  }
  CHECK(tessera::io::unpack(tessera::io::pack({})).empty());
  auto cut = message;
  cut.resize(cut.size() - 1);
  CHECK_THROWS_AS(tessera::io::unpack(cut), tessera::IoError);
  auto longer = message;
  longer.push_back(0);
  CHECK_THROWS_AS(tessera::io::unpack(longer), tessera::IoError);
}
