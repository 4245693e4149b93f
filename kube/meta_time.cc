#include "kube/meta_time.h"

#include "fmt/chrono.h"
#include "fmt/format.h"

namespace huygens::kube {

std::string MetaTime(std::chrono::system_clock::time_point t) {
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}Z", fmt::gmtime(std::chrono::system_clock::to_time_t(t)));
}

std::string MicroTime(std::chrono::system_clock::time_point t) {
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count() % 1000000;
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:06d}Z", fmt::gmtime(std::chrono::system_clock::to_time_t(t)), micros);
}

}  // namespace huygens::kube
