#include "scheduler/service/auth.h"

#include <gtest/gtest.h>

#include "scheduler/service/request_validation.h"

namespace tupa::scheduler {
namespace {

Principal User(std::string user, std::string team) {
  Principal p;
  p.user = std::move(user);
  p.team = std::move(team);
  return p;
}

v1::JobSpec Spec(std::string user, std::string team) {
  v1::JobSpec s;
  s.set_user(std::move(user));
  s.set_team(std::move(team));
  return s;
}

TEST(HashTokenTest, IsHexSha256) {
  EXPECT_EQ(HashToken("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(NewTokenTest, PrefixedRandomHex) {
  const std::string a = NewToken(), b = NewToken();
  EXPECT_EQ(a.size(), 5u + 64u);
  EXPECT_EQ(a.substr(0, 5), "tupa_");
  EXPECT_NE(a, b);
}

TEST(AuthzTest, OwnerTeamMateOtherTeamAdmin) {
  const v1::JobSpec job = Spec("alice", "a");
  Principal admin = User("root", "");
  admin.role = Role::kAdmin;
  EXPECT_TRUE(CanReadJob(User("alice", "a"), job));
  EXPECT_TRUE(CanCancelJob(User("alice", "a"), job));
  EXPECT_TRUE(CanReadJob(User("bob", "a"), job));
  EXPECT_FALSE(CanCancelJob(User("bob", "a"), job));
  EXPECT_FALSE(CanReadJob(User("carol", "b"), job));
  EXPECT_FALSE(CanCancelJob(User("carol", "b"), job));
  EXPECT_TRUE(CanReadJob(admin, job));
  EXPECT_TRUE(CanCancelJob(admin, job));
  EXPECT_FALSE(CanDrainWorker(User("alice", "a")));
  EXPECT_FALSE(CanAdministerTokens(User("alice", "a")));
  EXPECT_TRUE(CanDrainWorker(AnonymousAdmin()));
}

TEST(AuthzTest, SubmitterComesFromTheToken) {
  v1::JobSpec spec = Spec("mallory", "b");
  ApplySubmitter(User("alice", "a"), spec);
  EXPECT_EQ(spec.user(), "alice");
  EXPECT_EQ(spec.team(), "a");
  v1::JobSpec dev = Spec("x", "y");
  ApplySubmitter(AnonymousAdmin(), dev);  // auth off: as given
  EXPECT_EQ(dev.user(), "x");
}

TEST(AuthzTest, ListFilterIsScopedToTheTeam) {
  JobFilter all;
  EXPECT_TRUE(ScopeJobFilter(User("alice", "a"), all));
  EXPECT_EQ(all.team, "a");
  JobFilter other;
  other.team = "b";
  EXPECT_TRUE(ScopeJobFilter(User("alice", "a"), other));
  EXPECT_EQ(other.user, "alice");  // only her own jobs there
  JobFilter someone;
  someone.team = "b";
  someone.user = "carol";
  EXPECT_FALSE(ScopeJobFilter(User("alice", "a"), someone));
}

TEST(RequestValidationTest, NamesTheField) {
  v1::GetJobRequest get;
  EXPECT_NE(ValidateGetJobRequest(get).message().find("id"), std::string::npos);
  v1::CreateTokenRequest create;
  create.set_user("al ice");
  create.set_team("a");
  EXPECT_NE(ValidateCreateTokenRequest(create).message().find("user"),
            std::string::npos);
  // A token team the job spec's team rule refuses would make every submit
  // by its holder fail; it is refused when the token is made instead.
  for (const char* team : {"@ops", ".hidden", "_x", "a@b"}) {
    create.set_user("alice@example.com");
    create.set_team(team);
    absl::Status s = ValidateCreateTokenRequest(create);
    EXPECT_EQ(s.message().rfind("team:", 0), 0u) << team << ": " << s;
  }
  create.set_team("vision-2");
  EXPECT_TRUE(ValidateCreateTokenRequest(create).ok());
  v1::CostReportRequest cost;
  cost.set_group_by("planet");
  EXPECT_FALSE(ValidateCostReportRequest(cost).ok());
  v1::Hello hello;
  EXPECT_FALSE(ValidateHello(hello).ok());
}

}  // namespace
}  // namespace tupa::scheduler
