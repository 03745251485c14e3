#include "worker/trainer/trainer.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/checkpoint_fence.h"
#include "common/status_macros.h"
#include "common/train_parallel_spec.h"
#include "common/train_defaults.h"
#include "worker/trainer/checkpoint.h"
#include "worker/trainer/cpu/cpu_backend.h"
#include "worker/trainer/grad_buckets.h"
#include "worker/trainer/loader.h"
#include "worker/trainer/loss_scaler.h"
#include "worker/trainer/mlp.h"
#include "worker/trainer/tcp_store.h"

namespace tupa::trainer {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// The local address the peers can reach: the one this host uses to talk
// to MASTER_ADDR (loopback when the master is local).
std::string LocalAddressFacing(const std::string& master) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(master.c_str(), "9", &hints, &res) != 0) {
    return "127.0.0.1";
  }
  std::string out = "127.0.0.1";
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && ::connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
    sockaddr_in local{};
    socklen_t len = sizeof(local);
    char buf[INET_ADDRSTRLEN];
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0 &&
        ::inet_ntop(AF_INET, &local.sin_addr, buf, sizeof(buf)) != nullptr) {
      out = buf;
    }
  }
  if (fd >= 0) ::close(fd);
  ::freeaddrinfo(res);
  return out;
}

uint64_t Fnv1a(const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < bytes; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

absl::StatusOr<std::unique_ptr<Backend>> MakeBackend(const std::string& name,
                                                     Precision precision,
                                                     int local_rank) {
  if (name == "auto") {
#ifdef TUPA_WITH_CUDA
    auto cuda = CreateBackend(BackendKind::kCuda, precision, local_rank);
    if (cuda.ok()) return cuda;
#endif
    return CreateBackend(BackendKind::kCpu, precision, local_rank);
  }
  ASSIGN_OR_RETURN(BackendKind kind, ParseBackendKind(name));
  return CreateBackend(kind, precision, local_rank);
}

// One run of the engine; RunTraining's state.
class Run {
 public:
  Run(const TrainConfig& config, const RunOptions& options, std::ostream& out)
      : config_(config), options_(options), out_(out) {}
  ~Run() {
    loader_.reset();  // before the buffers it uses go
  }

  absl::StatusOr<RunSummary> Execute();

 private:
  absl::Status Setup();
  absl::Status RestoreOrInit();
  absl::Status SaveCheckpoint(int64_t step, double last_loss);
  absl::Status Evaluate();
  absl::StatusOr<double> ReadLoss();
  absl::StatusOr<uint64_t> ParamChecksum();
  absl::Status RestoreShards(std::optional<CheckpointState>& ckpt);
  absl::StatusOr<double> GradSquaredNorm();
  bool Logs() const { return options_.rank == 0 || options_.log_all_ranks; }
  // Tensor-parallel groups are adjacent ranks (backend.h "Groups").
  int tensor() const { return config_.tensor_parallel; }
  int tp_rank() const { return options_.rank % tensor(); }
  int dp_rank() const { return options_.rank / tensor(); }
  int dp_size() const { return options_.world_size / tensor(); }
  std::string Layout() const { return absl::StrCat(tensor(), "x", dp_size()); }
  std::string ShardDir() const {
    return ShardCheckpointDir(options_.checkpoint_dir, tp_rank(), tensor());
  }
  // Epochs the run touches (the last one may be partial with `steps`).
  int64_t TotalEpochs() const {
    const int64_t per_epoch = std::max<int64_t>(1, sampler_->steps_per_epoch());
    return (total_steps_ + per_epoch - 1) / per_epoch;
  }
  int64_t global_batch() const {
    return static_cast<int64_t>(config_.batch_size) * dp_size();
  }

  const TrainConfig& config_;
  const RunOptions& options_;
  std::ostream& out_;

  std::unique_ptr<Backend> backend_;
  std::unique_ptr<TcpStoreServer> store_server_;
  std::unique_ptr<TcpStoreClient> store_;
  std::optional<DataSplits> data_;
  std::unique_ptr<ShardSampler> sampler_;
  std::unique_ptr<Mlp> mlp_;
  std::unique_ptr<Optimizer> optimizer_;
  LossScaler scaler_;
  std::unique_ptr<BatchLoader> loader_;
  int64_t total_steps_ = 0;
  int64_t start_step_ = 0;
  int64_t optimizer_steps_ = 0;
  double last_loss_ = 0.0;
  int64_t param_bytes_ = 0;
  RunSummary summary_;
};

absl::Status Run::Setup() {
  ASSIGN_OR_RETURN(backend_, MakeBackend(options_.backend, config_.precision,
                                         options_.local_rank));
  if (backend_->name() == "cpu" && options_.cpu_threads > 0) {
    SetBlasThreads(options_.cpu_threads);
  }
  if (config_.tensor_parallel < 1 ||
      options_.world_size % config_.tensor_parallel != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("train.parallel.tensor: ", config_.tensor_parallel,
                     " does not divide WORLD_SIZE ", options_.world_size));
  }
  if (options_.world_size > 1) {
    if (options_.rank == 0) {
      ASSIGN_OR_RETURN(store_server_,
                       TcpStoreServer::Start(options_.master_port));
    }
    ASSIGN_OR_RETURN(store_, TcpStoreClient::Connect(options_.master_addr,
                                                     options_.master_port,
                                                     options_.timeout));
    CollectiveOptions copts;
    copts.bind_address = LocalAddressFacing(options_.master_addr);
    copts.timeout = options_.timeout;
    copts.tensor_parallel = tensor();
    RETURN_IF_ERROR(backend_->InitCollectives(*store_, options_.rank,
                                              options_.world_size, copts));
  }
  const std::vector<int>& w = config_.widths;
  ASSIGN_OR_RETURN(data_,
                   LoadData(config_.data, w.front(), w.back(), config_.seed));
  // Every rank of a tensor-parallel group reads the same batch: the epoch
  // is sharded over the data-parallel replicas only.
  sampler_ =
      std::make_unique<ShardSampler>(data_->train.size(), dp_rank(), dp_size(),
                                     config_.batch_size, config_.seed);
  if (sampler_->steps_per_epoch() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "batch_size: ", config_.batch_size, " x data-parallel ", dp_size(),
        " exceeds the ", data_->train.size(), " training samples"));
  }
  total_steps_ = config_.steps > 0
                     ? config_.steps
                     : config_.epochs * sampler_->steps_per_epoch();
  ASSIGN_OR_RETURN(
      mlp_, Mlp::Create(backend_.get(), w, std::max(config_.batch_size, 512),
                        tensor(), tp_rank()));
  ASSIGN_OR_RETURN(
      optimizer_,
      Optimizer::Create(backend_.get(), config_.optimizer, mlp_->num_params()));
  const size_t floats = mlp_->num_params() * 2 + optimizer_->state_size(0) +
                        optimizer_->state_size(1);
  param_bytes_ = static_cast<int64_t>(floats * sizeof(float));
  LossScalerOptions sopts;
  sopts.enabled = config_.precision == Precision::kFp16;
  scaler_ = LossScaler(sopts);
  return absl::OkStatus();
}

