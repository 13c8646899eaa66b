// The ask module: ask('question') and answer tables. See ask_vtab.cpp.
#pragma once

#include "agent/base/sqlite.h"

namespace querypilot::ext {

extern sqlite3_module kAskModule;
// ask_result(run_id [, wait_ms]): the rows of an ask_start run.
extern sqlite3_module kAskResultModule;

}  // namespace querypilot::ext
