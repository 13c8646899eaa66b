// OwnSurface: the SQL names QueryPilot registers on a connection.
#pragma once

#include <string>
#include <vector>

namespace querypilot {

// The SQL names QueryPilot itself registers on a host connection (from ext/'s
// registration table): generated SQL may use none of them.
struct OwnSurface {
  std::vector<std::string> functions;
  std::vector<std::string> modules;
};

}  // namespace querypilot
