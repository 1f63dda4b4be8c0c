#include "metrics_setup.h"

#include "common/logging.h"
#include "coordination/status_client.h"
#include "coordination/status_json.h"

namespace ringtrain::cli {

TaskMetrics::~TaskMetrics() {
  if (server_) server_->Stop();
}

void TaskMetrics::SetStatusSource(std::function<std::string()> source) {
  std::lock_guard<std::mutex> lock(status_mu_);
  status_source_ = std::move(source);
}

void TaskMetrics::SetStragglerScoreSource(std::function<double()> source) {
  std::lock_guard<std::mutex> lock(status_mu_);
  score_source_ = std::move(source);
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
  TaskMetrics* self = m.get();
  o.metrics = [obs, self] {
    std::function<double()> score;
    {
      std::lock_guard<std::mutex> lock(self->status_mu_);
      score = self->score_source_;
    }
    if (score) obs->SetStragglerScore(score());
    return obs->RenderMetrics();
  };
  const bool chief = spec.is_chief();
  if (chief) {
    o.serve_page = true;
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

void ServeClusterStatus(TaskMetrics* metrics, const config::ClusterSpec& spec, const cluster::SessionSecurity& security) {
  if (metrics == nullptr) return;
  coordination::StatusClientOptions o;
  o.chief_address = spec.address(spec.chief()).ToString();
  o.cluster_secret = security.cluster_secret;
  o.tls = security.tls;
  o.timeout = std::chrono::seconds(2);
  o.caller = "status page";
  metrics::MetricsObserver* obs = metrics->observer();
  metrics->SetStatusSource([o, obs] {
    auto status = coordination::GetClusterStatus(o);
    return status.ok() ? coordination::StatusToJson(*status) : obs->StatusJson();
  });
}

std::function<std::vector<std::string>(int index)> MetricsPortArgs(int base_port) {
  return [base_port](int index) {
    return std::vector<std::string>{"--metrics_port", std::to_string(base_port + index)};
  };
}

}  // namespace ringtrain::cli
