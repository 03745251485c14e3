// TokenStore against a real PostgreSQL.
#include "scheduler/store/token_store.h"

#include <gtest/gtest.h>

#include "scheduler/store/store_test_fixture.h"

namespace tupa::scheduler {
namespace {

class TokenStoreTest : public StoreTest {};

const std::string kA(64, 'a');  // a SHA-256 in lowercase hex
const std::string kB(64, 'b');

TEST_F(TokenStoreTest, CreateLookupUpsertRevoke) {
  auto created = tokens_->CreateToken(kA, "alice", "vision", false);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(tokens_->CreateToken(kA, "bob", "", true).status().code(),
            absl::StatusCode::kAlreadyExists);
  auto found = tokens_->LookupToken(kA);
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(found->user, "alice");
  EXPECT_FALSE(found->admin);
  EXPECT_EQ(tokens_->LookupToken(kB).status().code(),
            absl::StatusCode::kNotFound);
  auto upserted = tokens_->UpsertToken(kA, "admin", "", true);
  ASSERT_TRUE(upserted.ok());
  EXPECT_EQ(upserted->id, created->id);
  EXPECT_TRUE(upserted->admin);
  auto revoked = tokens_->RevokeToken(created->id);
  ASSERT_TRUE(revoked.ok());
  EXPECT_NE(revoked->revoked_at_ms, 0);
  EXPECT_EQ(tokens_->ListTokens()->size(), 1u);
  EXPECT_EQ(tokens_->RevokeToken(999).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace tupa::scheduler
