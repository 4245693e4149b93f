// The `huygens_build_info` metric: a gauge of value 1 whose `version` label is the daemon's
// version (base/version.h), as Prometheus' own `*_build_info` metrics do, so that a dashboard
// can tell which version runs where (`count by (version) (huygens_build_info)`).
//
// Thread-safety: as MetricsRegistry::AddGauge.
#ifndef HUYGENS_SERVING_BUILD_INFO_H_
#define HUYGENS_SERVING_BUILD_INFO_H_

#include "serving/metrics.h"

namespace huygens::serving {

// Registers `huygens_build_info{version="<Version()>"} 1` in `registry`.
// REQUIRES: `huygens_build_info` is not registered in `registry` yet (each daemon registers it
// once, with its other families: scheduler/service_metrics.h, agent/agent.cc).
void AddBuildInfo(MetricsRegistry& registry);

}  // namespace huygens::serving

#endif  // HUYGENS_SERVING_BUILD_INFO_H_
