// FakePodResources: kubelet's pod resources API v1 served in-process on a unix socket, answering
// GetAllocatableResources and List from the responses a test sets, for the agent's
// PodResourcesReader (agent/pod_resources.h).
//
// Thread-safety: set the responses before the reader asks; gRPC's threads read them.
#ifndef HUYGENS_AGENT_TESTING_FAKE_POD_RESOURCES_H_
#define HUYGENS_AGENT_TESTING_FAKE_POD_RESOURCES_H_

#include <memory>
#include <string>
#include <vector>

#include "agent/podresources_api/podresources.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace huygens::agent::testing {

class FakePodResources final : public v1::PodResourcesLister::Service {
 public:
  // Serves on `socket` (a path); server() is null when that failed.
  explicit FakePodResources(const std::string& socket) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + socket, grpc::InsecureServerCredentials());
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  ~FakePodResources() override {
    if (server_) server_->Shutdown();
  }
  grpc::Server* server() const { return server_.get(); }

  // Adds `ids` of `resource` on NUMA node `numa` to the allocatable devices.
  void AddAllocatable(const std::string& resource, const std::vector<std::string>& ids,
                      int numa) {
    Add(allocatable_.mutable_devices(), resource, ids, numa);
  }
  // Lists `ids` of `resource` on NUMA node `numa` as given to a container.
  void AddInUse(const std::string& resource, const std::vector<std::string>& ids, int numa) {
    v1::ContainerResources* c = list_.add_pod_resources()->add_containers();
    c->set_name("c");
    Add(c->mutable_devices(), resource, ids, numa);
  }

  grpc::Status GetAllocatableResources(grpc::ServerContext*,
                                       const v1::AllocatableResourcesRequest*,
                                       v1::AllocatableResourcesResponse* out) override {
    *out = allocatable_;
    return grpc::Status::OK;
  }
  grpc::Status List(grpc::ServerContext*, const v1::ListPodResourcesRequest*,
                    v1::ListPodResourcesResponse* out) override {
    *out = list_;
    return grpc::Status::OK;
  }

 private:
  static void Add(google::protobuf::RepeatedPtrField<v1::ContainerDevices>* into,
                  const std::string& resource, const std::vector<std::string>& ids, int numa) {
    v1::ContainerDevices* d = into->Add();
    d->set_resource_name(resource);
    for (const std::string& id : ids) d->add_device_ids(id);
    d->mutable_topology()->add_nodes()->set_id(numa);
  }

  v1::AllocatableResourcesResponse allocatable_;
  v1::ListPodResourcesResponse list_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace huygens::agent::testing

#endif  // HUYGENS_AGENT_TESTING_FAKE_POD_RESOURCES_H_
