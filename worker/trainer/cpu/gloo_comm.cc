#include "worker/trainer/cpu/gloo_comm.h"

#include <chrono>
#include <exception>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gloo/allreduce.h"
#include "gloo/broadcast.h"
#include "gloo/math.h"
#include "gloo/rendezvous/context.h"
#include "gloo/rendezvous/prefix_store.h"
#include "gloo/rendezvous/store.h"
#include "gloo/transport/tcp/device.h"

namespace tupa::trainer {
namespace {

// Adapts KvStore to Gloo's store interface. Gloo expects exceptions on
// failure, so errors are thrown here and caught by GlooComm's callers.
class GlooStoreAdapter : public gloo::rendezvous::Store {
 public:
  GlooStoreAdapter(KvStore& store, absl::Duration timeout)
      : store_(store), timeout_(timeout) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    absl::Status s =
        store_.Set(key, absl::string_view(data.data(), data.size()));
    if (!s.ok()) throw std::runtime_error(s.ToString());
  }
  std::vector<char> get(const std::string& key) override {
    absl::StatusOr<std::string> v = store_.Get(key, timeout_);
    if (!v.ok()) throw std::runtime_error(v.status().ToString());
    return std::vector<char>(v->begin(), v->end());
  }
  void wait(const std::vector<std::string>& keys) override {
    wait(keys, std::chrono::milliseconds(absl::ToInt64Milliseconds(timeout_)));
  }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    absl::Status s = store_.Wait(keys, absl::Milliseconds(timeout.count()));
    if (!s.ok()) throw std::runtime_error(s.ToString());
  }

 private:
  KvStore& store_;
  absl::Duration timeout_;
};

absl::Status GlooError(const char* what, const std::exception& e) {
  return absl::UnavailableError(absl::StrCat("gloo ", what, ": ", e.what()));
}

}  // namespace

GlooComm::~GlooComm() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

absl::Status GlooComm::Init(KvStore& store, int rank, int world_size,
                            const std::string& bind_address,
                            absl::Duration timeout, const std::string& prefix) {
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = bind_address;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto context =
        std::make_shared<gloo::rendezvous::Context>(rank, world_size);
    context->setTimeout(
        std::chrono::milliseconds(absl::ToInt64Milliseconds(timeout)));
    GlooStoreAdapter adapter(store, timeout);
    gloo::rendezvous::PrefixStore prefixed(prefix, adapter);
    context->connectFullMesh(prefixed, device);
    context_ = std::move(context);
  } catch (const std::exception& e) {
    return GlooError("rendezvous", e);
  }
  thread_ = std::thread([this] { CommLoop(); });
  return absl::OkStatus();
}

absl::Status GlooComm::AllReduceSumAsync(float* data, size_t n) {
  if (context_ == nullptr) {
    return absl::FailedPreconditionError("GlooComm not initialised");
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!error_.ok()) return error_;
  queue_.push_back(Work{data, n});
  cv_.notify_all();
  return absl::OkStatus();
}

absl::Status GlooComm::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return queue_.empty() && in_flight_ == 0; });
  return error_;
}

absl::Status GlooComm::Broadcast(void* data, size_t bytes, int root) {
  if (context_ == nullptr) {
    return absl::FailedPreconditionError("GlooComm not initialised");
  }
  if (absl::Status s = Wait(); !s.ok()) return s;
  try {
    gloo::BroadcastOptions opts(context_);
    opts.setOutput(static_cast<char*>(data), bytes);
    opts.setRoot(root);
    opts.setTag(tag_++);
    gloo::broadcast(opts);
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> lock(mu_);
    error_ = GlooError("broadcast", e);
    return error_;
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status GlooComm::AllReduceNow(T* data, size_t n) {
  if (context_ == nullptr) {
    return absl::FailedPreconditionError("GlooComm not initialised");
  }
  if (absl::Status s = Wait(); !s.ok()) return s;
  try {
    gloo::AllreduceOptions opts(context_);
    opts.setOutput(data, n);
    opts.setReduceFunction(
        static_cast<void (*)(void*, const void*, const void*, size_t)>(
            &gloo::sum<T>));
    opts.setTag(tag_++);
    gloo::allreduce(opts);
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> lock(mu_);
    error_ = GlooError("allreduce", e);
    return error_;
  }
  return absl::OkStatus();
}

absl::Status GlooComm::AllReduceSumNow(float* data, size_t n) {
  return AllReduceNow(data, n);
}

absl::Status GlooComm::AllReduceSumNow(double* data, size_t n) {
  return AllReduceNow(data, n);
}

void GlooComm::CommLoop() {
  while (true) {
    Work work;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      work = queue_.front();
      queue_.pop_front();
      ++in_flight_;
      if (!error_.ok()) {  // drop work after a failure
        --in_flight_;
        cv_.notify_all();
        continue;
      }
    }
    absl::Status status;
    try {
      gloo::AllreduceOptions opts(context_);
      opts.setOutput(work.data, work.n);
      opts.setReduceFunction(
          static_cast<void (*)(void*, const void*, const void*, size_t)>(
              &gloo::sum<float>));
      opts.setTag(tag_++);
      gloo::allreduce(opts);
    } catch (const std::exception& e) {
      status = GlooError("allreduce", e);
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (!status.ok() && error_.ok()) error_ = status;
    --in_flight_;
    cv_.notify_all();
  }
}

}  // namespace tupa::trainer
