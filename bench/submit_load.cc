// tupa-bench-submit-load: N concurrent gRPC clients submitting jobs to a
// running scheduler for a fixed time; prints {"jobs_per_s": ...}. Each
// submit is acknowledged only after the scheduler committed it, so this is
// durable submissions per second. Used by bench/submit.sh.
//
// Each client has its own channel and exactly one call outstanding: the
// next call starts from the completion of the previous one (callback API),
// so the generator needs no thread per client on the shared CPU.
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "tupa/v1/job_service.grpc.pb.h"

namespace {

struct Totals {
  std::atomic<long> done{0}, failed{0};
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::condition_variable idle;
  int running = 0;  // clients with a call outstanding (guarded by mu)
};

class Client {
 public:
  Client(const std::string& target, std::string key_prefix, Totals* totals)
      : key_prefix_(std::move(key_prefix)), totals_(totals) {
    // One channel per client, like separate CLI processes would have, with
    // the CLI's arguments (client/connection.cc): no transparent retries
    // (the CLI retries with its idempotency key), no channelz.
    grpc::ChannelArguments args;
    args.SetInt("grpc.use_local_subchannel_pool", 1);
    args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
    args.SetInt(GRPC_ARG_ENABLE_CHANNELZ, 0);
    stub_ = tupa::v1::JobService::NewStub(grpc::CreateCustomChannel(
        target, grpc::InsecureChannelCredentials(), args));
    req_.mutable_spec()->set_name("bench");
    req_.mutable_spec()->add_command("true");
  }

  void Start() { Next(); }

 private:
  void Next() {
    if (totals_->stop.load(std::memory_order_relaxed)) {
      std::lock_guard<std::mutex> lock(totals_->mu);
      if (--totals_->running == 0) totals_->idle.notify_all();
      return;
    }
    req_.set_idempotency_key(key_prefix_ + std::to_string(sent_++));
    resp_.Clear();
    ctx_ = std::make_unique<grpc::ClientContext>();
    ctx_->set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(30));
    stub_->async()->SubmitJob(ctx_.get(), &req_, &resp_,
                              [this](grpc::Status status) {
                                (status.ok() ? totals_->done : totals_->failed)
                                    .fetch_add(1, std::memory_order_relaxed);
                                Next();
                              });
  }

  const std::string key_prefix_;
  Totals* const totals_;
  std::unique_ptr<tupa::v1::JobService::Stub> stub_;
  std::unique_ptr<grpc::ClientContext> ctx_;
  tupa::v1::SubmitJobRequest req_;
  tupa::v1::SubmitJobResponse resp_;
  long sent_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s SCHEDULER CLIENTS SECONDS\n", argv[0]);
    return 2;
  }
  // As in the daemons (common/daemon.cc): no debug-build deadlock detector.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  const std::string target = argv[1];
  const int clients = std::atoi(argv[2]);
  const double seconds = std::atof(argv[3]);
  Totals totals;
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::unique_ptr<Client>> all;
  for (int c = 0; c < clients; ++c)
    all.push_back(std::make_unique<Client>(
        target,
        "bench-" + std::to_string(start.time_since_epoch().count()) + "-" +
            std::to_string(c) + "-",
        &totals));
  totals.running = clients;
  for (auto& client : all) client->Start();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  totals.stop = true;
  {
    std::unique_lock<std::mutex> lock(totals.mu);
    totals.idle.wait(lock, [&] { return totals.running == 0; });
  }
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::printf("{\"jobs_per_s\": %.1f, \"jobs\": %ld, \"failed\": %ld}\n",
              totals.done.load() / elapsed, totals.done.load(),
              totals.failed.load());
  return totals.failed.load() == 0 ? 0 : 1;
}
