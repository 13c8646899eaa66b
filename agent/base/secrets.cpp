#include "agent/base/secrets.h"

#include <algorithm>

namespace querypilot {
namespace {

int SecretHexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// `s` with each %XX read as its byte, and '+' as a space when `plus_is_space`
// (as a query string reads it; a userinfo or a path keeps '+').
std::string SecretDecoded(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && SecretHexDigit(s[i + 1]) >= 0 &&
        SecretHexDigit(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(SecretHexDigit(s[i + 1]) * 16 + SecretHexDigit(s[i + 2])));
      i += 2;
    } else if (s[i] == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// `s` with every byte but RFC 3986's unreserved ones (letters, digits,
// "-._~") written as %XX, in upper- or lower-case hex.
std::string SecretEncoded(std::string_view s, bool upper) {
  const char* digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    const unsigned char b = static_cast<unsigned char>(c);
    if ((b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9') || b == '-' ||
        b == '.' || b == '_' || b == '~') {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(digits[b >> 4]);
      out.push_back(digits[b & 15]);
    }
  }
  return out;
}

// A byte that may be part of a word: an ASCII letter or digit, '_', or a
// byte of a multi-byte UTF-8 character.
bool IsWordByte(char c) {
  const unsigned char b = static_cast<unsigned char>(c);
  return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9') || b == '_' ||
         b >= 0x80;
}

// Whether `form`, found at `at` in `text`, is to be replaced there: always
// from kAnywhereBytes on, else only where it stands alone.
bool ReplacedAt(std::string_view text, size_t at, std::string_view form) {
  if (form.size() >= Secrets::kAnywhereBytes) return true;
  const size_t end = at + form.size();
  if (IsWordByte(form.front()) && at > 0 && IsWordByte(text[at - 1])) return false;
  if (IsWordByte(form.back()) && end < text.size() && IsWordByte(text[end])) return false;
  return true;
}

}  // namespace

void Secrets::AddForm(std::string form) {
  if (form.size() < kWordBytes || form == kRedacted) return;
  if (std::find(forms_.begin(), forms_.end(), form) != forms_.end()) return;
  // The longest first; among equals, the order they came in.
  auto at = std::find_if(forms_.begin(), forms_.end(),
                         [&](const std::string& f) { return f.size() < form.size(); });
  forms_.insert(at, std::move(form));
}

void Secrets::Add(std::string_view secret) {
  if (secret.empty()) return;
  AddForm(std::string(secret));
  AddForm(SecretDecoded(secret, false));
  AddForm(SecretDecoded(secret, true));
  AddForm(SecretEncoded(secret, true));
  AddForm(SecretEncoded(secret, false));
}

void Secrets::Add(const Secrets& other) {
  for (const std::string& form : other.forms_) AddForm(form);
}

std::string Secrets::Scrub(std::string_view text) const {
  return ScrubForms(text, kWordBytes);
}

std::string Secrets::ScrubLong(std::string_view text) const {
  return ScrubForms(text, kAnywhereBytes);
}

std::string Secrets::ScrubForms(std::string_view text, size_t min_bytes) const {
  if (forms_.empty() || forms_.front().size() < min_bytes) return std::string(text);
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    // A [redacted] already there is left whole: a secret spelt like a part
    // of it cannot nest another inside it.
    if (text[i] == kRedacted.front() && text.compare(i, kRedacted.size(), kRedacted) == 0) {
      out.append(kRedacted);
      i += kRedacted.size();
      continue;
    }
    bool replaced = false;
    for (const std::string& form : forms_) {
      if (form.size() < min_bytes) break;  // the longest first: none further is long enough
      if (form.front() != text[i]) continue;
      if (text.compare(i, form.size(), form) == 0 && ReplacedAt(text, i, form)) {
        out.append(kRedacted);
        i += form.size();
        replaced = true;
        break;
      }
    }
    if (!replaced) out.push_back(text[i++]);
  }
  return out;
}

}  // namespace querypilot
