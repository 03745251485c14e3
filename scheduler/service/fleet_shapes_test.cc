#include "scheduler/service/fleet_shapes.h"

#include <gtest/gtest.h>

#include <string>

namespace tupa::scheduler {
namespace {

v1::Worker Worker(int gpus, const std::string& type, double cpu = 32,
                  int64_t memory = int64_t{256} << 30) {
  v1::Worker w;
  for (int i = 0; i < gpus; ++i) {
    v1::Device* d = w.add_devices();
    d->set_index(i);
    d->set_gpu_type(type);
  }
  w.set_cpu(cpu);
  w.set_memory_bytes(memory);
  return w;
}

v1::JobSpec Spec(double gpus, int nodes = 1, std::string type = "",
                 double cpu = 0) {
  v1::JobSpec spec;
  spec.mutable_resources()->set_gpus(gpus);
  spec.mutable_resources()->set_nodes(nodes);
  if (!type.empty()) spec.mutable_resources()->add_gpu_type(type);
  spec.mutable_resources()->set_cpu(cpu);
  return spec;
}

TEST(FleetShapes, NoWorkerKnownAdmitsEverything) {
  FleetShapes fleet;
  EXPECT_TRUE(fleet.CouldEverFit(Spec(64, 100, "H100")).ok());
}

TEST(FleetShapes, WorkersOfOneShapeAreOneEntryCountedByWorker) {
  FleetShapes fleet;
  for (int i = 0; i < 1000; ++i) fleet.Add(WorkerShape::Of(Worker(8, "A100")));
  fleet.Add(WorkerShape::Of(Worker(2, "L4", 8)));
  EXPECT_EQ(fleet.workers(), 1001);
  EXPECT_TRUE(fleet.CouldEverFit(Spec(8, 1000, "A100")).ok());
  // 1001 nodes exist, but only 1000 of them have 8 A100s.
  absl::Status s = fleet.CouldEverFit(Spec(8, 1001));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("resources.gpus: no 1001 worker(s)"),
            std::string::npos)
      << s;
  EXPECT_TRUE(fleet.CouldEverFit(Spec(2, 1001)).ok());
}

TEST(FleetShapes, EachRefusalNamesItsField) {
  FleetShapes fleet;
  fleet.Add(WorkerShape::Of(Worker(2, "L4", 8)));
  fleet.Add(WorkerShape::Of(Worker(2, "L4", 8)));
  absl::Status nodes = fleet.CouldEverFit(Spec(1, 3));
  EXPECT_EQ(nodes.message(),
            "resources.nodes: 3 nodes requested but the cluster has 2 "
            "worker(s)");
  absl::Status type = fleet.CouldEverFit(Spec(1, 1, "H100"));
  EXPECT_EQ(type.message(),
            "resources.gpu_type: no worker has H100 (the cluster has L4)");
  EXPECT_NE(fleet.CouldEverFit(Spec(4)).message().find("resources.gpus"),
            std::string::npos);
  // CPU counts too: 8 CPUs per worker.
  EXPECT_FALSE(fleet.CouldEverFit(Spec(1, 1, "", 9)).ok());
  EXPECT_TRUE(fleet.CouldEverFit(Spec(0.25, 2, "L4", 8)).ok());
}

TEST(FleetShapes, RemoveForgetsOneWorkerOfTheShape) {
  FleetShapes fleet;
  const WorkerShape l4 = WorkerShape::Of(Worker(2, "L4"));
  fleet.Add(l4);
  fleet.Add(l4);
  fleet.Add(WorkerShape::Of(Worker(8, "H100")));
  fleet.Remove(l4);
  EXPECT_EQ(fleet.workers(), 2);
  EXPECT_TRUE(fleet.CouldEverFit(Spec(2, 1, "L4")).ok());
  fleet.Remove(l4);
  // No L4 left: a worker that came back with other devices replaced it.
  EXPECT_EQ(fleet.CouldEverFit(Spec(1, 1, "L4")).message(),
            "resources.gpu_type: no worker has L4 (the cluster has H100)");
}

TEST(FleetShapes, WorkerWithoutGpusFitsCpuJobsOnly) {
  FleetShapes fleet;
  fleet.Add(WorkerShape::Of(Worker(0, "", 4)));
  EXPECT_TRUE(fleet.CouldEverFit(Spec(0, 1, "", 4)).ok());
  EXPECT_EQ(fleet.CouldEverFit(Spec(1, 1, "T4")).message(),
            "resources.gpu_type: no worker has T4 (the cluster has no GPUs)");
  EXPECT_FALSE(fleet.CouldEverFit(Spec(1)).ok());
}

}  // namespace
}  // namespace tupa::scheduler
