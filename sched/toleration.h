// Taint and toleration matching, as Kubernetes defines it (core/v1 Toleration.ToleratesTaint).
//
// Thread-safety: pure functions.
#ifndef HUYGENS_SCHED_TOLERATION_H_
#define HUYGENS_SCHED_TOLERATION_H_

#include <span>

#include "sched/node.h"
#include "sched/pod.h"

namespace huygens::sched {

// True when `toleration` tolerates `taint`: the effect is unset or equal; the key is empty
// (with Exists: every key) or equal; Exists matches any value, Equal needs the same value.
bool ToleratesTaint(const Toleration& toleration, const Taint& taint);

// True when some toleration tolerates the taint.
bool TaintTolerated(std::span<const Toleration> tolerations, const Taint& taint);

// The first of `taints` with effect NoSchedule or NoExecute that no toleration tolerates
// (kube-scheduler's FindMatchingUntoleratedTaint with DoNotScheduleTaintsFilterFunc); nullptr
// when there is none. The pointer is into `taints`.
const Taint* FirstUntoleratedHardTaint(std::span<const Toleration> tolerations, std::span<const Taint> taints);

}  // namespace huygens::sched

#endif  // HUYGENS_SCHED_TOLERATION_H_
