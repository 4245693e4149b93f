// The text of Kubernetes' time fields: metav1.Time ("2026-12-03T02:49:07Z", whole seconds, as
// conditions' lastTransitionTime and creationTimestamp carry it) and metav1.MicroTime
// ("2026-12-03T02:49:07.123456Z", as events' eventTime and leases' renewTime carry it), both
// RFC 3339 in UTC (k8s.io/apimachinery/pkg/apis/meta/v1, time.go and micro_time.go).
//
// Thread-safety: pure functions.
#ifndef HUYGENS_KUBE_META_TIME_H_
#define HUYGENS_KUBE_META_TIME_H_

#include <chrono>
#include <string>

namespace huygens::kube {

// metav1.Time of `t`: seconds, the fraction dropped.
std::string MetaTime(std::chrono::system_clock::time_point t);

// metav1.MicroTime of `t`: six fractional digits, the rest dropped.
std::string MicroTime(std::chrono::system_clock::time_point t);

}  // namespace huygens::kube

#endif  // HUYGENS_KUBE_META_TIME_H_
