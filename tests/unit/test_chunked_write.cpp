// io/chunked_write.hpp in-process: the chunks a rank compresses inside its block are byte for byte
// those the writer would make of them, the writer stores them as given and compresses the rest,
// and the message carrying them between ranks round-trips (and refuses a truncated one).
#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <stdexcept>
#include <utility>
#include <vector>

#include <hdf5.h>

#include "core/error.hpp"
#include "io/chunked_write.hpp"
#include "io/hdf5_io.hpp"
#include "io/lz4_filter.hpp"
#include "io/zstd_filter.hpp"

using tessera::io::ChunkedWriter;
using tessera::io::Codec;
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
  for (const Codec codec : {Codec::deflate, Codec::lz4, Codec::zstd})
  for (const bool shuffle : {false, true}) {
    if (!tessera::io::codec_built(codec)) continue;  // LZ4 without liblz4: the case below says so
    INFO((codec == Codec::lz4 ? "lz4" : codec == Codec::zstd ? "zstd" : "deflate") << (shuffle ? ", shuffled" : ""));
    Stored whole;  // one writer, blocks added as they are
    ChunkedWriter one(rows, cols, 8, 6, 4, shuffle, 1, codec);
    const struct {
      std::int64_t r0, r1, c0, c1;
    } blocks[] = {{0, 19, 0, cols}, {19, rows, 0, 13}, {19, rows, 13, cols}};
    for (const auto& b : blocks)
      one.add(b.r0, b.c0, b.r1 - b.r0, b.c1 - b.c0, block(m, cols, b.r0, b.r1, b.c0, b.c1).data(), 3, into(whole));
    CHECK(one.unfinished() == 0);
    CHECK(whole.size() == 5 * 5);

    Stored parallel;  // the second and third blocks' inner chunks compressed "by their ranks"
    ChunkedWriter root(rows, cols, 8, 6, 4, shuffle, 1, codec);
    CHECK(ChunkedWriter(root.layout()).layout().codec == codec);
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

namespace {

std::uint64_t big_endian(const unsigned char* at, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = v << 8 | at[i];
  return v;
}

}  // namespace

TEST_CASE("an LZ4 chunk is HDF5's LZ4 filter format: sizes big-endian, a block LZ4 cannot shrink stored as is",
          "[io][chunked]") {
  if (!tessera::io::codec_built(Codec::lz4)) {
    CHECK_THROWS_AS(ChunkedWriter(8, 8, 8, 8, 4, false, 1, Codec::lz4), std::invalid_argument);
    SKIP("this build has no liblz4: --compression lz4 goes through HDF5's plugin");
  }
  CHECK_THROWS_AS(ChunkedWriter(8, 8, 8, 8, 4, false, 3, Codec::lz4), std::invalid_argument);  // no levels
  CHECK_THROWS_AS(ChunkedWriter(1 << 20, 1 << 20, 1 << 14, 1 << 15, 4, false, 1, Codec::lz4),  // 2 GiB
                  std::invalid_argument);
  const ChunkedWriter w(64, 64, 64, 64, 4, false, 1, Codec::lz4);
  // Repetitive: compressed. Each 4-byte element from a counter mixed by a multiply: LZ4 finds
  // nothing to match and the block is stored as it is.
  std::vector<unsigned char> repetitive(64 * 64 * 4), noise(64 * 64 * 4);
  for (std::size_t i = 0; i < repetitive.size(); ++i) repetitive[i] = static_cast<unsigned char>(i % 12);
  std::uint64_t x = 88172645463325252ull;
  for (unsigned char& b : noise) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    b = static_cast<unsigned char>(x >> 29);
  }
  const auto small = w.filter(repetitive), same = w.filter(noise);
  for (const auto* bytes : {&small, &same}) {
    REQUIRE(bytes->size() >= 16);
    CHECK(big_endian(bytes->data(), 8) == 64 * 64 * 4);     // the chunk's size
    CHECK(big_endian(bytes->data() + 8, 4) == 64 * 64 * 4);  // one block: the whole chunk
    CHECK(big_endian(bytes->data() + 12, 4) == bytes->size() - 16);
  }
  CHECK(small.size() < 1000);
  // The model's threads for each compression (io/hdf5_io.hpp): lz4 on the pool, as gzip.
  CHECK(tessera::io::compression_threads("gzip", 6) == 6);
  CHECK(tessera::io::compression_threads("lz4", 6) == 6);
  CHECK(tessera::io::compression_threads("bzip2", 6) == 1);
  CHECK(tessera::io::compression_threads("gzip", 0) == 1);
  CHECK(same.size() == 16 + noise.size());
  CHECK(std::equal(noise.begin(), noise.end(), same.begin() + 16));
}

