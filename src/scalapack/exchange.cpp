#include "exchange.hpp"

#include <algorithm>
#include <complex>
#include <cstdlib>
#include <new>
#include <type_traits>

namespace tessera::scalapack {

Buffer::~Buffer() { std::free(data_); }

void* Buffer::get(std::size_t bytes) {
  if (bytes > size_) {
    std::free(data_);
    data_ = std::malloc(bytes);
    size_ = data_ ? bytes : 0;
    if (!data_) throw std::bad_alloc();
  }
  return data_;
}

void Buffer::trim() {
  if (size_ > kKeepBytes) {
    std::free(data_);
    data_ = nullptr;
    size_ = 0;
  }
}

void Buffers::trim() {
  for (Buffer* b : {&panel[0], &panel[1], &send, &recv}) b->trim();
}

Buffers& buffers() {
  static Buffers b;
  return b;
}

namespace {

constexpr std::int64_t kChunkBytes = std::int64_t{1} << 30;  // an MPI message at most (1 GiB)

template <class T>
MPI_Datatype mpi_type() {
  if constexpr (std::is_same_v<T, float>) return MPI_FLOAT;
  if constexpr (std::is_same_v<T, double>) return MPI_DOUBLE;
  if constexpr (std::is_same_v<T, std::complex<float>>) return MPI_C_FLOAT_COMPLEX;
  return MPI_C_DOUBLE_COMPLEX;
}

// Messages of `count` elements to or from `peer`, in pieces of at most kChunkBytes.
template <class T>
void post(std::vector<MPI_Request>& reqs, bool send, T* data, std::int64_t count, int peer, MPI_Comm comm) {
  const std::int64_t chunk = kChunkBytes / static_cast<std::int64_t>(sizeof(T));
  for (std::int64_t off = 0; off < count; off += chunk) {
    const int n = static_cast<int>(std::min(chunk, count - off));
    reqs.emplace_back();
    if (send)
      MPI_Isend(data + off, n, mpi_type<T>(), peer, 0, comm, &reqs.back());
    else
      MPI_Irecv(data + off, n, mpi_type<T>(), peer, 0, comm, &reqs.back());
  }
}

// Whether this process needs run `r` of a dimension (`targeted`: the one that carries targets).
template <class T>
bool needed_run(const Exchange<T>& x, const Run& r, bool targeted) {
  return !targeted || r.target == (x.target_is_row ? x.g.myrow : x.g.mycol);
}

// Every process the piece (r, c) goes to.
template <class T, class F>
void for_each_target(const Exchange<T>& x, const Run& r, const Run& c, F f) {
  const int t = x.rows_targeted ? r.target : c.target;
  if (x.target_is_row)
    for (int q = 0; q < x.g.npcol; ++q) f(x.g.rank_of(t, q));
  else
    for (int q = 0; q < x.g.nprow; ++q) f(x.g.rank_of(q, t));
}

}  // namespace

template <class T>
Panel<T> exchange(const Exchange<T>& x, Buffer& own, MPI_Comm comm) {
  const Grid& g = x.g;
  const int size = g.size();
  const int me = g.me();
  Panel<T> p;
  p.rows = x.rows_targeted ? x.need_count : (x.row_runs.empty() ? 0 : x.row_runs.back().x0 + x.row_runs.back().len);
  p.cols = x.rows_targeted ? (x.col_runs.empty() ? 0 : x.col_runs.back().x0 + x.col_runs.back().len) : x.need_count;

  // What this process needs, and whether it already holds all of it in one piece.
  std::vector<const Run*> need_rows, need_cols;
  for (const Run& r : x.row_runs)
    if (needed_run(x, r, x.rows_targeted)) need_rows.push_back(&r);
  for (const Run& c : x.col_runs)
    if (needed_run(x, c, !x.rows_targeted)) need_cols.push_back(&c);
  auto in_one_piece = [](const std::vector<const Run*>& runs, int mine) {
    for (const Run* r : runs)
      if (r->src != mine || r->src_local - r->target_pos != runs.front()->src_local - runs.front()->target_pos)
        return false;
    return true;
  };
  T* panel = nullptr;
  bool in_place =
      !need_rows.empty() && !need_cols.empty() && in_one_piece(need_rows, g.myrow) && in_one_piece(need_cols, g.mycol);
  if (in_place) {
    p.data = x.local + (need_rows.front()->src_local - need_rows.front()->target_pos) +
             (need_cols.front()->src_local - need_cols.front()->target_pos) * x.lld;
    p.ld = x.lld;
    const auto begin = reinterpret_cast<std::uintptr_t>(p.data);
    const auto end = begin + static_cast<std::uintptr_t>((p.cols - 1) * p.ld + p.rows) * sizeof(T);
    in_place = !(begin < x.c_end && x.c_begin < end);
  }
  if (!in_place) {
    panel = static_cast<T*>(own.get(static_cast<std::size_t>(p.rows * p.cols) * sizeof(T)));
    p.data = panel;
    p.ld = std::max<std::int64_t>(1, p.rows);
  }

  // The pieces this process holds, and where each goes: counted, then packed.
  std::vector<const Run*> my_rows, my_cols;
  for (const Run& r : x.row_runs)
    if (r.src == g.myrow) my_rows.push_back(&r);
  for (const Run& c : x.col_runs)
    if (c.src == g.mycol) my_cols.push_back(&c);
  std::vector<std::int64_t> send_count(size, 0), send_off(size + 1, 0);
  for (const Run* r : my_rows)
    for (const Run* c : my_cols)
      for_each_target(x, *r, *c, [&](int q) {
        if (q != me) send_count[q] += r->len * c->len;
      });
  for (int q = 0; q < size; ++q) send_off[q + 1] = send_off[q] + send_count[q];
  T* sendbuf = static_cast<T*>(buffers().send.get(static_cast<std::size_t>(send_off[size]) * sizeof(T)));
  std::vector<std::int64_t> fill(send_off.begin(), send_off.end() - 1);
  for (const Run* r : my_rows)
    for (const Run* c : my_cols)
      for_each_target(x, *r, *c, [&](int q) {
        for (std::int64_t j = 0; j < c->len; ++j) {
          const T* src = x.local + r->src_local + (c->src_local + j) * x.lld;
          if (q == me) {
            if (!in_place) std::copy(src, src + r->len, panel + r->target_pos + (c->target_pos + j) * p.ld);
          } else {
            std::copy(src, src + r->len, sendbuf + fill[q]);
            fill[q] += r->len;
          }
        }
      });

  // What comes from each other process: counted from the same runs.
  std::vector<std::int64_t> recv_count(size, 0), recv_off(size + 1, 0);
  for (const Run* r : need_rows)
    for (const Run* c : need_cols) {
      const int s = g.rank_of(r->src, c->src);
      if (s != me) recv_count[s] += r->len * c->len;
    }
  for (int q = 0; q < size; ++q) recv_off[q + 1] = recv_off[q] + recv_count[q];
  T* recvbuf = static_cast<T*>(buffers().recv.get(static_cast<std::size_t>(recv_off[size]) * sizeof(T)));
  std::vector<MPI_Request> reqs;
  for (int q = 0; q < size; ++q)
    if (recv_count[q] > 0) post(reqs, false, recvbuf + recv_off[q], recv_count[q], q, comm);
  for (int q = 0; q < size; ++q)
    if (send_count[q] > 0) post(reqs, true, sendbuf + send_off[q], send_count[q], q, comm);
  MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);

  std::vector<std::int64_t> take(recv_off.begin(), recv_off.end() - 1);
  for (const Run* r : need_rows)
    for (const Run* c : need_cols) {
      const int s = g.rank_of(r->src, c->src);
      if (s == me) continue;
      for (std::int64_t j = 0; j < c->len; ++j) {
        const T* src = recvbuf + take[s];
        std::copy(src, src + r->len, panel + r->target_pos + (c->target_pos + j) * p.ld);
        take[s] += r->len;
      }
    }
  return p;
}

template Panel<float> exchange(const Exchange<float>&, Buffer&, MPI_Comm);
template Panel<double> exchange(const Exchange<double>&, Buffer&, MPI_Comm);
template Panel<std::complex<float>> exchange(const Exchange<std::complex<float>>&, Buffer&, MPI_Comm);
template Panel<std::complex<double>> exchange(const Exchange<std::complex<double>>&, Buffer&, MPI_Comm);

}  // namespace tessera::scalapack
