#include "serving/build_info.h"

#include <string>

#include "base/version.h"

namespace huygens::serving {

void AddBuildInfo(MetricsRegistry& registry) {
  registry
      .AddGauge("huygens_build_info", "1, labelled with the version of this Huygens daemon.",
                {"version"})
      .Set({std::string(Version())}, 1);
}

}  // namespace huygens::serving
