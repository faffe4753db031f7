"""tessera.matmul: C = alpha op(A) op(B) + beta C on arrays in this process's memory, through
libtessera (the compiled module tessera._native), with no file, no MPI and no process started.
The backend (on a GPU its context, cuBLAS and the kernel's warm-up) starts at the first call and
is kept for the next, so a loop of products pays its start once."""
from __future__ import annotations

import glob
import importlib.util
import os
from typing import Any, Optional, Tuple

from .binary import find_binary
from .errors import TesseraError

_native_module: Any = None


def _native() -> Any:
    """The compiled module: installed beside this package, else in $TESSERA_NATIVE_DIR, else in
    the build folder of the tessera binary (find_binary: <build>/python/tessera/)."""
    global _native_module
    if _native_module is not None:
        return _native_module
    try:
        from . import _native as module  # type: ignore[attr-defined]
        _native_module = module
        return module
    except ImportError:
        pass
    folders = [os.environ.get("TESSERA_NATIVE_DIR", "")]
    try:
        folders.append(os.path.join(os.path.dirname(find_binary()), "python", "tessera"))
    except TesseraError:
        pass
    for folder in filter(None, folders):
        for path in sorted(glob.glob(os.path.join(folder, "_native*.so"))):
            spec = importlib.util.spec_from_file_location("tessera._native", path)
            if spec is None or spec.loader is None:
                continue
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            _native_module = module
            return module
    raise TesseraError("tessera.matmul needs the compiled module tessera._native (built with tessera when "
                       "pybind11 and Python's headers are there: bash scripts/setup.sh); not found beside the "
                       f"package nor in {[f for f in folders if f] or 'a build folder'} (set TESSERA_NATIVE_DIR "
                       "or TESSERA_BIN)")


def _library(x: Any) -> str:
    """'torch' or 'cupy' for a tensor of theirs, else ''."""
    return type(x).__module__.split(".")[0] if type(x).__module__.split(".")[0] in ("torch", "cupy") else ""


def _on_gpu(x: Any) -> bool:
    """Whether x is an array in GPU memory: a CUDA torch tensor, a cupy array, or anything with
    __cuda_array_interface__."""
    if _library(x) == "torch":
        return bool(x.is_cuda)
    return hasattr(x, "__cuda_array_interface__")


_DTYPES = {"<f4": "float32", "<f8": "float64"}


