// URLs of the model's endpoint, and the secrets they and the key carry.
//
// A base_url may hold credentials wherever URLs carry them: userinfo
// (https://user:pass@host/v1), or any parameter of its query or fragment,
// separated by '&' or ';' (?api-version=1;api_key=...), or of a path segment
// (/v1;key=...). The rule comes from the URL's structure, not from names:
// the userinfo and every parameter's value are secrets, but for the few
// parameters known to be harmless (IsHarmlessParameter: api-version). A URL
// whose userinfo cannot be told apart (an '@' after the host's end: a
// password with an unencoded '/', '?' or '#') is refused by the settings,
// and shown with nothing after its scheme. The request is sent with the
// credentials; everything that shows a URL shows RedactUrl's form of it, and
// every text that QueryPilot keeps or shows has the secrets replaced
// (Secrets, agent/base/secrets.h). All pure functions, tested without a
// network.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "agent/base/secrets.h"

namespace querypilot {

// The parts of a URL, as written (nothing decoded), as RFC 3986 reads them:
// scheme://userinfo@host path?query#fragment, the authority (userinfo and
// host) ending at the first '/', '?' or '#'. `scheme` is "" when the text has
// no "://"; then the authority starts at the beginning. `has_userinfo` tells
// "@host" from "host".
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
  // An '@' in the path, query or fragment: most likely a user name or
  // password with an unencoded '/', '?' or '#', whose end cannot be told.
  bool at_after_authority = false;
};
UrlParts SplitUrl(std::string_view url);

// True for a parameter known to carry no secret, whatever its value:
// api-version (Azure OpenAI's), in any case and with '-' or '_'. Every other
// parameter's value is taken for a secret.
bool IsHarmlessParameter(std::string_view name);

// `url` as it may be shown: the userinfo replaced by [redacted], and every
// parameter's value (query, fragment, path segment) but a harmless one's, and
// a parameter with no value whole; the rest as written
// (https://[redacted]@host/v1?api-version=2024-06-01&key=[redacted]). With
// an '@' after the authority (at_after_authority): "https://[redacted]".
// Text that is not a URL comes back with the same treatment of what looks
// like userinfo and a query, so a mistyped base_url can be named safely.
std::string RedactUrl(std::string_view url);

// The secrets a URL carries, each as written and percent-decoded: the
// userinfo (whole, and its user and password parts; with an '@' after the
// authority, all up to the last '@' too) and what RedactUrl hides of each
// parameter. Empty ones are left out.
std::vector<std::string> UrlSecrets(std::string_view url);

// The endpoint for `path` ("/chat/completions", "/v1/messages") under
// `base`: the path goes after the base's path (trailing '/' dropped) and
// before its query and fragment, which are kept:
//   https://r.openai.azure.com/openai/deployments/d?api-version=2024-06-01
//   -> https://r.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-06-01
std::string EndpointUrl(std::string_view base, std::string_view path);

// What most likely makes `base` the wrong base URL for a wire whose endpoint
// is EndpointUrl(base, `path`), each kind found from the URL alone:
//   kRepeatsPath: the base URL's path ends with the start of `path`, which
//     the endpoint then repeats: a whole endpoint as the base URL
//     (.../v1/chat/completions -> .../chat/completions/chat/completions), or
//     an Anthropic base URL ending in /v1 (-> /v1/v1/messages);
//   kNoVersion: the base URL has no path at all and `path` no version segment
//     (/v1, /v1beta): OpenAI and most OpenAI-compatible servers serve under
//     /v1 (a few do serve the root, so this one is only likely).
enum class BaseUrlSlipKind { kNone, kRepeatsPath, kNoVersion };
struct BaseUrlSlip {
  BaseUrlSlipKind kind = BaseUrlSlipKind::kNone;
  std::string repeated;  // kRepeatsPath: the segments repeated ("/chat/completions", "/v1")
  std::string fix;       // the base URL to use instead, as written (credentials included)
};
BaseUrlSlip FindBaseUrlSlip(std::string_view base, std::string_view path);

// What an HTTP 404 from `endpoint` (made by EndpointUrl from a base URL and
// `path`) adds to the provider's message: the URL asked, redacted, and the
// base URL's slip (FindBaseUrlSlip) with its fix, redacted too:
//   " (POST http://127.0.0.1:8080/chat/completions; the base URL has no /v1:
//   try base_url 'http://127.0.0.1:8080/v1')"
//   " (POST http://h/v1/chat/completions/chat/completions; the base URL
//   already ends with /chat/completions, which is added to it: try base_url
//   'http://h/v1')"
std::string NotFoundNote(std::string_view endpoint, std::string_view path);

}  // namespace querypilot
