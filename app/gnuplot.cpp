#include "gnuplot.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "dptrain/core/error.hpp"

extern char** environ;

namespace dptrain::app {

bool is_control(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u < 0x20 || u == 0x7f;
}

std::string printable_name(const std::string& name) {
  std::string out;
  for (char c : name) {
    if (!is_control(c)) {
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      static const char* const hex = "0123456789abcdef";
      const auto u = static_cast<unsigned char>(c);
      out += "\\x";
      out += hex[u >> 4];
      out += hex[u & 0xf];
    }
  }
  return out;
}

std::string gnuplot_single_quoted(const std::string& text) {
  std::string q = "'";
  for (char c : text) {
    q += c;
    if (c == '\'') q += '\'';
  }
  return q + "'";
}

namespace {
// `path` for a gnuplot script, which cannot carry a newline in a string (`what`: "the chart's path").
void check_script_path(const std::string& path, const char* what) {
  DPTRAIN_CHECK(std::find_if(path.begin(), path.end(), is_control) == path.end(), what, " '", printable_name(path),
                "' holds a control character, which a gnuplot script cannot carry");
}
}  // namespace

std::string gnuplot_number(double v) {
  if (!std::isfinite(v)) return "NaN";
  std::ostringstream out;
  out.precision(10);
  out << v;
  return out.str();
}

std::string gnuplot_print_to(const std::string& table) {
  check_script_path(table, "the table's path");
  return "set print " + gnuplot_single_quoted(table) + "\n";
}

std::string gnuplot_table_section(const std::string& title, const std::string& block, const std::string& columns) {
  return "set table $t\nplot " + block + " using " + columns + " with table\nunset table\nprint " +
         gnuplot_single_quoted("# " + title) + "\nprint $t\n";
}

std::string gnuplot_png_output(const std::string& png, int width, int height) {
  check_script_path(png, "the chart's path");
  const std::string size = std::to_string(width) + "," + std::to_string(height);
  return "if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) {\n  set terminal pngcairo size " + size +
         " noenhanced font \"sans,11\"\n} else {\n  set terminal png size " + size + " noenhanced\n}\nset output " +
         gnuplot_single_quoted(png) + "\n";
}

std::string find_gnuplot() {
  if (const char* g = std::getenv("GNUPLOT"); g != nullptr && *g != '\0') return g;
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const std::size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::filesystem::path candidate = std::filesystem::path(dirs.substr(start, end - start)) / "gnuplot";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    start = end + 1;
  }
  return {};
}

void draw_with_gnuplot(const std::string& script, const std::string& png, const std::string& why) {
  const std::string gnuplot = find_gnuplot();
  DPTRAIN_CHECK(!gnuplot.empty(), why,
                " needs gnuplot, which is not installed (Debian: apt-get install gnuplot-nox; or set GNUPLOT to its "
                "path)");
  const std::string script_path = png + ".gp";
  {
    std::ofstream out(script_path);
    DPTRAIN_CHECK(out.good(), "cannot write the gnuplot script '", script_path, "'");
    out << script;
    out.flush();
    DPTRAIN_CHECK(out.good(), "writing the gnuplot script '", script_path, "' failed");
  }
  std::filesystem::remove(png);
  // gnuplot is run without a shell, with the script as its one argument; a relative path starting with
  // '-' would read as an option, so it is given as ./PATH.
  const std::string script_argument = script_path.front() == '-' ? "./" + script_path : script_path;
  std::vector<char*> argv{const_cast<char*>(gnuplot.c_str()), const_cast<char*>(script_argument.c_str()), nullptr};
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, gnuplot.c_str(), nullptr, nullptr, argv.data(), environ);
  DPTRAIN_CHECK(rc == 0, "cannot run '", gnuplot, "': ", std::strerror(rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    DPTRAIN_CHECK(errno == EINTR, "waiting for gnuplot failed: ", std::strerror(errno));
  }
  DPTRAIN_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "gnuplot failed on '", script_path,
                "' (its message is above)");
  DPTRAIN_CHECK(std::filesystem::exists(png) && std::filesystem::file_size(png) > 0, "gnuplot wrote no chart to '", png,
                "'");
}

}  // namespace dptrain::app
