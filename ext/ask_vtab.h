// The ask module: ask('question') and answer tables. See ask_vtab.cpp.
#pragma once

#include "agent/base/sqlite.h"

namespace querypilot::ext {

// ask(question), and answer tables (CREATE VIRTUAL TABLE ... USING ask(...)).
extern sqlite3_module kAskModule;

}  // namespace querypilot::ext
