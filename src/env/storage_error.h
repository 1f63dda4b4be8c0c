// How a failure of one of ringtrain's output files reaches the user: tagged
// Subject::kStorage (exit code 6, common/exit_policy.h; never recovered from in place,
// since the other tasks cannot fix this task's disk) and ending with what to do.
#pragma once

#include <string>

#include "common/status.h"

namespace ringtrain::env {

// "<context>: <status message>; <what to do>", the remedy chosen by the code: a full
// disk (RESOURCE_EXHAUSTED) -> free space; a read-only or forbidden path
// (PERMISSION_DENIED) -> make it writable; anything else -> check the disk and the
// path; each "or point <setting> elsewhere". The code is kept; the subject becomes
// kStorage unless an inner edge already set one. OK stays OK.
Status StorageError(const Status& status, const std::string& context, const std::string& setting);

}  // namespace ringtrain::env
