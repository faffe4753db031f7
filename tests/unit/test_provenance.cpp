// The provenance block (report/provenance.hpp): which variables of the environment it reports
// (a fixed list, never the rest), values cut short, typed options replacing the text given, the
// inputs' modification time to the nanosecond.
#include <catch2/catch_test_macros.hpp>

#include <cstdlib>
#include <string>

#include "report/provenance.hpp"

namespace rp = tessera::report;

TEST_CASE("provenance: the variables that shape a run, and no others", "[provenance]") {
  for (const char* name :
       {"TESSERA_BANDS", "SLURM_JOB_ID", "SLURM_JOB_NODELIST", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "OMPI_MCA_btl",
        "OMPI_MCA_pml_ucx_tls", "NCCL_P2P_DISABLE", "UCX_TLS", "CUDA_VISIBLE_DEVICES", "HDF5_PLUGIN_PATH"})
    CHECK(rp::reported_variable(name));
  for (const char* name : {"PATH", "HOME", "LD_LIBRARY_PATH", "OMPI_MCA_orte_hnp_uri", "PMIX_SERVER_URI4",
                           "SLURM_JOB_IDX", "XTESSERA_BANDS", "SLURM_", "OMPI_COMMAND"})
    CHECK_FALSE(rp::reported_variable(name));
  ::setenv("TESSERA_UNIT_PROBE", std::string(1000, 'x').c_str(), 1);
  ::setenv("UNIT_PROBE_UNREPORTED", "1", 1);
  const auto vars = rp::environment_in_force();
  ::unsetenv("TESSERA_UNIT_PROBE");
  ::unsetenv("UNIT_PROBE_UNREPORTED");
  REQUIRE(vars.contains("TESSERA_UNIT_PROBE"));
  const auto value = vars["TESSERA_UNIT_PROBE"].get<std::string>();
  CHECK(value.size() == 256);
  CHECK(value.substr(253) == "...");
  CHECK_FALSE(vars.contains("UNIT_PROBE_UNREPORTED"));
  CHECK_FALSE(vars.contains("PATH"));
}

TEST_CASE("provenance: options typed where the command knows their type", "[provenance]") {
  rp::set_provenance({{"options", {{"alpha", "2"}, {"verify", "true"}, {"verbose", "true"}}}});
  rp::set_typed_options({{"alpha", 2.0}, {"verify", true}, {"beta", 0.0}});
  const auto p = rp::provenance();
  CHECK(p["options"]["alpha"] == 2.0);
  CHECK(p["options"]["verify"] == true);
  CHECK(p["options"]["verbose"] == "true");    // no type known: as given
  CHECK_FALSE(p["options"].contains("beta"));  // not given: not listed
  CHECK(p["working_directory"].is_string());
  CHECK(p["environment"].is_object());
  rp::set_provenance(nlohmann::json::object());
  rp::set_typed_options(nlohmann::json::object());
}

TEST_CASE("provenance: an input's modification time, UTC to the nanosecond", "[provenance]") {
  CHECK(rp::utc_timestamp_ns(0, 0) == "1970-01-01T00:00:00.000000000Z");
  CHECK(rp::utc_timestamp_ns(1764612593, 7) == "2025-12-01T18:09:53.000000007Z");
  rp::InputRecord r;
  r.role = "b";
  r.layout = "chunked";
  r.chunk = {5, 7};
  r.rows = 17;
  r.cols = 19;
  const auto j = rp::to_json(r);
  CHECK(j["chunk"] == nlohmann::json({5, 7}));
  CHECK(j["shape"] == nlohmann::json({17, 19}));
  r.chunk.clear();
  CHECK(rp::to_json(r)["chunk"].is_null());
}
