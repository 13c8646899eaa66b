// Helpers shared by the wire-format parsers (internal to providers/).
#pragma once

#include <string>
#include <string_view>

#include "agent/base/status.h"

namespace querypilot::wire_detail {

std::string ErrorMessageFromBody(std::string_view body);
// A provider error for a non-2xx reply, carrying the provider's message.
Status HttpError(long status, std::string_view body);
// kProviderBadResponse naming what was wrong and quoting the start of the body.
Status BadReply(std::string_view what, std::string_view body);

}  // namespace querypilot::wire_detail
