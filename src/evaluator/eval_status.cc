#include "evaluator/eval_status.h"

#include "evaluator/eval_history.h"

namespace ringtrain::evaluator {

coordination::TaskStatus EvaluatorStatusRow(const std::string& task, const std::string& host,
                                            const std::string& history_path, env::Env* env) {
  coordination::TaskStatus row;
  row.set_task(task);
  row.set_host(host);
  row.set_generation(-1);       // in no generation: it is not part of the ring
  row.set_heartbeat_age_s(-1);  // it sends none
  auto history = EvalHistory::Open(history_path, env);
  if (!history.ok()) {
    row.set_failure_reason("the chief cannot read the evaluator's history: " + history.status().message());
    return row;
  }
  if (history->records().empty()) return row;
  const nlohmann::json& last = history->records().back();
  row.set_state(last["final"].get<bool>() ? "finished" : "running");
  coordination::TaskProgress* p = row.mutable_progress();
  p->set_rank(-1);
  p->set_global_step(last["step"].get<int64_t>());
  p->set_epoch(last["epoch"].get<int32_t>());
  auto number = [&last](const char* key) {
    return last.contains(key) && last[key].is_number() ? last[key].get<double>() : 0.0;
  };
  p->set_loss(number("loss"));
  p->set_accuracy(number("accuracy"));
  p->set_unix_time(number("unix_time"));
  p->set_state(row.state());
  return row;
}

}  // namespace ringtrain::evaluator
