#include "status_reporting.h"

#include <chrono>

#include "cluster/cluster_session.h"
#include "common/logging.h"

namespace ringtrain::cli {

StatusReporting::StatusReporting(const config::Settings& settings, train::TrainerOptions* options) {
  options->observers.push_back(&reporter_);
  if (settings.fault_compute_delay_ms > 0) {
    options->fault_compute_delay = std::chrono::milliseconds(settings.fault_compute_delay_ms);
    RT_LOG(WARNING) << "RINGTRAIN_FAULT_COMPUTE_DELAY_MS=" << settings.fault_compute_delay_ms
                    << ": every step of this task is slowed by as much (fault injection for tests)";
  }
}

void StatusReporting::Attach(cluster::Session* session) {
  if (auto* cs = dynamic_cast<cluster::ClusterSession*>(session)) cs->SetProgressSource(reporter_.Source());
}

}  // namespace ringtrain::cli
