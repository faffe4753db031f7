"""tessera.matmul: C = alpha op(A) op(B) + beta C on arrays in this process's memory, through
libtessera (the compiled module tessera._native), with no file, no MPI and no process started.
The backend (on a GPU its context, cuBLAS and the kernel's warm-up) starts at the first call and
is kept for the next, so a loop of products pays its start once."""
from __future__ import annotations

import glob
import importlib.util
import os
from typing import Any, Optional

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


def matmul(a: Any, b: Any, *, c: Any = None, alpha: float = 1.0, beta: float = 0.0, transpose_a: bool = False,
           transpose_b: bool = False, kernel: str = "auto", backend: str = "auto", out: Optional[Any] = None) -> Any:
    """alpha op(a) op(b) + beta c as a new numpy array (or into `out`), op the transpose where asked.

    a, b     2-D arrays (anything numpy.asarray takes); float32 when every operand is float32 (or
             narrower floats), else float64. C-ordered arrays, row slices of them and their
             transposes (a.T) are used where they lie; any other layout is copied first.
    c        C_old, added times beta (never modified, unless it is `out` too); without it beta is 0
    out      a writable C-ordered array of the result's dtype and shape, written in place (c's
             values are copied into it first when c is another array)
    kernel, backend  as `tessera run --kernel/--backend` ("auto": tessera's choice)

    Raises TesseraError for what tessera refuses (a shape, NaN or Inf in a or b, a kernel), with
    its message; out is then left as it was, unless c was copied into it."""
    import numpy as np

    native = _native()
    a, b = np.asarray(a), np.asarray(b)
    operands = [a, b] + ([np.asarray(c)] if c is not None else [])
    for name, x in zip("abc", operands):
        if x.dtype.kind not in "fiub":
            raise TesseraError(f"tessera.matmul: {name} holds {x.dtype}; it takes real numbers (float32, float64, "
                               "integers)")
    wide = any(x.dtype.kind != "f" or x.dtype.itemsize > 4 for x in operands)
    dtype = np.dtype(np.float64 if wide else np.float32)
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
    run = native.matmul_f32 if dtype == np.float32 else native.matmul_f64
    try:
        return run(a, b, target, float(alpha), float(beta) if target is not None else 0.0, bool(transpose_a),
                   bool(transpose_b), str(kernel), str(backend))
    except native.MultiplyError as e:
        raise TesseraError(f"tessera: error: {e}") from None
    except ValueError as e:
        raise TesseraError(f"tessera.matmul: {e}") from None