def _gpu_layout(x: Any, name: str) -> tuple:
    """(address, shape, strides in elements, dtype name) of a 2-D array in GPU memory."""
    if _library(x) == "torch":
        dtype = str(x.dtype).replace("torch.", "")
        if x.dim() != 2:
            raise TesseraError(f"tessera.matmul: {name} must be a 2-D tensor (it has {x.dim()} dimensions)")
        return x.data_ptr(), tuple(x.shape), tuple(x.stride()), dtype
    cai = x.__cuda_array_interface__
    shape = tuple(cai["shape"])
    if len(shape) != 2:
        raise TesseraError(f"tessera.matmul: {name} must be a 2-D array (it has {len(shape)} dimensions)")
    dtype = _DTYPES.get(cai["typestr"], cai["typestr"])
    size = 4 if dtype == "float32" else 8
    strides = cai.get("strides")
    strides = (max(shape[1], 1), 1) if strides is None else (strides[0] // size, strides[1] // size)
    return cai["data"][0], shape, strides, dtype


# CUDA's handle for the legacy default stream (cudaStreamLegacy): what torch's and cupy's default
# stream, whose handle is 0, is passed as, since 0 tells libtessera that no stream was declared
# (it then runs on its own stream and waits for the product, as a host caller wants).
_LEGACY_STREAM = 1


def _stream_of(x: Any) -> int:
    """The caller's current stream for x's library (torch's or cupy's current stream, an
    interface's declared stream), as an integer cudaStream_t; 0: none declared."""
    library = _library(x)
    if library == "torch":
        import torch
        return int(torch.cuda.current_stream(x.device).cuda_stream) or _LEGACY_STREAM
    if library == "cupy":
        import cupy
        return int(cupy.cuda.get_current_stream().ptr) or _LEGACY_STREAM
    # __cuda_array_interface__ v3: None (no ordering asked), 1 (legacy default), 2 (per-thread
    # default) or a stream's handle, each a valid cudaStream_t as it is.
    stream = x.__cuda_array_interface__.get("stream")
    return int(stream) if stream else 0


def _empty_like(x: Any, m: int, n: int, dtype: str) -> Any:
    """A new m x n C-ordered array of dtype on x's GPU, from x's library."""
    library = _library(x)
    if library == "torch":
        import torch
        return torch.empty((m, n), dtype=getattr(torch, dtype), device=x.device)
    if library == "cupy":
        import cupy
        with cupy.cuda.Device(x.device.id):
            return cupy.empty((m, n), dtype=dtype)
    raise TesseraError("tessera.matmul: give out= for arrays in GPU memory that are neither torch nor cupy tensors")


def _gpu_matmul(native: Any, a: Any, b: Any, c: Any, out: Any, alpha: float, beta: float, transpose_a: bool,
                transpose_b: bool, kernel: str, allow_nonfinite: bool) -> Any:
    """matmul on arrays in GPU memory, used in place and ordered on the caller's current stream."""
    operands = [x for x in (a, b, c, out) if x is not None]
    if not all(_on_gpu(x) for x in operands):
        raise TesseraError("tessera.matmul: some operands are in GPU memory and some are not; give all of them on one "
                           "GPU, or all in host memory")
    layouts = {}
    for name, x in zip("abco", (a, b, c, out)):
        if x is not None:
            layouts[name] = _gpu_layout(x, {"o": "out"}.get(name, name))
    dtypes = {layouts[n][3] for n in "ab"}
    for name, layout in layouts.items():
        if layout[3] not in ("float32", "float64"):
            raise TesseraError(f"tessera.matmul: {'out' if name == 'o' else name} holds {layout[3]}; on the GPU it "
                               "takes float32 and float64 tensors")
    if len(dtypes) != 1:
        raise TesseraError(f"tessera.matmul: a and b hold {layouts['a'][3]} and {layouts['b'][3]}; on the GPU they "
                           "must hold one dtype (convert one of them)")
    dtype = dtypes.pop()

    def operand(x: Any, layout: tuple, name: str, transpose: bool) -> tuple:
        address, (r, cols), (s0, s1), _ = layout
        if r == 0 or cols == 0:  # nothing to read: any layout is packed
            return native.DeviceOperand(address, r, cols, max(cols, 1), transpose), x
        if (s1 == 1 or cols <= 1) and s0 >= max(cols, 1):
            return native.DeviceOperand(address, r, cols, s0, transpose), x
        if (s0 == 1 or r <= 1) and s1 >= max(r, 1):
            return native.DeviceOperand(address, cols, r, s1, not transpose), x
        packed = x.contiguous() if _library(x) == "torch" else __import__("cupy").ascontiguousarray(x)
        return operand(packed, _gpu_layout(packed, name), name, transpose)

    da, keep_a = operand(a, layouts["a"], "a", transpose_a)
    db, keep_b = operand(b, layouts["b"], "b", transpose_b)
    m = layouts["a"][1][1] if transpose_a else layouts["a"][1][0]
    n = layouts["b"][1][0] if transpose_b else layouts["b"][1][1]
    if c is not None and (tuple(layouts["c"][1]) != (m, n) or layouts["c"][3] != dtype):
        raise TesseraError(f"tessera.matmul: c must be a {m}x{n} {dtype} array (it is "
                           f"{layouts['c'][1][0]}x{layouts['c'][1][1]} {layouts['c'][3]})")
    if out is None:
        out = _empty_like(a, m, n, dtype)
        if c is not None:
            out.copy_(c) if _library(out) == "torch" else out.__setitem__(Ellipsis, c)
        else:
            beta = 0.0
    else:
        address, shape, (s0, s1), out_dtype = layouts["o"]
        packed = m == 0 or n == 0 or ((s1 == 1 or n <= 1) and s0 >= max(n, 1))
        if out_dtype != dtype or tuple(shape) != (m, n) or not packed:
            raise TesseraError(f"tessera.matmul: out must be a {m}x{n} {dtype} array on the GPU with its rows packed "
                               f"(it is {shape[0]}x{shape[1]} {out_dtype}, strides {s0}, {s1})")
        if c is not None and c is not out:
            out.copy_(c) if _library(out) == "torch" else out.__setitem__(Ellipsis, c)
        elif c is None:
            beta = 0.0
    address, _, (ldc, _), _ = _gpu_layout(out, "out")
    ldc = max(ldc, n, 1)
    run = native.matmul_device_f32 if dtype == "float32" else native.matmul_device_f64
    try:
        run(da, db, address, m, n, ldc, float(alpha), float(beta), str(kernel), bool(allow_nonfinite),
            _stream_of(out))
    except native.MultiplyError as e:
        raise TesseraError(f"tessera: error: {e}") from None
    del keep_a, keep_b  # the packed copies, if any, stay alive until the work is enqueued on the stream
    return out


def _op(transpose: Any, name: str) -> str:
    """'N', 'T' or 'C' from a transpose_a/transpose_b argument (a bool, or BLAS's letter)."""
    if isinstance(transpose, str):
        if transpose.upper() in ("N", "T", "C"):
            return transpose.upper()
        raise TesseraError(f"tessera.matmul: {name} must be True, False, 'N', 'T' or 'C' (the conjugate transpose), "
                           f"not {transpose!r}")
    return "T" if transpose else "N"


def _dtype_of(operands: list, alpha: Any, beta: Any, who: str) -> Any:
    """The dtype a product of `operands` runs in: float32 when all are float32 (or narrower floats),
    else float64; complex64 / complex128 likewise when any is complex. Refuses what holds no numbers,
    and a complex alpha or beta with real arrays."""
    import numpy as np

    for name, x in zip("abc", operands):
        if x.dtype.kind not in "fiubc":
            raise TesseraError(f"{who}: {name} holds {x.dtype}; it takes numbers (float32, float64, complex64, "
                               "complex128, integers)")
    wide = any(x.dtype.kind not in "fc" or x.dtype.itemsize > (8 if x.dtype.kind == "c" else 4) for x in operands)
    if any(x.dtype.kind == "c" for x in operands):
        return np.dtype(np.complex128 if wide else np.complex64)
    for name, value in (("alpha", alpha), ("beta", beta)):
        if complex(value).imag != 0:
            raise TesseraError(f"{who}: {name} = {value} is complex, but the arrays hold real numbers; a complex "
                               "alpha or beta takes complex arrays")
    return np.dtype(np.float64 if wide else np.float32)


def matmul(a: Any, b: Any, *, c: Any = None, alpha: complex = 1.0, beta: complex = 0.0, transpose_a: Any = False,
           transpose_b: Any = False, kernel: str = "auto", backend: str = "auto", out: Optional[Any] = None,
           allow_nonfinite: bool = False) -> Any:
    """alpha op(a) op(b) + beta c as a new array (or into `out`), op the transpose where asked.

    a, b     2-D arrays in host memory (anything numpy.asarray takes): float32 when every operand is
             float32 (or narrower floats), else float64; complex64 when every operand is complex64
             or narrower (float32 ones), else complex128 when any is complex; the result is a numpy
             array. C-ordered arrays, row slices of them and their transposes (a.T) are used where
             they lie; any other layout is copied first.
    transpose_a, transpose_b  False / 'N', True / 'T', or 'C': op(a) = a^H, the conjugate
             transpose (a^T for real arrays), as BLAS's TRANSA
    alpha, beta  complex numbers with complex arrays; real ones otherwise
             Or 2-D float32/float64 arrays in GPU memory (torch CUDA tensors, cupy arrays, anything
             with __cuda_array_interface__), all on the GPU tessera computes on: used there without
             a copy (transposed and sliced views too), the product enqueued on the caller's current
             stream (torch's or cupy's) and returned once enqueued, as torch.matmul does; the result
             is a tensor of a's library.
    c        C_old, added times beta (never modified, unless it is `out` too); without it beta is 0
    out      a writable array of the result's dtype and shape, rows packed (C-ordered), in the same
             memory as a and b, written in place (c's values are copied into it first when c is
             another array)
    kernel, backend  as `tessera run --kernel/--backend` ("auto": tessera's choice; GPU arrays
             take the cuda backend)
    allow_nonfinite  multiply a and b holding NaN or Inf; otherwise they are refused (on the GPU
             the call waits for the scan, which runs beside the product)

    Raises TesseraError for what tessera refuses (a shape, NaN or Inf in a or b, a kernel), with
    its message; out is then left as it was, unless c was copied into it, or (GPU arrays, beta 0)
    NaN or Inf was found while the product was written: out then holds alpha a b as IEEE
    arithmetic gives it, NaN/Inf carried through."""
    native = _native()
    if any(_on_gpu(x) for x in (a, b, c, out) if x is not None):
        if backend not in ("auto", "cuda"):
            raise TesseraError(f"tessera.matmul: the arrays are in GPU memory; backend '{backend}' computes on the host")
        if _op(transpose_a, "transpose_a") == "C" or _op(transpose_b, "transpose_b") == "C":
            raise TesseraError("tessera.matmul: the conjugate transpose ('C') takes complex arrays in host memory; on "
                               "the GPU give True for the transpose of real tensors")
        return _gpu_matmul(native, a, b, c, out, alpha, beta, bool(transpose_a), bool(transpose_b), kernel,
                           allow_nonfinite)
    import numpy as np

    op_a, op_b = _op(transpose_a, "transpose_a"), _op(transpose_b, "transpose_b")
    a, b = np.asarray(a), np.asarray(b)
    dtype = _dtype_of([a, b] + ([np.asarray(c)] if c is not None else []), alpha, beta if c is not None else 0,
                      "tessera.matmul")
    a, b = a.astype(dtype, copy=False), b.astype(dtype, copy=False)
    target = None
    if out is not None and any(np.shares_memory(out, x) for x in (a, b)):
        raise TesseraError("tessera.matmul: out shares memory with a or b; give it an array of its own")
    if out is not None:
        if not isinstance(out, np.ndarray) or out.dtype != dtype or not out.flags.c_contiguous or \
                not out.flags.writeable:
            raise TesseraError(f"tessera.matmul: out must be a writable C-ordered numpy array of {dtype}")
        if c is not None and c is not out:
            np.copyto(out, c, casting="same_kind")
        target = out
    elif c is not None:
        target = np.array(c, dtype=dtype, order="C", copy=True)
    run = {np.float32: native.matmul_f32, np.float64: native.matmul_f64, np.complex64: native.matmul_c64,
           np.complex128: native.matmul_c128}[dtype.type]
    try:
        return run(a, b, target, complex(alpha), complex(beta) if target is not None else 0j, op_a, op_b, str(kernel),
                   str(backend), bool(allow_nonfinite))
    except native.MultiplyError as e:
        raise TesseraError(f"tessera: error: {e}") from None
    except ValueError as e:
        raise TesseraError(f"tessera.matmul: {e}") from None


def block_span(extent: int, parts: int, index: int) -> Tuple[int, int]:
    """[first, last) of part `index` of `extent` cut into `parts`, as tessera cuts a distributed
    matrix's block rows and columns (the first extent % parts parts one longer)."""
    try:  # libtessera's own split, the one the distributed product uses
        first, last = _native().block_span(extent, parts, index)
    except ValueError as e:
        raise TesseraError(f"block_span({extent}, {parts}, {index}): {e}") from None
    return int(first), int(last)


def _block_of(rows: int, cols: int, grid: Tuple[int, int], rank: int) -> Tuple[int, int, int, int]:
    """(r0, r1, c0, c1) of rank's block of a rows x cols matrix on `grid` ((0, 0, 0, 0) beyond it)."""
    gr, gc = grid
    if rank >= gr * gc:
        return 0, 0, 0, 0
    r0, r1 = block_span(rows, gr, rank // gc)
    c0, c1 = block_span(cols, gc, rank % gc)
    return r0, r1, c0, c1


def matmul_blocks(a: Any, b: Any, *, comm: Any, a_shape: Tuple[int, int], a_grid: Tuple[int, int],
                  b_shape: Tuple[int, int], b_grid: Tuple[int, int], c_grid: Tuple[int, int], c: Any = None,
                  out: Optional[Any] = None, alpha: float = 1.0, beta: float = 0.0, transpose_a: bool = False,
                  transpose_b: bool = False, kernel: str = "auto", backend: str = "auto",
                  allow_nonfinite: bool = False) -> Any:
    """This rank's block of C = alpha op(A) op(B) + beta C, A, B and C distributed over the ranks of
    the mpi4py communicator `comm` (collective: every rank calls it, describing the same shapes and
    grids). a and b are this rank's blocks (numpy arrays) of A (a_shape as stored, cut on a_grid =
    (grid rows, grid cols): block (i, j) on rank i * grid_cols + j, its rows block_span(rows,
    grid_rows, i) and columns block_span(cols, grid_cols, j); ranks beyond the grid hold 0 x 0
    blocks) and of B; C (op(A) op(B)'s shape) is cut on c_grid. c: this rank's block of C_old
    (read times beta); out: where the block goes (a writable C-ordered array of its shape),
    else a new array. The ranks exchange what each needs (docs/cpp-api.md, "Distributed matrices").
    Raises TesseraError, on every rank alike, for what tessera refuses."""
    import numpy as np

    native = _native()
    from mpi4py import MPI
    comm_handle = MPI._handleof(comm)
    rank = comm.Get_rank()
    a, b = np.asarray(a), np.asarray(b)
    op_a, op_b = _op(transpose_a, "transpose_a"), _op(transpose_b, "transpose_b")
    dtype = _dtype_of([a, b] + ([np.asarray(c)] if c is not None else []), alpha, beta if c is not None else 0,
                      "tessera.matmul_blocks")
    a = np.ascontiguousarray(a, dtype=dtype)
    b = np.ascontiguousarray(b, dtype=dtype)
    m = a_shape[1] if op_a != "N" else a_shape[0]
    n = b_shape[0] if op_b != "N" else b_shape[1]
    r0, r1, c0, c1 = _block_of(m, n, tuple(c_grid), rank)
    if out is not None:
        if not isinstance(out, np.ndarray) or out.dtype != dtype or not out.flags.c_contiguous or \
                not out.flags.writeable or out.shape != (r1 - r0, c1 - c0):
            raise TesseraError(f"tessera.matmul_blocks: out must be a writable C-ordered {r1 - r0}x{c1 - c0} numpy "
                               f"array of {dtype} (this rank's block of C)")
        if c is not None and c is not out:
            np.copyto(out, c, casting="same_kind")
        target = out
    elif c is not None:
        target = np.array(c, dtype=dtype, order="C", copy=True)
    else:
        target = np.zeros((r1 - r0, c1 - c0), dtype=dtype)
        beta = 0.0
    run = {np.float32: native.matmul_blocks_f32, np.float64: native.matmul_blocks_f64,
           np.complex64: native.matmul_blocks_c64, np.complex128: native.matmul_blocks_c128}[dtype.type]
    grid = lambda shape, g: (int(shape[0]), int(shape[1]), int(g[0]), int(g[1]))  # noqa: E731
    try:
        return run(a, grid(a_shape, a_grid), b, grid(b_shape, b_grid), target, grid((m, n), c_grid), complex(alpha),
                   complex(beta), op_a, op_b, str(kernel), str(backend), bool(allow_nonfinite), int(comm_handle))
    except native.MultiplyError as e:
        raise TesseraError(f"tessera: error: {e}") from None
    except ValueError as e:
        raise TesseraError(f"tessera.matmul_blocks: {e}") from None
