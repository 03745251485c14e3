#include "bench/fleet_sim/proc_stats.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"

namespace tupa::fleet_sim {

absl::StatusOr<ProcSample> ReadProcSample(int pid) {
  std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
  std::string line;
  if (!std::getline(stat, line))
    return absl::NotFoundError(absl::StrCat("no process ", pid));
  // The command name may hold spaces: fields count from after its ')'.
  std::istringstream rest(line.substr(line.rfind(')') + 2));
  std::string field;
  long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stol(field);
    if (i == 15) stime = std::stol(field);
  }
  ProcSample s;
  s.cpu_s = static_cast<double>(utime + stime) /
            static_cast<double>(sysconf(_SC_CLK_TCK));
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0)
      s.rss_mb = std::stod(line.substr(6)) / 1024.0;  // kB
  return s;
}

}  // namespace tupa::fleet_sim
