#include "scheduler/service/read_view.h"

#include <gtest/gtest.h>

namespace tupa::scheduler {
namespace {

v1::Worker MakeWorker(const std::string& id, v1::WorkerState state,
                      int devices) {
  v1::Worker w;
  w.set_id(id);
  w.set_state(state);
  w.set_region("sa-east-1");
  for (int i = 0; i < devices; ++i) {
    v1::Device* d = w.add_devices();
    d->set_index(i);
    d->set_gpu_type("H100");
    d->set_memory_used_bytes(int64_t{1} << (30 + i));
  }
  return w;
}

v1::ListWorkersResponse Parse(const std::string& bytes) {
  v1::ListWorkersResponse response;
  EXPECT_TRUE(response.ParseFromString(bytes));
  return response;
}

TEST(ReadViewTest, WorkersResponseIsAnEmptyListBeforeTheFirstPublish) {
  ReadView view;
  EXPECT_EQ(Parse(*view.WorkersResponse(false)).workers_size(), 0);
  EXPECT_EQ(Parse(*view.WorkersResponse(true)).workers_size(), 0);
}

TEST(ReadViewTest, WorkersResponseParsesBackToThePublishedWorkers) {
  ReadView view;
  std::vector<v1::Worker> workers = {
      MakeWorker("w-1", v1::WORKER_STATE_UP, 8),
      MakeWorker("w-2", v1::WORKER_STATE_LOST, 2),
      MakeWorker("w-3", v1::WORKER_STATE_DRAINING, 0),
      MakeWorker("w-4", v1::WORKER_STATE_OFFLINE, 1)};
  view.PutWorkers(workers);

  const v1::ListWorkersResponse all = Parse(*view.WorkersResponse(true));
  ASSERT_EQ(all.workers_size(), 4);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(all.workers(i).SerializeAsString(),
              workers[i].SerializeAsString())
        << i;

  // Without the LOST and OFFLINE ones, in the same order.
  const v1::ListWorkersResponse live = Parse(*view.WorkersResponse(false));
  ASSERT_EQ(live.workers_size(), 2);
  EXPECT_EQ(live.workers(0).id(), "w-1");
  EXPECT_EQ(live.workers(0).devices_size(), 8);
  EXPECT_EQ(live.workers(0).devices(7).memory_used_bytes(), int64_t{1} << 37);
  EXPECT_EQ(live.workers(1).id(), "w-3");
}

TEST(ReadViewTest, AResponseTakenStaysWholeAfterTheNextPublish) {
  ReadView view;
  view.PutWorkers({MakeWorker("w-1", v1::WORKER_STATE_UP, 2)});
  std::shared_ptr<const std::string> before = view.WorkersResponse(false);
  view.PutWorkers({});
  EXPECT_EQ(Parse(*before).workers(0).id(), "w-1");
  EXPECT_EQ(Parse(*view.WorkersResponse(false)).workers_size(), 0);
}

}  // namespace
}  // namespace tupa::scheduler
