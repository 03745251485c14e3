// tupa-bench-submit-load: N concurrent gRPC clients submitting jobs to a
// running scheduler for a fixed time; prints {"jobs_per_s": ...}. Each
// submit is acknowledged only after the scheduler committed it, so this is
// durable submissions per second. Used by bench/submit.sh.
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "tupa/v1/job_service.grpc.pb.h"

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s SCHEDULER CLIENTS SECONDS\n", argv[0]);
    return 2;
  }
  const std::string target = argv[1];
  const int clients = std::atoi(argv[2]);
  const double seconds = std::atof(argv[3]);
  std::atomic<long> done{0}, failed{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  const auto start = std::chrono::steady_clock::now();
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      // One channel per client, like separate CLI processes would have.
      grpc::ChannelArguments args;
      args.SetInt("grpc.use_local_subchannel_pool", 1);
      auto channel = grpc::CreateCustomChannel(
          target, grpc::InsecureChannelCredentials(), args);
      auto stub = tupa::v1::JobService::NewStub(channel);
      for (long i = 0; !stop.load(std::memory_order_relaxed); ++i) {
        tupa::v1::SubmitJobRequest req;
        req.mutable_spec()->set_name("bench");
        req.mutable_spec()->add_command("true");
        req.set_idempotency_key(
            "bench-" + std::to_string(start.time_since_epoch().count()) + "-" +
            std::to_string(c) + "-" + std::to_string(i));
        tupa::v1::SubmitJobResponse resp;
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(30));
        if (stub->SubmitJob(&ctx, req, &resp).ok()) {
          done.fetch_add(1, std::memory_order_relaxed);
        } else {
          failed.fetch_add(1, std::memory_order_relaxed);
        }
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : threads) t.join();
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::printf("{\"jobs_per_s\": %.1f, \"jobs\": %ld, \"failed\": %ld}\n",
              done.load() / elapsed, done.load(), failed.load());
  return failed.load() == 0 ? 0 : 1;
}
