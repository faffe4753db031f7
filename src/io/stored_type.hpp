#pragma once
// The type C is stored in when it is not the type it was computed in (`run --c-dtype`, issue 43
// item 1): float16 (IEEE binary16, what h5py writes for numpy's float16) or bfloat16 (an HDF5
// float of 1 + 8 + 7 bits, the layout tessera's reader takes), or float32 from a float64
// product. Blocks of C are converted here, rounding to nearest (ties to even), before a sink
// writes them: float16's bytes are numpy's astype(np.float16).
#include <cstddef>
#include <cstdint>
#include <string>

#include <hdf5.h>

#include "core/dtype.hpp"
#include "io/nonfinite.hpp"

namespace tessera::io {

enum class Stored { same, f16, bf16, f32, f64 };

// "same", "f16", "bf16", "f32", "f64"; parse_stored takes them back (false for another word).
const char* stored_word(Stored s);
bool parse_stored(const std::string& word, Stored* out);
// float16, bfloat16, float32, float64 (`computed`'s name for same).
std::string stored_name(Stored s, DType computed);
// Bytes of one stored element.
std::size_t stored_size(Stored s, DType computed);
// Whether blocks of `computed` are converted to be stored as `s`.
bool converts(Stored s, DType computed);
// The 16-bit type a writer storing `computed` blocks as `s` also takes already rounded (a float32
// C stored as float16 or bfloat16: BlockSink::write_rounded_block); Stored::same for any other.
Stored takes_rounded(Stored s, DType computed);
// The HDF5 file type of a stored element: a type the caller closes (H5Tclose).
hid_t stored_file_type(Stored s, DType computed);

// A rows x cols block of `from` (f32 or f64, packed) written as `to` into `dst` (packed). Finite
// values that round beyond the stored type's range (float16: 65520 and above) become Inf: they
// are counted into `overflow` as NonfiniteCount::add counts, by their place in C (row0, col0,
// rows ld_total long), so that a C whose conversion overflowed is warned of or refused as one
// whose product did.
void convert_block(const void* src, DType from, std::int64_t rows, std::int64_t cols, Stored to, void* dst,
                   NonfiniteCount* overflow, std::int64_t row0, std::int64_t col0, std::int64_t ld_total);

// One value: float -> float16 / bfloat16 bits (nearest, ties to even), double -> float16 /
// bfloat16 (correctly rounded: through float rounded to odd), and back (exact).
std::uint16_t to_f16(float v);
std::uint16_t to_bf16(float v);
std::uint16_t to_f16(double v);
std::uint16_t to_bf16(double v);
float from_f16(std::uint16_t h);
float from_bf16(std::uint16_t h);

// A dataset's file type that tessera's readers widen themselves (pread or their own chunk
// decoding, no HDF5 conversion): f16 for IEEE binary16 as h5py stores numpy's float16, bf16 for
// the bfloat16 type stored_file_type declares, both little-endian on a little-endian machine;
// `same` for any other type (read through HDF5). HDF5's own conversion of a 16-bit float is a
// bit-by-bit loop: about 10 million elements a second, 196 s for two 32768^2 float16 inputs on
// an H200 machine (issue 43), where the pread and this widening take the disk's time.
Stored half_file_type(hid_t type);
// `count` 16-bit values stored as `s` (f16 or bf16) widened, exactly, to `to` (f32 or f64) in `out`
// (F16C eight at a time where the processor has it).
void widen_half(const std::uint16_t* in, std::size_t count, Stored s, DType to, void* out);

}  // namespace tessera::io
