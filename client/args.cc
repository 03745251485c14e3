#include "client/args.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace tupa::client {

bool ParsedArgs::Has(absl::string_view name) const {
  return values_.find(name) != values_.end();
}

std::string ParsedArgs::Value(absl::string_view name,
                              absl::string_view fallback) const {
  auto it = values_.find(name);
  if (it == values_.end() || it->second.empty()) return std::string(fallback);
  return it->second.back();
}

std::vector<std::string> ParsedArgs::Values(absl::string_view name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return {};
  return it->second;
}

bool ParsedArgs::Bool(absl::string_view name) const {
  return Value(name, "false") == "true";
}

FlagSet::FlagSet(std::string usage) : usage_(std::move(usage)) {}

FlagSet& FlagSet::Add(Flag flag) {
  flags_.push_back(std::move(flag));
  return *this;
}

FlagSet& FlagSet::AddValue(std::string name, std::string value_name,
                           std::string help, std::string short_name) {
  return Add({std::move(name), std::move(short_name), std::move(value_name),
              std::move(help), Kind::kValue});
}

FlagSet& FlagSet::AddRepeated(std::string name, std::string value_name,
                              std::string help, std::string short_name) {
  return Add({std::move(name), std::move(short_name), std::move(value_name),
              std::move(help), Kind::kRepeated});
}

FlagSet& FlagSet::AddBool(std::string name, std::string help,
                          std::string short_name) {
  return Add({std::move(name), std::move(short_name), "", std::move(help),
              Kind::kBool});
}

// `word` is "--name", "--name=value", "-x" or "-x=value".
const FlagSet::Flag* FlagSet::Find(absl::string_view word) const {
  absl::string_view key = word;
  const size_t eq = key.find('=');
  if (eq != absl::string_view::npos) key = key.substr(0, eq);
  const bool is_long = absl::StartsWith(key, "--");
  key.remove_prefix(is_long ? 2 : 1);
  for (const Flag& f : flags_) {
    if (is_long ? key == f.name
                : (!f.short_name.empty() && key == f.short_name))
      return &f;
  }
  return nullptr;
}

bool FlagSet::TakesSeparateValue(absl::string_view word) const {
  if (!absl::StartsWith(word, "-") || absl::StrContains(word, "="))
    return false;
  const Flag* f = Find(word);
  return f != nullptr && f->kind != Kind::kBool;
}

absl::StatusOr<ParsedArgs> FlagSet::Parse(
    const std::vector<std::string>& args) const {
  ParsedArgs out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word == "--") {
      out.has_separator_ = true;
      out.after_separator_.assign(args.begin() + i + 1, args.end());
      break;
    }
    if (word.size() < 2 || word[0] != '-') {
      out.positional_.push_back(word);
      continue;
    }
    const Flag* flag = Find(word);
    const size_t eq = word.find('=');
    const std::string shown = word.substr(0, eq);
    if (flag == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag ", shown, " (see --help)"));
    }
    std::string value;
    if (eq != std::string::npos) {
      value = word.substr(eq + 1);
    } else if (flag->kind == Kind::kBool) {
      value = "true";
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(shown, ": needs a value (", flag->value_name, ")"));
    }
    if (flag->kind == Kind::kBool) {
      if (value == "1" || value == "yes") value = "true";
      if (value == "0" || value == "no") value = "false";
      if (value != "true" && value != "false") {
        return absl::InvalidArgumentError(absl::StrCat(
            shown, ": expected true or false, got \"", value, "\""));
      }
    }
    std::vector<std::string>& slot = out.values_[flag->name];
    if (flag->kind != Kind::kRepeated) slot.clear();
    slot.push_back(std::move(value));
  }
  return out;
}

std::string FlagSet::Usage() const {
  std::string text = absl::StrCat("usage: ", usage_, "\n");
  if (flags_.empty()) return text;
  std::vector<std::pair<std::string, std::string>> lines;
  size_t width = 0;
  for (const Flag& f : flags_) {
    std::string left = f.short_name.empty()
                           ? absl::StrCat("    --", f.name)
                           : absl::StrCat("-", f.short_name, ", --", f.name);
    if (f.kind != Kind::kBool) absl::StrAppend(&left, " ", f.value_name);
    width = std::max(width, left.size());
    std::string help = f.help;
    if (f.kind == Kind::kRepeated) absl::StrAppend(&help, " (repeatable)");
    lines.emplace_back(std::move(left), std::move(help));
  }
  absl::StrAppend(&text, "\nflags:\n");
  for (const auto& [left, help] : lines) {
    absl::StrAppend(&text, "  ", left,
                    std::string(width - left.size() + 2, ' '), help, "\n");
  }
  return text;
}

}  // namespace tupa::client
