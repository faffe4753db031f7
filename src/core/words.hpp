#pragma once
// Words a user types for a choice (--backend cuda, kernel = "tiled32"): the list of them as a
// message says it, and the nearest one to a word that is not among them ("did you mean").
#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace tessera {

// "a, b, c".
inline std::string join_words(const std::vector<std::string>& words, const char* separator = ", ") {
  std::string text;
  for (const std::string& w : words) text += (text.empty() ? "" : separator) + w;
  return text;
}

// Edits (insert, delete, replace) from a to b.
inline std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The word of `words` nearest to `word` where it is near (a third of its letters changed at the
// most, or `word` a prefix of it); "" where none is.
inline std::string closest_word(const std::string& word, const std::vector<std::string>& words) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(1, word.size() / 3) + 1;
  for (const std::string& w : words) {
    const std::size_t d = w.rfind(word, 0) == 0 && !word.empty() ? 1 : edit_distance(word, w);
    if (d < best_distance) best = w, best_distance = d;
  }
  return best;
}

// The shortest decimal (%g) of at least `digits` significant digits that reads back as x: "2.5",
// "0.1" (not 0.10000000000000001); from 6 digits, 100000 stays "100000" (not "1e+05").
inline std::string shortest_decimal(double x, int digits = 1) {
  char text[40];
  for (; digits <= 17; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, x);
    if (std::strtod(text, nullptr) == x) break;
  }
  return text;
}

// "'nope' is not one of: a, b, c" with " (did you mean 'x'?)" where one is near.
inline std::string not_one_of(const std::string& word, const std::vector<std::string>& words) {
  const std::string near = closest_word(word, words);
  return "'" + word + "' is not one of: " + join_words(words) + (near.empty() ? "" : " (did you mean '" + near + "'?)");
}

}  // namespace tessera
