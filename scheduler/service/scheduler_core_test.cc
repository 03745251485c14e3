// SchedulerCore against a real PostgreSQL, without its loop (Start() is not
// called): what a submit does on its own, before the loop takes the job.
#include "scheduler/service/scheduler_core.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/synchronization/notification.h"
#include "scheduler/store/store_test_fixture.h"

namespace tupa::scheduler {
namespace {

class SchedulerCoreTest : public StoreTest {
 protected:
  SchedulerOptions Options() {
    SchedulerOptions options;
    options.data_dir = testing::TempDir();
    return options;
  }

  absl::StatusOr<SubmitResult> SubmitAndWait(SchedulerCore& core,
                                             v1::JobSpec spec) {
    absl::StatusOr<SubmitResult> result;
    absl::Notification acked;
    core.Submit(std::move(spec), "", [&](absl::StatusOr<SubmitResult> r) {
      result = std::move(r);
      acked.Notify();
    });
    acked.WaitForNotification();
    return result;
  }
};

TEST_F(SchedulerCoreTest, AnAcknowledgedJobIsReadFromTheViewNotPostgres) {
  SchedulerCore core(stores_.get(), Options());
  auto submitted = SubmitAndWait(core, Spec("fresh"));
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  const int64_t id = submitted->job.id();
  // Gone from PostgreSQL behind the scheduler's back: only the view can
  // answer. Before, a job the loop had not taken yet (here: never) was
  // read from PostgreSQL, under load for as long as a commit round.
  Exec(absl::StrCat("DELETE FROM jobs WHERE id = ", id));
  auto job = core.GetJob(id);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->id(), id);
  EXPECT_EQ(job->state(), v1::JOB_STATE_PENDING);
  EXPECT_EQ(job->spec().name(), "fresh");
  EXPECT_EQ(job->spec().team(), "vision");
}

TEST_F(SchedulerCoreTest, ARefusedSubmitPublishesNothing) {
  SchedulerCore core(stores_.get(), Options());
  v1::JobSpec bad = Spec("bad");
  bad.mutable_resources()->set_gpus(-1);
  auto refused = SubmitAndWait(core, bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(core.GetJob(1).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace tupa::scheduler
