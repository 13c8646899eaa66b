// The ask module: ask('question') and answer tables. See ask_vtab.cpp.
#pragma once

#include "agent/base/sqlite.h"

namespace querypilot::ext {

extern sqlite3_module kAskModule;

}  // namespace querypilot::ext
