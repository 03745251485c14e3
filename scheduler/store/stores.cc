#include "scheduler/store/stores.h"

#include "common/status_macros.h"

namespace tupa::scheduler {

absl::StatusOr<std::unique_ptr<Stores>> Stores::Open(const std::string& url,
                                                     int pool_size) {
  ASSIGN_OR_RETURN(std::unique_ptr<Database> db,
                   Database::Open(url, pool_size));
  return std::make_unique<Stores>(std::move(db));
}

Stores::Stores(std::unique_ptr<Database> db)
    : db_(std::move(db)),
      usage_(db_.get()),
      jobs_(db_.get(), &usage_),
      workers_(db_.get()),
      tokens_(db_.get()) {}

}  // namespace tupa::scheduler
