// TF_CONFIG as the worker reads it: parsed, then every accessor the worker uses.
#include <string>

#include "config/tf_config.h"
#include "fuzz_target.h"

using namespace ringtrain;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)config::ParseHostPort(text);
  auto spec = config::ParseTfConfig(text);
  if (!spec.ok()) {
    FUZZ_CHECK(!spec.status().message().empty());
    FUZZ_CHECK(spec.status().subject() == Subject::kConfig);
    return 0;
  }
  FUZZ_CHECK(spec->num_workers() >= 1);
  FUZZ_CHECK(spec->rank() >= -1 && spec->rank() < spec->num_workers());
  (void)spec->address(spec->task()).ToString();
  for (const auto& t : spec->training_tasks()) {
    const config::HostPort hp = spec->address(t);
    // What the worker prints and dials must parse back to the same address.
    auto again = config::ParseHostPort(hp.ToString());
    FUZZ_CHECK(again.ok() && again->host == hp.host && again->port == hp.port);
  }
  (void)spec->chief().ToString();
  return 0;
}
