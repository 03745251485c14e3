// How the CLI prints money. The scheduler sends amounts as exact decimal
// strings ("12.345678"); the CLI rounds them for tables on the digits
// themselves, never through a double, so a printed total is the rounded
// exact total. Pure; thread-safe.
#ifndef TUPA_CLIENT_MONEY_H_
#define TUPA_CLIENT_MONEY_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tupa::client {

// Rounds the decimal `text` (digits, an optional '.' and fraction, an
// optional leading '-') to exactly `places` fractional digits, half to
// even: ("2.345", 2) -> "2.34", ("2.355", 2) -> "2.36", ("9.995", 2) ->
// "10.00", ("12", 2) -> "12.00". A value that rounds to zero has no sign.
// InvalidArgument on anything that is not such a decimal.
absl::StatusOr<std::string> RoundDecimal(absl::string_view text, int places);

// A table cell: `amount` rounded to cents, then " " and `currency` when
// that is set: "12.35 USD". "" for an empty amount; an amount that is not a
// decimal is shown as sent, so a server bug is visible rather than hidden.
std::string FormatMoney(absl::string_view amount, absl::string_view currency);

// A price per GPU-hour: at least 2 and at most 4 fractional digits, so
// sub-cent prices stay visible: "2.90", "0.345", "1.2346"; " " and the
// currency when set. "" for an empty price.
std::string FormatPrice(absl::string_view price, absl::string_view currency);

// GPU-seconds as GPU-hours with 2 decimals: 5400 -> "1.50".
std::string FormatGpuHours(double gpu_seconds);

}  // namespace tupa::client

#endif  // TUPA_CLIENT_MONEY_H_
