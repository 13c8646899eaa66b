// Secrets: the credentials of a connection's provider settings, and the one
// scrubber that takes them out of every text QueryPilot keeps or shows.
//
// Which values are secrets is the providers' knowledge (ProviderSecrets in
// agent/providers/provider.h: the API key, the userinfo of base_url and its
// user and password, every parameter value of its path, query and fragment
// but api-version's, the basic credential the userinfo is sent as). This
// file knows how a text may hold one and how it is taken out:
//
// - Every form a text may hold: as written, percent-decoded (and with '+'
//   read as a space), and percent-encoded (upper- and lower-case hex), since
//   a reply may echo a URL either way.
// - A form of kAnywhereBytes or more is replaced by [redacted] wherever it
//   occurs, inside a longer word too.
// - A form of kWordBytes to kAnywhereBytes - 1 is replaced where it stands
//   alone: no letter, digit, '_' or non-ASCII byte right before it or right
//   after it (a password "pass" goes from "carol:pass@host" and "password
//   pass;", while "password" and "passes" stay). Replacing a short value
//   everywhere would change ordinary words and SQL.
// - A form shorter than kWordBytes is never replaced: three bytes or fewer
//   protect nothing and would blank unrelated text (a parameter v=1).
//
// Pure value type; tested without a network (tests/unit/secrets_test.cpp).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace querypilot {

// What stands in for a secret wherever one would have been shown.
inline constexpr std::string_view kRedacted = "[redacted]";

class Secrets {
 public:
  static constexpr size_t kAnywhereBytes = 8;
  static constexpr size_t kWordBytes = 4;

  Secrets() = default;
  explicit Secrets(const std::vector<std::string>& secrets) {
    for (const std::string& s : secrets) Add(s);
  }

  // Knows `secret` from now on, in every form above. Empty: nothing.
  void Add(std::string_view secret);
  // Knows every secret `other` knows.
  void Add(const Secrets& other);
  bool empty() const { return forms_.empty(); }

  // `text` with every known secret taken out by the rules above, in one pass
  // from left to right, the longest form first at each place (so a key
  // inside a longer secret leaves no part of the longer one). A
  // [redacted] already in the text stays as it is.
  std::string Scrub(std::string_view text) const;
  // Only the forms of kAnywhereBytes or more: what a model's reply goes
  // through before its SQL is read, so that SQL naming a table or a value
  // spelt like a short secret still runs as written. What is kept or shown
  // of the reply goes through Scrub as well.
  std::string ScrubLong(std::string_view text) const;

 private:
  std::string ScrubForms(std::string_view text, size_t min_bytes) const;
  void AddForm(std::string form);

  std::vector<std::string> forms_;  // unique, the longest first
};

}  // namespace querypilot
