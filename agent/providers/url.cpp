#include "agent/providers/url.h"

#include <algorithm>

namespace querypilot {
namespace {

std::string NormalisedName(std::string_view name) {
  std::string n;
  n.reserve(name.size());
  for (char c : name) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    n.push_back(c == '-' ? '_' : c);
  }
  return n;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string PercentDecoded(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && HexValue(s[i + 1]) >= 0 && HexValue(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(HexValue(s[i + 1]) * 16 + HexValue(s[i + 2])));
      i += 2;
    } else if (s[i] == '+') {
      out.push_back(' ');
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// Calls `f(name, value, has_value)` for each '&'-separated parameter.
template <typename F>
void ForEachParameter(std::string_view params, F&& f) {
  size_t start = 0;
  while (start <= params.size()) {
    size_t end = params.find('&', start);
    if (end == std::string_view::npos) end = params.size();
    std::string_view p = params.substr(start, end - start);
    size_t eq = p.find('=');
    if (eq == std::string_view::npos) {
      f(p, std::string_view(), false);
    } else {
      f(p.substr(0, eq), p.substr(eq + 1), true);
    }
    start = end + 1;
  }
}

std::string RedactParameters(std::string_view params) {
  std::string out;
  bool first = true;
  ForEachParameter(params, [&](std::string_view name, std::string_view value, bool has_value) {
    if (!first) out.push_back('&');
    first = false;
    out.append(name);
    if (!has_value) return;
    out.push_back('=');
    if (IsCredentialParameter(PercentDecoded(name)) && !value.empty()) {
      out.append(kRedacted);
    } else {
      out.append(value);
    }
  });
  return out;
}

void AddSecret(std::vector<std::string>* out, std::string_view s) {
  if (s.empty()) return;
  out->emplace_back(s);
  std::string decoded = PercentDecoded(s);
  if (decoded != s && !decoded.empty()) out->push_back(std::move(decoded));
}

}  // namespace

UrlParts SplitUrl(std::string_view url) {
  UrlParts p;
  std::string_view rest = url;
  if (size_t s = url.find("://"); s != std::string_view::npos) {
    p.scheme = std::string(url.substr(0, s));
    rest = url.substr(s + 3);
  }
  // The fragment, then the query, then what is left: authority and path.
  if (size_t h = rest.find('#'); h != std::string_view::npos) {
    p.has_fragment = true;
    p.fragment = std::string(rest.substr(h + 1));
    rest = rest.substr(0, h);
  }
  if (size_t q = rest.find('?'); q != std::string_view::npos) {
    p.has_query = true;
    p.query = std::string(rest.substr(q + 1));
    rest = rest.substr(0, q);
  }
  // The userinfo ends at the last '@' before the query, even past a '/': a
  // password with an unencoded '/' is still a password to hide.
  if (size_t at = rest.rfind('@'); at != std::string_view::npos) {
    p.has_userinfo = true;
    p.userinfo = std::string(rest.substr(0, at));
    rest = rest.substr(at + 1);
  }
  size_t slash = rest.find('/');
  p.host = std::string(rest.substr(0, slash));
  if (slash != std::string_view::npos) p.path = std::string(rest.substr(slash));
  return p;
}

bool IsCredentialParameter(std::string_view name) {
  const std::string n = NormalisedName(name);
  static constexpr std::string_view kExact[] = {"sig", "code", "auth",
                                                "pwd", "pass", "authorization"};
  static constexpr std::string_view kContained[] = {"key",    "token",     "secret",    "password",
                                                    "passwd", "signature", "credential"};
  if (std::find(std::begin(kExact), std::end(kExact), n) != std::end(kExact)) return true;
  return std::any_of(std::begin(kContained), std::end(kContained),
                     [&n](std::string_view part) { return n.find(part) != std::string::npos; });
}

std::string RedactUrl(std::string_view url) {
  const UrlParts p = SplitUrl(url);
  std::string out;
  if (url.find("://") != std::string_view::npos) out = p.scheme + "://";
  if (p.has_userinfo) {
    out.append(kRedacted);
    out.push_back('@');
  }
  out += p.host;
  out += p.path;
  if (p.has_query) out += "?" + RedactParameters(p.query);
  if (p.has_fragment) out += "#" + RedactParameters(p.fragment);
  return out;
}

std::vector<std::string> UrlSecrets(std::string_view url) {
  const UrlParts p = SplitUrl(url);
  std::vector<std::string> secrets;
  if (p.has_userinfo) {
    AddSecret(&secrets, p.userinfo);
    size_t colon = p.userinfo.find(':');
    if (colon != std::string::npos) {
      AddSecret(&secrets, std::string_view(p.userinfo).substr(0, colon));
      AddSecret(&secrets, std::string_view(p.userinfo).substr(colon + 1));
    }
  }
  for (const std::string* params : {&p.query, &p.fragment}) {
    ForEachParameter(*params, [&](std::string_view name, std::string_view value, bool has_value) {
      if (has_value && IsCredentialParameter(PercentDecoded(name))) AddSecret(&secrets, value);
    });
  }
  return secrets;
}

std::string EndpointUrl(std::string_view base, std::string_view path) {
  // The query and fragment start at the first '?' or '#' after the authority
  // (SplitUrl's reading: the userinfo may hold neither).
  size_t after_scheme = base.find("://");
  after_scheme = after_scheme == std::string_view::npos ? 0 : after_scheme + 3;
  size_t tail = base.find_first_of("?#", after_scheme);
  if (tail == std::string_view::npos) tail = base.size();
  std::string_view head = base.substr(0, tail);
  while (head.size() > after_scheme && head.back() == '/') head.remove_suffix(1);
  std::string out(head);
  out.append(path);
  out.append(base.substr(tail));
  return out;
}

std::string RedactSecrets(std::string text, const std::vector<std::string>& secrets,
                          size_t min_bytes) {
  std::vector<std::string_view> sorted;
  for (const std::string& s : secrets) {
    if (s.size() >= std::max<size_t>(min_bytes, 1)) sorted.emplace_back(s);
  }
  std::sort(sorted.begin(), sorted.end(),
            [](std::string_view a, std::string_view b) { return a.size() > b.size(); });
  for (std::string_view secret : sorted) {
    for (size_t p = text.find(secret); p != std::string::npos;
         p = text.find(secret, p + kRedacted.size())) {
      text.replace(p, secret.size(), kRedacted);
    }
  }
  return text;
}

}  // namespace querypilot