absl::Status Run::RestoreOrInit() {
  // Rank 0 decides: its newest checkpoint (if any) is the state of record,
  // sent to every rank like DDP's initial parameter broadcast. Under tensor
  // parallelism the ranks of the first data-parallel group each read their
  // shard, at the newest step every shard has, and send it to the ranks
  // holding the same shard.
  std::optional<CheckpointState> ckpt;
  if (!options_.checkpoint_dir.empty()) {
    if (options_.rank == 0) {
      RETURN_IF_ERROR(
          CheckCheckpointTensorLayout(options_.checkpoint_dir, tensor()));
    }
    if (tensor() > 1) {
      RETURN_IF_ERROR(RestoreShards(ckpt));
    } else if (options_.rank == 0) {
      // Before the resume point is read: from now on no older attempt can
      // publish into the directory.
      RETURN_IF_ERROR(
          RaiseCheckpointFence(options_.checkpoint_dir, options_.attempt));
      ASSIGN_OR_RETURN(auto newest,
                       ReadNewestGoodCheckpoint(options_.checkpoint_dir));
      if (newest.has_value()) ckpt = std::move(newest->second);
    }
  }
  if (ckpt.has_value()) {
    const std::string path =
        absl::StrFormat("%s/ckpt-%012d.bin", ShardDir(), ckpt->step);
    const CheckpointState& s = *ckpt;
    std::vector<int32_t> widths(config_.widths.begin(), config_.widths.end());
    if (s.widths != widths || s.optimizer != config_.optimizer.name ||
        s.params.size() != mlp_->num_params()) {
      return absl::FailedPreconditionError(absl::StrCat(
          path, " was written for a different model or optimizer"));
    }
    // The data order and every RNG stream are functions of (seed, step,
    // world size): continuing under others would not be this run.
    if (s.seed != config_.seed || s.world_size != options_.world_size) {
      return absl::FailedPreconditionError(
          absl::StrCat(path, " was written by a run with seed ", s.seed,
                       " and world size ", s.world_size, "; this run has seed ",
                       config_.seed, " and world size ", options_.world_size));
    }
  }
  const size_t n = mlp_->num_params();
  if (ckpt.has_value()) {
    RETURN_IF_ERROR(backend_->CopyToDevice(mlp_->params(), ckpt->params.data(),
                                           n * sizeof(float)));
    const std::vector<float>* states[2] = {&ckpt->state0, &ckpt->state1};
    for (int i = 0; i < 2; ++i) {
      if (optimizer_->state_size(i) == 0) continue;
      if (states[i]->size() != n) {
        return absl::DataLossError("checkpoint optimizer state size");
      }
      RETURN_IF_ERROR(backend_->CopyToDevice(
          optimizer_->state(i), states[i]->data(), n * sizeof(float)));
    }
    start_step_ = ckpt->step;
    optimizer_steps_ = ckpt->optimizer_steps;
    scaler_.Restore(ckpt->loss_scale, ckpt->good_steps);
    last_loss_ = ckpt->last_loss;
  } else {
    RETURN_IF_ERROR(mlp_->InitParams(config_.seed));
  }
  if (options_.world_size > 1) {
    if (options_.rank == 0) {
      // Written once the state of record is known (after the shards agreed).
      RETURN_IF_ERROR(store_->Set(
          "tupa/resume",
          absl::StrFormat("%d,%d,%.9g,%d,%.17g", start_step_, optimizer_steps_,
                          scaler_.scale(), scaler_.good_steps(), last_loss_)));
    } else {
      ASSIGN_OR_RETURN(std::string v,
                       store_->Get("tupa/resume", options_.timeout));
      std::vector<std::string> f = absl::StrSplit(v, ',');
      float scale = 1;
      int64_t good = 0;
      if (f.size() != 5 || !absl::SimpleAtoi(f[0], &start_step_) ||
          !absl::SimpleAtoi(f[1], &optimizer_steps_) ||
          !absl::SimpleAtof(f[2], &scale) || !absl::SimpleAtoi(f[3], &good) ||
          !absl::SimpleAtod(f[4], &last_loss_)) {
        return absl::InternalError("bad tupa/resume record: " + v);
      }
      scaler_.Restore(scale, good);
    }
    RETURN_IF_ERROR(backend_->Broadcast(mlp_->params(), n * sizeof(float), 0));
    for (int i = 0; i < 2; ++i) {
      if (optimizer_->state_size(i) == 0) continue;
      RETURN_IF_ERROR(
          backend_->Broadcast(optimizer_->state(i), n * sizeof(float), 0));
    }
  }
  return backend_->OnParamsUpdated(mlp_->params(), n);
}

