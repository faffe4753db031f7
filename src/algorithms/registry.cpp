// The algorithms tessera knows, by name: one line each in the table below (X(name): the
// algorithm's file defines make_<name>()), and those a program registers (tests).
#include <utility>

#include "algorithms/algorithm.hpp"
#include "core/error.hpp"
#include "core/words.hpp"

namespace tessera::algorithms {

#define TESSERA_ALGORITHMS(X) \
  X(panels)                   \
  X(summa)                    \
  X(ksplit)

#define TESSERA_DECLARE_MAKER(name) std::unique_ptr<Algorithm> make_##name();
TESSERA_ALGORITHMS(TESSERA_DECLARE_MAKER)
#undef TESSERA_DECLARE_MAKER

namespace {

struct Entry {
  std::string name;
  AlgorithmMaker make;
};

std::vector<Entry>& table() {
#define TESSERA_ENTRY(name) Entry{#name, &make_##name},
  static std::vector<Entry> entries{TESSERA_ALGORITHMS(TESSERA_ENTRY)};
#undef TESSERA_ENTRY
  return entries;
}

}  // namespace

AlgorithmRegistration::AlgorithmRegistration(const std::string& name, AlgorithmMaker make) {
  table().push_back({name, make});
}

std::vector<std::string> algorithm_names() {
  std::vector<std::string> names;
  for (const Entry& e : table()) names.push_back(e.name);
  return names;
}

std::unique_ptr<Algorithm> make_algorithm(const std::string& name) {
  for (const Entry& e : table())
    if (e.name == name) return e.make();
  std::vector<std::string> words = algorithm_names();
  words.insert(words.begin(), "auto");
  throw InputError("--algorithm " + not_one_of(name, words));
}

}  // namespace tessera::algorithms