namespace {

// HDF5 with its own LZ4 plugin (Debian's hdf5-filter-plugin, an implementation independent of
// tessera's), tessera's filter unregistered while it lives and registered again after; false where
// no plugin is installed.
struct PluginLz4 {
  bool found = false;
  PluginLz4() {
    H5open();
    (void)H5Zunregister(32004);
    found = H5Zfilter_avail(32004) > 0;
    H5Eclear2(H5E_DEFAULT);
  }
  ~PluginLz4() {
    (void)H5Zunregister(32004);
    tessera::io::hdf5::register_lz4_filter();
  }
};

}  // namespace

TEST_CASE("LZ4 chunks written with H5Dwrite_chunk read back through HDF5's LZ4 plugin", "[io][chunked]") {
  if (!tessera::io::codec_built(Codec::lz4)) SKIP("this build has no liblz4");
  const PluginLz4 plugin;
  if (!plugin.found) SKIP("HDF5 finds no LZ4 plugin here (Debian's hdf5-filter-plugin): nothing to read the chunks with");
  const std::int64_t rows = 37, cols = 29;
  const auto m = matrix(rows, cols);
  for (const bool shuffle : {false, true}) {
    INFO((shuffle ? "shuffled" : "not shuffled"));
    const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    REQUIRE(H5Pset_fapl_core(fapl, 1 << 20, 0) >= 0);  // in memory, never stored
    const hid_t file = H5Fcreate("lz4-chunks.h5", H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    REQUIRE(file >= 0);
    const hsize_t dims[2] = {rows, cols}, chunk[2] = {8, 6};
    const hid_t space = H5Screate_simple(2, dims, nullptr), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    REQUIRE(H5Pset_chunk(dcpl, 2, chunk) >= 0);
    if (shuffle) REQUIRE(H5Pset_shuffle(dcpl) >= 0);
    REQUIRE(H5Pset_filter(dcpl, 32004, H5Z_FLAG_OPTIONAL, 0, nullptr) >= 0);
    const hid_t set = H5Dcreate2(file, "/C", H5T_NATIVE_FLOAT, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    REQUIRE(set >= 0);
    ChunkedWriter w(rows, cols, 8, 6, 4, shuffle, 1, Codec::lz4);
    int stored = 0;
    w.add(0, 0, rows, cols, m.data(), 3, [&](std::int64_t r0, std::int64_t c0, const std::vector<unsigned char>& b) {
      const hsize_t at[2] = {static_cast<hsize_t>(r0), static_cast<hsize_t>(c0)};
      REQUIRE(H5Dwrite_chunk(set, H5P_DEFAULT, 0, at, b.size(), b.data()) >= 0);
      ++stored;
    });
    CHECK(stored == 5 * 5);
    std::vector<float> back(m.size(), -1.0f);
    REQUIRE(H5Dread(set, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, back.data()) >= 0);
    CHECK(back == m);
    H5Dclose(set), H5Pclose(dcpl), H5Sclose(space), H5Fclose(file), H5Pclose(fapl);
  }
}

TEST_CASE("tessera's LZ4 decoder reads the plugin's chunks, in one block or many", "[io][chunked]") {
  if (!tessera::io::lz4_built()) SKIP("this build has no liblz4");
  const PluginLz4 plugin;
  if (!plugin.found) SKIP("HDF5 finds no LZ4 plugin here (Debian's hdf5-filter-plugin): nothing wrote the chunks");
  const std::int64_t rows = 40, cols = 30;  // chunks of 16 x 16: 3 x 2, cut at both edges
  auto m = matrix(rows, cols);
  m[7] = 1e30f;  // some variety for LZ4 to find and miss
  for (const unsigned block : {0u, 100u, 1000u}) {  // the filter's value: 0 the default (one block)
    INFO("block size " << block);
    const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    REQUIRE(H5Pset_fapl_core(fapl, 1 << 20, 0) >= 0);
    const hid_t file = H5Fcreate("plugin-lz4.h5", H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    const hsize_t dims[2] = {rows, cols}, chunk[2] = {16, 16};
    const hid_t space = H5Screate_simple(2, dims, nullptr), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    REQUIRE(H5Pset_chunk(dcpl, 2, chunk) >= 0);
    REQUIRE(H5Pset_filter(dcpl, 32004, H5Z_FLAG_MANDATORY, block ? 1 : 0, &block) >= 0);
    const hid_t set = H5Dcreate2(file, "/C", H5T_NATIVE_FLOAT, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    REQUIRE(set >= 0);
    REQUIRE(H5Dwrite(set, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, m.data()) >= 0);
    for (hsize_t r = 0; r < rows; r += 16)
      for (hsize_t c = 0; c < cols; c += 16) {
        const hsize_t at[2] = {r, c};
        hsize_t size = 0;
        REQUIRE(H5Dget_chunk_storage_size(set, at, &size) >= 0);
        std::vector<unsigned char> stored(size), back;
        std::uint32_t mask = 0;
        REQUIRE(H5Dread_chunk(set, H5P_DEFAULT, at, &mask, stored.data()) >= 0);
        CHECK(mask == 0);
        REQUIRE(tessera::io::lz4_decode(stored.data(), stored.size(), back, 16 * 16 * 4));
        REQUIRE(back.size() == 16 * 16 * 4);
        for (hsize_t i = 0; i < 16 && r + i < rows; ++i)
          for (hsize_t j = 0; j < 16 && c + j < cols; ++j) {
            float v = 0;
            std::memcpy(&v, back.data() + (i * 16 + j) * 4, 4);
            CHECK(v == m[(r + i) * cols + c + j]);
          }
      }
    H5Dclose(set), H5Pclose(dcpl), H5Sclose(space), H5Fclose(file), H5Pclose(fapl);
  }
}

TEST_CASE("tessera's LZ4 decoder refuses what is not a whole chunk of the format", "[io][chunked]") {
  if (!tessera::io::lz4_built()) SKIP("this build has no liblz4");
  std::vector<unsigned char> raw(5000);
  for (std::size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<unsigned char>((i * i) % 251 % 17);
  const auto good = tessera::io::lz4_encode(raw.data(), raw.size(), 1024);  // 5 blocks, the last 904 bytes
  std::vector<unsigned char> out;
  REQUIRE(tessera::io::lz4_decode(good.data(), good.size(), out, raw.size()));
  CHECK(out == raw);
  CHECK_FALSE(tessera::io::lz4_decode(good.data(), good.size(), out, raw.size() - 1));  // above the limit
  for (const std::size_t cut : {std::size_t{0}, std::size_t{11}, std::size_t{14}, good.size() - 1})
    CHECK_FALSE(tessera::io::lz4_decode(good.data(), cut, out, raw.size()));  // truncated
  auto longer = good;
  longer.push_back(0);
  CHECK_FALSE(tessera::io::lz4_decode(longer.data(), longer.size(), out, raw.size()));  // bytes past its end
  auto zero_block = good;
  zero_block[8] = zero_block[9] = zero_block[10] = zero_block[11] = 0;
  CHECK_FALSE(tessera::io::lz4_decode(zero_block.data(), zero_block.size(), out, raw.size()));
  auto past = good;
  past[12] = 0x7f;  // the first block's length far past the end
  CHECK_FALSE(tessera::io::lz4_decode(past.data(), past.size(), out, raw.size()));
  auto damaged = good;  // a block's LZ4 bytes damaged: it no longer decodes to its size
  const std::size_t first = static_cast<std::size_t>(damaged[14]) << 8 | damaged[15];
  REQUIRE(first < 1024);  // compressed
  for (std::size_t i = 16; i < 16 + first; ++i) damaged[i] = 0xff;
  CHECK_FALSE(tessera::io::lz4_decode(damaged.data(), damaged.size(), out, raw.size()));
}

TEST_CASE("zstd chunks: one frame each, decoded back; tessera's HDF5 filter writes and reads them; bad frames refused",
          "[io][chunked]") {
  if (!tessera::io::zstd_built()) {
    CHECK_THROWS_AS(ChunkedWriter(8, 8, 8, 8, 4, false, 3, Codec::zstd), std::invalid_argument);
    SKIP("this build has no libzstd");
  }
  CHECK_THROWS_AS(ChunkedWriter(8, 8, 8, 8, 4, false, 23, Codec::zstd), std::invalid_argument);  // levels 1-22
  std::vector<unsigned char> raw(6000);
  for (std::size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<unsigned char>((i * i) % 251 % 17);
  for (const int level : {1, 3, 19}) {
    const auto frame = tessera::io::zstd_encode(raw.data(), raw.size(), level);
    CHECK(frame.size() < raw.size());
    std::vector<unsigned char> out;
    REQUIRE(tessera::io::zstd_decode(frame.data(), frame.size(), out, raw.size()));
    CHECK(out == raw);
    CHECK_FALSE(tessera::io::zstd_decode(frame.data(), frame.size(), out, raw.size() - 1));  // above the limit
    CHECK_FALSE(tessera::io::zstd_decode(frame.data(), frame.size() - 1, out, raw.size()));  // truncated
    auto longer = frame;
    longer.push_back(0);
    CHECK_FALSE(tessera::io::zstd_decode(longer.data(), longer.size(), out, raw.size()));  // bytes past the frame
    auto damaged = frame;
    for (std::size_t i = frame.size() / 2; i < frame.size() - 4; ++i) damaged[i] ^= 0x5a;
    CHECK_FALSE(tessera::io::zstd_decode(damaged.data(), damaged.size(), out, raw.size()));
  }
  std::vector<unsigned char> out;
  CHECK_FALSE(tessera::io::zstd_decode(raw.data(), 100, out, 1 << 20));  // no frame at all

  // Through HDF5's pipeline with tessera's filter registered: written at level 5, read back.
  tessera::io::hdf5::register_zstd_filter();
  const std::int64_t rows = 37, cols = 29;
  const auto m = matrix(rows, cols);
  const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  REQUIRE(H5Pset_fapl_core(fapl, 1 << 20, 0) >= 0);
  const hid_t file = H5Fcreate("zstd-chunks.h5", H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  const hsize_t dims[2] = {rows, cols}, chunk[2] = {8, 6};
  const hid_t space = H5Screate_simple(2, dims, nullptr), dcpl = H5Pcreate(H5P_DATASET_CREATE);
  REQUIRE(H5Pset_chunk(dcpl, 2, chunk) >= 0);
  const unsigned level = 5;
  REQUIRE(H5Pset_filter(dcpl, 32015, H5Z_FLAG_MANDATORY, 1, &level) >= 0);
  const hid_t set = H5Dcreate2(file, "/C", H5T_NATIVE_FLOAT, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  REQUIRE(set >= 0);
  REQUIRE(H5Dwrite(set, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, m.data()) >= 0);
  const hsize_t first[2] = {0, 0};
  hsize_t size = 0;
  REQUIRE(H5Dget_chunk_storage_size(set, first, &size) >= 0);
  std::vector<unsigned char> stored(size), back;
  std::uint32_t mask = 0;
  REQUIRE(H5Dread_chunk(set, H5P_DEFAULT, first, &mask, stored.data()) >= 0);
  REQUIRE(tessera::io::zstd_decode(stored.data(), stored.size(), back, 8 * 6 * 4));  // a plain frame
  std::vector<float> all(m.size(), -1.0f);
  REQUIRE(H5Dread(set, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, all.data()) >= 0);
  CHECK(all == m);
  H5Dclose(set), H5Pclose(dcpl), H5Sclose(space), H5Fclose(file), H5Pclose(fapl);
}

TEST_CASE("tessera's LZ4 HDF5 filter writes and reads through HDF5 in blocks; a header claiming more than its blocks hold is refused",
          "[io][chunked]") {
  if (!tessera::io::lz4_built()) SKIP("this build has no liblz4");
  // A header claiming 3.75 GiB (under the 4 GiB limit) from one 2-byte block: refused from the
  // headers (more than LZ4 could make of it, and blocks missing), nothing allocated.
  std::vector<unsigned char> liar = {0, 0, 0, 0, 0xf0, 0, 0, 0, 0x40, 0, 0, 0, 0, 0, 0, 2, 0x10, 0};
  std::vector<unsigned char> out;
  CHECK_FALSE(tessera::io::lz4_decode(liar.data(), liar.size(), out, std::size_t{0xffffffff}));
  CHECK(out.empty());
  (void)H5Zunregister(32004);
  tessera::io::hdf5::register_lz4_filter();
  const std::int64_t rows = 37, cols = 29;
  const auto m = matrix(rows, cols);
  const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  REQUIRE(H5Pset_fapl_core(fapl, 1 << 20, 0) >= 0);
  const hid_t file = H5Fcreate("lz4-own.h5", H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  const hsize_t dims[2] = {rows, cols}, chunk[2] = {8, 6};
  const hid_t space = H5Screate_simple(2, dims, nullptr), dcpl = H5Pcreate(H5P_DATASET_CREATE);
  REQUIRE(H5Pset_chunk(dcpl, 2, chunk) >= 0);
  const unsigned block = 100;  // 192-byte chunks in blocks of 100: two a chunk
  REQUIRE(H5Pset_filter(dcpl, 32004, H5Z_FLAG_MANDATORY, 1, &block) >= 0);
  const hid_t set = H5Dcreate2(file, "/C", H5T_NATIVE_FLOAT, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  REQUIRE(set >= 0);
  REQUIRE(H5Dwrite(set, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, m.data()) >= 0);
  const hsize_t first[2] = {0, 0};
  hsize_t size = 0;
  REQUIRE(H5Dget_chunk_storage_size(set, first, &size) >= 0);
  std::vector<unsigned char> stored(size);
  std::uint32_t mask = 0;
  REQUIRE(H5Dread_chunk(set, H5P_DEFAULT, first, &mask, stored.data()) >= 0);
  CHECK(mask == 0);
  REQUIRE(stored.size() >= 16);
  CHECK(big_endian(stored.data() + 8, 4) == 100);
  std::vector<float> all(m.size(), -1.0f);
  REQUIRE(H5Dread(set, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, all.data()) >= 0);
  CHECK(all == m);
  H5Dclose(set), H5Pclose(dcpl), H5Sclose(space), H5Fclose(file), H5Pclose(fapl);
}