absl::Status Run::RestoreShards(std::optional<CheckpointState>& ckpt) {
  // Only the first data-parallel group reads; the others get the shards by
  // broadcast. Every reader lists the steps its shard has whole, rank 0
  // picks the newest step all shards have (a kill between two shards'
  // writes leaves one a checkpoint ahead; two are kept).
  if (dp_rank() != 0) return absl::OkStatus();
  const std::string dir = ShardDir();
  if (options_.rank == 0) {
    RETURN_IF_ERROR(
        RaiseCheckpointFence(options_.checkpoint_dir, options_.attempt));
  }
  RETURN_IF_ERROR(RaiseCheckpointFence(dir, options_.attempt));
  ASSIGN_OR_RETURN(auto good, ReadGoodCheckpoints(dir));
  std::vector<std::string> steps;
  for (const auto& [path, state] : good)
    steps.push_back(absl::StrCat(state.step));
  int64_t chosen = 0;
  if (options_.rank == 0) {
    std::map<int64_t, int> have;  // step -> shards holding it
    for (const auto& [path, state] : good) ++have[state.step];
    for (int t = 1; t < tensor(); ++t) {
      ASSIGN_OR_RETURN(
          std::string v,
          store_->Get(absl::StrCat("tupa/ckpt_steps/", t), options_.timeout));
      for (absl::string_view f : absl::StrSplit(v, ',', absl::SkipEmpty())) {
        int64_t step;
        if (!absl::SimpleAtoi(f, &step)) {
          return absl::InternalError("bad tupa/ckpt_steps record: " + v);
        }
        ++have[step];
      }
    }
    for (const auto& [step, count] : have) {
      if (count == tensor()) chosen = std::max(chosen, step);
    }
    RETURN_IF_ERROR(store_->Set("tupa/ckpt_step", absl::StrCat(chosen)));
  } else {
    RETURN_IF_ERROR(store_->Set(absl::StrCat("tupa/ckpt_steps/", tp_rank()),
                                absl::StrJoin(steps, ",")));
    ASSIGN_OR_RETURN(std::string v,
                     store_->Get("tupa/ckpt_step", options_.timeout));
    if (!absl::SimpleAtoi(v, &chosen)) {
      return absl::InternalError("bad tupa/ckpt_step record: " + v);
    }
  }
  if (chosen == 0) return absl::OkStatus();
  for (auto& [path, state] : good) {
    if (state.step == chosen) {
      ckpt = std::move(state);
      return absl::OkStatus();
    }
  }
  return absl::InternalError(
      absl::StrCat(dir, ": no checkpoint of step ", chosen));
}

