// Fuzzes the kubeconfig parser: any bytes must give a RestConfig or an error, never a crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kube/config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)huygens::kube::ParseKubeconfig(text, "", "");
  return 0;
}
