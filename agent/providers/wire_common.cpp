#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "agent/base/text.h"
#include "agent/providers/wire.h"
#include "agent/providers/wire_detail.h"

namespace querypilot {

ErrorKind ProviderErrorKindForStatus(long s) {
  if (s == 401 || s == 403) return ErrorKind::kProviderAuth;
  if (s == 429) return ErrorKind::kProviderRateLimit;
  if (s >= 500) return ErrorKind::kProviderUnavailable;
  return ErrorKind::kProviderRequest;
}

namespace wire_detail {

// The provider's own error message from an error body, in any of the shapes
// seen in the wild: {"error":{"message":..}}, {"error":".."}, {"message":..},
// or plain text / HTML (trimmed and shortened).
std::string ErrorMessageFromBody(std::string_view body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_object()) {
    auto err = j.find("error");
    if (err != j.end()) {
      if (err->is_string()) return err->get<std::string>();
      if (err->is_object()) {
        auto m = err->find("message");
        if (m != err->end() && m->is_string()) return m->get<std::string>();
        return err->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      }
    }
    auto m = j.find("message");
    if (m != j.end() && m->is_string()) return m->get<std::string>();
  }
  std::string t = text::Trim(body);
  if (t.rfind("<", 0) == 0) {
    // An HTML error page: its <title> says most.
    size_t a = t.find("<title>"), b = t.find("</title>");
    if (a != std::string::npos && b != std::string::npos && b > a) {
      return "HTML page: " + text::Trim(std::string_view(t).substr(a + 7, b - a - 7));
    }
    return "an HTML page instead of JSON";
  }
  return text::Truncate(t, 300);
}

Status HttpError(long status, std::string_view body) {
  std::string msg = text::ToValidUtf8(ErrorMessageFromBody(body));
  return Status(ProviderErrorKindForStatus(status),
                fmt::format("the provider answered HTTP {}{}{}", status, msg.empty() ? "" : ": ",
                            text::Truncate(msg, 500)));
}

Status BadReply(std::string_view what, std::string_view body) {
  return Status(ErrorKind::kProviderBadResponse,
                fmt::format("the provider's reply was not understood ({}): {}", what,
                            text::ToValidUtf8(text::Truncate(text::Trim(body), 200))));
}

}  // namespace wire_detail
}  // namespace querypilot