absl::Status Run::SaveCheckpoint(int64_t step, double last_loss) {
  CheckpointState s;
  s.step = step;
  s.optimizer_steps = optimizer_steps_;
  s.seed = config_.seed;
  s.world_size = options_.world_size;
  s.widths.assign(config_.widths.begin(), config_.widths.end());
  s.optimizer = config_.optimizer.name;
  s.loss_scale = scaler_.scale();
  s.good_steps = scaler_.good_steps();
  s.last_loss = last_loss;
  const size_t n = mlp_->num_params();
  s.params.resize(n);
  RETURN_IF_ERROR(
      backend_->CopyToHost(s.params.data(), mlp_->params(), n * sizeof(float)));
  std::vector<float>* states[2] = {&s.state0, &s.state1};
  for (int i = 0; i < 2; ++i) {
    states[i]->resize(optimizer_->state_size(i));
    if (states[i]->empty()) continue;
    RETURN_IF_ERROR(backend_->CopyToHost(
        states[i]->data(), optimizer_->state(i), n * sizeof(float)));
  }
  return WriteCheckpoint(ShardDir(), s, /*keep=*/2, options_.attempt);
}

absl::StatusOr<double> Run::GradSquaredNorm() {
  float* grads = mlp_->grads();
  if (tensor() == 1) return backend_->SumOfSquares(grads, mlp_->num_params());
  // The whole model's norm: the shards' parts summed over the group, the
  // replicated parts (identical on every rank of it) counted once.
  double sharded = 0;
  for (const GradBuckets::Range& r : mlp_->sharded_ranges()) {
    ASSIGN_OR_RETURN(double v,
                     backend_->SumOfSquares(grads + r.offset, r.count));
    sharded += v;
  }
  double replicated = 0;
  for (const GradBuckets::Range& r : mlp_->replicated_ranges()) {
    ASSIGN_OR_RETURN(double v,
                     backend_->SumOfSquares(grads + r.offset, r.count));
    replicated += v;
  }
  ASSIGN_OR_RETURN(double total, backend_->TensorSumOnHost(sharded));
  return total + replicated;
}

absl::StatusOr<double> Run::ReadLoss() {
  float sum;
  RETURN_IF_ERROR(backend_->CopyToHost(&sum, mlp_->loss_sum(), sizeof(float)));
  return static_cast<double>(sum) / static_cast<double>(global_batch());
}

absl::StatusOr<uint64_t> Run::ParamChecksum() {
  std::vector<float> host(mlp_->num_params());
  RETURN_IF_ERROR(backend_->CopyToHost(host.data(), mlp_->params(),
                                       host.size() * sizeof(float)));
  return Fnv1a(host.data(), host.size() * sizeof(float));
}

