#include "bench/fleet_sim/prober.h"

#include <google/protobuf/util/time_util.h>

namespace tupa::fleet_sim {
namespace {

std::shared_ptr<grpc::Channel> ReadChannel(const std::string& scheduler) {
  grpc::ChannelArguments args;
  args.SetInt("grpc.use_local_subchannel_pool", 1);
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  return grpc::CreateCustomChannel(scheduler,
                                   grpc::InsecureChannelCredentials(), args);
}

// One unary call's buffers, freed when it completes.
template <typename Req, typename Resp>
struct Call {
  grpc::ClientContext ctx;
  Req req;
  Resp resp;
  absl::Time began = absl::Now();
};

bool Terminal(v1::JobState s) {
  return s == v1::JOB_STATE_SUCCEEDED || s == v1::JOB_STATE_FAILED ||
         s == v1::JOB_STATE_CANCELLED;
}

}  // namespace

Prober::Prober(const std::string& scheduler, double hz, absl::Duration deadline,
               JobTracker* tracker, TimerQueue* timers, ErrorCounts* errors,
               ProbeLatencies* out)
    : hz_(hz),
      deadline_(deadline),
      tracker_(tracker),
      timers_(timers),
      errors_(errors),
      out_(out) {
  auto channel = ReadChannel(scheduler);
  jobs_ = v1::JobService::NewStub(channel);
  raw_ = std::make_unique<grpc::GenericStub>(channel);
}

void Prober::Start() {
  if (hz_ <= 0) return;
  const absl::Duration period = absl::Seconds(1 / hz_);
  // Staggered, so the three kinds do not arrive together.
  timers_->After(period * 0 / 3, [this] { Fire(Kind::kGetJob); });
  timers_->After(period * 1 / 3, [this] { Fire(Kind::kListJobs); });
  timers_->After(period * 2 / 3, [this] { Fire(Kind::kListWorkers); });
}

void Prober::Stop() {
  stop_ = true;
  absl::MutexLock lock(&mu_);
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return in_flight_ == 0;
  };
  mu_.AwaitWithTimeout(absl::Condition(&idle), deadline_ + absl::Seconds(2));
}

void Prober::Finished() {
  absl::MutexLock lock(&mu_);
  --in_flight_;
}

void Prober::Fire(Kind kind) {
  if (stop_.load()) return;
  timers_->After(absl::Seconds(1 / hz_), [this, kind] { Fire(kind); });
  const absl::Time deadline = absl::Now() + deadline_;
  const bool held = held_.load();
  auto record = [this, held](LatencySamples* lat, ErrorCounts* errs,
                             absl::Time began, const grpc::Status& s) {
    const double ms = absl::ToDoubleMilliseconds(absl::Now() - began);
    lat->Add(ms);
    if (lat == &out_->get_job)
      (held ? out_->held_get_job : out_->load_get_job).Add(ms);
    if (lat == &out_->list_jobs)
      (held ? out_->held_list_jobs : out_->load_list_jobs).Add(ms);
    if (lat == &out_->list_workers)
      (held ? out_->held_list_workers : out_->load_list_workers).Add(ms);
    if (!s.ok()) {
      errs->Add(s.error_code());
      errors_->Add(s.error_code());
    }
    Finished();
  };
  switch (kind) {
    case Kind::kGetJob: {
      std::optional<int64_t> id;
      {
        absl::MutexLock lock(&mu_);
        id = tracker_->RandomAcked(rng_);
        if (!id && !listed_ids_.empty())
          id = listed_ids_[rng_() % listed_ids_.size()];
        if (!id) return;
        ++in_flight_;
      }
      auto* c = new Call<v1::GetJobRequest, v1::Job>;
      c->req.set_id(*id);
      c->ctx.set_deadline(absl::ToChronoTime(deadline));
      jobs_->async()->GetJob(
          &c->ctx, &c->req, &c->resp, [this, c, record](grpc::Status s) {
            record(&out_->get_job, &out_->get_job_errors, c->began, s);
            delete c;
          });
      return;
    }
    case Kind::kListJobs: {
      {
        absl::MutexLock lock(&mu_);
        ++in_flight_;
      }
      auto* c = new Call<v1::ListJobsRequest, v1::ListJobsResponse>;
      c->req.set_limit(100);
      c->ctx.set_deadline(absl::ToChronoTime(deadline));
      jobs_->async()->ListJobs(
          &c->ctx, &c->req, &c->resp, [this, c, record](grpc::Status s) {
            if (s.ok() && c->resp.jobs_size() > 0) {
              absl::MutexLock lock(&mu_);
              listed_ids_.clear();
              for (const v1::Job& j : c->resp.jobs())
                listed_ids_.push_back(j.id());
            }
            record(&out_->list_jobs, &out_->list_jobs_errors, c->began, s);
            delete c;
          });
      return;
    }
    case Kind::kListWorkers: {
      {
        absl::MutexLock lock(&mu_);
        ++in_flight_;
      }
      // An empty ListWorkersRequest is zero bytes on the wire.
      auto* c = new Call<grpc::ByteBuffer, grpc::ByteBuffer>;
      grpc::Slice empty;
      c->req = grpc::ByteBuffer(&empty, 1);
      c->ctx.set_deadline(absl::ToChronoTime(deadline));
      raw_->UnaryCall(&c->ctx, "/tupa.v1.ClusterService/ListWorkers",
                      grpc::StubOptions(), &c->req, &c->resp,
                      [this, c, record](grpc::Status s) {
                        record(&out_->list_workers, &out_->list_workers_errors,
                               c->began, s);
                        delete c;
                      });
      return;
    }
  }
}

CompletionPoller::CompletionPoller(const std::string& scheduler, size_t batch,
                                   JobTracker* tracker, TimerQueue* timers,
                                   ErrorCounts* errors)
    : batch_(batch), tracker_(tracker), timers_(timers), errors_(errors) {
  jobs_ = v1::JobService::NewStub(ReadChannel(scheduler));
}

void CompletionPoller::Start() { Poll(); }

void CompletionPoller::Stop() { stop_ = true; }

void CompletionPoller::Poll() {
  if (stop_.load()) return;
  // One batch at a time: a slow scheduler is polled less, not harder.
  if (in_flight_.load() == 0) {
    for (int64_t id : tracker_->Outstanding(batch_)) {
      in_flight_.fetch_add(1);
      auto* c = new Call<v1::GetJobRequest, v1::Job>;
      c->req.set_id(id);
      c->ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
      jobs_->async()->GetJob(
          &c->ctx, &c->req, &c->resp, [this, c](grpc::Status s) {
            if (!s.ok()) {
              errors_->Add(s.error_code());
            } else if (Terminal(c->resp.state())) {
              tracker_->Completed(
                  c->resp.id(),
                  absl::FromUnixMillis(
                      google::protobuf::util::TimeUtil::TimestampToMilliseconds(
                          c->resp.finished_at())));
            }
            in_flight_.fetch_sub(1);
            delete c;
          });
    }
  }
  timers_->After(absl::Milliseconds(100), [this] { Poll(); });
}

}  // namespace tupa::fleet_sim
