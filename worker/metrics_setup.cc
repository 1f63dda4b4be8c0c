#include "metrics_setup.h"

#include "common/logging.h"

namespace ringtrain::cli {

TaskMetrics::~TaskMetrics() {
  if (server_) server_->Stop();
}

void TaskMetrics::SetStatusSource(std::function<std::string()> source) {
  std::lock_guard<std::mutex> lock(status_mu_);
  status_source_ = std::move(source);
}

StatusOr<std::unique_ptr<TaskMetrics>> StartMetrics(const Flags& flags, const config::Settings& settings,
                                                    const config::ClusterSpec& spec, bool alone) {
  auto port = flags.get_int("metrics_port", settings.metrics_port, 0, 65535);
  if (!port.ok()) return port.status().About(Subject::kConfig);
  if (*port == 0) return std::unique_ptr<TaskMetrics>();
  const std::string task = spec.task().ToString();
  const std::string host = alone ? "127.0.0.1" : spec.address(spec.task()).host;
  std::unique_ptr<TaskMetrics> m(new TaskMetrics());
  std::vector<std::pair<std::string, std::string>> cluster;
  if (!alone) {
    for (const auto& t : spec.training_tasks()) cluster.emplace_back(t.ToString(), spec.address(t).ToString());
  }
  RT_ASSIGN_OR_RETURN(m->observer_, metrics::MetricsObserver::Create(
                                        task, alone ? "" : spec.address(spec.task()).ToString(), std::move(cluster)));
  metrics::MetricsObserver* obs = m->observer_.get();
  m->status_source_ = [obs] { return obs->StatusJson(); };

  metrics::ServerOptions o;
  o.host = host;
  o.port = *port;
  o.what = flags.has("metrics_port") ? "--metrics_port " + std::to_string(*port)
                                     : "RINGTRAIN_METRICS_PORT=" + std::to_string(*port);
  o.metrics = [obs] { return obs->RenderMetrics(); };
  const bool chief = spec.is_chief();
  if (chief) {
    o.serve_page = true;
    TaskMetrics* self = m.get();
    o.status_json = [self] {
      std::function<std::string()> source;
      {
        std::lock_guard<std::mutex> lock(self->status_mu_);
        source = self->status_source_;
      }
      return source();
    };
    o.history_json = [obs] { return obs->HistoryJson(); };
  }
  RT_ASSIGN_OR_RETURN(m->server_, metrics::HttpServer::Start(std::move(o)));
  const std::string base = "http://" + host + ":" + std::to_string(*port);
  RT_LOG(INFO) << "Prometheus metrics on " << base << "/metrics" << (chief ? "; the live page on " + base + "/" : "");
  return m;
}

void AttachMetrics(TaskMetrics* metrics, train::TrainerOptions* trainer_options) {
  if (metrics != nullptr) trainer_options->observers.push_back(metrics->observer());
}

void AttachMetrics(TaskMetrics* metrics, recovery::RunOptions* run_options) {
  if (metrics == nullptr) return;
  metrics::MetricsObserver* obs = metrics->observer();
  run_options->on_generation = [obs](int64_t generation) { obs->OnGeneration(generation); };
  run_options->on_recovery = [obs](const Status& why) {
    obs->OnRecovery(metrics::RecoveryReason(why), why.message());
  };
}

std::function<std::vector<std::string>(int index)> MetricsPortArgs(int base_port) {
  return [base_port](int index) {
    return std::vector<std::string>{"--metrics_port", std::to_string(base_port + index)};
  };
}

}  // namespace ringtrain::cli