absl::Status Run::Evaluate() {
  if (!data_->test.has_value()) return absl::OkStatus();
  const Dataset& test = *data_->test;
  constexpr int kChunk = 512;
  ASSIGN_OR_RETURN(
      void* hx, backend_->AllocHost(sizeof(float) * kChunk * test.features()));
  ASSIGN_OR_RETURN(void* hy, backend_->AllocHost(sizeof(int32_t) * kChunk));
  ASSIGN_OR_RETURN(void* dcorrect, backend_->Alloc(sizeof(float)));
  auto cleanup = [&] {
    backend_->FreeHost(hx);
    backend_->FreeHost(hy);
    backend_->Free(dcorrect);
  };
  absl::Status status = backend_->Zero(dcorrect, sizeof(float));
  std::vector<int64_t> idx(kChunk);
  for (int64_t start = 0; status.ok() && start < test.size(); start += kChunk) {
    const int count =
        static_cast<int>(std::min<int64_t>(kChunk, test.size() - start));
    std::iota(idx.begin(), idx.begin() + count, start);
    test.Gather(idx.data(), count, static_cast<float*>(hx),
                static_cast<int32_t*>(hy));
    status = backend_->LoadBatch(
        static_cast<float*>(hx), static_cast<int32_t*>(hy), count,
        test.features(), mlp_->input(), mlp_->labels());
    if (status.ok()) {
      status = mlp_->Evaluate(count, static_cast<float*>(dcorrect));
    }
  }
  float correct = 0;
  if (status.ok()) {
    status = backend_->CopyToHost(&correct, dcorrect, sizeof(float));
  }
  cleanup();
  RETURN_IF_ERROR(status);
  summary_.test_accuracy = correct / static_cast<double>(test.size());
  return absl::OkStatus();
}

