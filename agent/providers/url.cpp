#include "agent/providers/url.h"

#include <algorithm>
#include <cctype>

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

// Calls `f(name, value, has_value)` for each parameter, separated by '&' or
// ';' (both are used: ?api-version=1;api_key=...).
template <typename F>
void ForEachParameter(std::string_view params, F&& f) {
  size_t start = 0;
  while (start <= params.size()) {
    size_t end = params.find_first_of("&;", start);
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

// What of a parameter is a secret: its value, unless its name is a harmless
// one; a parameter with no '=' is all value (?sk-abc...). Empty: nothing.
std::string_view ParameterSecret(std::string_view name, std::string_view value, bool has_value) {
  if (!has_value) return name;
  return IsHarmlessParameter(PercentDecoded(name)) ? std::string_view() : value;
}

// `params` with each parameter's secret replaced, separators as written.
std::string RedactParameters(std::string_view params) {
  std::string out;
  size_t start = 0;
  while (true) {
    const size_t end = params.find_first_of("&;", start);
    std::string_view p =
        params.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    const size_t eq = p.find('=');
    std::string_view name = p.substr(0, eq);
    std::string_view value = eq == std::string_view::npos ? std::string_view() : p.substr(eq + 1);
    const bool hidden = !ParameterSecret(name, value, eq != std::string_view::npos).empty();
    if (eq == std::string_view::npos) {
      out.append(hidden ? kRedacted : name);
    } else {
      out.append(name);
      out.push_back('=');
      out.append(hidden ? kRedacted : value);
    }
    if (end == std::string_view::npos) break;
    out.push_back(params[end]);
    start = end + 1;
  }
  return out;
}

// Calls `f(segment)` for each '/'-separated segment of `path`.
template <typename F>
void ForEachSegment(std::string_view path, F&& f) {
  size_t start = 0;
  while (true) {
    const size_t end = path.find('/', start);
    f(path.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return;
    start = end + 1;
  }
}

// A path with the parameters of its segments (what follows a segment's first
// ';': /v1;key=...) redacted.
std::string RedactPath(std::string_view path) {
  std::string out;
  bool first = true;
  ForEachSegment(path, [&](std::string_view segment) {
    if (!first) out.push_back('/');
    first = false;
    const size_t semi = segment.find(';');
    out.append(segment.substr(0, semi));
    if (semi != std::string_view::npos) out += ";" + RedactParameters(segment.substr(semi + 1));
  });
  return out;
}

void AddSecret(std::vector<std::string>* out, std::string_view s) {
  if (s.empty()) return;
  out->emplace_back(s);
  std::string decoded = PercentDecoded(s);
  if (decoded != s && !decoded.empty()) out->push_back(std::move(decoded));
}

void AddParameterSecrets(std::vector<std::string>* out, std::string_view params) {
  ForEachParameter(params, [&](std::string_view name, std::string_view value, bool has_value) {
    AddSecret(out, ParameterSecret(name, value, has_value));
  });
}

}  // namespace

UrlParts SplitUrl(std::string_view url) {
  UrlParts p;
  std::string_view rest = url;
  if (size_t s = url.find("://"); s != std::string_view::npos) {
    p.scheme = std::string(url.substr(0, s));
    rest = url.substr(s + 3);
  }
  // As RFC 3986 reads it: the authority ends at the first '/', '?' or '#';
  // the userinfo is the authority up to its last '@'.
  const size_t authority_end = std::min(rest.find_first_of("/?#"), rest.size());
  std::string_view authority = rest.substr(0, authority_end);
  rest = rest.substr(authority_end);
  if (size_t at = authority.rfind('@'); at != std::string_view::npos) {
    p.has_userinfo = true;
    p.userinfo = std::string(authority.substr(0, at));
    authority = authority.substr(at + 1);
  }
  p.host = std::string(authority);
  p.at_after_authority = rest.find('@') != std::string_view::npos;
  // The fragment, then the query, then the path.
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
  p.path = std::string(rest);
  return p;
}

bool IsHarmlessParameter(std::string_view name) {
  // Azure OpenAI's version of its API: needed in every URL shown to tell
  // which one, and no secret.
  return NormalisedName(name) == "api_version";
}

std::string RedactUrl(std::string_view url) {
  const UrlParts p = SplitUrl(url);
  std::string out;
  if (url.find("://") != std::string_view::npos) out = p.scheme + "://";
  if (p.at_after_authority) {
    // Where the userinfo ends cannot be told (a password with an unencoded
    // '/', '?' or '#'): nothing after the scheme is shown.
    out.append(kRedacted);
    return out;
  }
  if (p.has_userinfo) {
    out.append(kRedacted);
    out.push_back('@');
  }
  out += p.host;
  out += RedactPath(p.path);
  if (p.has_query) out += "?" + RedactParameters(p.query);
  if (p.has_fragment) out += "#" + RedactParameters(p.fragment);
  return out;
}

std::vector<std::string> UrlSecrets(std::string_view url) {
  const UrlParts p = SplitUrl(url);
  std::vector<std::string> secrets;
  if (p.at_after_authority) {
    // Everything after the scheme up to the last '@' may be the userinfo.
    const size_t scheme_end = url.find("://");
    std::string_view rest = scheme_end == std::string_view::npos ? url : url.substr(scheme_end + 3);
    std::string_view userinfo = rest.substr(0, rest.rfind('@'));
    AddSecret(&secrets, userinfo);
    if (size_t colon = userinfo.find(':'); colon != std::string_view::npos) {
      AddSecret(&secrets, userinfo.substr(0, colon));
      AddSecret(&secrets, userinfo.substr(colon + 1));
    }
  }
  if (p.has_userinfo) {
    AddSecret(&secrets, p.userinfo);
    size_t colon = p.userinfo.find(':');
    if (colon != std::string::npos) {
      AddSecret(&secrets, std::string_view(p.userinfo).substr(0, colon));
      AddSecret(&secrets, std::string_view(p.userinfo).substr(colon + 1));
    }
  }
  ForEachSegment(p.path, [&](std::string_view segment) {
    if (size_t semi = segment.find(';'); semi != std::string_view::npos)
      AddParameterSecrets(&secrets, segment.substr(semi + 1));
  });
  if (p.has_query) AddParameterSecrets(&secrets, p.query);
  if (p.has_fragment) AddParameterSecrets(&secrets, p.fragment);
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

namespace {

// A path segment naming an API version: "v1", "v2", "v1beta".
bool HasVersionSegment(std::string_view path) {
  while (!path.empty()) {
    size_t slash = path.find('/');
    std::string_view segment = path.substr(0, slash);
    if (segment.size() >= 2 && segment[0] == 'v' &&
        std::isdigit(static_cast<unsigned char>(segment[1]))) {
      return true;
    }
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return false;
}

// The '/'-separated segments of `path`, empty ones left out.
std::vector<std::string_view> Segments(std::string_view path) {
  std::vector<std::string_view> out;
  ForEachSegment(path, [&](std::string_view s) {
    if (!s.empty()) out.push_back(s);
  });
  return out;
}

bool SameSegment(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

BaseUrlSlip FindBaseUrlSlip(std::string_view base, std::string_view path) {
  BaseUrlSlip slip;
  // The query and fragment start at the first '?' or '#' after the authority.
  size_t after_scheme = base.find("://");
  after_scheme = after_scheme == std::string_view::npos ? 0 : after_scheme + 3;
  size_t tail = base.find_first_of("?#", after_scheme);
  if (tail == std::string_view::npos) tail = base.size();
  const std::string_view head = base.substr(0, tail);
  // SplitUrl's path is what ends `head` (which has no query or fragment).
  const std::string_view base_path = head.substr(head.size() - SplitUrl(head).path.size());
  const std::vector<std::string_view> have = Segments(base_path);
  const std::vector<std::string_view> adds = Segments(path);
  // The most segments that end the base URL's path and start `path`.
  for (size_t k = std::min(have.size(), adds.size()); k > 0; --k) {
    if (!std::equal(have.end() - static_cast<std::ptrdiff_t>(k), have.end(), adds.begin(),
                    SameSegment)) {
      continue;
    }
    slip.kind = BaseUrlSlipKind::kRepeatsPath;
    for (size_t i = 0; i < k; ++i) slip.repeated += "/" + std::string(adds[i]);
    // The base URL up to the first repeated segment, its query kept.
    const size_t cut = static_cast<size_t>(have[have.size() - k].data() - base.data()) - 1;
    slip.fix = std::string(base.substr(0, cut)) + std::string(base.substr(tail));
    return slip;
  }
  if (have.empty() && !path.empty() && !HasVersionSegment(path)) {
    slip.kind = BaseUrlSlipKind::kNoVersion;
    slip.fix = EndpointUrl(std::string(head) + std::string(base.substr(tail)), "/v1");
  }
  return slip;
}

std::string NotFoundNote(std::string_view endpoint, std::string_view path) {
  std::string note = " (POST " + RedactUrl(endpoint);
  // The base URL is the endpoint without `path`, which EndpointUrl put
  // before the query and fragment.
  size_t after_scheme = endpoint.find("://");
  after_scheme = after_scheme == std::string_view::npos ? 0 : after_scheme + 3;
  size_t tail = endpoint.find_first_of("?#", after_scheme);
  if (tail == std::string_view::npos) tail = endpoint.size();
  std::string_view head = endpoint.substr(0, tail);
  if (!path.empty() && head.ends_with(path)) {
    const std::string base =
        std::string(head.substr(0, head.size() - path.size())) + std::string(endpoint.substr(tail));
    const BaseUrlSlip slip = FindBaseUrlSlip(base, path);
    switch (slip.kind) {
      case BaseUrlSlipKind::kNone:
        break;
      case BaseUrlSlipKind::kRepeatsPath:
        note += "; the base URL already ends with " + slip.repeated +
                ", which is added to it: try base_url '" + RedactUrl(slip.fix) + "'";
        break;
      case BaseUrlSlipKind::kNoVersion:
        note += "; the base URL has no /v1: try base_url '" + RedactUrl(slip.fix) + "'";
        break;
    }
  }
  note += ")";
  return note;
}

}  // namespace querypilot
