#include "scheduler/store/pg_errors.h"

#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"

namespace tupa::scheduler {

absl::Status StatusFromCurrentException() {
  try {
    throw;
  } catch (const pqxx::broken_connection& e) {
    return absl::UnavailableError(
        absl::StrCat("database unavailable: ", e.what()));
  } catch (const pqxx::in_doubt_error& e) {
    return absl::UnavailableError(
        absl::StrCat("database commit in doubt: ", e.what()));
  } catch (const pqxx::serialization_failure& e) {
    return absl::AbortedError(absl::StrCat("database conflict: ", e.what()));
  } catch (const pqxx::deadlock_detected& e) {
    return absl::AbortedError(absl::StrCat("database deadlock: ", e.what()));
  } catch (const pqxx::unique_violation& e) {
    return absl::AlreadyExistsError(e.what());
  } catch (const pqxx::check_violation& e) {
    return absl::FailedPreconditionError(e.what());
  } catch (const pqxx::foreign_key_violation& e) {
    return absl::FailedPreconditionError(e.what());
  } catch (const pqxx::sql_error& e) {
    // Connection-class SQLSTATEs (08xxx, 57P0x) mean the server went away.
    const std::string& state = e.sqlstate();
    if (state.rfind("08", 0) == 0 || state.rfind("57P", 0) == 0)
      return absl::UnavailableError(
          absl::StrCat("database unavailable: ", e.what()));
    return absl::InternalError(absl::StrCat("database error: ", e.what()));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("database error: ", e.what()));
  }
}

}  // namespace tupa::scheduler
