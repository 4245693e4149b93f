#include "sched/toleration.h"

namespace huygens::sched {

bool ToleratesTaint(const Toleration& toleration, const Taint& taint) {
  if (toleration.effect.has_value() && *toleration.effect != taint.effect) return false;
  if (!toleration.key.empty() && toleration.key != taint.key) return false;
  switch (toleration.op) {
    case TolerationOperator::kExists: return true;
    case TolerationOperator::kEqual: return toleration.value == taint.value;
  }
  return false;
}

bool TaintTolerated(std::span<const Toleration> tolerations, const Taint& taint) {
  for (const Toleration& t : tolerations) {
    if (ToleratesTaint(t, taint)) return true;
  }
  return false;
}

const Taint* FirstUntoleratedHardTaint(std::span<const Toleration> tolerations, std::span<const Taint> taints) {
  for (const Taint& taint : taints) {
    if (taint.effect == TaintEffect::kPreferNoSchedule) continue;
    if (!TaintTolerated(tolerations, taint)) return &taint;
  }
  return nullptr;
}

}  // namespace huygens::sched