absl::StatusOr<RunSummary> Run::Execute() {
  RETURN_IF_ERROR(Setup());
  RETURN_IF_ERROR(RestoreOrInit());
  summary_.world_size = options_.world_size;
  summary_.tensor_parallel = tensor();
  summary_.data_parallel = dp_size();
  summary_.param_bytes = param_bytes_;
  summary_.steps = total_steps_;
  summary_.resumed_from_step = start_step_;
  if (Logs() && start_step_ > 0) {
    if (options_.json) {
      out_ << absl::StrFormat("{\"resumed_from_step\": %d, \"rank\": %d}\n",
                              start_step_, options_.rank);
    } else {
      out_ << "resumed from step " << start_step_ << "\n";
    }
    out_.flush();
  }
  loader_ = std::make_unique<BatchLoader>(backend_.get(), &data_->train,
                                          sampler_.get(), config_.batch_size,
                                          start_step_, total_steps_);
  RETURN_IF_ERROR(loader_->Start());

  const size_t n = mlp_->num_params();
  std::vector<GradBuckets::Range> ranges;
  for (int i = 0; i < mlp_->num_layers(); ++i) {
    ranges.push_back(mlp_->layer_range(i));
  }
  GradBuckets buckets(ranges, /*tail=*/1);
  summary_.dp_buckets = static_cast<int64_t>(buckets.buckets().size());
  const CollectiveCounts counts_before = backend_->collective_counts();
  float* grads = mlp_->grads();
  const GradBuckets::LaunchFn launch = [&](size_t offset, size_t count) {
    return backend_->AllReduceSumAsync(grads + offset, count);
  };
  const bool check_norm =
      config_.optimizer.grad_clip > 0 || config_.precision == Precision::kFp16;
  const int features = config_.widths.front();

  std::vector<double> step_ms;
  const auto train_start = Clock::now();
  auto log_start = train_start;
  int64_t log_steps = 0;
  for (int64_t step = start_step_; step < total_steps_; ++step) {
    const auto t0 = Clock::now();
    ASSIGN_OR_RETURN(Batch * batch, loader_->Next());
    const int64_t epoch = batch->epoch;
    RETURN_IF_ERROR(backend_->LoadBatch(batch->x, batch->y, config_.batch_size,
                                        features, mlp_->input(),
                                        mlp_->labels()));
    loader_->Release(batch);
    buckets.BeginStep();
    const float loss_scale = scaler_.scale();
    RETURN_IF_ERROR(mlp_->TrainStep(
        config_.batch_size, loss_scale / static_cast<float>(global_batch()),
        [&](int layer) { return buckets.MarkReady(layer, launch); }));
    RETURN_IF_ERROR(backend_->WaitAllReduces());
    double sq = -1.0;
    bool overflow = false;
    if (check_norm) {
      ASSIGN_OR_RETURN(sq, GradSquaredNorm());
      overflow = !std::isfinite(sq);
    }
    if (scaler_.Update(overflow)) {
      ++optimizer_steps_;
      RETURN_IF_ERROR(optimizer_->Step(mlp_->params(), grads, optimizer_steps_,
                                       total_steps_, 1.0f / loss_scale, sq));
      RETURN_IF_ERROR(backend_->OnParamsUpdated(mlp_->params(), n));
    }
    const int64_t done = step + 1;
    const bool last = done == total_steps_;
    const bool log_now = done % config_.log_every == 0 || last;
    const bool ckpt_now = !options_.checkpoint_dir.empty() &&
                          config_.checkpoint_every > 0 &&
                          done % config_.checkpoint_every == 0;
    if (log_now || ckpt_now) {
      ASSIGN_OR_RETURN(last_loss_, ReadLoss());
    } else {
      RETURN_IF_ERROR(backend_->Synchronize());
    }
    step_ms.push_back(Seconds(Clock::now() - t0) * 1e3);
    ++log_steps;
    if (ckpt_now && dp_rank() == 0) {
      RETURN_IF_ERROR(SaveCheckpoint(done, last_loss_));
    }
    if (log_now && Logs()) {
      const auto now = Clock::now();
      const double sps = static_cast<double>(log_steps * global_batch()) /
                         std::max(1e-9, Seconds(now - log_start));
      log_start = now;
      log_steps = 0;
      std::string checksum;
      if (options_.param_checksum) {
        ASSIGN_OR_RETURN(uint64_t h, ParamChecksum());
        checksum = absl::StrFormat(", \"param_checksum\": \"%016x\"", h);
      }
      if (options_.json) {
        out_ << absl::StrFormat(
            "{\"step\": %d, \"epoch\": %d, \"loss\": %.9g, "
            "\"samples_per_s\": %.1f, \"lr\": %.6g, \"rank\": %d, "
            "\"layout\": \"%s\", \"param_bytes\": %d, "
            "\"total_steps\": %d, \"total_epochs\": %d%s}\n",
            done, epoch, last_loss_, sps,
            LearningRate(config_.optimizer,
                         std::max<int64_t>(1, optimizer_steps_), total_steps_),
            options_.rank, Layout(), param_bytes_, total_steps_,
            TotalEpochs(), checksum);
      } else {
        out_ << absl::StrFormat(
            "step %d/%d  epoch %d  loss %.6f  %.0f samples/s%s\n", done,
            total_steps_, epoch, last_loss_, sps, checksum);
      }
      out_.flush();
    }
  }
  summary_.train_seconds = Seconds(Clock::now() - train_start);
  const int64_t ran = total_steps_ - start_step_;
  const CollectiveCounts& counts = backend_->collective_counts();
  summary_.steps_run = ran;
  summary_.tp_allreduces =
      counts.tensor_allreduces - counts_before.tensor_allreduces;
  summary_.dp_allreduces =
      counts.data_allreduces - counts_before.data_allreduces;
  summary_.tp_allreduces_forward = mlp_->tensor_allreduces_forward();
  summary_.tp_allreduces_backward = mlp_->tensor_allreduces_backward();
  if (!step_ms.empty()) {
    // Skip the first step (cold caches, thread start-up) when there are
    // enough others.
    std::vector<double> ms(step_ms.begin() + (step_ms.size() > 5 ? 1 : 0),
                           step_ms.end());
    std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
    summary_.step_ms_median = ms[ms.size() / 2];
  }
  summary_.samples_per_s = ran > 0 ? static_cast<double>(ran * global_batch()) /
                                         std::max(1e-9, summary_.train_seconds)
                                   : 0.0;
  summary_.final_loss = last_loss_;
  if (!options_.dump_params.empty()) {
    std::vector<float> host(mlp_->num_params());
    RETURN_IF_ERROR(backend_->CopyToHost(host.data(), mlp_->params(),
                                         host.size() * sizeof(float)));
    const std::string path =
        absl::StrCat(options_.dump_params, ".rank", options_.rank);
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(host.data()),
            static_cast<std::streamsize>(host.size() * sizeof(float)));
    if (!f.flush()) return absl::InternalError("cannot write " + path);
  }
  RETURN_IF_ERROR(Evaluate());
  return summary_;
}

