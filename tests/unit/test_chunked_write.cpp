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

TEST_CASE("add() stores chunks in order while its threads compress the next; a failing store stops it",
          "[io][chunked]") {
  // 64 x 64 in 4 x 4 chunks: 256 chunks, finished in row-major order, compressed by 1, 3 or 8
  // threads (a window of 4 a thread in flight) and stored in that order, each the filter's bytes.
  const std::int64_t n = 64, c = 4;
  const auto m = matrix(n, n);
  for (const int threads : {1, 3, 8}) {
    INFO(threads << " threads");
    ChunkedWriter writer(n, n, c, c, 4, true, 1);
    std::vector<std::pair<std::int64_t, std::int64_t>> order;
    std::size_t wrong = 0;
    writer.add(0, 0, n, n, m.data(), threads,
               [&](std::int64_t r0, std::int64_t c0, const std::vector<unsigned char>& bytes) {
                 order.emplace_back(r0, c0);
                 const auto raw = block(m, n, r0, r0 + c, c0, c0 + c);
                 std::vector<unsigned char> raw_bytes(raw.size() * 4);
                 std::memcpy(raw_bytes.data(), raw.data(), raw_bytes.size());
                 wrong += bytes == writer.filter(raw_bytes) ? 0 : 1;
               });
    REQUIRE(order.size() == 256);
    for (std::size_t t = 0; t < order.size(); ++t) {
      CHECK(order[t].first == static_cast<std::int64_t>(t / 16) * c);
      CHECK(order[t].second == static_cast<std::int64_t>(t % 16) * c);
    }
    CHECK(wrong == 0);
    CHECK(writer.unfinished() == 0);

    // The 10th store throws: add() rethrows it (the threads stopped), nothing stored after it.
    ChunkedWriter failing(n, n, c, c, 4, false, 1);
    std::size_t stores = 0;
    CHECK_THROWS_AS(failing.add(0, 0, n, n, m.data(), threads,
                                [&](std::int64_t, std::int64_t, const std::vector<unsigned char>&) {
                                  if (++stores == 10) throw tessera::IoError("disk full");
                                }),
                    tessera::IoError);
    CHECK(stores == 10);
  }
}

TEST_CASE("chunks_tiling counts the chunks that tile a block exactly, and 0 where a block cuts one", "[io][chunked]") {
  using tessera::io::ChunkLayout;
  using tessera::io::chunks_tiling;
  const ChunkLayout l{60, 52, 10, 13, 4, false, 1};
  CHECK(chunks_tiling(l, 0, 0, 60, 52) == 24);   // the whole dataset
  CHECK(chunks_tiling(l, 30, 26, 30, 26) == 6);  // a 2 x 2 grid's last block
  CHECK(chunks_tiling(l, 20, 0, 20, 52) == 8);   // rows 20-40: two chunk rows
  CHECK(chunks_tiling(l, 0, 0, 25, 52) == 0);    // ends inside a chunk row
  CHECK(chunks_tiling(l, 5, 0, 10, 52) == 0);    // starts inside one
  CHECK(chunks_tiling(l, 0, 13, 60, 20) == 0);   // columns 13-33 end inside a chunk
  CHECK(chunks_tiling(l, 0, 0, 0, 52) == 0);     // empty
  CHECK(chunks_tiling(l, 50, 0, 20, 52) == 0);   // past the dataset
  // The dataset's edge ends a chunk that reaches past it: 67 x 53 in chunks of 10 x 13.
  const ChunkLayout edge{67, 53, 10, 13, 4, false, 1};
  CHECK(chunks_tiling(edge, 60, 52, 7, 1) == 1);
  CHECK(chunks_tiling(edge, 30, 0, 37, 53) == 4 * 5);
  CHECK(chunks_tiling(edge, 30, 0, 36, 53) == 0);
}
