// FakeDevicePlugin: a device plugin (kubelet's device plugin API v1beta1) served in-process on a
// unix socket in kubelet's device-plugins folder, for end-to-end tests against a real kubelet:
// it registers one resource with kubelet's device manager, lists its devices (healthy, each on
// one NUMA node) and answers Allocate with nothing to mount or set, so that kubelet gives the
// devices to containers and reports them in its pod resources API like those of a real GPU.
//
// Thread-safety: construct and destroy on one thread; gRPC's threads serve the calls.
#ifndef HUYGENS_AGENT_TESTING_FAKE_DEVICE_PLUGIN_H_
#define HUYGENS_AGENT_TESTING_FAKE_DEVICE_PLUGIN_H_

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "agent/testing/deviceplugin_api/deviceplugin.grpc.pb.h"
#include "fmt/format.h"
#include "grpcpp/grpcpp.h"

namespace huygens::agent::testing {

class FakeDevicePlugin final : public v1beta1::DevicePlugin::Service {
 public:
  // One device of the resource: its id and the NUMA node it hangs off.
  struct Device {
    std::string id;
    int numa = 0;
  };

  // Serves `devices` of `resource` (e.g. "example.com/gpu") on `folder`/`endpoint` (kubelet's
  // device-plugins folder, /var/lib/kubelet/device-plugins for a kubelet v1.35, which does not
  // follow --root-dir there). server() is null when that failed.
  FakeDevicePlugin(std::filesystem::path folder, std::string endpoint, std::string resource,
                   std::vector<Device> devices)
      : folder_(std::move(folder)),
        endpoint_(std::move(endpoint)),
        resource_(std::move(resource)),
        devices_(std::move(devices)) {
    std::filesystem::remove(folder_ / endpoint_);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + (folder_ / endpoint_).string(), grpc::InsecureServerCredentials());
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  ~FakeDevicePlugin() override {
    stopping_ = true;
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    std::filesystem::remove(folder_ / endpoint_);
  }
  grpc::Server* server() const { return server_.get(); }

  // Registers with kubelet's device manager (`folder`/kubelet.sock). Errors: the gRPC status
  // as an absl status naming the call (kubelet not listening, a refused registration).
  absl::Status Register() const {
    auto channel = grpc::CreateChannel("unix:" + (folder_ / "kubelet.sock").string(),
                                       grpc::InsecureChannelCredentials());
    auto stub = v1beta1::Registration::NewStub(channel);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1beta1::RegisterRequest request;
    request.set_version("v1beta1");
    request.set_endpoint(endpoint_);
    request.set_resource_name(resource_);
    v1beta1::Empty empty;
    grpc::Status s = stub->Register(&context, request, &empty);
    if (s.ok()) return absl::OkStatus();
    return absl::UnavailableError(fmt::format("Register {} with kubelet: {} (gRPC code {})", resource_,
                                              s.error_message(), static_cast<int>(s.error_code())));
  }

  // How many Allocate calls kubelet made.
  int allocations() const { return allocations_; }

  grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                      v1beta1::DevicePluginOptions*) override {
    return grpc::Status::OK;
  }
  // Sends the devices once, then holds the stream open until kubelet or the destructor ends it.
  grpc::Status ListAndWatch(grpc::ServerContext* context, const v1beta1::Empty*,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override {
    v1beta1::ListAndWatchResponse response;
    for (const Device& d : devices_) {
      v1beta1::Device* out = response.add_devices();
      out->set_id(d.id);
      out->set_health("Healthy");
      out->mutable_topology()->add_nodes()->set_id(d.numa);
    }
    if (!writer->Write(response)) return grpc::Status::CANCELLED;
    while (!stopping_ && !context->IsCancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return grpc::Status::OK;
  }
  grpc::Status Allocate(grpc::ServerContext*, const v1beta1::AllocateRequest* request,
                        v1beta1::AllocateResponse* response) override {
    ++allocations_;
    for (int i = 0; i < request->container_requests_size(); ++i) response->add_container_responses();
    return grpc::Status::OK;
  }

 private:
  std::filesystem::path folder_;
  std::string endpoint_;
  std::string resource_;
  std::vector<Device> devices_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> allocations_{0};
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace huygens::agent::testing

#endif  // HUYGENS_AGENT_TESTING_FAKE_DEVICE_PLUGIN_H_
