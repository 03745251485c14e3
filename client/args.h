// A tiny argv parser for the CLI's subcommands.
//
// A FlagSet declares a command's flags: value flags (`--gpus 2` or
// `--gpus=2`), repeatable value flags (`--env A=1 --env B=2`) and boolean
// flags (`--follow`, `--follow=false`), each with an optional one-letter
// short form (`-f`). Everything after a bare `--` is kept verbatim as the
// command to run. Words that are not flags are positional arguments, in
// order. A value flag always takes the next word as its value, even one that
// starts with '-', so `--gpus -1` reaches validation. Parse errors are
// InvalidArgument naming the flag. Not thread-safe while flags are added;
// Parse() is const.
#ifndef TUPA_CLIENT_ARGS_H_
#define TUPA_CLIENT_ARGS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tupa::client {

// The result of FlagSet::Parse.
class ParsedArgs {
 public:
  // True when the flag was given at least once.
  bool Has(absl::string_view name) const;
  // The last value given for `name`, or `fallback`.
  std::string Value(absl::string_view name,
                    absl::string_view fallback = "") const;
  // Every value given for `name`, in order (empty when not given).
  std::vector<std::string> Values(absl::string_view name) const;
  // A boolean flag's value; false when not given.
  bool Bool(absl::string_view name) const;

  const std::vector<std::string>& positional() const { return positional_; }
  // Whether a bare `--` appeared, and what followed it.
  bool has_separator() const { return has_separator_; }
  const std::vector<std::string>& after_separator() const {
    return after_separator_;
  }

 private:
  friend class FlagSet;
  std::map<std::string, std::vector<std::string>, std::less<>> values_;
  std::vector<std::string> positional_;
  bool has_separator_ = false;
  std::vector<std::string> after_separator_;
};

class FlagSet {
 public:
  enum class Kind { kValue, kRepeated, kBool };

  // `usage` is the one-line synopsis shown by Usage(), e.g.
  // "tupa get JOB".
  explicit FlagSet(std::string usage);

  // `name` without dashes; `short_name` is one letter or empty.
  // `value_name` is shown in Usage() ("N", "FILE").
  FlagSet& AddValue(std::string name, std::string value_name, std::string help,
                    std::string short_name = "");
  FlagSet& AddRepeated(std::string name, std::string value_name,
                       std::string help, std::string short_name = "");
  FlagSet& AddBool(std::string name, std::string help,
                   std::string short_name = "");

  // Parses `args` (the words after the command name). Unknown flags and
  // missing values are InvalidArgument errors naming the flag.
  absl::StatusOr<ParsedArgs> Parse(const std::vector<std::string>& args) const;

  // Whether `word` (e.g. "--scheduler", "-o") names a flag that takes a
  // value and has no inline "=value".
  bool TakesSeparateValue(absl::string_view word) const;

  // The synopsis followed by one line per flag.
  std::string Usage() const;

 private:
  struct Flag {
    std::string name;
    std::string short_name;
    std::string value_name;
    std::string help;
    Kind kind;
  };
  FlagSet& Add(Flag flag);
  const Flag* Find(absl::string_view word) const;

  std::string usage_;
  std::vector<Flag> flags_;
};

}  // namespace tupa::client

#endif  // TUPA_CLIENT_ARGS_H_
