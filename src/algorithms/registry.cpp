// The algorithms tessera knows, by name. A new one: its file, and a line in each list below.
#include "algorithms/algorithm.hpp"
#include "core/error.hpp"

namespace tessera::algorithms {

std::unique_ptr<Algorithm> make_panels();  // panels.cpp
std::unique_ptr<Algorithm> make_summa();   // summa.cpp
std::unique_ptr<Algorithm> make_ksplit();  // ksplit.cpp

std::vector<std::string> algorithm_names() { return {"panels", "summa", "ksplit"}; }

std::unique_ptr<Algorithm> make_algorithm(const std::string& name) {
  if (name == "panels") return make_panels();
  if (name == "summa") return make_summa();
  if (name == "ksplit") return make_ksplit();
  throw InputError("invalid --algorithm '" + name + "' (choose: auto, panels, summa, ksplit)");
}

}  // namespace tessera::algorithms
