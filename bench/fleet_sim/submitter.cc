#include "bench/fleet_sim/submitter.h"

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"

namespace tupa::fleet_sim {

// One client: one channel, one call at a time; the next call starts from
// the completion of the previous one.
class Submitter::Client {
 public:
  explicit Client(Submitter* owner) : owner_(owner) {
    grpc::ChannelArguments args;
    args.SetInt("grpc.use_local_subchannel_pool", 1);
    args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);  // we retry, with the same key
    stub_ = v1::JobService::NewStub(grpc::CreateCustomChannel(
        owner_->options_.scheduler, grpc::InsecureChannelCredentials(), args));
  }

  void Next() {
    const long index = owner_->next_.fetch_add(1);
    if (owner_->stop_.load() || index >= owner_->options_.jobs) {
      owner_->ClientDone();
      return;
    }
    // Paced: job `index` is due index / rate seconds after the start.
    if (owner_->options_.rate > 0) {
      const absl::Time due =
          owner_->first_start_ +
          absl::Seconds(static_cast<double>(index) / owner_->options_.rate);
      const absl::Duration wait = due - absl::Now();
      if (wait > absl::ZeroDuration()) {
        owner_->timers_->After(wait, [this, index] { Begin(index); });
        return;
      }
    }
    Begin(index);
  }

 private:
  void Begin(long index) {
    req_.Clear();
    *req_.mutable_spec() = owner_->mix_->Spec(index);
    req_.set_idempotency_key(absl::StrCat(owner_->options_.key_prefix, index));
    tries_ = 0;
    began_ = absl::Now();
    Call();
  }

  void Call() {
    ++tries_;
    resp_.Clear();
    ctx_ = std::make_unique<grpc::ClientContext>();
    ctx_->set_deadline(
        absl::ToChronoTime(absl::Now() + owner_->options_.deadline));
    stub_->async()->SubmitJob(ctx_.get(), &req_, &resp_,
                              [this](grpc::Status s) { Done(s); });
  }

  void Done(const grpc::Status& s) {
    const absl::Time now = absl::Now();
    if (s.ok()) {
      owner_->acks_->Add(absl::ToDoubleMilliseconds(now - began_));
      owner_->tracker_->Acked(resp_.job().id(), now);
      {
        absl::MutexLock lock(&owner_->mu_);
        if (now > owner_->last_ack_) owner_->last_ack_ = now;
      }
      Next();
      return;
    }
    owner_->errors_->Add(s.error_code());
    const bool retry = s.error_code() == grpc::StatusCode::UNAVAILABLE ||
                       s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
    if (retry && tries_ < owner_->options_.max_tries && !owner_->stop_.load()) {
      owner_->timers_->After(absl::Milliseconds(100 * std::min(tries_, 10)),
                             [this] { Call(); });
      return;
    }
    owner_->tracker_->SubmitFailed();
    Next();
  }

  Submitter* const owner_;
  std::unique_ptr<v1::JobService::Stub> stub_;
  std::unique_ptr<grpc::ClientContext> ctx_;
  v1::SubmitJobRequest req_;
  v1::SubmitJobResponse resp_;
  int tries_ = 0;
  absl::Time began_;
};

Submitter::Submitter(SubmitterOptions options, const JobMix* mix,
                     JobTracker* tracker, TimerQueue* timers,
                     ErrorCounts* errors, LatencySamples* acks)
    : options_(std::move(options)),
      mix_(mix),
      tracker_(tracker),
      timers_(timers),
      errors_(errors),
      acks_(acks) {}

Submitter::~Submitter() {
  Stop();
  Wait(absl::Now() + options_.deadline + absl::Seconds(5));
}

void Submitter::Start() {
  first_start_ = absl::Now();
  {
    absl::MutexLock lock(&mu_);
    running_ = options_.clients;
    last_ack_ = first_start_;
  }
  for (int i = 0; i < options_.clients; ++i)
    clients_.push_back(std::make_unique<Client>(this));
  for (auto& c : clients_) c->Next();
}

void Submitter::Stop() { stop_ = true; }

void Submitter::ClientDone() {
  absl::MutexLock lock(&mu_);
  --running_;
}

bool Submitter::Wait(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  auto done = [this]()
                  ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return running_ <= 0; };
  return mu_.AwaitWithDeadline(absl::Condition(&done), deadline);
}

absl::Time Submitter::last_ack() {
  absl::MutexLock lock(&mu_);
  return last_ack_;
}

}  // namespace tupa::fleet_sim
