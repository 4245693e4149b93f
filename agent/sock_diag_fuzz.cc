// Fuzzes the sock_diag reply parser: any bytes parse into connections or give an error, never a
// crash; a whole-dump parse succeeds exactly when the chunk parse does and saw NLMSG_DONE, with
// the same connections.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "agent/sock_diag.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto chunk = huygens::agent::ParseSockDiagChunk(bytes);
  auto dump = huygens::agent::ParseSockDiagDump(bytes);
  if (dump.ok() != (chunk.ok() && chunk->done)) std::abort();
  if (dump.ok() && *dump != chunk->connections) std::abort();
  if (!dump.ok() && dump.status().message().empty()) std::abort();
  return 0;
}
