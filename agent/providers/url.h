// URLs of the model's endpoint, and the secrets they and the key carry.
//
// A base_url may hold credentials: userinfo (https://user:pass@host/v1) or a
// query parameter (?key=..., ?api_key=...). The request is sent with them;
// everything that shows a URL shows RedactUrl's form of it, and every text
// that QueryPilot keeps or returns from a model call has the secrets in
// effect replaced (RedactSecrets). All pure functions, tested without a
// network.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace querypilot {

// What stands in for a secret wherever one would have been shown.
inline constexpr std::string_view kRedacted = "[redacted]";

// The parts of a URL, as written (nothing decoded): scheme://userinfo@host
// path?query#fragment. `scheme` is "" when the text has no "://"; then the
// authority starts at the beginning. `has_userinfo` tells "@host" from
// "host".
struct UrlParts {
  std::string scheme;  // "https"
  std::string userinfo;
  bool has_userinfo = false;
  std::string host;   // host and port: "127.0.0.1:8080", "[::1]:8080"
  std::string path;   // "/v1", or ""
  std::string query;  // after '?', without it; "" when none
  bool has_query = false;
  std::string fragment;  // after '#', without it
  bool has_fragment = false;
};
UrlParts SplitUrl(std::string_view url);

// True for a query parameter whose name says it carries a credential: key,
// api_key, api-key, apikey, token, access_token, secret, password, sig,
// signature, code, and names that contain key, token, secret, password or
// signature (case and '-' or '_' aside). "api-version" is not one.
bool IsCredentialParameter(std::string_view name);

// `url` as it may be shown: userinfo replaced by [redacted], and the value
// of every credential query parameter too; the rest as written
// (https://[redacted]@host/v1?api-version=2024-06-01&key=[redacted]). Text
// that is not a URL comes back with the same treatment of what looks like
// userinfo and a query, so a mistyped base_url can be named safely.
std::string RedactUrl(std::string_view url);

// The secrets a URL carries: the userinfo (whole, and its user and password
// parts) and the value of each credential query parameter, each as written
// and percent-decoded. Empty ones are left out.
std::vector<std::string> UrlSecrets(std::string_view url);

// The endpoint for `path` ("/chat/completions", "/v1/messages") under
// `base`: the path goes after the base's path (trailing '/' dropped) and
// before its query and fragment, which are kept:
//   https://r.openai.azure.com/openai/deployments/d?api-version=2024-06-01
//   -> https://r.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-06-01
std::string EndpointUrl(std::string_view base, std::string_view path);

// `text` with every occurrence of each secret of at least `min_bytes` bytes
// replaced by [redacted], the longest secrets first (so a key inside a
// longer secret cannot leave a part of the longer one). Shorter secrets are
// left alone: replacing a short string everywhere would change ordinary
// text (a model's SQL) without protecting anything.
std::string RedactSecrets(std::string text, const std::vector<std::string>& secrets,
                          size_t min_bytes = 8);

}  // namespace querypilot
