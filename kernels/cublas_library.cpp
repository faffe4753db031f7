#include "kernels/cublas_library.hpp"

#include <dlfcn.h>

#include <atomic>
#include <mutex>
#include <string>

#include "core/error.hpp"

namespace tessera::kernels {

namespace {

std::atomic<bool> g_loaded{false};

template <typename Fn>
void bind(void* lib, const char* symbol, Fn& fn, const std::string& name) {
  fn = reinterpret_cast<Fn>(::dlsym(lib, symbol));
  if (fn == nullptr) throw DeviceError("cannot find " + std::string(symbol) + " in " + name + ": " + ::dlerror());
}

// The library `name` (libcublas, libcublasLt) of the cuBLAS tessera was built against: its soname,
// found through the loader's search path (the executable's RUNPATH, LD_LIBRARY_PATH,
// ld.so.cache), else in the directory it was found in at build time.
void* open_library(const std::string& soname, const char* what) {
  void* lib = ::dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
#ifdef TESSERA_CUBLAS_DIR
  if (lib == nullptr) lib = ::dlopen((std::string(TESSERA_CUBLAS_DIR) + "/" + soname).c_str(), RTLD_NOW | RTLD_LOCAL);
#endif
  if (lib == nullptr) throw DeviceError("cannot load " + std::string(what) + " (" + soname + "): " + ::dlerror());
  return lib;
}

CublasApi load() {
  const std::string soname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
  void* lib = open_library(soname, "cuBLAS");
  CublasApi api{};
  bind(lib, "cublasCreate_v2", api.create, soname);
  bind(lib, "cublasDestroy_v2", api.destroy, soname);
  bind(lib, "cublasSetStream_v2", api.set_stream, soname);
  bind(lib, "cublasGemmEx", api.gemm_ex, soname);
  bind(lib, "cublasGetStatusName", api.status_name, soname);
  bind(lib, "cublasGetStatusString", api.status_string, soname);
  g_loaded = true;
  return api;  // the library stays loaded for the life of the process
}

CublasLtApi load_lt() {
  const std::string soname = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
  void* lib = open_library(soname, "cuBLASLt");
  CublasLtApi api{};
  bind(lib, "cublasLtCreate", api.create, soname);
  bind(lib, "cublasLtDestroy", api.destroy, soname);
  bind(lib, "cublasLtMatmulDescCreate", api.desc_create, soname);
  bind(lib, "cublasLtMatmulDescDestroy", api.desc_destroy, soname);
  bind(lib, "cublasLtMatmulDescSetAttribute", api.desc_set, soname);
  bind(lib, "cublasLtMatrixLayoutCreate", api.layout_create, soname);
  bind(lib, "cublasLtMatrixLayoutDestroy", api.layout_destroy, soname);
  bind(lib, "cublasLtMatmulPreferenceCreate", api.pref_create, soname);
  bind(lib, "cublasLtMatmulPreferenceDestroy", api.pref_destroy, soname);
  bind(lib, "cublasLtMatmulPreferenceSetAttribute", api.pref_set, soname);
  bind(lib, "cublasLtMatmulAlgoGetHeuristic", api.heuristic, soname);
  bind(lib, "cublasLtMatmul", api.matmul, soname);
  return api;  // stays loaded for the life of the process
}

}  // namespace

const CublasLtApi& cublaslt_api() {
  static const CublasLtApi api = load_lt();
  return api;
}

const CublasApi& cublas_api() {
  static const CublasApi api = load();  // a failed load throws and is retried on the next call
  return api;
}

bool cublas_loaded() { return g_loaded; }

}  // namespace tessera::kernels
