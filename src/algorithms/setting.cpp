// The Setting as data (the plan's broadcast), and the fields every algorithm settles alike.
#include "algorithms/setting.hpp"

#include "core/error.hpp"
#include "core/words.hpp"

namespace tessera::algorithms {

std::vector<std::string> write_route_words() { return {"auto", "in-place", "gather"}; }

WriteRoute parse_write_route(const std::string& text) {
  const std::vector<std::string> words = write_route_words();
  for (std::size_t i = 0; i < words.size(); ++i)
    if (text == words[i]) return static_cast<WriteRoute>(i);  // WriteRoute's order
  throw InputError("--write " + not_one_of(text, words));
}

nlohmann::json Setting::to_json() const {
  return {{"gpu", gpu},
          {"kernel", kernel},
          {"in_place_write", in_place_write},
          {"comm", comm::path_name(comm)},
          {"alone", alone},
          {"panel_width", panel_width},
          {"bands", bands},
          {"gpu_memory_limit", gpu_memory_limit},
          {"baseline", baseline}};
}

Setting Setting::from_json(const nlohmann::json& j) {
  Setting s;
  s.gpu = j.at("gpu").get<bool>();
  s.kernel = j.at("kernel").get<std::string>();
  s.in_place_write = j.at("in_place_write").get<bool>();
  const auto path = comm::parse_path(j.at("comm").get<std::string>());
  if (!path) throw Error("a plan's setting names no comm path");
  s.comm = *path;
  s.alone = j.at("alone").get<bool>();
  s.panel_width = j.at("panel_width").get<std::int64_t>();
  s.bands = j.at("bands").get<int>();
  s.gpu_memory_limit = j.at("gpu_memory_limit").get<std::int64_t>();
  s.baseline = j.at("baseline").get<bool>();
  return s;
}

Setting common_setting(const Asked& asked, const Problem& p, const Environment& environment, std::int64_t gemm_m,
                       std::int64_t gemm_n, std::int64_t gemm_k) {
  if (environment.mixed)
    throw InputError(
        "the ranks need the same backend, but some ranks have a GPU and some do not; pass --backend cpu, or run "
        "one rank per GPU");
  Setting s;
  s.gpu = environment.gpu;
  s.kernel = backend::resolve_kernel(s.backend(), asked.kernel, p.dtype, gemm_m, gemm_n, gemm_k);
  // Half-precision data on GPUs (resolved: a GPU this process sees): the tensor cores, where the
  // rounding pass of cublas-f16 / cublas-bf16 changes no value.
  if (s.gpu && (asked.kernel.empty() || asked.kernel == "auto") && s.kernel != "auto" && p.dtype == DType::f32 &&
      !p.half_inputs.empty())
    s.kernel = "cublas-" + p.half_inputs;
  // A kernel (or baseline) of the backend the ranks settled on: here, before anything starts.
  // ("auto" stays unresolved only in a dry run for GPUs this process does not see.)
  if (s.kernel != "auto") backend::check_kernel(s.backend(), s.kernel);
  if (!asked.baseline.empty()) backend::check_kernel(s.backend(), asked.baseline);
  s.in_place_write = environment.in_place_write;
  return s;
}

}  // namespace tessera::algorithms
