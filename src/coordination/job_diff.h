// Compares a task's job configuration with the chief's, so that a task started with
// a different job file is refused at registration rather than training a different
// model. Pure functions; no I/O.
#pragma once

#include <string>

#include "common/status.h"

namespace ringtrain::coordination {

// OK if `json` parses as JSON; otherwise INVALID_ARGUMENT naming `whose` ("the chief's").
Status ValidateJobJson(const std::string& json, const std::string& whose);

// OK if the two jobs are equal as JSON values (key order and number spelling do not
// matter). Otherwise PERMISSION_DENIED naming the first differing field as a JSON
// pointer with both values, e.g.
//   "worker:1's job differs from the chief's at /optimizer/learning_rate
//    (chief: 0.001, worker:1: 0.01); start every task with the same job file".
// INVALID_ARGUMENT if `task_job_json` is not JSON.
Status CompareJobs(const std::string& chief_job_json, const std::string& task_job_json,
                   const std::string& task);

}  // namespace ringtrain::coordination
