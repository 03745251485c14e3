#include <google/protobuf/util/time_util.h>

#include "absl/time/time.h"
#include "client/commands.h"
#include "gtest/gtest.h"

namespace tupa::client {
namespace {

using google::protobuf::util::TimeUtil;

TEST(FormatWhyTest, PendingWithEstimate) {
  v1::WhyJobResponse why;
  why.set_job_id(42);
  why.set_state(v1::JOB_STATE_PENDING);
  why.set_reason_code("NO_FIT_NOW");
  why.set_message("needs 4 GPUs of type A100 on 1 node");
  why.set_jobs_ahead(3);
  const absl::Time now = absl::FromUnixSeconds(1700000000);
  *why.mutable_estimated_start() = TimeUtil::SecondsToTimestamp(
      absl::ToUnixSeconds(now + absl::Minutes(12)));
  EXPECT_EQ(FormatWhy(why, now),
            "job 42 is PENDING: NO_FIT_NOW \u2014 needs 4 GPUs of type A100 on "
            "1 node; 3 jobs ahead; estimated start in 12m\n");
}

TEST(FormatWhyTest, UnknownStartAndNotPending) {
  v1::WhyJobResponse why;
  why.set_job_id(7);
  why.set_state(v1::JOB_STATE_PENDING);
  why.set_reason_code("BEHIND_PRIORITY");
  why.set_message("needs 1 GPU on 1 node");
  why.set_jobs_ahead(1);
  EXPECT_EQ(FormatWhy(why, absl::Now()),
            "job 7 is PENDING: BEHIND_PRIORITY \u2014 needs 1 GPU on 1 node; "
            "1 job ahead; start time unknown\n");
  why.set_state(v1::JOB_STATE_RUNNING);
  why.set_reason_code("NOT_PENDING");
  why.set_message("job 7 is RUNNING, not waiting");
  EXPECT_EQ(FormatWhy(why, absl::Now()), "job 7 is RUNNING, not waiting\n");
}

}  // namespace
}  // namespace tupa::client