int IntOr(int v, int d) { return v > 0 ? v : d; }
double DoubleOr(double v, double d) { return v > 0 ? v : d; }

}  // namespace

absl::StatusOr<TrainConfig> TrainConfigFromSpec(const v1::TrainSpec& spec) {
  namespace d = train_defaults;
  TrainConfig c;
  if (!spec.model().type().empty() && spec.model().type() != d::kModelType) {
    return absl::InvalidArgumentError(
        absl::StrCat("train.model.type: only \"mlp\" is supported, got \"",
                     spec.model().type(), "\""));
  }
  c.widths.assign(spec.model().layers().begin(), spec.model().layers().end());
  if (c.widths.size() < 2) {
    return absl::InvalidArgumentError(
        "train.model.layers: need at least [inputs, outputs]");
  }
  for (int w : c.widths) {
    if (w <= 0) {
      return absl::InvalidArgumentError(
          "train.model.layers: widths must be positive");
    }
  }
  c.data.format =
      spec.data().format().empty() ? d::kDataFormat : spec.data().format();
  c.data.path = spec.data().path();
  c.data.samples = spec.data().samples();
  c.data.test_samples = spec.data().test_samples();
  if (spec.batch_size() < 0 || spec.epochs() < 0 || spec.steps() < 0 ||
      spec.checkpoint_every() < 0 || spec.log_every() < 0) {
    return absl::InvalidArgumentError(
        "train: batch_size, epochs, steps, checkpoint_every and log_every "
        "must not be negative");
  }
  c.batch_size = IntOr(spec.batch_size(), d::kBatchSize);
  c.epochs = IntOr(spec.epochs(), d::kEpochs);
  c.steps = spec.steps();
  c.checkpoint_every = spec.checkpoint_every();
  c.seed = spec.seed();
  c.log_every = spec.log_every() > 0 ? spec.log_every() : d::kLogEvery;
  c.tensor_parallel = TensorParallelOf(spec);
  ASSIGN_OR_RETURN(c.precision, ParsePrecision(spec.precision()));
  const v1::OptimizerSpec& o = spec.optimizer();
  c.optimizer.name = o.name().empty() ? d::kOptimizer : o.name();
  c.optimizer.lr = DoubleOr(o.lr(), d::kLr);
  c.optimizer.weight_decay =
      o.weight_decay() > 0
          ? o.weight_decay()
          : (c.optimizer.name == "adamw" ? d::kAdamwWeightDecay : 0.0);
  c.optimizer.momentum = DoubleOr(o.momentum(), d::kMomentum);
  c.optimizer.beta1 = DoubleOr(o.beta1(), d::kBeta1);
  c.optimizer.beta2 = DoubleOr(o.beta2(), d::kBeta2);
  c.optimizer.eps = DoubleOr(o.eps(), d::kEps);
  c.optimizer.warmup_steps = std::max(0, o.warmup_steps());
  c.optimizer.schedule = o.schedule().empty() ? d::kSchedule : o.schedule();
  c.optimizer.grad_clip = std::max(0.0, o.grad_clip());
  if (c.optimizer.name != "adamw" && c.optimizer.name != "sgd") {
    return absl::InvalidArgumentError(
        absl::StrCat("train.optimizer.name: want adamw|sgd, got \"",
                     c.optimizer.name, "\""));
  }
  if (c.optimizer.schedule != "constant" && c.optimizer.schedule != "cosine") {
    return absl::InvalidArgumentError(
        absl::StrCat("train.optimizer.schedule: want constant|cosine, got \"",
                     c.optimizer.schedule, "\""));
  }
  return c;
}

absl::StatusOr<RunSummary> RunTraining(const TrainConfig& config,
                                       const RunOptions& options,
                                       std::ostream& out) {
  if (options.world_size < 1 || options.rank < 0 ||
      options.rank >= options.world_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "RANK ", options.rank, " outside WORLD_SIZE ", options.world_size));
  }
  Run run(config, options, out);
  return run.Execute();
}

}  // namespace tupa::trainer
