// The ask_result module: the rows of an ask_start run. See ask_result.cpp.
#pragma once

#include "agent/base/sqlite.h"

namespace querypilot::ext {

// ask_result(run_id [, wait_ms]): the rows of an ask_start run.
extern sqlite3_module kAskResultModule;

}  // namespace querypilot::ext
